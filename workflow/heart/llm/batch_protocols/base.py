"""What the batch protocols share: the key from the environment, a server's root, the chat body every
protocol's answers are turned into, and an httpx client whose errors name the call, never the key."""

from __future__ import annotations

import os

from heart.llm.models import ModelSpec


def get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def key(spec: ModelSpec) -> str | None:
    return os.environ.get(spec.api_key_env) if spec.api_key_env else None


def root(spec: ModelSpec, default: str) -> str:
    """A server's root URL: a configured ``api_base`` without its ``/v1`` (the simulator's), or ``default``."""
    return (spec.api_base or default).rstrip("/").removesuffix("/v1")


def chat_body(text: str, usage: dict, model: str) -> dict:
    return {"object": "chat.completion", "model": model, "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


class HTTP:
    """A provider spoken to over httpx, with its auth headers; errors name the call, never the key."""

    def __init__(self, spec: ModelSpec, root: str, headers: dict):
        self.spec, self.root, self.headers = spec, root, headers

    async def call(self, method: str, path: str, body: dict | None = None, params: dict | None = None):
        import httpx

        url = path if path.startswith("http") else f"{self.root}{path}"
        async with httpx.AsyncClient(timeout=self.spec.timeout) as client:
            r = await client.request(method, url, json=body, params=params, headers=self.headers)
        if r.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {r.status_code}: {r.text[:300]}")
        return r
