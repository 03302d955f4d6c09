"""The providers' batch interfaces, each behind one small adapter for :mod:`heart.llm.batch`.

Every adapter answers in one vocabulary: a batch is ``{"id", "status", "request_counts": {"total",
"completed", "failed"}, ...}`` with OpenAI's statuses (validating, in_progress, completed, expired, failed,
cancelled), and its results are OpenAI-shaped ``chat.completion`` bodies per custom id (the request's
cache key), so the journal, the cache entries and the tables do not depend on the provider.

* ``openai`` -- OpenAI's Batch API (and servers that speak it) through litellm's batch functions
  (``acreate_file``, ``acreate_batch``, ``aretrieve_batch``, ``afile_content``, ``alist_batches``).
* ``anthropic`` -- Anthropic's Message Batches (``/v1/messages/batches``). litellm (1.106) retrieves these
  batches but cannot create them, so all three calls are made here, over httpx. The system turn is marked
  ``cache_control`` (the shared prefix); a structured answer is asked for as one forced tool call whose
  input is the JSON, as litellm does synchronously.
* ``gemini`` -- the Gemini API's batch mode (``models/<model>:batchGenerateContent``, inline requests, at
  most ~15 MB a batch), over httpx: litellm's batch API has no Gemini (AI Studio) batch creation.

A batch carries the journal's token where the provider keeps something of the caller's (OpenAI's
``metadata``, Gemini's ``displayName``), so a job killed between submitting and recording finds it again.
Anthropic keeps nothing: such a batch is found by its request count among the batches created since the
record was written (one match: adopted; several: the job stops and says which, rather than pay twice).
"""

from __future__ import annotations

import json
import os

from heart.llm.models import ModelSpec
from heart.llm.request import Request

PROTOCOLS = ("openai", "anthropic", "gemini")
ANTHROPIC_BASE = "https://api.anthropic.com"
GEMINI_BASE = "https://generativelanguage.googleapis.com"
GEMINI_MAX_BYTES = 15_000_000  # inline requests of one batch (the API takes 20 MB)


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _key(spec: ModelSpec) -> str | None:
    return os.environ.get(spec.api_key_env) if spec.api_key_env else None


def _root(spec: ModelSpec, default: str) -> str:
    """A server's root URL: a configured ``api_base`` without its ``/v1`` (the simulator's), or ``default``."""
    return (spec.api_base or default).rstrip("/").removesuffix("/v1")


def _chat_body(text: str, usage: dict, model: str) -> dict:
    return {"object": "chat.completion", "model": model, "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


class OpenAIBatches:
    """OpenAI's Batch API (and servers that speak it) through litellm's batch functions."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.auth = dict(custom_llm_provider="openai", api_base=spec.api_base,
                         api_key=_key(spec) or ("no-key-needed" if spec.api_base else None))
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
        import litellm
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
        import litellm

        after = None
        for _ in range(50):  # newest first, 100 a page: a token's batch is among the newest
            page = await litellm.alist_batches(limit=100, after=after, **self.auth)
            data = list(_get(page, "data") or [])
            for b in data:
                if (_get(b, "metadata") or {}).get("heart_token") == record["token"]:
                    return _openai_batch(b)
            if not data or not _get(page, "has_more"):
                return None
            after = _get(data[-1], "id")
        return None

    async def submit(self, token: str, requests: list[tuple[str, Request]], wire) -> dict:
        import litellm

        lines = [self.line(k, r, wire) for k, r in requests]
        payload = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
        upload = await litellm.acreate_file(file=(f"heart-{token}.jsonl", payload), purpose="batch", **self.auth)
        created = await litellm.acreate_batch(completion_window="24h", endpoint="/v1/chat/completions",
                                              input_file_id=_get(upload, "id"),
                                              metadata={"heart_token": token}, **self.auth)
        return _openai_batch(created)

    async def status(self, batch_id: str) -> dict:
        import litellm

        return _openai_batch(await litellm.aretrieve_batch(batch_id=batch_id, **self.auth))

    async def results(self, batch: dict) -> tuple[dict[str, dict], dict[str, str]]:
        """(custom id -> response body, for the answered) and (custom id -> error, for those that failed)."""
        import litellm

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
    out = {k: _get(obj, k) for k in fields}
    counts = out["request_counts"]
    if counts is not None and not isinstance(counts, dict):
        counts = {k: getattr(counts, k, None) for k in ("total", "completed", "failed")}
    out["request_counts"] = counts
    return out


class _HTTP:
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


class AnthropicBatches(_HTTP):
    """Anthropic's Message Batches, over httpx (litellm cannot create them)."""

    STATUS = {"in_progress": "in_progress", "canceling": "in_progress", "ended": "completed"}

    def __init__(self, spec: ModelSpec):
        super().__init__(spec, _root(spec, ANTHROPIC_BASE),
                         {"x-api-key": _key(spec) or "no-key-needed", "anthropic-version": "2023-06-01"})

    def params(self, req: Request, wire) -> dict:
        from heart.llm.wire import anthropic_cache_marks

        wire_params, _ = wire
        sent = wire_params(self.spec, req, None)
        schema = req.schema
        sent.pop("response_format", None)
        system = [m["content"] for m in req.messages if m["role"] == "system"]
        out = {"model": self.spec.model.partition("/")[2] or self.spec.model,
               "max_tokens": sent.pop("max_tokens", 1024),
               "messages": [{"role": m["role"], "content": anthropic_cache_marks(m)["content"]}
                            for m in req.messages if m["role"] != "system"],
               **{k: v for k, v in sent.items() if k in ("temperature", "top_p", "top_k", "stop_sequences")}}
        if system:
            out["system"] = [{"type": "text", "text": "\n\n".join(system), "cache_control": {"type": "ephemeral"}}]
        if schema is not None:
            out["tools"] = [{"name": "json_tool_call", "description": "The answer, as JSON.", "input_schema": schema}]
            out["tool_choice"] = {"type": "tool", "name": "json_tool_call"}
        return out

    async def submit(self, token: str, requests: list[tuple[str, Request]], wire) -> dict:
        body = {"requests": [{"custom_id": k, "params": self.params(r, wire)} for k, r in requests]}
        return self._batch((await self.call("POST", "/v1/messages/batches", body)).json())

    async def find(self, record: dict, taken=frozenset()) -> dict | None:
        """The batch this record submitted: among the batches no record names (``taken``), of its request
        count, the first created after the record was written (Anthropic keeps nothing of the caller's)."""
        page = (await self.call("GET", "/v1/messages/batches", params={"limit": 100})).json()
        # made after the record was written (or up to a second before it: the two clocks may differ a little)
        after = sorted((delta < 0, abs(delta), b["id"], b) for b in page.get("data", [])
                       if b["id"] not in taken and _total(b) == len(record["keys"])
                       and (delta := _epoch(b.get("created_at")) - record["created"]) >= -1)
        if len(after) > 1 and after[1][:2] == after[0][:2]:
            raise RuntimeError(f"batch record {record['token']}: Anthropic batches {after[0][2]} and "
                               f"{after[1][2]} of {len(record['keys'])} requests were created at the same moment "
                               "after it was written; set its batch_id by hand to the one it submitted, then "
                               "rerun (nothing was resubmitted)")
        return self._batch(after[0][3]) if after else None

    async def status(self, batch_id: str) -> dict:
        return self._batch((await self.call("GET", f"/v1/messages/batches/{batch_id}")).json())

    async def results(self, batch: dict) -> tuple[dict[str, dict], dict[str, str]]:
        url = batch.get("results_url") or f"/v1/messages/batches/{batch['id']}/results"
        answered, failed = {}, {}
        for text in (await self.call("GET", url)).text.splitlines():
            if not text.strip():
                continue
            row = json.loads(text)
            result = row.get("result") or {}
            if result.get("type") != "succeeded":
                failed[row["custom_id"]] = json.dumps(result)[:300]
                continue
            message = result.get("message") or {}
            parts = message.get("content") or []
            tool = next((p for p in parts if p.get("type") == "tool_use"), None)
            answer = json.dumps(tool.get("input"), ensure_ascii=False) if tool else "".join(
                p.get("text", "") for p in parts if p.get("type") == "text")
            u = message.get("usage") or {}
            read, write = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
            prompt = (u.get("input_tokens") or 0) + read + write
            usage = {"prompt_tokens": prompt, "completion_tokens": u.get("output_tokens"),
                     "total_tokens": prompt + (u.get("output_tokens") or 0), "cache_read_input_tokens": read,
                     "cache_creation_input_tokens": write}
            answered[row["custom_id"]] = _chat_body(answer, usage, message.get("model"))
        return answered, failed

    def _batch(self, b: dict) -> dict:
        counts = b.get("request_counts") or {}
        failed = sum(counts.get(k, 0) for k in ("errored", "canceled", "expired"))
        return {"id": b["id"], "status": self.STATUS.get(b.get("processing_status"), "in_progress"),
                "results_url": b.get("results_url"), "created_at": b.get("created_at"),
                "request_counts": {"total": _total(b), "completed": counts.get("succeeded", 0), "failed": failed}}


def _total(b: dict) -> int:
    return sum((b.get("request_counts") or {}).values())


def _epoch(stamp) -> float:
    if isinstance(stamp, (int, float)):
        return float(stamp)
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class GeminiBatches(_HTTP):
    """The Gemini API's batch mode with inline requests, over httpx."""

    STATUS = {"BATCH_STATE_PENDING": "validating", "BATCH_STATE_RUNNING": "in_progress",
              "BATCH_STATE_SUCCEEDED": "completed", "BATCH_STATE_FAILED": "failed",
              "BATCH_STATE_CANCELLED": "cancelled", "BATCH_STATE_EXPIRED": "expired"}

    def __init__(self, spec: ModelSpec):
        super().__init__(spec, _root(spec, GEMINI_BASE), {"x-goog-api-key": _key(spec) or "no-key-needed"})
        self.model = spec.model.partition("/")[2] or spec.model

    def request(self, req: Request, wire) -> dict:
        wire_params, _ = wire
        sent = wire_params(self.spec, req, None)
        sent.pop("response_format", None)
        config = {name: sent[key] for key, name in (("temperature", "temperature"), ("top_p", "topP"),
                                                     ("max_tokens", "maxOutputTokens"), ("seed", "seed"))
                  if key in sent}
        if req.schema is not None:
            config.update(responseMimeType="application/json", responseJsonSchema=req.schema)
        system = [m["content"] for m in req.messages if m["role"] == "system"]
        out = {"contents": [{"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
                            for m in req.messages if m["role"] != "system"], "generationConfig": config}
        if system:
            out["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        return out

    async def submit(self, token: str, requests: list[tuple[str, Request]], wire) -> dict:
        items = [{"request": self.request(r, wire), "metadata": {"key": k}} for k, r in requests]
        size = len(json.dumps(items))
        if size > GEMINI_MAX_BYTES:
            raise ValueError(f"{len(items)} Gemini batch requests take {size:,} bytes (at most "
                             f"{GEMINI_MAX_BYTES:,} inline): lower llm.batch_max_requests")
        body = {"batch": {"displayName": f"heart-{token}", "inputConfig": {"requests": {"requests": items}}}}
        op = (await self.call("POST", f"/v1beta/models/{self.model}:batchGenerateContent", body)).json()
        return self._batch(op)

    async def find(self, record: dict, taken=frozenset()) -> dict | None:
        page = (await self.call("GET", "/v1beta/batches", params={"pageSize": 100})).json()
        for op in page.get("operations", page.get("batches", [])):
            if (op.get("metadata") or op).get("displayName") == f"heart-{record['token']}":
                return self._batch(op)
        return None

    async def status(self, batch_id: str) -> dict:
        return self._batch((await self.call("GET", f"/v1beta/{batch_id}")).json())

    async def results(self, batch: dict) -> tuple[dict[str, dict], dict[str, str]]:
        answered, failed = {}, {}
        for item in batch.get("_responses") or []:
            key = (item.get("metadata") or {}).get("key")
            response = item.get("response")
            if key is None:
                continue
            if not response or item.get("error"):
                failed[key] = json.dumps(item.get("error") or "no response")[:300]
                continue
            candidates = response.get("candidates") or [{}]
            text = "".join(p.get("text", "") for p in (candidates[0].get("content") or {}).get("parts", [])
                           if not p.get("thought"))
            u = response.get("usageMetadata") or {}
            completion = (u.get("candidatesTokenCount") or 0) + (u.get("thoughtsTokenCount") or 0)
            usage = {"prompt_tokens": u.get("promptTokenCount"), "completion_tokens": completion,
                     "total_tokens": u.get("totalTokenCount"),
                     "prompt_tokens_details": {"cached_tokens": u.get("cachedContentTokenCount")}}
            answered[key] = _chat_body(text, usage, self.model)
        return answered, failed

    def _batch(self, op: dict) -> dict:
        meta = op.get("metadata") or op
        output = (meta.get("output") or (op.get("response") or {}).get("output") or {})
        responses = ((output.get("inlinedResponses") or {}).get("inlinedResponses")) or []
        stats = meta.get("batchStats") or {}
        total = int(stats.get("requestCount", 0) or 0)
        return {"id": op.get("name") or meta.get("name"), "status": self.STATUS.get(meta.get("state"), "in_progress"),
                "created_at": meta.get("createTime"), "_responses": responses,
                "request_counts": {"total": total, "completed": int(stats.get("successfulRequestCount", 0) or 0),
                                   "failed": int(stats.get("failedRequestCount", 0) or 0)}}


def adapter(spec: ModelSpec):
    """The batch interface of ``spec``'s provider (``spec.batch``)."""
    apis = {"openai": OpenAIBatches, "anthropic": AnthropicBatches, "gemini": GeminiBatches}
    if spec.batch not in apis:
        raise ValueError(f"model {spec.name}: batch: {spec.batch!r} is not one of {PROTOCOLS}")
    return apis[spec.batch](spec)

