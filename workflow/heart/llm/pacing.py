"""When a call may start: a model's rate limits, the spacing of a job's starts, and Retry-After."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import math
import time

from heart.llm.decoding import resolved_params
from heart.llm.models import ModelSpec
from heart.llm.request import Request


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits over a sliding window.

    A call waits until starting it keeps both the number of starts and the tokens
    booked in the last ``window`` seconds within the limits (None: unlimited).
    Tokens are booked up front from an estimate (prompt characters / 4 plus
    ``max_tokens``), since the real count is known only after the call.
    """

    def __init__(self, rpm: int | None, tpm: int | None = None, window: float = 60.0):
        self.rpm, self.tpm, self.window = rpm, tpm, window
        self.log: list[tuple[float, int]] = []  # (start time, booked tokens)
        self.lock = asyncio.Lock()

    async def wait(self, tokens: int = 0) -> None:
        if not self.rpm and not self.tpm:
            return
        if self.tpm and tokens > self.tpm:
            tokens = self.tpm  # a single call larger than the budget still goes, alone
        async with self.lock:
            while True:
                now = time.monotonic()
                self.log = [(t, n) for t, n in self.log if now - t < self.window]
                fits_rpm = not self.rpm or len(self.log) < self.rpm
                fits_tpm = not self.tpm or sum(n for _, n in self.log) + tokens <= self.tpm
                if fits_rpm and fits_tpm:
                    self.log.append((now, tokens))
                    return
                await asyncio.sleep(self.window - (now - self.log[0][0]) + 0.01)


class Pacer:
    """Spaces the starts of a job's calls by the client CPU a call costs.

    Every call costs this process CPU: litellm builds the request (in a worker thread), then parses and
    prices the answer, ~5-8 ms a call on this project's 2-core machine. Calls started together are sent
    together and answered together; their answers then queue on the event loop behind each other, and the
    calls that take their places are sent only once the whole wave is handled, so the waves never spread
    out and every round trip costs the latency plus a wave's CPU. Starts spaced by the CPU a call costs keep
    the calls spread over the round trip, and each answer is handled as it comes (tests/benchmarks/
    bench_llm.py, concurrency 64 against a 1 s server, 640 calls: 80-89 % of the ideal rate before, 93.5-94.0 %
    paced; 96.5 % over 2,560 calls, where the one-off ramp of 64 spaced starts weighs less).

    The spacing is the process CPU per call since the first answer (litellm's first call in a process
    builds a lot, ~0.5 s), ``initial`` until ``warmup`` more calls have finished; a call in flight counts
    half, since it has cost the CPU of its request but not yet that of its answer; kept within
    ``[low, high]`` seconds. A process cannot do more than one call per that CPU time anyway (the
    interpreter lock runs it on one core).
    """

    def __init__(self, initial: float = 0.008, low: float = 0.0005, high: float = 0.05, warmup: int = 16,
                 cpu_clock=time.process_time):
        self.gap, self.low, self.high, self.warmup, self.cpu_clock = initial, low, high, warmup, cpu_clock
        self.next_start = 0.0
        self.started, self.finished = 0, 0
        self.since = None  # (CPU, started, finished) at the first answer
        self.lock = asyncio.Lock()  # in turn (FIFO), each spaced from the previous start as it happened

    def finished_one(self) -> None:
        self.finished += 1
        if self.since is None:
            self.since = (self.cpu_clock(), self.started, self.finished)
            return
        cpu0, started0, finished0 = self.since
        if self.finished - finished0 >= self.warmup:
            calls = ((self.started - started0) + (self.finished - finished0)) / 2
            self.gap = min(self.high, max(self.low, (self.cpu_clock() - cpu0) / calls))

    async def wait(self) -> None:
        async with self.lock:
            delay = self.next_start - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            # from the actual start: a loop held up (litellm's first call builds a lot) does not let
            # the starts that were due meanwhile go all at once
            self.next_start = time.monotonic() + self.gap
            self.started += 1


def token_estimate(spec: "ModelSpec", req: "Request") -> int:
    chars = sum(len(m.get("content") or "") for m in req.messages)
    return chars // 4 + int(resolved_params(spec, req).get("max_tokens", 256))


def retry_after(exc) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    return parse_retry_after(value)


def parse_retry_after(value, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date (RFC 9110 §10.2.3).

    A date in the past gives 0; anything unreadable gives None (the caller backs off on its own).
    """
    if value is None:
        return None
    value = str(value).strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT; a date without a zone is read as such
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)
