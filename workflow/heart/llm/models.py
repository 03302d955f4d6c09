"""A configured model (config ``models.<name>``), where a local model's file is, and what a call costs."""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ModelSpec:
    """A configured model (config ``models.<name>``)."""

    name: str
    model: str  # litellm model string, e.g. "openai/gpt-4o" or "anthropic/claude-..."
    family: str = "other"
    params: dict = field(default_factory=dict)  # temperature, top_p, max_tokens, seed ...
    api_base: str | None = None
    api_key_env: str | None = None  # name of the environment variable holding the key
    local_gguf: str | None = None  # "package/file.gguf": serve this file on 127.0.0.1
    # the limits are the model's (one key's), whatever the number of jobs calling it: see share()
    max_concurrency: int = 4
    rpm: int | None = None  # requests per minute at most
    tpm: int | None = None  # tokens per minute at most (estimated before, booked per call)
    timeout: float = 120.0
    max_retries: int = 4
    stream: bool = True  # stream to measure time to first token; False is cheaper (no TTFT)
    reasoning: str = "least"  # completions (decoding): the "least" reasoning, or the provider's "default"

    @classmethod
    def from_config(cls, name: str, cfg: dict) -> "ModelSpec":
        return cls(name=name, **cfg)

    def share(self, n: int) -> "ModelSpec":
        """This model as one of ``n`` jobs that call it at once (the shards of a stage) sees it: the limits
        (``max_concurrency``, ``rpm``, ``tpm``) are the model's, so each job keeps an n-th of them, rounded
        down and at least 1 -- n shards together never exceed the config's limits (unless a limit is below
        n, when each job still needs one)."""
        if n == 1:
            return self
        part = lambda limit: None if limit is None else max(1, limit // n)  # noqa: E731
        return dataclasses.replace(self, max_concurrency=part(self.max_concurrency), rpm=part(self.rpm),
                                   tpm=part(self.tpm))

    @classmethod
    def from_params(cls, params: dict) -> "ModelSpec":
        """From a rule's params: the config entry with its ``name`` key added."""
        cfg = dict(params)
        return cls.from_config(cfg.pop("name"), cfg)


def gguf_path(ref: str) -> Path:
    package, _, filename = ref.partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise RuntimeError(f"local model package {package!r} is not installed (pip install {package})")
    path = Path(spec.origin).parent / filename
    if not path.is_file():
        raise RuntimeError(f"local model file {filename!r} not found in package {package!r}")
    return path


_UNPRICED: set[str] = set()


def cost_usd(litellm, model: str, usage: dict) -> float | None:
    """USD cost from litellm's (local) price map; None for models it has no price for."""
    if model in _UNPRICED or usage["prompt_tokens"] is None:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"] or 0)
        total = float(prompt + completion)
        if total == 0 and usage["prompt_tokens"]:
            raise ValueError("no price")  # litellm answers 0 for some models it has no price for
        return total
    except Exception:  # noqa: BLE001 - litellm raises several kinds for unknown models
        _UNPRICED.add(model)
        return None
