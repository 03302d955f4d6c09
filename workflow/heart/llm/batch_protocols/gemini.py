"""The Gemini API's batch mode (``batch: gemini``, ``models/<model>:batchGenerateContent``, inline requests,
at most ~15 MB a batch), over httpx: litellm's batch API has no Gemini (AI Studio) batch creation. A batch
carries the journal's token in its ``displayName``."""

from __future__ import annotations

import json

from heart.llm.batch_protocols.base import HTTP, chat_body, key, root
from heart.llm.models import ModelSpec
from heart.llm.request import Request

GEMINI_BASE = "https://generativelanguage.googleapis.com"
GEMINI_MAX_BYTES = 15_000_000  # inline requests of one batch (the API takes 20 MB)


class GeminiBatches(HTTP):
    """The Gemini API's batch mode with inline requests, over httpx."""

    STATUS = {"BATCH_STATE_PENDING": "validating", "BATCH_STATE_RUNNING": "in_progress",
              "BATCH_STATE_SUCCEEDED": "completed", "BATCH_STATE_FAILED": "failed",
              "BATCH_STATE_CANCELLED": "cancelled", "BATCH_STATE_EXPIRED": "expired"}

    def __init__(self, spec: ModelSpec):
        super().__init__(spec, root(spec, GEMINI_BASE), {"x-goog-api-key": key(spec) or "no-key-needed"})
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
            answered[key] = chat_body(text, usage, self.model)
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
