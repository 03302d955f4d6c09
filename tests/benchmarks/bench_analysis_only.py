"""Benchmark of analysis-only at paper scale (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_analysis_only.py [--votes 41000] [--repeat 1] [--keep DIR]

Writes a SIMULATED table of pairwise votes in the public format (resources/imported/README.md) at the
paper's scale -- 300 items (280 regular, 20 adversarial) from 250 conversations, 17 systems, 3 LLM judges
giving one-order verdicts with strengths and HEART axis marks, 5 human raters on 225 pairs -- from a seeded
Bradley-Terry model (no person or model made these votes; they exist to time the workflow), runs
``snakemake --configfile config/analysis.yaml`` on it in a scratch copy of the workflow (the config's
n_boot 1000 and subsample_reps 200), and prints the wall time of the whole run and of every job (from
Snakemake's log). Target (issue 29): <= 60 s on this machine for about 41,000 one-order LLM votes.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
COPY = ("Snakefile", "config", "workflow", "profiles", "envs", "resources")
AXES = "HEART"


def simulated_votes(n_votes: int, seed: int = 20251122) -> pd.DataFrame:
    """SIMULATED votes: a Bradley-Terry world with known strengths (see the module docstring)."""
    rng = np.random.default_rng(seed)
    systems = [f"system-{k:02d}" for k in range(17)]
    theta = dict(zip(systems, rng.normal(0, 0.8, len(systems))))
    items = [(f"regular:{i}", f"conv-{i % 250}", "regular") for i in range(280)]
    items += [(f"adversarial:{i}", f"conv-{(i * 7) % 250}", "adversarial") for i in range(20)]
    pairs = [(item, a, b) for item in items for a, b in combinations(systems, 2)]
    pick = rng.choice(len(pairs), size=min(n_votes, len(pairs)), replace=False)
    judges = ["judge-gpt", "judge-claude", "judge-gemini"]
    rows = []
    for n, k in enumerate(sorted(pick)):
        (item, conv, subset), a, b = pairs[k]
        p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
        a_wins = rng.random() < p
        marks = {f"axis_{x}": ("a" if rng.random() < p else "b") if rng.random() < 0.8 else "tie" for x in AXES}
        rows.append({"item": item, "conversation": conv, "subset": subset, "system_a": a, "system_b": b,
                     "judge": judges[n % 3], "judge_kind": "llm", "winner": "a" if a_wins else "b",
                     "strength": int(rng.integers(1, 6)), "order": "AB" if rng.random() < 0.5 else "BA", **marks})
    for k in rng.choice(len(pairs), size=225, replace=False):  # 5 raters on 225 pairs (about 1,125 votes)
        (item, conv, subset), a, b = pairs[k]
        p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
        for r in range(5):
            u = rng.random()
            rows.append({"item": item, "conversation": conv, "subset": subset, "system_a": a, "system_b": b,
                         "judge": f"rater-{r}", "judge_kind": "human",
                         "winner": "tie" if u < 0.15 else ("a" if rng.random() < p else "b"),
                         "order": "AB" if rng.random() < 0.5 else "BA"})
    return pd.DataFrame(rows)


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]$")


def job_times(log: str) -> list[tuple[str, float]]:
    """(rule, seconds) of every job, from the timestamps of Snakemake's log ("rule X:" ... "Finished jobid")."""
    start, rule_of, out, stamp = {}, {}, [], None
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _STAMP.match(line.strip())
        if m:
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        m = re.match(r"^(?:local)?rule (\w+):$", line.strip())
        if m and stamp:
            jid = next((re.search(r"jobid: (\d+)", x).group(1) for x in lines[i:i + 12] if "jobid:" in x), None)
            if jid:
                start[jid], rule_of[jid] = stamp, m.group(1)
        m = re.search(r"Finished jobid: (\d+)", line)
        if m and stamp and m.group(1) in start:
            out.append((rule_of[m.group(1)], (stamp - start[m.group(1)]).total_seconds()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--votes", type=int, default=41_000, help="one-order LLM votes (default 41,000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs from scratch (the median is printed)")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="heart-bench-analysis-"))
    work.mkdir(parents=True, exist_ok=True)
    votes = simulated_votes(args.votes)
    votes_path = work / "votes_SIMULATED.csv"
    votes.to_csv(votes_path, index=False)
    n_llm = int((votes["judge_kind"] == "llm").sum())
    print(f"SIMULATED votes: {n_llm:,} one-order LLM votes, {len(votes) - n_llm:,} human votes; "
          f"{votes['item'].nunique()} items, {pd.unique(votes[['system_a', 'system_b']].values.ravel()).size} systems")
    walls = []
    for k in range(args.repeat):
        wf = work / f"wf{k}"
        shutil.rmtree(wf, ignore_errors=True)
        wf.mkdir()
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, wf / name,
                                                                **({"ignore": shutil.ignore_patterns(
                                                                    "llm_cache*", "__pycache__")}
                                                                   if src.is_dir() else {}))
        t = time.perf_counter()
        proc = subprocess.run([SNAKEMAKE, "--cores", "2", "--configfile", "config/analysis.yaml", "--config",
                               f"analysis_only={{judgments: {votes_path}}}"], cwd=wf, capture_output=True,
                              text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        walls.append(wall)
        print(f"run {k + 1}: {wall:.1f} s wall (--cores 2)")
        for rule, sec in sorted(job_times(proc.stderr), key=lambda x: -x[1]):
            print(f"  {rule:<24} {sec:6.0f} s")
    print(f"analysis-only at paper scale: median {np.median(walls):.1f} s over {len(walls)} run(s); target <= 60 s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
