"""The workflow on a real single-node SLURM cluster with profiles/slurm.

Opt-in: HEART_SLURM_TEST=1 (run as root on a throwaway machine; it apt-installs and starts
slurmctld, slurmd and munge through tests/slurm/slurm-local.sh, and stops them at the end).

    HEART_SLURM_TEST=1 .venv/bin/python -m pytest tests/workflow/test_slurm.py -p no:cacheprovider -x -q -s

Options (environment): HEART_SLURM_WITH_DBD=1 also starts slurmdbd + MariaDB and reads the
job records with sacct instead of the jobcomp file; HEART_SLURM_TARGET=<file> runs only up to
that target (default: results/completions/systems.parquet — ingest, screening, adversarial
items, completions in 2 shards: 13 jobs, 5 of them on the local model, 2 merges run locally; `all` runs
the whole workflow, which
with judging and tagging on the local model takes far longer); HEART_SLURM_TIMEOUT=<s> per run.

The same tiny config runs once locally (the reference) and once with
`--workflow-profile profiles/slurm`; then SLURM's own records show that every job of the DAG
ran as a SLURM job, completed, in our copy, with the profile's resources, and never two
local-model jobs at once, and the deterministic tables of both runs are equal.
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pandas.testing import assert_frame_equal

from support import REPO, SNAKEMAKE, TINY

from support.workflow import WorkflowCopy

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("HEART_SLURM_TEST") != "1",
        reason="needs a real SLURM: set HEART_SLURM_TEST=1 (as root on a throwaway machine: it apt-installs "
               "and starts slurmctld/slurmd/munge via tests/slurm/slurm-local.sh)",
    ),
]

SCRIPT = Path(__file__).resolve().parents[1] / "slurm" / "slurm-local.sh"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
# two shards per LLM stage, so the cluster run also shows shards merging to a local run's tables
CFG = ["--config", f"esconv={{local_copy: {TINY}}}", "regular_items={n: 3, seed: 1}", "adversarial_items={n: 2}",
       "llm={shards: 2}"]
LOCALRULES = {"merge_completions", "merge_judgments", "merge_tags"}  # the Snakefile's localrules: never sbatch'ed
TARGET = [os.environ.get("HEART_SLURM_TARGET") or "results/completions/systems.parquet"]
TIMEOUT = int(os.environ.get("HEART_SLURM_TIMEOUT", "3600"))
WITH_DBD = os.environ.get("HEART_SLURM_WITH_DBD") == "1"
SLURM_LOG = Path(os.environ.get("SLURM_LOCAL_LOG", "/var/log/slurm"))
JOBCOMP = SLURM_LOG / "jobcomp.log"

# columns that depend on when and where a job ran (timings, whether the cache answered);
# every other column of every Parquet table both runs made must be equal
VOLATILE = {"ttft_s", "latency_s", "from_cache"}
NOT_COMPARED = {"results/llm/cache.parquet"}  # the cache export (full run only): call records, not results


def sh(*cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def slurm():
    if os.geteuid() != 0:
        pytest.skip("tests/slurm/slurm-local.sh installs packages and starts daemons: run as root")
    env = {**os.environ, "WITH_DBD": "1" if WITH_DBD else "0", "SLURM_LOCAL_LOG": str(SLURM_LOG)}
    was_up = sh("bash", str(SCRIPT), "status", env=env).returncode == 0
    t0 = time.monotonic()
    started = sh("bash", str(SCRIPT), "start", env=env, timeout=900)
    if started.returncode != 0:
        if not was_up:
            sh("bash", str(SCRIPT), "stop", env=env, timeout=120)
        pytest.fail(f"slurm-local.sh start failed:\n{started.stdout}\n{started.stderr}")
    print(f"\n[slurm] cluster up in {time.monotonic() - t0:.0f}s (accounting: {'slurmdbd' if WITH_DBD else 'none'})")
    yield {"jobcomp_offset": JOBCOMP.stat().st_size if JOBCOMP.exists() else 0}
    if not was_up:  # stop only what this test started
        sh("bash", str(SCRIPT), "stop", env=env, timeout=120)


def run(wf: WorkflowCopy, *args: str, log: str) -> float:
    """snakemake in ``wf`` under `timeout -k 30`; output kept in ``log``; returns seconds taken."""
    t0 = time.monotonic()
    with open(wf.root / log, "w") as out:
        proc = subprocess.run(["timeout", "-k", "30", str(TIMEOUT), SNAKEMAKE, *args, *TARGET, *CFG],
                              cwd=wf.root, stdout=out, stderr=subprocess.STDOUT)
    text = (wf.root / log).read_text()
    assert proc.returncode == 0, f"snakemake {' '.join(args)} exited {proc.returncode} " \
                                 f"(124: timeout after {TIMEOUT}s):\n{text[-6000:]}"
    return time.monotonic() - t0


def submissions(log: str) -> dict[str, tuple[str, Path]]:
    """SLURM job id -> (rule, SLURM log file), from the executor's submission messages."""
    found = {}
    for jobid, logfile in re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+?)\)\.", log):
        rule = re.search(r"/rule_(\w+)/", logfile)
        found[jobid] = (rule.group(1) if rule else "?", Path(logfile))
    return found


def minutes(limit: str) -> int:
    """SLURM time limit ('720', '12:00:00', '1-00:00:00') in minutes."""
    if limit.isdigit():
        return int(limit)
    days, _, hms = limit.rpartition("-")
    h, m, s = (["0"] * 3 + hms.split(":"))[-3:]
    return int(days or 0) * 1440 + int(h) * 60 + int(m) + (int(s) > 0)


def mem_mb(value: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)n?c?", value)
    return round(float(m.group(1)) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2}[m.group(2)])


def records_jobcomp(offset: int) -> dict[str, dict]:
    """Finished jobs from jobcomp/filetxt (no database needed), appended since ``offset``."""
    with open(JOBCOMP, "rb") as f:
        f.seek(offset)
        lines = f.read().decode().splitlines()
    out = {}
    for line in lines:
        rec = dict(re.findall(r"(\w+)=(\S*)", line))
        tres = dict(kv.split("=", 1) for kv in rec.get("Tres", "").split(",") if "=" in kv)
        out[rec["JobId"]] = {
            "name": rec["Name"], "state": rec["JobState"], "exit": rec["ExitCode"],
            "partition": rec["Partition"], "timelimit": minutes(rec["TimeLimit"]),
            "cpus": int(tres.get("cpu", 0)), "mem_mb": mem_mb(tres.get("mem", "0M")), "workdir": rec["WorkDir"],
            "start": dt.datetime.fromisoformat(rec["StartTime"]), "end": dt.datetime.fromisoformat(rec["EndTime"]),
        }
    return out


def records_sacct(jobids) -> dict[str, dict]:
    """The same from slurmdbd (HEART_SLURM_WITH_DBD=1)."""
    fields = "JobIDRaw,JobName,State,ExitCode,Partition,Timelimit,AllocCPUS,ReqMem,WorkDir,Start,End"
    proc = sh("sacct", "-X", "--parsable2", "--noheader", "-j", ",".join(jobids), f"--format={fields}")
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        jid, name, state, code, part, limit, cpus, mem, wd, start, end = line.split("|")
        out[jid] = {"name": name, "state": state.split()[0], "exit": code, "partition": part,
                    "timelimit": minutes(limit), "cpus": int(cpus), "mem_mb": mem_mb(mem), "workdir": wd,
                    "start": dt.datetime.fromisoformat(start), "end": dt.datetime.fromisoformat(end)}
    return out


def expected_resources(rule: str) -> dict:
    profile = yaml.safe_load(PROFILE.read_text())
    res = {**profile["default-resources"], **profile.get("set-resources", {}).get(rule, {})}
    return {"partition": res["slurm_partition"], "timelimit": res["runtime"], "mem_mb": res["mem_mb"],
            "cpus": res["cpus_per_task"]}


def test_workflow_on_slurm_equals_a_local_run(slurm, tmp_path):
    t_test = time.monotonic()
    local, cluster = WorkflowCopy(tmp_path / "local"), WorkflowCopy(tmp_path / "slurm")
    planned = collections.Counter(cluster.jobs(*TARGET, *CFG))
    planned.pop("all", None)  # rule all runs no code: Snakemake handles it locally
    local_jobs = {r: planned.pop(r) for r in LOCALRULES & set(planned)}  # shard merges run on the submit host
    assert planned["generate_completions"] == 2 * local_jobs["merge_completions"]

    t_local = run(local, "--cores", "2", log="local.log")  # profiles/default, as `make run`
    # faster first status check than the profile's 20 s (the jobs here take seconds), and
    # SLURM's job logs kept: both only for the test
    t_slurm = run(cluster, "--workflow-profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "5",
                  "--slurm-keep-successful-logs", log="slurm.log")
    log = (cluster.root / "slurm.log").read_text()
    assert "'sacct' unavailable" not in log and "Falling back to 'sacct'" not in log

    # every planned job was submitted to SLURM
    sub = submissions(log)
    assert collections.Counter(rule for rule, _ in sub.values()) == planned, (sub, planned)
    assert all(log.count(f"localrule {r}:") == n for r, n in local_jobs.items()), local_jobs

    # ... and SLURM itself says it ran and completed it, in our copy, with the profile's resources
    records = records_sacct(sub) if WITH_DBD else records_jobcomp(slurm["jobcomp_offset"])
    assert set(sub) <= set(records), f"no SLURM record for jobs {set(sub) - set(records)}"
    names = set()
    for jobid, (rule, logfile) in sub.items():
        rec = records[jobid]
        names.add(rec["name"])
        assert (rec["state"], rec["exit"]) == ("COMPLETED", "0:0"), (rule, rec)
        assert Path(rec["workdir"]).resolve() == cluster.root.resolve(), (rule, rec)
        want = expected_resources(rule)
        assert {k: rec[k] for k in want} == want, (rule, rec)
        assert logfile.is_file() and logfile.stat().st_size > 0, logfile  # SLURM's output file of the job
    assert len(names) == 1  # one run: all jobs carry the executor's run id as job name

    # local_llm: 1 holds under SLURM: no two local-model jobs overlap in time
    llm = sorted((records[j]["start"], records[j]["end"], rule) for j, (rule, _) in sub.items()
                 if rule in ("make_adversarial_items", "generate_completions", "judge_pairs", "tag_strategies"))
    for (_, end, a), (start, _, b) in zip(llm, llm[1:]):
        assert start >= end, f"{a} and {b} ran at the same time"

    # same results as the local run (LLM outputs included: temperature 0, fixed seed)
    tables = {str(p.relative_to(local.root)) for p in (local.root / "results").rglob("*.parquet")} - NOT_COMPARED
    assert tables == {str(p.relative_to(cluster.root)) for p in (cluster.root / "results").rglob("*.parquet")} \
        - NOT_COMPARED
    assert "results/items/items.parquet" in tables
    for table in sorted(tables):
        a, b = (pd.read_parquet(wf.root / table) for wf in (cluster, local))
        assert_frame_equal(a.drop(columns=sorted(VOLATILE & set(a.columns))),
                           b.drop(columns=sorted(VOLATILE & set(b.columns))),
                           obj=table)

    print(f"\n[slurm] {len(sub)} SLURM jobs ({', '.join(f'{r}x{n}' for r, n in sorted(planned.items()))})"
          f"\n[slurm] local run {t_local:.0f}s, SLURM run {t_slurm:.0f}s, test body {time.monotonic() - t_test:.0f}s")
