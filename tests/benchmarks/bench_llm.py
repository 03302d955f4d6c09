"""Benchmark of heart.llm (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_llm.py

1. Throughput against tests/support/llm_server.py with a fixed 1 s latency (the realistic regime): calls at
   concurrency 64 vs the ideal (concurrency / latency), non-streamed (judges, taggers: the target is
   >= 95 % of ideal) and streamed (completions, for their time to first token), with the client's CPU
   time per call; 640 calls (10 round trips, as first measured in the issue) and 2,560; in one process,
   and in 2 processes of concurrency 32 each (a stage's ``shards: 2`` on this 2-core machine); and a
   sequential loop.
2. 42,000 cached lookups (the paper's number of pairwise comparisons).
3. The same 42,000 as judge-sized requests (~2 KB of material, ~500-character answers) answered from
   the cache by run_requests with three API keys in the environment: what chat-token neutralisation
   and key redaction add to a fully cached paper-scale stage.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "workflow")]

from heart.llm.cache import ResponseCache, cache_key  # noqa: E402
from heart.llm.engine import run_requests  # noqa: E402
from heart.llm.models import ModelSpec  # noqa: E402
from heart.llm.request import Request  # noqa: E402

LATENCY = 1.0


def specs(base, concurrency, stream=True):
    return {"m": ModelSpec.from_config("m", dict(model="openai/test", api_base=base, params={"temperature": 0},
                                                     max_concurrency=concurrency, timeout=30, max_retries=0,
                                                     stream=stream))}


def requests(n, tag, stream=False):
    return [Request(id=f"{tag}{i}", model="m", messages=({"role": "user", "content": f"{tag} {i}"},),
                        template_version="bench", stream=stream) for i in range(n)]


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def worker(base, tag, n, concurrency, go, stream):
    """One client process (a shard job): warm up, wait for the common start, run, print its times."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        run_requests(specs(base, 1), requests(2, f"warm{tag}"), ResponseCache(tmp))
        reqs = requests(n, tag, stream)
        time.sleep(max(0.0, go - time.time()))
        cpu, start = time.process_time(), time.time()
        run_requests(specs(base, concurrency, stream), reqs, ResponseCache(tmp))
        print(json.dumps({"start": start, "end": time.time(), "cpu": time.process_time() - cpu}), flush=True)


def in_processes(base, processes, n, concurrency, stream=False):
    """``n`` calls at total ``concurrency`` split over ``processes`` client processes started together:
    (wall seconds from the first start to the last end, client CPU seconds per call)."""
    import json

    go = time.time() + 10  # all imported and warmed up by then
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", base, f"p{processes}s{stream}n{n}w{i}_",
                               str(n // processes), str(concurrency // processes), str(go), str(int(stream))],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for i in range(processes)]
    runs = [json.loads(p.communicate()[0]) for p in procs]
    wall = max(r["end"] for r in runs) - min(r["start"] for r in runs)
    return wall, sum(r["cpu"] for r in runs) / n


def main():
    # the server runs in its own process, so it does not share the client's interpreter lock
    server = subprocess.Popen([sys.executable, str(HERE.parent / "support" / "llm_server.py"), "--latency",
                               str(LATENCY)],
                              stdout=subprocess.PIPE, text=True)
    base = server.stdout.readline().strip()
    # warm up (litellm's first call imports and builds a lot)
    with tempfile.TemporaryDirectory() as tmp:
        run_requests(specs(base, 1), requests(2, "warm"), ResponseCache(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "c")
        n_seq = 5
        seq = timed(lambda: run_requests(specs(base, 1), requests(n_seq, "seq"), cache))
        seq_rps = n_seq / seq
        print(f"sequential loop: {n_seq} calls in {seq:.2f} s = {seq_rps:.2f} calls/s (ideal {1 / LATENCY:.1f})")
        conc = 64
        ideal = conc / LATENCY
        for stream, n_par, processes in ((False, 640, 1), (False, 640, 2), (False, 2560, 1), (False, 2560, 2),
                                         (True, 640, 1), (True, 640, 2)):
            par, cpu = in_processes(base, processes, n_par, conc, stream)
            par_rps = n_par / par
            mode = "streamed (TTFT measured)" if stream else "non-streamed"
            print(f"concurrency {conc} in {processes} process{'es' if processes > 1 else ''}, {mode}: "
                  f"{n_par} calls in {par:.2f} s = {par_rps:.1f} calls/s; "
                  f"ideal {ideal:.0f} calls/s -> {100 * par_rps / ideal:.1f} % of ideal"
                  + (" (target >= 95 %)" if not stream else "")
                  + f"; client CPU {1000 * cpu:.1f} ms per call", flush=True)

        # 42,000 cached lookups
        big = ResponseCache(Path(tmp) / "big")
        spec = specs(base, 1)["m"]
        reqs = requests(42_000, "cached")
        entry = {"model": "openai/test", "text": "x", "parsed": None, "usage": {}, "cost": None,
                 "ttft_s": 0.1, "latency_s": 0.2}
        keys = [cache_key(spec, r) for r in reqs]
        for k in keys:
            big.put(k, entry)
        lookup = timed(lambda: [big.get(cache_key(spec, r)) for r in reqs])
        print(f"42,000 cached lookups (key + read): {lookup:.2f} s")
        full = timed(lambda: run_requests(specs(base, 32), reqs, big))
        print(f"42,000 requests answered from the cache by run_requests: {full:.2f} s")
    server.terminate()
    paper_scale_cached()


def paper_scale_cached():
    import os
    import random

    rng = random.Random(1)
    words = "I hear you and that sounds really hard , it makes sense to feel overwhelmed when work piles up".split()
    os.environ.update({"BENCH_A_API_KEY": "sk-proj-Zq81vXc0LmN4tR7yWp2KdF9sGh3JbA6eUo5iQ",
                       "BENCH_B_API_KEY": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
                       "BENCH_C_API_KEY": "AIzaSyD-1234567890abcdefghijklmnop"})
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(tmp)
        spec = specs("http://127.0.0.1:9/v1", 32)
        reqs = [Request(id=f"j{i}", model="m", template_version="bench", messages=(
            {"role": "system", "content": "You judge two replies."},
            {"role": "user", "content": f"{i} " + " ".join(rng.choice(words) for _ in range(400))}))
            for i in range(42_000)]
        for r in reqs:
            cache.put(cache_key(spec["m"], r), {"model": "openai/test", "parsed": None, "usage": {}, "cost": None,
                                                    "text": " ".join(rng.choice(words) for _ in range(110))})
        t = timed(lambda: run_requests(spec, reqs, cache))
        print(f"42,000 judge-sized requests answered from the cache by run_requests "
              f"(neutralised and redacted): {t:.2f} s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        base, tag, n, concurrency, go, stream = sys.argv[2:]
        worker(base, tag, int(n), int(concurrency), float(go), bool(int(stream)))
    else:
        main()
