"""Two runs' results/ folders compared: every Parquet table frame-equal, every figure and every CSV or LaTeX
table byte-identical.

    .venv/bin/python tests/benchmarks/compare_runs.py BEFORE/results AFTER/results [--ignore latency_s,ttft_s]

A refactoring that changes no result leaves both equal. Columns that measure the run itself rather than its
results (the time a call took, whether an answer came from the cache) can be left out with ``--ignore``; the
tables' provenance (in the Parquet metadata: times, versions) is never compared. Prints one line per file that
differs and a summary; exits 1 when anything differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

FIGURES = (".png", ".pdf", ".svg", ".csv", ".tex")  # compared byte for byte


def compare(before: Path, after: Path, ignore: set[str]) -> tuple[dict[str, int], list[str]]:
    counts = {"Parquet tables frame-equal": 0, "figures and CSV/LaTeX tables identical": 0}
    problems = []
    names = {p.relative_to(before) for p in before.rglob("*") if p.is_file()}
    names |= {p.relative_to(after) for p in after.rglob("*") if p.is_file()}
    for name in sorted(names):
        a, b = before / name, after / name
        if name.suffix not in (".parquet", *FIGURES):
            continue
        if not (a.is_file() and b.is_file()):
            problems.append(f"{name}: only in {'the first' if a.is_file() else 'the second'} run")
            continue
        if name.suffix in FIGURES:
            if a.read_bytes() == b.read_bytes():
                counts["figures and CSV/LaTeX tables identical"] += 1
            else:
                problems.append(f"{name}: the bytes differ")
            continue
        fa, fb = (pd.read_parquet(p) for p in (a, b))
        for frame in (fa, fb):
            frame.attrs = {}
        drop = sorted(ignore & set(fa.columns) & set(fb.columns))
        try:
            pd.testing.assert_frame_equal(fa.drop(columns=drop), fb.drop(columns=drop))
            counts["Parquet tables frame-equal"] += 1
        except AssertionError as exc:
            problems.append(f"{name}: {' '.join(str(exc).split())[:300]}")
    return counts, problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", default="", help="columns left out of every table, comma-separated")
    args = parser.parse_args(argv)
    counts, problems = compare(args.before, args.after, {c for c in args.ignore.split(",") if c})
    for line in problems:
        print(line)
    print(", ".join(f"{n} {what}" for what, n in counts.items()) + f", {len(problems)} differing or missing")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
