"""The simulator's batch desk: OpenAI's Files and Batch API, answered from the same deterministic content.

``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/<id>/content``, ``POST /v1/batches``,
``GET /v1/batches/<id>``, ``GET /v1/batches`` (newest first, ``limit``/``after``, ``has_more``).

* A batch is ``validating``, then ``in_progress``, then ends ``--batch-delay`` seconds after its creation
  (times ``--time-scale``): ``completed``, or ``expired`` at ``--batch-expire-rate`` (decided from its input
  file's hash), when only the first half of its requests (rounded up) are answered.
* Each answer is the chat answer the same request would get synchronously (:meth:`App.content`), so a run
  gives the same tables in both modes; a request fails (an error-file line, status 500) at
  ``--batch-error-rate``, decided from its hash and how often it was submitted: a resubmission succeeds.
* Counters (in ``GET /stats``): ``batch_requests`` submitted, ``batch_resubmitted`` (requests submitted again
  after an earlier batch answered them: paid twice; a client that loses nothing keeps this at 0) and
  ``batch_retried`` (submitted again after an earlier batch left them unanswered: expected).
"""

from __future__ import annotations

import collections
import hashlib
import json
import time
from email.parser import BytesParser
from email.policy import HTTP

from heart.simulation.answers import canonical, prompt_chars, tokens, unit


class BatchDesk:
    def __init__(self, app):
        self.app = app
        self.files: dict[str, bytes] = {}
        self.file_meta: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.submitted: collections.Counter[bytes] = collections.Counter()
        self.answered: set[bytes] = set()
        self.counts = collections.Counter()
        self.where: dict[bytes, list[int]] = collections.defaultdict(list)  # batch numbers a request was in
        self.examples: list[dict] = []  # the first requests resubmitted after an answer, for the report

    def report(self) -> dict:
        return {"batch_requests": self.counts["requests"], "batch_resubmitted": self.counts["resubmitted"],
                "batch_retried": self.counts["retried"], "batches": len(self.batches),
                "batch_resubmitted_examples": self.examples}

    # --- routes -----------------------------------------------------------------------------------
    def route(self, method: str, path: str, query: str, headers: dict, body: bytes) -> tuple[int, dict | bytes]:
        if path.startswith("/v1/messages/batches"):
            return self.anthropic(method, path.removeprefix("/v1/messages/batches").strip("/"), body)
        if path.startswith("/v1beta/"):
            return self.gemini(method, path.removeprefix("/v1beta/"), body)
        parts = path.removeprefix("/v1").strip("/").split("/")
        if method == "POST" and parts == ["files"]:
            return self.upload(headers.get("content-type", ""), body)
        if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            data = self.files.get(parts[1])
            return (200, data) if data is not None else (404, _error(f"no file {parts[1]}"))
        if method == "POST" and parts == ["batches"]:
            return self.create(json.loads(body or b"{}"))
        if method == "GET" and parts == ["batches"]:
            return 200, self.listing(query)
        if method == "GET" and len(parts) == 2 and parts[0] == "batches":
            batch = self.batches.get(parts[1])
            return (200, self.advance(batch)) if batch else (404, _error(f"no batch {parts[1]}"))
        return 404, _error(f"no route {method} {path}")

    def upload(self, content_type: str, body: bytes) -> tuple[int, dict]:
        message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
        data, filename, purpose = None, "upload.jsonl", "batch"
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                data, filename = part.get_payload(decode=True), part.get_filename() or filename
            elif name == "purpose":
                purpose = part.get_payload(decode=True).decode()
        if data is None:
            return 400, _error("no file in the upload")
        fid = "file-" + hashlib.sha256(data).hexdigest()[:24] + f"{len(self.files)}"
        self.files[fid] = data
        self.file_meta[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                               "filename": filename, "purpose": purpose, "status": "processed"}
        return 200, self.file_meta[fid]

    def create(self, req: dict) -> tuple[int, dict]:
        data = self.files.get(req.get("input_file_id", ""))
        if data is None:
            return 400, _error(f"input file {req.get('input_file_id')!r} not found")
        lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        return 200, self.public(self.open(lines, req, data))

    def open(self, lines: list[dict], req: dict, data: bytes, protocol: str = "openai") -> dict:
        """A new batch of ``lines`` ({"custom_id", "body": an OpenAI chat body}), counted per request."""
        for x in lines:
            ident = self.ident(x["body"])
            self.counts["requests"] += 1
            if self.submitted[ident]:
                again = ident in self.answered
                self.counts["resubmitted" if again else "retried"] += 1
                if again and len(self.examples) < 5:
                    self.examples.append({"custom_id": x["custom_id"], "batches": self.where[ident]})
            self.where[ident].append(len(self.batches))
            self.submitted[ident] += 1
        now = time.time()
        bid = f"batch_sim{len(self.batches):06d}{hashlib.sha256(data).hexdigest()[:10]}"
        self.batches[bid] = {
            "id": bid, "object": "batch", "endpoint": req.get("endpoint", "/v1/chat/completions"), "errors": None,
            "input_file_id": req.get("input_file_id"), "completion_window": req.get("completion_window", "24h"),
            "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": int(now),
            "in_progress_at": None, "expires_at": int(now + 86400), "completed_at": None, "expired_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": req.get("metadata") or {}, "_lines": lines, "_t0": now, "_protocol": protocol,
            "_results": []}
        if protocol != "openai":
            self.batches[bid]["input_file_id"] = hashlib.sha256(data).hexdigest()[:24] + bid
        return self.batches[bid]

    def listing(self, query: str) -> dict:
        args = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        limit, after = int(args.get("limit", 20)), args.get("after")
        ordered = sorted((b for b in self.batches.values() if b["_protocol"] == "openai"), key=lambda b: b["_t0"],
                         reverse=True)
        if after:
            ids = [b["id"] for b in ordered]
            ordered = ordered[ids.index(after) + 1:] if after in ids else []
        page = [self.public(self.advance(b)) for b in ordered[:limit]]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": len(ordered) > limit}

    # --- the batch's life ---------------------------------------------------------------------------
    def ident(self, body: dict) -> bytes:
        return hashlib.sha256(canonical(body).encode()).digest()

    def advance(self, batch: dict) -> dict:
        o = self.app.o
        age = time.time() - batch["_t0"]
        delay = o.batch_delay * o.time_scale
        if batch["status"] in ("validating", "in_progress"):
            if age >= delay:
                self.finish(batch)
            elif age >= delay / 4:
                batch["status"] = "in_progress"
                batch["in_progress_at"] = batch["in_progress_at"] or int(time.time())
        return self.public(batch)

    def finish(self, batch: dict) -> None:
        o, lines = self.app.o, batch["_lines"]
        expired = unit("expire", o.seed, batch["input_file_id"]) < o.batch_expire_rate
        served = lines[: (len(lines) + 1) // 2] if expired else lines
        out, err = [], []
        for x in served:
            ident = self.ident(x["body"])
            if unit("batch-error", o.seed, ident.hex(), self.submitted[ident]) < o.batch_error_rate:
                batch["_results"].append((x["custom_id"], None, None))
                err.append({"id": f"req_{ident.hex()[:12]}", "custom_id": x["custom_id"],
                            "response": {"status_code": 500, "request_id": ident.hex()[:16],
                                         "body": _error("simulated failure of one batch request")}, "error": None})
                continue
            body = x["body"]
            text, finish = self.app.content(body)
            prompt = max(1, -(-prompt_chars(body["messages"]) // 4))
            completion = len(tokens(text))
            answer = {"id": f"chatcmpl-simb{ident.hex()[:20]}", "object": "chat.completion",
                      "created": int(time.time()), "model": body["model"], "system_fingerprint": "simulator",
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                                   "logprobs": None, "finish_reason": finish}],
                      "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                "total_tokens": prompt + completion}}
            batch["_results"].append((x["custom_id"], text, answer["usage"]))
            out.append({"id": f"req_{ident.hex()[:12]}", "custom_id": x["custom_id"],
                        "response": {"status_code": 200, "request_id": ident.hex()[:16], "body": answer},
                        "error": None})
            self.app._succeeded(body["model"], ident)
            self.answered.add(ident)
        for field, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"file-out-{batch['id']}-{field[:3]}"
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[field] = fid
        now = int(time.time())
        batch.update(status="expired" if expired else "completed", completed_at=None if expired else now,
                     expired_at=now if expired else None,
                     request_counts={"total": len(lines), "completed": len(out), "failed": len(err)})

    @staticmethod
    def public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}


    # --- Anthropic's Message Batches ----------------------------------------------------------------------
    def anthropic(self, method: str, rest: str, body: bytes) -> tuple[int, dict | bytes]:
        parts = [p for p in rest.split("/") if p]
        if method == "POST" and not parts:
            reqs = json.loads(body or b"{}").get("requests") or []
            lines = [{"custom_id": r["custom_id"], "body": _from_anthropic(r["params"])} for r in reqs]
            return 200, self.anthropic_view(self.open(lines, {}, body, "anthropic"))
        if method == "GET" and not parts:
            mine = sorted((b for b in self.batches.values() if b["_protocol"] == "anthropic"),
                          key=lambda b: b["_t0"], reverse=True)
            return 200, {"data": [self.anthropic_view(b) for b in mine[:100]], "has_more": len(mine) > 100}
        batch = self.batches.get(parts[0]) if parts else None
        if batch is None or batch["_protocol"] != "anthropic":
            return 404, _error(f"no message batch {rest}")
        self.advance(batch)
        if method == "GET" and parts[1:] == ["results"]:
            return 200, "".join(json.dumps(row) + "\n" for row in self.anthropic_results(batch)).encode()
        return 200, self.anthropic_view(batch)

    def anthropic_view(self, b: dict) -> dict:
        ended = b["status"] in ("completed", "expired")
        counts = {"processing": 0 if ended else len(b["_lines"]), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        if ended:
            got = {cid: text for cid, text, _ in b["_results"]}
            for x in b["_lines"]:
                text = got.get(x["custom_id"], "missing")
                counts["expired" if text == "missing" else "errored" if text is None else "succeeded"] += 1
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(b["_t0"])) + f".{int(b['_t0'] % 1 * 1e6):06d}Z"
        return {"id": b["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": stamp, "ended_at": stamp if ended else None,
                "results_url": f"/v1/messages/batches/{b['id']}/results" if ended else None}

    def anthropic_results(self, b: dict):
        got = {cid: (text, usage) for cid, text, usage in b["_results"]}
        for x in b["_lines"]:
            if x["custom_id"] not in got:
                yield {"custom_id": x["custom_id"], "result": {"type": "expired"}}
                continue
            text, usage = got[x["custom_id"]]
            if text is None:
                yield {"custom_id": x["custom_id"], "result": {"type": "errored", "error": {
                    "type": "api_error", "message": "simulated failure of one batch request"}}}
                continue
            content = ([{"type": "tool_use", "id": "toolu_sim", "name": "json_tool_call", "input": json.loads(text)}]
                       if x["body"].get("response_format") else [{"type": "text", "text": text}])
            yield {"custom_id": x["custom_id"], "result": {"type": "succeeded", "message": {
                "id": "msg_sim", "type": "message", "role": "assistant", "model": x["body"]["model"],
                "content": content, "stop_reason": "end_turn",
                "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}}

    # --- the Gemini API's batch mode ----------------------------------------------------------------------
    def gemini(self, method: str, rest: str, body: bytes) -> tuple[int, dict | bytes]:
        if method == "POST" and rest.startswith("models/") and rest.endswith(":batchGenerateContent"):
            model = rest.removeprefix("models/").removesuffix(":batchGenerateContent")
            spec = json.loads(body or b"{}").get("batch") or {}
            items = ((spec.get("inputConfig") or {}).get("requests") or {}).get("requests") or []
            lines = [{"custom_id": (it.get("metadata") or {}).get("key"), "body": _from_gemini(model, it["request"])}
                     for it in items]
            batch = self.open(lines, {}, body, "gemini")
            batch["_display"] = spec.get("displayName")
            return 200, self.gemini_view(batch)
        if method == "GET" and rest == "batches":
            mine = [b for b in self.batches.values() if b["_protocol"] == "gemini"]
            return 200, {"operations": [self.gemini_view(b) for b in sorted(mine, key=lambda b: -b["_t0"])]}
        batch = self.batches.get(rest.removeprefix("batches/"))
        if method == "GET" and batch is not None and batch["_protocol"] == "gemini":
            self.advance(batch)
            return 200, self.gemini_view(batch)
        return 404, _error(f"no route {method} /v1beta/{rest}")

    def gemini_view(self, b: dict) -> dict:
        state = {"validating": "BATCH_STATE_PENDING", "in_progress": "BATCH_STATE_RUNNING",
                 "completed": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED"}[b["status"]]
        done = b["status"] in ("completed", "expired")
        ok = sum(1 for _, text, _ in b["_results"] if text is not None)
        meta = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                "name": f"batches/{b['id']}", "displayName": b.get("_display"), "state": state,
                "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b["_t0"])),
                "batchStats": {"requestCount": str(len(b["_lines"])), "successfulRequestCount": str(ok),
                               "failedRequestCount": str(len(b["_results"]) - ok)}}
        op = {"name": f"batches/{b['id']}", "metadata": meta, "done": done}
        if done:
            rows = []
            for cid, text, usage in b["_results"]:
                if text is None:
                    rows.append({"error": {"code": 500, "message": "simulated failure"}, "metadata": {"key": cid}})
                    continue
                rows.append({"metadata": {"key": cid}, "response": {
                    "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
                    "usageMetadata": {"promptTokenCount": usage["prompt_tokens"],
                                      "candidatesTokenCount": usage["completion_tokens"],
                                      "totalTokenCount": usage["total_tokens"]}}})
            meta["output"] = {"inlinedResponses": {"inlinedResponses": rows}}
        return op


def _from_anthropic(params: dict) -> dict:
    """An Anthropic request as the OpenAI chat body the same call sends synchronously here."""
    system = "".join(block.get("text", "") for block in params.get("system") or [])
    body = {"model": params["model"], "messages": ([{"role": "system", "content": system}] if system else [])
            + [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                else "".join(b.get("text", "") for b in m["content"])} for m in params.get("messages", [])],
            "max_tokens": params.get("max_tokens")}
    if params.get("tools"):
        body["response_format"] = {"type": "json_object", "schema": params["tools"][0]["input_schema"]}
    return body


def _from_gemini(model: str, request: dict) -> dict:
    system = "".join(p.get("text", "") for p in (request.get("systemInstruction") or {}).get("parts", []))
    messages = [{"role": "system", "content": system}] if system else []
    for c in request.get("contents") or []:
        messages.append({"role": "assistant" if c.get("role") == "model" else "user",
                         "content": "".join(p.get("text", "") for p in c.get("parts", []))})
    config = request.get("generationConfig") or {}
    body = {"model": model, "messages": messages, "max_tokens": config.get("maxOutputTokens")}
    if config.get("responseJsonSchema") is not None:
        body["response_format"] = {"type": "json_object", "schema": config["responseJsonSchema"]}
    return body


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
