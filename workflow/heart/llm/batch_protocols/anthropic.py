"""Anthropic's Message Batches (``batch: anthropic``, ``/v1/messages/batches``). litellm (1.106) retrieves
these batches but cannot create them, so all three calls are made here, over httpx. The system turn is marked
``cache_control`` (the shared prefix); a structured answer is asked for as one forced tool call whose input is
the JSON, as litellm does synchronously. Anthropic keeps nothing of the caller's: a batch a killed job
submitted is found by its request count among the batches created since the record was written (one match:
adopted; several: the job stops and says which, rather than pay twice)."""

from __future__ import annotations

import json

from heart.llm.batch_protocols.base import HTTP, chat_body, key, root
from heart.llm.models import ModelSpec
from heart.llm.request import Request

ANTHROPIC_BASE = "https://api.anthropic.com"


class AnthropicBatches(HTTP):
    """Anthropic's Message Batches, over httpx (litellm cannot create them)."""

    STATUS = {"in_progress": "in_progress", "canceling": "in_progress", "ended": "completed"}

    def __init__(self, spec: ModelSpec):
        super().__init__(spec, root(spec, ANTHROPIC_BASE),
                         {"x-api-key": key(spec) or "no-key-needed", "anthropic-version": "2023-06-01"})

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
            answered[row["custom_id"]] = chat_body(answer, usage, message.get("model"))
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
