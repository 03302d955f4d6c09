"""What stands between the open internet and the annotation app: security headers on every response, rate
limits per link and per address, and bounded request heads and bodies.

* :class:`Guard` (ASGI middleware, outermost in the app) adds the security headers to *every* response the
  app sends -- a 404, 405, 400 or 413 as much as a page -- and answers a request over its limits with a small
  429 before any routing, form parsing or store access, so a flood costs little. Limits are token buckets:
  per client address (every request) and per person's secret link (``/p/<x>``, ``/c/<x>``: their pages and
  posts). A normal person makes a few requests a minute; a flood of one link is cut off after its burst
  while other people go on. A study link (``/s/<x>``) is shared by every participant of a role, who may all
  arrive at once when a study opens, so only the per-address limit applies to it. Behind a reverse proxy,
  the client address is the proxy's forwarded one
  only when the proxy is trusted (``serve --proxy``: uvicorn's proxy-headers handling, which runs before this
  middleware), else the TCP peer's.
* :class:`BoundedH11Protocol` (uvicorn's HTTP/1.1 protocol) closes a connection that has not sent a whole
  request head within ``HEAD_TIMEOUT_S`` of connecting or of its last response: half-open connections
  (a slowloris) do not pile up. uvicorn itself only times out an idle connection after a response.
  The request body has its own bound in the app (a form must arrive within ``BODY_TIMEOUT_S``).
"""

from __future__ import annotations

import time

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_RAW_HEADERS = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
#: (rate per second, burst) of each limit; a test or a study with its own needs passes others to create_app
LIMITS = {"address": (20.0, 60), "link": (4.0, 30)}
HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0
_LINK_KINDS = {"p", "c"}  # not "s": a study link is everyone's
_TOO_MANY = (b"<!doctype html><title>Slow down</title><h1>Too many requests</h1>"
             b"<p>Wait a few seconds, then reload the page.</p>")


class Buckets:
    """Token buckets by key: ``rate`` tokens a second up to ``burst``; :meth:`take` spends one if there is."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic, max_keys: int = 100_000):
        self.rate, self.burst, self.clock, self.max_keys = float(rate), float(burst), clock, max_keys
        self.state: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> bool:
        now = self.clock()
        tokens, then = self.state.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if len(self.state) >= self.max_keys and key not in self.state:
            self._prune(now)
        if tokens < 1:
            self.state[key] = (tokens, now)
            return False
        self.state[key] = (tokens - 1, now)
        return True

    def _prune(self, now: float) -> None:
        """Forget the buckets that have refilled (they hold no information)."""
        full = [k for k, (t, then) in self.state.items() if t + (now - then) * self.rate >= self.burst]
        for k in full:
            del self.state[k]


def link_of(path: str) -> str | None:
    """The secret of a person's link path (``/p/<x>/...`` -> ``p/<x>``), else None."""
    parts = path.split("/", 3)
    return f"{parts[1]}/{parts[2]}" if len(parts) > 2 and parts[1] in _LINK_KINDS and parts[2] else None


class Guard:
    """ASGI middleware: security headers on every response, and the rate limits (see the module's text)."""

    def __init__(self, app, limits: dict | None = None, clock=time.monotonic):
        self.app = app
        limits = {**LIMITS, **(limits or {})}
        self.buckets = {name: Buckets(*limits[name], clock=clock) for name in ("address", "link")}
        self.refused = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *[(k, v) for k, v in _RAW_HEADERS if k not in present]]
            await send(message)

        address = (scope.get("client") or ("unknown", 0))[0]
        link = link_of(scope.get("path", ""))
        if not self.buckets["address"].take(address) or (link and not self.buckets["link"].take(link)):
            self.refused += 1
            await send_with_headers({"type": "http.response.start", "status": 429, "headers": [
                (b"content-type", b"text/html; charset=utf-8"), (b"retry-after", b"5"),
                (b"content-length", str(len(_TOO_MANY)).encode())]})
            await send({"type": "http.response.body", "body": _TOO_MANY})
            return None
        return await self.app(scope, receive, send_with_headers)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head has not arrived within
    :data:`HEAD_TIMEOUT_S` of connecting or of the last response (see the module's text)."""

    head_timeout = HEAD_TIMEOUT_S

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def _arm(self) -> None:
        waiting_for = self.cycle  # a new request replaces the cycle; the same one means no head arrived
        self.loop.call_later(self.head_timeout, self._expire, waiting_for)

    def _expire(self, waiting_for) -> None:
        if self.cycle is waiting_for and not self.transport.is_closing():
            self.transport.close()
