"""heart.llm.pacing: rate limits per window and the pacing of a local model's calls."""

from pathlib import Path

import pytest

from heart.llm.pacing import Pacer, RateLimiter


ROOT = Path(__file__).resolve().parents[2]


def test_rate_limiter_requests_and_tokens_per_window():
    import asyncio
    import time as _time

    async def starts(limiter, tokens, n):
        t0, out = _time.monotonic(), []
        for _ in range(n):
            await limiter.wait(tokens)
            out.append(round(_time.monotonic() - t0, 1))
        return out

    # 2 requests per 0.5 s window: the third waits for the window to pass
    assert asyncio.run(starts(RateLimiter(rpm=2, window=0.5), 0, 3)) == [0.0, 0.0, 0.5]
    # 250 tokens per 0.5 s window and 100-token calls: two fit, the third waits
    assert asyncio.run(starts(RateLimiter(rpm=None, tpm=250, window=0.5), 100, 3)) == [0.0, 0.0, 0.5]
    # unlimited: no waiting at all
    assert asyncio.run(starts(RateLimiter(None, None), 10**6, 5)) == [0.0] * 5


def test_pacer_spaces_starts_by_the_cpu_a_call_costs():
    import asyncio
    import time as _time

    cpu = [5.0]
    pacer = Pacer(initial=0.05, low=0.001, high=0.2, warmup=4, cpu_clock=lambda: cpu[0])

    async def starts(n):
        out = []
        for _ in range(n):
            await pacer.wait()
            out.append(_time.monotonic())
        return out

    # before `warmup` calls have finished after the first, starts are `initial` apart (none waits for the first)
    first = asyncio.run(starts(5))
    gaps = [b - a for a, b in zip(first, first[1:])]
    assert min(gaps) >= 0.049 and max(gaps) < 0.15, gaps
    # the first answer (a process's first call costs litellm a lot of CPU) starts the count
    pacer.finished_one()
    asyncio.run(starts(4))
    # since then 4 started and 4 finished with 0.6 s of CPU: a call in flight counts half, so that is
    # (4 + 4) / 2 = 4 calls, 0.15 s a call
    cpu[0] = 5.0 + 0.6
    for _ in range(4):
        pacer.finished_one()
    assert pacer.gap == pytest.approx(0.15)
    cpu[0] = 5.0 + 100
    pacer.finished_one()
    assert pacer.gap == 0.2  # within [low, high]
    cpu[0] = 5.0
    pacer.finished_one()
    assert pacer.gap == 0.001
