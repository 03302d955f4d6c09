"""Analysis helpers: stage wall times, files and sizes, and Parquet tables compared frame by frame."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict

import pandas as pd

from rehearsal.common import LOG_STAGE, STAGE_OF, STAGES


def union_length(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def stage_walls(runs):
    """Per stage: jobs finished (and failed/killed), the union of their intervals, first start, last end."""
    out = {}
    for stage in STAGES:
        jobs = []
        for r in runs:
            for j in r.jobs.values():
                st = "report" if r.name == "report" else STAGE_OF.get(j["rule"], "other")
                if st == stage:
                    jobs.append((j["start"], j.get("end") or r.end, j.get("ok")))
            if stage == "report" and r.name == "report":
                # the report step has no jobs when nothing is left to run: its own wall time
                jobs.append((r.start, r.end, r.rc == 0))
        if not jobs:
            continue
        out[stage] = {"jobs": sum(1 for j in jobs if j[2]), "unfinished": sum(1 for j in jobs if not j[2]),
                      "wall_s": union_length([(s, e) for s, e, _ in jobs]),
                      "first": min(s for s, _, _ in jobs), "last": max(e for _, e, _ in jobs)}
    return out


def bench_by_stage(root):
    out = {}
    if not root.exists():
        return out
    for p in root.rglob("*.tsv"):
        try:
            b = pd.read_csv(p, sep="\t")
        except Exception:  # noqa: BLE001
            continue
        stage = LOG_STAGE.get(p.relative_to(root).parts[0], "other")
        d = out.setdefault(stage, {"files": 0, "s": 0.0, "cpu_s": 0.0, "max_rss_mb": 0.0, "max_s": 0.0})
        d["files"] += 1
        d["s"] += float(b["s"].sum())
        d["max_s"] = max(d["max_s"], float(b["s"].max()))
        d["cpu_s"] += float(pd.to_numeric(b.get("cpu_time"), errors="coerce").fillna(0).sum())
        d["max_rss_mb"] = max(d["max_rss_mb"], float(pd.to_numeric(b["max_rss"], errors="coerce").fillna(0).max()))
    return out


def count_files(root, temp=False):
    """Cache entries (<key>.json) under ``root``; with ``temp``, the temporary files of writes cut short
    (.<key>.json.XXXX.tmp, left by a job killed while writing)."""
    n = 0
    for _, _, names in os.walk(root):
        n += sum(1 for x in names
                 if (x.startswith(".") and x.endswith(".tmp")) == temp and (temp or x.endswith(".json")))
    return n


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def dir_size(root):
    files = apparent = disk = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            st = os.stat(os.path.join(dirpath, n))
            files += 1
            apparent += st.st_size
            disk += st.st_blocks * 512
    return {"files": files, "bytes": apparent, "disk_bytes": disk}


def read_any(path):
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    df.attrs = {}
    return df


def _canon(series):
    def one(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if hasattr(v, "tolist"):
            v = v.tolist()
        return json.dumps(v, sort_keys=True, default=str) if isinstance(v, (list, dict)) else repr(v)
    return series.map(one)


def compare_frames(a, b):
    """None when frame-equal; else what differs (columns with the share of rows, an example)."""
    from pandas.testing import assert_frame_equal

    try:
        assert_frame_equal(a, b)
        return None
    except AssertionError as exc:
        first = str(exc).splitlines()[0][:160]
    if list(a.columns) != list(b.columns):
        return {"kind": "columns", "only_first": sorted(set(a.columns) - set(b.columns)),
                "only_second": sorted(set(b.columns) - set(a.columns)), "detail": first}
    if len(a) != len(b):
        return {"kind": "rows", "rows": [len(a), len(b)], "detail": first}
    ca = pd.DataFrame({c: _canon(a[c]) for c in a.columns})
    cb = pd.DataFrame({c: _canon(b[c]) for c in b.columns})
    cols = [c for c in a.columns if not ca[c].equals(cb[c]) or a[c].dtype != b[c].dtype]
    if not cols:
        return {"kind": "dtype/index", "detail": first}
    # the same rows in another order?
    sa = ca.sort_values(list(ca.columns)).reset_index(drop=True)
    sb = cb.sort_values(list(cb.columns)).reset_index(drop=True)
    if sa.equals(sb):
        return {"kind": "row order", "detail": first}
    diff = {}
    for c in cols:
        mask = ca[c] != cb[c]
        ex = mask.idxmax() if mask.any() else None
        diff[c] = {"rows": int(mask.sum()), "of": len(a), "dtype": [str(a[c].dtype), str(b[c].dtype)],
                   "example": None if ex is None else [str(a[c].iloc[a.index.get_loc(ex)])[:60],
                                                        str(b[c].iloc[b.index.get_loc(ex)])[:60]]}
    return {"kind": "values", "columns": diff}


def without_measured_timing(df):
    """``df`` without the rows that correlate Elo with this run's *measured* time to first token
    (``ttft_measured`` tests) and, in a table of tests by family, the rest of their family, whose
    Benjamini-Hochberg adjustment includes them: two runs measure two times, so these rows differ between
    any two runs, batch or not."""
    text = df.select_dtypes(include="object")
    if text.empty:
        return df
    measured = text.apply(lambda col: col.astype(str).str.contains("ttft_measured", regex=False)).any(axis=1)
    for family in ("family", "Family"):
        if family in df.columns:
            measured |= df[family].isin(set(df.loc[measured, family]))
    return df[~measured].reset_index(drop=True)


def compare_trees(ref, root, files, transform=None):
    out = {"equal": 0, "differ": {}, "missing": [], "extra": []}
    rel_new = {str(p.relative_to(root)) for p in files}
    rel_ref = {str(p.relative_to(ref)) for p in [*ref.rglob("*.parquet"), *(ref / "tables").glob("*.csv")]}
    out["missing"] = sorted(rel_ref - rel_new)
    out["extra"] = sorted(rel_new - rel_ref)
    for rel in sorted(rel_ref & rel_new):
        try:
            a, b = read_any(ref / rel), read_any(root / rel)
            d = compare_frames(*((transform(a), transform(b)) if transform else (a, b)))
        except Exception as exc:  # noqa: BLE001
            d = {"kind": "unreadable", "detail": f"{type(exc).__name__}: {exc}"[:200]}
        if d is None:
            out["equal"] += 1
        else:
            out["differ"][rel] = d
    return out


# columns that record how this run got a row, not what the row says: they may differ between runs
RUN_COLUMNS = {"from_cache": "whether this run answered the row from the cache (true in a rerun or a replay)"}


# ... and between a batch run and a synchronous one: the call's price and turnaround, and what is derived
# from them alone (the judge leaderboard's cost and time per 1,000 judgments)
MODE_COLUMNS = {**RUN_COLUMNS, "latency_s": "seconds from request to answer (a batch's turnaround)",
                "ttft_s": "a synchronous completion's measured time to first token (two runs measure two times)",
                "cost_usd": "the call's price (batch prices are half)",
                "usd_per_1000": "judge leaderboard: price per 1,000 judgments",
                "seconds_per_1000": "judge leaderboard: answer time per 1,000 judgments"}


def legit(d, columns=RUN_COLUMNS):
    return d["kind"] == "values" and set(d["columns"]) <= set(columns)


def compare_ok(cmp, columns=RUN_COLUMNS):
    return not cmp["missing"] and all(legit(d, columns) for d in cmp["differ"].values())


def describe_compare(cmp, limit=25, columns=RUN_COLUMNS):
    """Lines: the differences in run-provenance columns grouped, every other difference listed."""
    lines = []
    groups = defaultdict(list)
    for rel, d in cmp["differ"].items():
        if legit(d, columns):
            groups[tuple(sorted(d["columns"]))].append(rel)
    for cols, rels in groups.items():
        by_dir = defaultdict(int)
        for rel in rels:
            by_dir[rel.rsplit("/", 1)[0] if "/shards/" not in rel else rel.split("/shards/")[0] + "/shards/**"] += 1
        lines.append(f"only {', '.join(cols)} differs ({'; '.join(columns[c] for c in cols)}) in {len(rels)} tables: "
                     + ", ".join(f"{d}/ ({n})" for d, n in sorted(by_dir.items())))
    other = [(rel, d) for rel, d in cmp["differ"].items() if not legit(d, columns)]
    for rel, d in other[:limit]:
        lines.append("DIFFERS: " + describe_diff(rel, d))
    if len(other) > limit:
        lines.append(f"... and {len(other) - limit} more tables differ")
    for rel in cmp["missing"]:
        lines.append("MISSING in the second run: " + rel)
    return lines


def summary(cmp, columns=RUN_COLUMNS):
    """Counts: equal, differing only in the allowed ``columns`` (how a row was obtained), differing otherwise,
    missing, extra."""
    allowed = sum(legit(d, columns) for d in cmp["differ"].values())
    return (f"{cmp['equal']} equal, {allowed} differ only in {'/'.join(columns)}, "
            f"{len(cmp['differ']) - allowed} differ otherwise, {len(cmp['missing'])} missing, "
            f"{len(cmp['extra'])} extra")


def describe_diff(rel, d):
    if d["kind"] == "values":
        cols = ", ".join(f"{c} ({v['rows']}/{v['of']} rows, e.g. {v['example'][0]!r} vs {v['example'][1]!r})"
                         for c, v in list(d["columns"].items())[:6])
        more = len(d["columns"]) - 6
        return f"{rel}: values differ in {cols}" + (f" and {more} more columns" if more > 0 else "")
    if d["kind"] == "columns":
        return f"{rel}: columns differ (only first: {d['only_first']}, only second: {d['only_second']})"
    if d["kind"] == "rows":
        return f"{rel}: {d['rows'][0]} vs {d['rows'][1]} rows"
    return f"{rel}: {d['kind']} ({d.get('detail', '')})"
