"""A small OpenAI-compatible chat server on 127.0.0.1 that can inject faults.

Each request's last user message selects a *plan*: a list of behaviours consumed
one per call (then "ok"). Behaviours: ok, 429 (with Retry-After), 500, 503,
429date (Retry-After as an HTTP date), hang (sleeps past the client timeout), reset (closes the connection), truncated
(half a response, then close), nonjson (200 with an HTML body), empty (no
content), refusal (a refusal and no content); a hostile provider that echoes the
API key it was sent (whole, and cut at many offsets) in the body, the error JSON
and the headers: echo401, echo429, echo500 (errors), echo200 (an answer that
carries the key too) and echo200json (a JSON answer whose strings carry the key
behind \\u escapes). The server counts the successful
("ok") answers per message, so a test can prove nothing was paid for twice.

Run standalone for benchmarks: ``python tests/support/llm_server.py --port 0 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import collections
import http.server
import json
import socket
import threading
import time


class State:
    def __init__(self, latency: float = 0.0, retry_after: float = 0.2, hang: float = 30.0):
        self.latency, self.retry_after, self.hang = latency, retry_after, hang
        self.plans: dict[str, list[str]] = {}
        self.ok = collections.Counter()
        self.calls = collections.Counter()
        self.auth = collections.Counter()  # Authorization headers seen
        self.bodies: list[dict] = []  # every request body, for tests that inspect what was sent
        self.received: list[float] = []  # time.monotonic() at each request's arrival
        self.responder = None  # optional callable(body) -> content of an "ok" answer
        self.by_model: dict[str, str] = {}  # behaviour of every unplanned call to a model name
        self.lock = threading.Lock()

    def next_behaviour(self, key: str, model: str = "") -> str:
        with self.lock:
            self.calls[key] += 1
            plan = self.plans.get(key) or []
            return plan.pop(0) if plan else self.by_model.get(model, "ok")


def key_echoes(key: str) -> str:
    """The key as a hostile provider might echo it: whole, in a typical message, and cut at many offsets."""
    pieces = [f"Incorrect API key provided: {key}. You can find your API key at https://example.invalid."]
    pieces += [key[i:] for i in range(0, len(key), 5)] + [key[:j] for j in range(8, len(key), 7)]
    pieces += [key[i:i + 9] for i in range(0, len(key) - 9, 3)]
    # the whole key at many offsets of a long body, so that any cut (e.g. at 300 characters) splits it
    pieces += ["x" * off + key for off in range(0, 420, 23)]
    return " | ".join(pieces)


def escaped_key(key: str) -> str:
    """``key`` as a JSON string body in which every 5th character is a \\u escape: no 8 raw characters of
    the key stand together in the text, but any JSON reader gets the whole key back."""
    return "".join(f"\\u{ord(c):04x}" if i % 5 == 4 else c for i, c in enumerate(key))


FREE_TEXT = ("text", "rationale", "evidence", "rewrite", "reason")  # fields a schema leaves free


def json_with_escaped_key(content: str, key: str) -> str:
    """A JSON answer with the escaped key appended to every free-text string (a plain text gets wrapped)."""
    try:
        value = json.loads(content)
    except ValueError:
        value = {"text": content}
    mark = "\x00KEY\x00"

    def walk(v, name=None):
        if isinstance(v, str):
            return v + " " + mark if name in FREE_TEXT else v
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return json.dumps(walk(value)).replace(json.dumps(mark)[1:-1], escaped_key(key))


def reply_text(user: str) -> str:
    return f"I hear you. That sounds hard: {user[:40]}"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small writes (headers, then body; SSE chunks) go out at once
    state: State

    def log_message(self, *args):  # quiet
        pass

    _extra_headers: dict = {}

    def _json(self, status: int, body: dict, headers: dict | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in {**self._extra_headers, **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._json(200, {"object": "list", "data": [{"id": "test", "object": "model"}]})

    def do_POST(self):
        arrived = time.monotonic()
        self._extra_headers = {}
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        user = next((m["content"] for m in reversed(body.get("messages", [])) if m["role"] == "user"), "")
        behaviour = self.state.next_behaviour(user, body.get("model", ""))
        with self.state.lock:
            self.state.auth[self.headers.get("Authorization", "")] += 1
            self.state.bodies.append(body)
            self.state.received.append(arrived)
        if self.state.latency:
            time.sleep(self.state.latency)
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        if behaviour in ("echo401", "echo429", "echo500"):
            echo = key_echoes(key)
            headers = {"X-Echo-Key": key, "WWW-Authenticate": f'Bearer error="invalid_token" key="{key}"'}
            if behaviour == "echo429":
                headers["Retry-After"] = str(self.state.retry_after)
            return self._json(int(behaviour[4:]), {"error": {"message": echo, "type": "invalid_request_error",
                                                             "param": key, "code": f"bad_key_{key[3:20]}"}},
                              headers)
        if behaviour in ("429", "429date"):
            after = str(self.state.retry_after)
            if behaviour == "429date":  # an HTTP date (RFC 9110), whole seconds
                import email.utils
                after = email.utils.formatdate(time.time() + self.state.retry_after, usegmt=True)
            return self._json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                              {"Retry-After": after})
        if behaviour in ("500", "503"):
            return self._json(int(behaviour), {"error": {"message": f"server error {behaviour}"}})
        if behaviour == "hang":
            time.sleep(self.state.hang)
            return self._json(504, {"error": {"message": "too late"}})
        if behaviour == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            return
        if behaviour == "nonjson":
            data = b"<html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        default = self.state.responder(body) if self.state.responder else reply_text(user)
        content = {"empty": "", "refusal": None}.get(behaviour, default)
        if behaviour == "echo200":
            content = f"{default} (your key: {key[2:40]})"
            self._extra_headers = {"X-Echo-Key": key, "OpenAI-Organization": key[::-1] + key}
        if behaviour == "echo200json":  # the key inside every string of a JSON answer, hidden by escapes
            content = json_with_escaped_key(default, key)
            behaviour = "echo200"
        if behaviour in ("ok", "echo200", "length"):
            with self.state.lock:
                self.state.ok[user] += 1
        self._answer(body, content, refusal="I can't help with that." if behaviour == "refusal" else None,
                     truncated=behaviour == "truncated", finish="length" if behaviour == "length" else "stop")

    def _answer(self, body, content, refusal=None, truncated=False, finish="stop"):
        """``finish``: the finish reason the provider gives ("length": the answer was cut by max_tokens)."""
        created, rid = int(time.time()), f"chatcmpl-{time.monotonic_ns()}"
        usage = {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}
        if not body.get("stream"):
            msg = {"role": "assistant", "content": content}
            if refusal:
                msg["refusal"] = refusal
            return self._json(200, {"id": rid, "object": "chat.completion", "created": created,
                                    "model": body.get("model", "test"),
                                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                                    "usage": usage})
        # a stream is chunked, so the connection is kept alive; a truncated one is delimited by
        # closing the connection, as it was, so that the cut looks like a normal end of body
        chunked = not truncated
        self.send_response(200)
        for k, v in self._extra_headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding" if chunked else "Connection", "chunked" if chunked else "close")
        self.end_headers()

        def send(data: bytes):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

        def chunk(delta, finish=None, use=None):
            c = {"id": rid, "object": "chat.completion.chunk", "created": created,
                 "model": body.get("model", "test"),
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if use is None else []}
            if use is not None:
                c["usage"] = use
            send(f"data: {json.dumps(c)}\n\n".encode())

        chunk({"role": "assistant", "content": ""})
        if refusal:
            chunk({"refusal": refusal})
        elif content:
            words = content.split(" ")
            for i, w in enumerate(words):
                chunk({"content": w + (" " if i < len(words) - 1 else "")})
                if truncated and i == len(words) // 2:
                    send(b"data: {\"id\": \"x\", \"choi")
                    self.close_connection = True
                    return
        chunk({}, finish=finish)
        chunk(None, use=usage)
        send(b"data: [DONE]\n\n")
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.close_connection = True


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024  # the default listen backlog of 5 drops connection bursts (1 s SYN retransmits)


def serve(state: State, port: int = 0):
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args()
    srv = serve(State(latency=args.latency), args.port)
    print(f"http://127.0.0.1:{srv.server_address[1]}/v1", flush=True)
    threading.Event().wait()
