"""OpenAI's Batch API (``batch: openai``), and servers that speak it, through litellm's batch functions
(``acreate_file``, ``acreate_batch``, ``aretrieve_batch``, ``afile_content``, ``alist_batches``). A batch
carries the journal's token in its ``metadata``, so a job killed between submitting and recording finds it
again."""

from __future__ import annotations

import json

from heart.llm import load_litellm
from heart.llm.batch_protocols.base import get, key
from heart.llm.models import ModelSpec
from heart.llm.request import Request


class OpenAIBatches:
    """OpenAI's Batch API (and servers that speak it) through litellm's batch functions."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.auth = dict(custom_llm_provider="openai", api_base=spec.api_base,
                         api_key=key(spec) or ("no-key-needed" if spec.api_base else None))
        self._shapes: dict = {}

    def line(self, key: str, req: Request, wire) -> dict:
        """One line of the input file: the body litellm sends for the same call synchronously (o-series
        models get their system turn as a user turn and ``max_completion_tokens``, for example), so that
        both modes ask the provider the same thing."""
        wire_params, wire_messages = wire
        messages, params = wire_messages(self.spec, req), wire_params(self.spec, req, self.spec.api_base)
        shape = self._shape(tuple(m["role"] for m in messages), params)
        body = {"model": shape["model"], "messages": [{**m, "role": r} for m, r in zip(messages, shape["roles"])],
                **{shape["names"][k]: v for k, v in params.items() if k in shape["names"]}}
        return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}

    def _shape(self, roles: tuple, params: dict) -> dict:
        """How litellm transforms a request of these roles and params for this model: the model name it
        sends, each turn's role, each param's name (a param it drops is left out). Asked of litellm once per
        shape (``return_raw_request``: the body without sending it, made with a fake key), not per request."""
        memo = (roles, json.dumps(params, sort_keys=True, default=str))
        if memo in self._shapes:
            return self._shapes[memo]
        litellm = load_litellm()
        from litellm.types.utils import CallTypes
        from litellm.utils import return_raw_request

        litellm.suppress_debug_info = True
        probe = [{"role": r, "content": f"turn {i}"} for i, r in enumerate(roles)]
        raw = return_raw_request(CallTypes.completion, dict(model=self.spec.model, messages=probe,
                                                             api_base=self.spec.api_base, **params))
        body = raw.get("raw_request_body") if isinstance(raw, dict) else None
        if not body or len(body.get("messages") or []) != len(roles):
            raise RuntimeError(f"model {self.spec.name}: litellm did not say how it sends a request "
                               f"({str((raw or {}).get('error'))[:200]}); set its batch: null")
        names = {}
        for k, v in params.items():
            sent = [name for name, value in body.items() if name not in ("model", "messages") and value == v]
            if k in body and body[k] == v:
                names[k] = k
            elif len(sent) == 1:
                names[k] = sent[0]
        shape = {"model": body["model"], "roles": [m["role"] for m in body["messages"]], "names": names}
        self._shapes[memo] = shape
        return shape

    async def find(self, record: dict, taken=frozenset()) -> dict | None:
        """The provider's batch carrying the record's token in its metadata."""
        litellm = load_litellm()

        after = None
        for _ in range(50):  # newest first, 100 a page: a token's batch is among the newest
            page = await litellm.alist_batches(limit=100, after=after, **self.auth)
            data = list(get(page, "data") or [])
            for b in data:
                if (get(b, "metadata") or {}).get("heart_token") == record["token"]:
                    return _openai_batch(b)
            if not data or not get(page, "has_more"):
                return None
            after = get(data[-1], "id")
        return None

    async def submit(self, token: str, requests: list[tuple[str, Request]], wire) -> dict:
        litellm = load_litellm()

        lines = [self.line(k, r, wire) for k, r in requests]
        payload = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
        upload = await litellm.acreate_file(file=(f"heart-{token}.jsonl", payload), purpose="batch", **self.auth)
        created = await litellm.acreate_batch(completion_window="24h", endpoint="/v1/chat/completions",
                                              input_file_id=get(upload, "id"),
                                              metadata={"heart_token": token}, **self.auth)
        return _openai_batch(created)

    async def status(self, batch_id: str) -> dict:
        litellm = load_litellm()

        return _openai_batch(await litellm.aretrieve_batch(batch_id=batch_id, **self.auth))

    async def results(self, batch: dict) -> tuple[dict[str, dict], dict[str, str]]:
        """(custom id -> response body, for the answered) and (custom id -> error, for those that failed)."""
        litellm = load_litellm()

        answered, failed = {}, {}
        for field in ("output_file_id", "error_file_id"):
            if not batch.get(field):
                continue
            content = await litellm.afile_content(file_id=batch[field], **self.auth)
            raw = getattr(content, "content", content)
            for text in (raw.decode() if isinstance(raw, bytes) else str(raw)).splitlines():
                if not text.strip():
                    continue
                row = json.loads(text)
                response, error = row.get("response") or {}, row.get("error")
                if response.get("status_code") == 200 and not error:
                    answered[row["custom_id"]] = response.get("body") or {}
                else:
                    failed[row["custom_id"]] = json.dumps(error or response.get("body"))[:300]
        return answered, failed


def _openai_batch(obj) -> dict:
    fields = ("id", "status", "output_file_id", "error_file_id", "request_counts", "created_at")
    out = {k: get(obj, k) for k in fields}
    counts = out["request_counts"]
    if counts is not None and not isinstance(counts, dict):
        counts = {k: getattr(counts, k, None) for k in ("total", "completed", "failed")}
    out["request_counts"] = counts
    return out
