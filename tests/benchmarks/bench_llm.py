"""Benchmark of heart.llm (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_llm.py

1. Throughput against tests/llm_test_server.py with a fixed 200 ms latency:
   concurrency 32 vs the ideal (concurrency / latency), and a sequential loop.
2. 42,000 cached lookups (the paper's number of pairwise comparisons).
"""

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "workflow")]

import llm_test_server as srv  # noqa: E402
from heart import llm  # noqa: E402

LATENCY = 0.2


def specs(base, concurrency):
    return {"m": llm.ModelSpec.from_config("m", dict(model="openai/test", api_base=base, params={"temperature": 0},
                                                     max_concurrency=concurrency, timeout=30, max_retries=0))}


def requests(n, tag):
    return [llm.Request(id=f"{tag}{i}", model="m", messages=({"role": "user", "content": f"{tag} {i}"},),
                        template_version="bench") for i in range(n)]


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    server = srv.serve(srv.State(latency=LATENCY))
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with tempfile.TemporaryDirectory() as tmp:
        cache = llm.ResponseCache(Path(tmp) / "c")
        n_seq = 20
        seq = timed(lambda: llm.run_requests(specs(base, 1), requests(n_seq, "seq"), cache))
        seq_rps = n_seq / seq
        conc, n_par = 32, 640
        par = timed(lambda: llm.run_requests(specs(base, conc), requests(n_par, "par"), cache))
        par_rps = n_par / par
        ideal = conc / LATENCY
        print(f"sequential loop: {n_seq} calls in {seq:.2f} s = {seq_rps:.2f} calls/s (ideal {1 / LATENCY:.1f})")
        print(f"concurrency {conc}: {n_par} calls in {par:.2f} s = {par_rps:.1f} calls/s; "
              f"ideal {ideal:.0f} calls/s -> {100 * par_rps / ideal:.1f} % of ideal; "
              f"{par_rps / seq_rps:.1f}x the sequential loop")

        # 42,000 cached lookups
        big = llm.ResponseCache(Path(tmp) / "big")
        spec = specs(base, 1)["m"]
        reqs = requests(42_000, "cached")
        entry = {"model": "openai/test", "text": "x", "parsed": None, "usage": {}, "cost": None,
                 "ttft_s": 0.1, "latency_s": 0.2}
        keys = [llm.cache_key(spec, r) for r in reqs]
        for k in keys:
            big.put(k, entry)
        lookup = timed(lambda: [big.get(llm.cache_key(spec, r)) for r in reqs])
        print(f"42,000 cached lookups (key + read): {lookup:.2f} s")
        full = timed(lambda: llm.run_requests(specs(base, 32), reqs, big))
        print(f"42,000 requests answered from the cache by run_requests: {full:.2f} s")
    server.shutdown()


if __name__ == "__main__":
    main()
