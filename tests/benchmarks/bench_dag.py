"""Benchmark of the workflow's DAG at paper scale (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_dag.py [--esconv ../shared/data/esconv/ESConv.json]

1. DAG build of config/paper.yaml: `snakemake -n` from scratch in a copy of the workflow (all 300 items,
   16 systems, 3 judges, 1 tagger planned; nothing runs, no API key needed).
2. The same after ingest and screening have run for real (no LLM call): 280 regular items exist.
3. A no-op rerun: `snakemake` on the embedded default after a completed run in this checkout
   (results/ must be complete: run `make run` first); it schedules 0 jobs.
Reports wall time (best of 3), the number of jobs per rule and of LLM shard jobs.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
COPY = ("Snakefile", "config", "workflow", "profiles", "envs")
# the keys paper.yaml names are declared with envvars: when set; nothing here calls a model
PLACEHOLDER_KEYS = {k: "dry-run-placeholder" for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                                                        "TOGETHERAI_API_KEY", "DEEPINFRA_API_KEY")}


def run(cwd, *args):
    t = time.perf_counter()
    proc = subprocess.run([SNAKEMAKE, "--cores", "2", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **PLACEHOLDER_KEYS})
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout, proc.stderr


def jobs(out):
    counts = Counter()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job"):
            counts[parts[0]] = int(parts[1])  # the table is printed twice in a dry run
    return counts


def best(n, cwd, *args):
    times, out, err = [], "", ""
    for _ in range(n):
        t, out, err = run(cwd, *args)
        times.append(t)
    return min(times), out, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--esconv", default=str(ROOT.parent / "shared/data/esconv/ESConv.json"))
    args = ap.parse_args()
    esconv = f"esconv={{local_copy: {Path(args.esconv).resolve()}}}"
    with tempfile.TemporaryDirectory() as tmp:
        wf = Path(tmp) / "wf"
        wf.mkdir()
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, wf / name)
        paper = ("--configfile", "config/paper.yaml", "--config", esconv)
        t, out, _ = best(3, wf, "-n", "--quiet=rules", *paper)
        counts = jobs(out)
        print(f"paper.yaml DAG build from scratch (dry run): {t:.2f} s, {sum(counts.values())} jobs")
        for rule, n in sorted(counts.items()):
            print(f"    {rule:28s} {n}")
        shard_jobs = sum(counts.get(r, 0) for r in ("generate_completions", "judge_pairs", "tag_strategies"))
        merges = sum(counts.get(r, 0) for r in ("merge_completions", "merge_judgments", "merge_tags"))
        print(f"    -> {shard_jobs} LLM shard jobs (llm.shards of config/paper.yaml per model), merged by {merges} "
              "local jobs")
        run(wf, "results/items/regular.parquet", *paper)
        t, out, _ = best(3, wf, "-n", "--quiet=rules", *paper)
        print(f"paper.yaml DAG build with ingest + screening done (dry run): {t:.2f} s, "
              f"{sum(jobs(out).values())} jobs to go")
    if (ROOT / "results/stats/tests.parquet").is_file():
        # spelled as in the README's `make run ESCONV=../shared/...`: another spelling of the same file is
        # "a changed set of input files" to Snakemake
        same = f"esconv={{local_copy: {os.path.relpath(Path(args.esconv).resolve(), ROOT)}}}"
        t, out, err = best(3, ROOT, "-n", "--config", same)
        print(f"no-op rerun of the embedded default in this checkout (dry run): {t:.2f} s "
              f"({'nothing to be done' if 'Nothing to be done' in out + err else 'jobs would run: results/ is stale'})")
    else:
        print("no-op rerun: skipped (run `make run` first so that results/ is complete)")


if __name__ == "__main__":
    main()
