"""A simulated LLM provider: an OpenAI-compatible server on 127.0.0.1 for rehearsals (SIMULATED answers, never
results). What it answers, and how it fails on purpose: ``docs/methods/simulator.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import fnmatch
import hashlib
import json
import math
import os
import socket
import time
from dataclasses import dataclass, field

from heart.simulation.batches import BatchDesk
from heart.simulation.answers import (
    canonical, cut, instance, is_judge_schema, judge_material, logprobs, normal, plain_reply, prompt_chars, schema_of,
    seeded_rng, tokens, unit, verdict)


@dataclass(frozen=True)
class Options:
    """Everything the server can be told; the CLI flags are these names with dashes."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port
    median_latency: float = 1.0  # seconds (before time_scale)
    sigma: float = 0.5  # log-normal sigma of the latency (and of the TTFT with ttft_median)
    fixed_latency: bool = False  # every call takes median_latency exactly
    ttft_fraction: float = 0.3  # time to first token as a fraction of the latency ...
    ttft_median: float | None = None  # ... or log-normal with this median (capped at the latency)
    error_rate: float = 0.01  # per attempt, on the first two attempts only
    error_statuses: tuple[int, ...] = (500, 503)
    rpm: int | None = 500  # requests per minute per model name (None/0: unlimited)
    rpm_model: dict[str, int] = field(default_factory=dict)  # NAME or pattern -> rpm
    max_concurrent: int | None = None  # in-flight requests per model name (None: unlimited)
    max_concurrent_model: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    time_scale: float = 1.0  # multiplies every duration
    stream_chunks: int = 8  # content chunks per streamed answer, at most
    judge_position_bias: float = 0.02  # quality bonus of response A (near-ties go to A in both orders)
    batch_delay: float = 2.0  # seconds from a batch's creation to its end (heart.simulation.batches)
    batch_error_rate: float = 0.0  # per request of a batch, on its first submission only
    batch_expire_rate: float = 0.0  # per batch: it expires with only its first half answered
    parent_pid: int | None = None  # exit when this process is gone (Simulator sets it)

    def args(self) -> list[str]:
        """The CLI arguments that give these options (for a subprocess)."""
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                out += [flag] if value else []
            elif isinstance(value, dict):
                for name, n in value.items():
                    out += [flag, f"{name}={n}"]
            elif isinstance(value, tuple):
                out += [flag, ",".join(map(str, value))]
            elif value is not None:
                out += [flag, str(value)]
            elif f.default is not None:  # None where the CLI's default is a limit: 0, unlimited
                out += [flag, "0"]
        return out

    def limit(self, table: dict[str, int], default: int | None, model: str) -> int | None:
        """A per-model limit: the exact name, else the first matching pattern, else the default."""
        if model in table:
            return table[model] or None
        for pattern, n in table.items():
            if fnmatch.fnmatchcase(model, pattern):
                return n or None
        return default or None


def _name_value(text: str) -> tuple[str, int]:
    name, sep, n = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=N, got {text!r}")
    return name, int(n)


def parse_args(argv: list[str] | None = None) -> Options:
    """:class:`Options` from command-line arguments."""
    d = Options()
    p = argparse.ArgumentParser(prog="python -m heart.simulation.simulator", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default=d.host)
    p.add_argument("--port", type=int, default=d.port, help="0: pick a free port")
    p.add_argument("--median-latency", type=float, default=d.median_latency, help="seconds")
    p.add_argument("--sigma", type=float, default=d.sigma, help="log-normal sigma of the latency")
    p.add_argument("--fixed-latency", action="store_true", help="every call takes --median-latency")
    p.add_argument("--ttft-fraction", type=float, default=d.ttft_fraction)
    p.add_argument("--ttft-median", type=float, default=None, help="log-normal TTFT instead of a fraction")
    p.add_argument("--error-rate", type=float, default=d.error_rate, help="per attempt (first two only)")
    p.add_argument("--error-statuses", default=",".join(map(str, d.error_statuses)),
                   help="comma-separated statuses of transient errors, e.g. 500,503,429")
    p.add_argument("--rpm", type=int, default=d.rpm, help="requests per minute per model name; 0: unlimited")
    p.add_argument("--rpm-model", type=_name_value, action="append", default=[], metavar="NAME=N",
                   help="rpm of a model name or fnmatch pattern (repeatable)")
    p.add_argument("--max-concurrent", type=int, default=None, help="in-flight requests per model name")
    p.add_argument("--max-concurrent-model", type=_name_value, action="append", default=[], metavar="NAME=N")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--time-scale", type=float, default=d.time_scale, help="multiplies every duration")
    p.add_argument("--stream-chunks", type=int, default=d.stream_chunks)
    p.add_argument("--judge-position-bias", type=float, default=d.judge_position_bias)
    p.add_argument("--batch-delay", type=float, default=d.batch_delay, help="seconds until a batch ends")
    p.add_argument("--batch-error-rate", type=float, default=d.batch_error_rate)
    p.add_argument("--batch-expire-rate", type=float, default=d.batch_expire_rate)
    p.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    a = p.parse_args(argv)
    statuses = tuple(int(s) for s in a.error_statuses.split(",") if s.strip())
    return Options(host=a.host, port=a.port, median_latency=a.median_latency, sigma=a.sigma,
                   fixed_latency=a.fixed_latency, ttft_fraction=a.ttft_fraction, ttft_median=a.ttft_median,
                   error_rate=a.error_rate, error_statuses=statuses, rpm=a.rpm or None,
                   rpm_model=dict(a.rpm_model), max_concurrent=a.max_concurrent,
                   max_concurrent_model=dict(a.max_concurrent_model), seed=a.seed, time_scale=a.time_scale,
                   stream_chunks=max(1, a.stream_chunks), judge_position_bias=a.judge_position_bias,
                   batch_delay=a.batch_delay, batch_error_rate=a.batch_error_rate,
                   batch_expire_rate=a.batch_expire_rate, parent_pid=a.parent_pid)


class Stats:
    """What the server has answered, as ``GET /stats`` reports it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.started = time.monotonic()
        self.requests = 0
        self.successes = 0
        self.errors: collections.Counter[int] = collections.Counter()
        self.per_model: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.answered: set[bytes] = set()
        self.repeated = 0
        self.in_flight = 0
        self.max_in_flight = 0

    def report(self) -> dict:
        t = os.times()
        return {
            "requests": self.requests, "successes": self.successes,
            "errors": {str(k): v for k, v in sorted(self.errors.items())},
            "per_model": {m: dict(c) for m, c in sorted(self.per_model.items())},
            "unique_successes": len(self.answered), "repeated_successes": self.repeated,
            "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
            "cpu_s": round(t.user + t.system, 4), "uptime_s": round(time.monotonic() - self.started, 3),
        }


class App:
    """The simulator as a raw ASGI application (no framework: a few ms of CPU per request at most)."""

    def __init__(self, options: Options):
        self.o = options
        self.stats = Stats()
        self.attempts: collections.Counter[bytes] = collections.Counter()
        self.windows: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self.in_flight: collections.Counter[str] = collections.Counter()
        self.models: set[str] = set()
        self.desk = BatchDesk(self)

    def reset(self) -> None:
        self.stats.reset()
        self.attempts.clear()
        self.windows.clear()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        path, method = scope["path"].rstrip("/"), scope["method"]
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            return await self.complete(await _body(receive), send)
        if method == "GET" and path == "/health":
            return await _json(send, 200, {"status": "ok"})
        if method == "GET" and path in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "simulator"} for m in sorted(self.models)]
            return await _json(send, 200, {"object": "list", "data": data})
        if path.removeprefix("/v1").startswith(("/files", "/batches", "/messages/batches")) or \
                path.startswith("/v1beta/"):
            body = await _body(receive)
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            status, payload = self.desk.route(method, path, scope.get("query_string", b"").decode(), headers, body)
            if isinstance(payload, bytes):
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/octet-stream")]})
                return await send({"type": "http.response.body", "body": payload})
            return await _json(send, status, payload)
        if method == "GET" and path == "/stats":
            return await _json(send, 200, {**self.stats.report(), **self.desk.report()})
        if method == "POST" and path == "/stats/reset":
            self.reset()
            return await _json(send, 200, {"status": "reset"})
        await _json(send, 404, _error(f"no route {method} {path}", "invalid_request_error", "not_found"))

    async def complete(self, raw: bytes, send) -> None:
        o, stats = self.o, self.stats
        try:
            body = json.loads(raw)
            model, messages = body["model"], body["messages"]
            if not isinstance(model, str) or not isinstance(messages, list):
                raise TypeError("model must be a string and messages a list")
        except (ValueError, KeyError, TypeError) as exc:
            stats.requests += 1
            stats.errors[400] += 1
            return await _json(send, 400, _error(f"bad request: {exc}", "invalid_request_error", None))
        self.models.add(model)
        stats.requests += 1
        per_model = stats.per_model[model]
        per_model["requests"] += 1
        ident = hashlib.sha256(canonical(body).encode()).digest()

        # rate limits: concurrent requests, then requests per minute (sliding window)
        now, window = time.monotonic(), 60.0 * o.time_scale
        cap = o.limit(o.max_concurrent_model, o.max_concurrent, model)
        if cap is not None and self.in_flight[model] >= cap:
            return await self._fail(send, model, 429, max(0.05, o.median_latency) * o.time_scale,
                                    f"too many concurrent requests for {model} (limit {cap})")
        rpm = o.limit(o.rpm_model, o.rpm, model)
        if rpm is not None:
            starts = self.windows[model]
            while starts and now - starts[0] >= window:
                starts.popleft()
            if len(starts) >= rpm:
                return await self._fail(send, model, 429, starts[0] + window - now,
                                        f"rate limit reached for {model}: {rpm} requests per minute")
            starts.append(now)

        self.attempts[ident] += 1
        attempt = self.attempts[ident]
        self.in_flight[model] += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            latency, ttft = self._timing(ident, attempt)
            if attempt <= 2 and o.error_statuses and unit("error", o.seed, ident.hex(), attempt) < o.error_rate:
                status = o.error_statuses[int(unit("status", o.seed, ident.hex(), attempt) * len(o.error_statuses))]
                await asyncio.sleep(ttft)
                return await self._fail(send, model, status, o.time_scale, "simulated transient error")
            await self._answer(send, body, model, messages, ident, attempt, latency, ttft)
        finally:
            self.in_flight[model] -= 1
            stats.in_flight -= 1

    def _timing(self, ident: bytes, attempt: int) -> tuple[float, float]:
        o = self.o
        if o.fixed_latency:
            latency = o.median_latency
        else:
            z = normal.inv_cdf(min(max(unit("latency", o.seed, ident.hex(), attempt), 1e-12), 1 - 1e-12))
            latency = o.median_latency * math.exp(o.sigma * z)
        if o.ttft_median is None:
            ttft = latency * o.ttft_fraction
        else:
            z = normal.inv_cdf(min(max(unit("ttft", o.seed, ident.hex(), attempt), 1e-12), 1 - 1e-12))
            ttft = min(latency, o.ttft_median * (1.0 if o.fixed_latency else math.exp(o.sigma * z)))
        return latency * o.time_scale, ttft * o.time_scale

    def content(self, body: dict) -> tuple[str, str]:
        """The answer's content and finish reason: determined by model, messages, schema and seed."""
        model, messages, schema = body["model"], body["messages"], schema_of(body)
        key = hashlib.sha256(canonical([self.o.seed, model, messages, schema]).encode()).hexdigest()
        if schema is None:
            limit = body.get("max_completion_tokens") or body.get("max_tokens")
            return cut(plain_reply(key, model), int(limit) if isinstance(limit, (int, float)) else None)
        rng = seeded_rng("schema", key)
        material = judge_material(messages) if is_judge_schema(schema) else None
        if material is not None:
            value = verdict(schema, material, model, rng, self.o.seed, self.o.judge_position_bias)
        else:
            value = instance(schema, rng)
        return json.dumps(value, ensure_ascii=False), "stop"

    async def _answer(self, send, body: dict, model: str, messages: list, ident: bytes, attempt: int,
                      latency: float, ttft: float) -> None:
        text, finish = self.content(body)
        prompt_tokens = max(1, math.ceil(prompt_chars(messages) / 4))
        completion_tokens = len(tokens(text))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        rid = f"chatcmpl-sim{ident.hex()[:20]}{attempt}"
        created = int(time.time())
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            await self._stream(send, rid, created, model, text, finish, usage if opts.get("include_usage") else None,
                               latency, ttft)
        else:
            await asyncio.sleep(latency)
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                      "logprobs": None, "finish_reason": finish}
            if body.get("logprobs"):
                k = int(body.get("top_logprobs") or 0)
                choice["logprobs"] = logprobs(text, hashlib.sha256(text.encode()).hexdigest(), k)
            await _json(send, 200, {"id": rid, "object": "chat.completion", "created": created, "model": model,
                                    "system_fingerprint": "simulator", "choices": [choice], "usage": usage})
        self._succeeded(model, ident)

    async def _stream(self, send, rid: str, created: int, model: str, text: str, finish: str,
                      usage: dict | None, latency: float, ttft: float) -> None:
        def event(delta: dict | None, finish_reason: str | None = None, with_usage: dict | None = None) -> bytes:
            chunk = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                     "system_fingerprint": "simulator",
                     "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None,
                                                           "finish_reason": finish_reason}]}
            if with_usage is not None:
                chunk["usage"] = with_usage
            return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"

        toks = tokens(text)
        n = max(1, min(self.o.stream_chunks, len(toks)))
        size = math.ceil(len(toks) / n)
        pieces = ["".join(toks[i:i + size]) for i in range(0, len(toks), size)] or [""]
        await asyncio.sleep(ttft)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        first = event({"role": "assistant", "content": ""}) + event({"content": pieces[0]})
        await send({"type": "http.response.body", "body": first, "more_body": True})
        gap = (latency - ttft) / len(pieces)
        for piece in pieces[1:]:
            await asyncio.sleep(gap)
            await send({"type": "http.response.body", "body": event({"content": piece}), "more_body": True})
        await asyncio.sleep(gap)
        tail = event({}, finish)
        if usage is not None:
            tail += event(None, with_usage=usage)
        await send({"type": "http.response.body", "body": tail + b"data: [DONE]\n\n", "more_body": False})

    def _succeeded(self, model: str, ident: bytes) -> None:
        stats = self.stats
        stats.successes += 1
        stats.per_model[model]["successes"] += 1
        if ident in stats.answered:
            stats.repeated += 1
            stats.per_model[model]["repeated_successes"] += 1
        else:
            stats.answered.add(ident)

    async def _fail(self, send, model: str, status: int, retry_after: float, message: str) -> None:
        self.stats.errors[status] += 1
        self.stats.per_model[model][str(status)] += 1
        if status != 429:
            return await _json(send, status, _error(message, "server_error", None))
        # whole seconds, as HTTP says, when durations are real; fractions when time is scaled down
        after = f"{max(1, math.ceil(retry_after))}" if self.o.time_scale >= 1 else f"{max(retry_after, 0.001):.3f}"
        await _json(send, 429, _error(message, "requests", "rate_limit_exceeded"), [(b"retry-after", after.encode())])


async def _body(receive) -> bytes:
    """A request's whole body, however many ASGI messages it came in."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _error(message: str, kind: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


async def _json(send, status: int, payload: dict, headers: list | None = None) -> None:
    data = json.dumps(payload, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


async def serve(options: Options, ready=None) -> None:
    """Serve until told to stop (SIGINT/SIGTERM) or until ``options.parent_pid`` is gone; call
    ``ready(api_base)`` once connections are accepted."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((options.host, options.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(App(options), http="h11", loop="asyncio", lifespan="off", access_log=False,
                            log_level="warning", backlog=4096, timeout_keep_alive=60, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)

    async def watch() -> None:
        while not server.started and not server.should_exit:
            await asyncio.sleep(0.01)
        if server.started and ready is not None:
            ready(f"http://{options.host}:{port}/v1")
        while options.parent_pid and not server.should_exit:
            if os.getppid() != options.parent_pid:
                server.should_exit = True  # the parent died: do not outlive it
            await asyncio.sleep(0.5)

    watcher = asyncio.ensure_future(watch())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()
        sock.close()


def main(argv: list[str] | None = None) -> None:
    options = parse_args(argv)
    asyncio.run(serve(options, ready=lambda url: print(url, flush=True)))


if __name__ == "__main__":
    main()
