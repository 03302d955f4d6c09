"""Rehearsal of the paper's whole run against heart.simulation.simulator (prints its figures; not a test).

    .venv/bin/python tests/benchmarks/bench_rehearsal.py --workdir /tmp/reh/main
    .venv/bin/python tests/benchmarks/bench_rehearsal.py --workdir /tmp/reh/main --items 20 --latency 0.05

The workdir is a scratch checkout of this repository (never the one you work in: the script wipes its
results/, logs/, benchmarks/, .snakemake/ and the rehearsal cache, and refuses to unless results/ holds
nothing but tracked files or the workdir was set up by an earlier run of this script). The ESConv and
release copies are read from ``--data`` (default ../shared/data, relative to the workdir).

What it does, in order (config/paper.yaml + config/rehearsal.yaml + .rehearsal/local.yaml):

1. Starts heart.simulation.simulator on 127.0.0.1:--port (8799; refuses to start if the port is taken), log-normal
   latency (--latency, --sigma), --error-rate transient errors, and a per-model rpm (--sim-rpm) above what
   the config's max_concurrency can send, so the simulator never throttles the paper's concurrency.
2. The whole DAG (target ``all``), in three Snakemake runs: (i) ``--until design_pairs`` (data, items,
   completions, pairs); (ii) ``all``, killed with SIGKILL (the whole process group) once the judge models
   have answered --kill-at of the expected judge calls; (iii) ``all`` again to the end (``--unlock`` first
   if a lock was left behind); then ``--report results/report.html``. Measured: the wall time of every
   stage (the union of its jobs' start-end intervals, timed from Snakemake's output as it is printed), the
   benchmark TSVs (s, cpu_time, max_rss), the LLM calls per stage (simulator /stats per model and phase;
   "N requests, M from cache, K called" from the rule logs), the peak RSS (and PSS) of the whole process
   tree sampled every 0.5 s, the peak 60-s request rate per model at the simulator, the response cache
   (files, bytes) and the Parquet tables (count, bytes, the 10 largest).
3. Checks: (a) a real no-op rerun and its wall time; (b) repeated successes at the simulator stay 0 across
   the kill and the rerun (and every later run), except the answers in flight at the kill: those the
   simulator answered after it, or a job had read but not yet written (no killed client can store them;
   they are counted and shown apart); (d) ``llm.shards`` = --alt-shards instead of the
   config's, answered from the cache: calls made and Parquet tables frame-equal to the first run's;
   (c) replay: the simulator stopped (a listener on its port counts connection attempts), llm.replay set to
   a copy of results/llm/cache.parquet, an empty cache dir, results/ emptied: the whole DAG again, 0 calls,
   and every Parquet table frame-equal to the first run's (differences are listed by column, not hidden).
4. Prints the report (and writes it as JSON to <workdir>/.rehearsal/report.json).

The main run stops at --max-minutes (then the report says how far it got, the measured rates and an
extrapolation).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections import defaultdict
from pathlib import Path

import pandas as pd
import yaml

TARGETS = {"rehearsal_s": 30 * 60, "peak_bytes": 4 * 2 ** 30, "noop_s": 5.0}
KEY_VARS = ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "DEEPINFRA_API_KEY", "OPENAI_API_KEY", "TOGETHERAI_API_KEY")
STAGE_RULES = {
    "data/items": ("download_esconv", "download_release", "ingest_esconv", "map_release", "release_items",
                   "screen_items", "screening_calibration", "make_adversarial_items", "collect_items"),
    "completions": ("generate_completions", "merge_completions", "import_completions", "original_completions",
                    "human_completions", "summarize_systems"),
    "judging": ("design_pairs", "judge_pairs", "judge_qc", "judge_quality", "merge_judgments", "human_judgments",
                "combine_judgments"),
    "tagging": ("tag_strategies", "merge_tags", "strategy_f1"),
    "stats": ("ratings", "agreement", "bias_audits", "strategy_stats", "factor_analysis", "external_correlations",
              "multiple_testing", "rationale_codes", "preference_shares", "style_ratings", "import_judgments"),
    "figures/tables": ("figure_leaderboard", "figure_elo_ttft", "figure_strategies", "figure_elo_forest",
                       "figure_agreement", "figure_bias_factors", "figure_example_pair", "paper_tables",
                       "paper_comparison"),
    "cache export": ("export_llm_cache", "preview_llm_calls"),
    "annotation": ("annotation_tasks", "export_annotations"),
}
STAGE_OF = {rule: stage for stage, rules in STAGE_RULES.items() for rule in rules}
STAGES = [*STAGE_RULES, "report"]
LOG_STAGE = {"data": "data/items", "items": "data/items", "completions": "completions", "judging": "judging",
             "tagging": "tagging", "stats": "stats", "figures": "figures/tables", "tables": "figures/tables",
             "llm": "cache export"}
CALLS_RE = re.compile(r"(\d+) requests, (\d+) from cache, (\d+) called, (\d+) failed")
PAGE = os.sysconf("SC_PAGE_SIZE")


def gib(n):
    return f"{n / 2 ** 30:.2f} GiB"


def mib(n):
    return f"{n / 2 ** 20:.1f} MiB"


def hms(s):
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def merge(base, over):
    """Snakemake's recursive config update."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def table(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


# --- the process tree and the simulator, sampled in a thread -------------------------------------------

def _proc_table():
    """pid -> (ppid, sid) for every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
            out[int(d)] = (int(rest[1]), int(rest[3]))
        except (OSError, IndexError, ValueError):
            pass
    return out


def _descendants(root, procs):
    children = defaultdict(list)
    for pid, (ppid, _) in procs.items():
        children[ppid].append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            out.append(pid)
            todo += children[pid]
    return out


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _job_name(pid):
    """The rule script a process runs (.snakemake/scripts/tmpXXXX.<script>.py), else its argv[0..1]."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    for a in argv:
        m = re.search(r"tmp[^/.]+\.(\w+)\.py$", a)
        if m:
            return m.group(1)
    if any("snakemake" in a for a in argv[:2]):
        return "snakemake"
    return " ".join(Path(a).name for a in argv[:2])


class Monitor(threading.Thread):
    def __init__(self, interval=0.5, stats_every=2.0):
        super().__init__(daemon=True)
        self.interval, self.stats_every = interval, stats_every
        self.root = None  # the running snakemake's pid
        self.sim = None
        self.halt = threading.Event()
        self.lock = threading.Lock()
        self.peak_rss = self.peak_pss = self.peak_procs = 0
        self.peak_at = None
        self.peak_by_job = defaultdict(int)  # job script -> largest single-process RSS
        self.sim_peak_rss = 0
        self.series = []  # (t, {model: successes}, requests, successes)
        self.last_stats = None
        self.phase_peaks = defaultdict(int)
        self.phase = None

    def run(self):
        next_stats = 0.0
        while not self.halt.is_set():
            try:
                self.sample()
                if self.sim is not None and self.sim.api_base and time.monotonic() >= next_stats:
                    next_stats = time.monotonic() + self.stats_every
                    self.poll_stats()
            except Exception:  # noqa: BLE001 - a sampling hiccup must not stop the rehearsal
                pass
            self.halt.wait(self.interval)

    def poll_stats(self):
        s = self.sim.stats()
        with self.lock:
            self.last_stats = s
            self.series.append((time.time(), {m: c.get("successes", 0) for m, c in s["per_model"].items()},
                                s["requests"], s["successes"]))
        return s

    def sample(self):
        if self.sim is not None and self.sim.proc is not None:
            self.sim_peak_rss = max(self.sim_peak_rss, _rss(self.sim.proc.pid))
        root = self.root
        if root is None:
            return
        pids = _descendants(root, _proc_table())
        rss = {pid: _rss(pid) for pid in pids}
        total = sum(rss.values())
        if total > self.peak_rss:
            self.peak_rss, self.peak_at, self.peak_procs = total, self.phase, len(pids)
            self.peak_pss = max(self.peak_pss, sum(_pss(p) for p in pids))
        self.phase_peaks[self.phase] = max(self.phase_peaks[self.phase], total)
        for pid, r in rss.items():
            name = _job_name(pid)
            self.peak_by_job[name] = max(self.peak_by_job[name], r)


# --- Snakemake runs ----------------------------------------------------------------------------------------

class Run:
    """One snakemake invocation: its command, wall time, exit, and its jobs as printed."""

    def __init__(self, name, cmd):
        self.name, self.cmd = name, cmd
        self.start = self.end = None
        self.rc = None
        self.killed = self.timed_out = self.mem_guard = False
        self.jobs = {}  # jobid -> dict(rule, start, end, ok)
        self.planned = {}  # rule -> count ("Job stats")
        self.nothing_to_do = False
        self.errors = []
        self.log = None
        self.sim_before = self.sim_after = None

    @property
    def wall(self):
        return (self.end or time.time()) - self.start


class Rehearsal:
    def __init__(self, args):
        self.a = args
        self.wd = Path(args.workdir).resolve()
        self.dir = self.wd / ".rehearsal"
        self.snakemake = str(self.wd / ".venv" / "bin" / "snakemake")
        if not Path(self.snakemake).exists():
            self.snakemake = str(Path(sys.executable).parent / "snakemake")
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # the paper config names key variables; the overlay sets api_key_env null, so none is read: dummy
        # values only make the key redaction run as it would in a real run (never a real key)
        for k in KEY_VARS:
            self.env[k] = "rehearsal-" + secrets.token_urlsafe(18)
        if not args.hf_online:
            # litellm prices every answer with a tokenizer it fetches from the Hugging Face hub for some model
            # names (openai/meta-llama/Meta-Llama-3.1-*: Xenova/llama-3-tokenizer); offline, huggingface_hub
            # retries 5 times (~30 s) on the job's event loop for every answer (see the report's notes)
            self.env["HF_HUB_OFFLINE"] = "1"
        self.monitor = Monitor()
        self.runs = []
        self.current = None
        self.t0 = None
        self.notes = []  # problems and observations, printed in the report
        self.checks = []  # (name, measured, target, status)
        self.out = {}
        self.sim = None

    # - setup -

    def prepare(self):
        wd = self.wd
        if not (wd / "Snakefile").is_file() or not (wd / "config" / "rehearsal.yaml").is_file():
            sys.exit(f"{wd}: not a checkout of the workflow (no Snakefile or config/rehearsal.yaml)")
        tracked = set(subprocess.run(["git", "ls-files", "results"], cwd=wd, capture_output=True, text=True).stdout.split())
        extra = [p for p in (wd / "results").rglob("*") if p.is_file() and str(p.relative_to(wd)) not in tracked]
        if extra and not (self.dir / "workdir").is_file():
            sys.exit(f"{wd}/results holds {len(extra)} files that are not tracked (e.g. {extra[0]}) and the "
                     "workdir was not set up by this script: refusing to wipe it. Use a scratch clone.")
        data = (wd / self.a.data).resolve()
        esconv, release = data / "esconv" / "ESConv.json", data / "heart-release"
        for p in (esconv, release / "dialogues_regular.json", release / "dialogues_adversarial.json"):
            if not p.is_file():
                sys.exit(f"{p}: missing (--data {self.a.data} relative to {wd})")
        self.port_free()
        # a fresh start: everything a run leaves behind, and nothing else
        base = yaml.safe_load((wd / "config" / "paper.yaml").read_text())
        over = yaml.safe_load((wd / "config" / "rehearsal.yaml").read_text())
        self.config = merge(base, over)
        cache = self.config["llm"]["cache_dir"]
        for rel in ("logs", "benchmarks", ".snakemake", cache, ".rehearsal"):
            shutil.rmtree(wd / rel, ignore_errors=True)
        for p in (wd / "results").iterdir():
            if str(p.relative_to(wd)) not in tracked:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        self.dir.mkdir()
        (self.dir / "workdir").write_text("set up by tests/benchmarks/bench_rehearsal.py; wiped by its next run\n")
        local = {"esconv": {"local_copy": self.a.data.rstrip("/") + "/esconv/ESConv.json"},
                 "release": {"local_copy": self.a.data.rstrip("/") + "/heart-release"}}
        if self.a.items:
            regular = json.loads((release / "dialogues_regular.json").read_text())
            adversarial = json.loads((release / "dialogues_adversarial.json").read_text())
            n_adv = max(1, round(self.a.items * len(adversarial) / (len(regular) + len(adversarial))))
            n_reg = max(1, self.a.items - n_adv)
            sub = self.dir / "release"
            sub.mkdir()
            (sub / "dialogues_regular.json").write_text(json.dumps(regular[:n_reg]))
            (sub / "dialogues_adversarial.json").write_text(json.dumps(adversarial[:n_adv]))
            local["release"]["local_copy"] = ".rehearsal/release"
            self.notes.append(f"SMALL SCALE: --items {self.a.items}: the first {n_reg} regular and {n_adv} adversarial "
                              "released contexts (their sha256 differs from the pins: recorded, not fatal)")
        if self.a.shards:
            local["llm"] = {"shards": self.a.shards}
            self.config["llm"]["shards"] = self.a.shards
            self.notes.append(f"DEVELOPMENT: llm.shards {self.a.shards} instead of the paper config's")
        if self.a.rpm == "none":
            limited = {n: m["rpm"] for n, m in self.config["models"].items() if m.get("rpm")}
            local["models"] = {n: {"rpm": None} for n in limited}
            for n in limited:
                self.config["models"][n]["rpm"] = None
            self.notes.append("--rpm none: the models' rpm limits of paper.yaml were lifted (" + ", ".join(
                f"{n} {v}" for n, v in limited.items()) + " per model); each model is bound by its max_concurrency only")
        if not self.a.hf_online:
            self.notes.append("HF_HUB_OFFLINE=1 was set for every run: without it litellm's cost calculation tries to "
                              "download Xenova/llama-3-tokenizer from huggingface.co for every llama-3.1 answer (see "
                              "--hf-online)")
        self.write_overlay("local.yaml", local)
        self.overlays = ["config/paper.yaml", "config/rehearsal.yaml", ".rehearsal/local.yaml"]
        self.cache_dir = wd / cache

    def write_overlay(self, name, content):
        (self.dir / name).write_text(yaml.safe_dump(content, sort_keys=False))
        return f".rehearsal/{name}"

    def port_free(self):
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", self.a.port)) == 0:
                sys.exit(f"port {self.a.port} on 127.0.0.1 is taken (something answers there): stop it or use --port "
                         "(config/rehearsal.yaml names 8799, so another port needs its own overlay)")
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the simulator binds (TIME_WAIT is fine)
            try:
                s.bind(("127.0.0.1", self.a.port))
            except OSError as exc:
                sys.exit(f"port {self.a.port} on 127.0.0.1 cannot be bound: {exc}")

    # - running snakemake -

    def snakemake_cmd(self, targets=("all",), flags=(), overlays=()):
        return [self.snakemake, *targets, "--cores", str(self.a.cores), *flags,
                "--configfile", *self.overlays, *overlays]

    def run(self, name, cmd, kill_when=None, deadline=None, quiet=False):
        r = Run(name, cmd)
        r.log = self.dir / f"{len(self.runs):02d}-{name}.log"
        self.runs.append(r)
        r.sim_before = self.sim_stats()
        print(f"[{hms(time.time() - self.t0)}] {name}: {' '.join(cmd[1:])}", flush=True)
        r.start = time.time()
        p = subprocess.Popen(cmd, cwd=self.wd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.current = p
        self.monitor.phase = name
        self.monitor.root = p.pid
        reader = threading.Thread(target=self._read, args=(p, r), daemon=True)
        reader.start()
        last_print = time.time()
        try:
            while p.poll() is None:
                time.sleep(0.5)
                avail = mem_available()
                if avail is not None and avail < self.a.mem_guard * 2 ** 30 and not r.killed:
                    r.killed = r.mem_guard = True
                    print(f"  {name}: only {gib(avail)} of memory left on the machine: killing the run", flush=True)
                    self.notes.append(f"{name} was killed by the memory guard: MemAvailable {gib(avail)} < "
                                      f"--mem-guard {self.a.mem_guard} GiB (peak tree RSS {gib(self.monitor.phase_peaks[name])})")
                    self.kill(p, signal.SIGKILL)
                if kill_when is not None and not r.killed and kill_when(r):
                    r.killed = True
                    self.kill(p, signal.SIGKILL)
                if deadline is not None and time.time() > deadline and not r.timed_out:
                    r.timed_out = True
                    print(f"  {name}: the time limit is reached: stopping it", flush=True)
                    self.kill(p, signal.SIGTERM)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        p.wait(timeout=60)
                    self.kill(p, signal.SIGKILL)
                if not quiet and time.time() - last_print > 60:
                    last_print = time.time()
                    done = sum(1 for j in r.jobs.values() if j.get("end"))
                    s = self.monitor.last_stats
                    print(f"  [{hms(time.time() - self.t0)}] {name}: {done} of {sum(r.planned.values()) or '?'} jobs done, "
                          f"{len([j for j in r.jobs.values() if not j.get('end')])} running"
                          + (f"; simulator {s['successes']} successes, {s['in_flight']} in flight"
                             if s and self.sim is not None else ""),
                          flush=True)
        finally:
            if p.poll() is None:
                self.kill(p, signal.SIGKILL)
            p.wait()
            reader.join(timeout=10)
            r.end = time.time()
            r.rc = p.returncode
            self.monitor.root = None
            self.current = None
        r.sim_after = self.sim_stats()
        print(f"  -> {name}: exit {r.rc}{' (killed)' if r.killed else ''}{' (timed out)' if r.timed_out else ''}, "
              f"{hms(r.wall)} ({r.wall:.1f} s), {sum(1 for j in r.jobs.values() if j.get('end'))} jobs finished",
              flush=True)
        if r.rc and not r.killed and not r.timed_out:
            for e in r.errors[:5]:
                print("     " + e, flush=True)
        return r

    def _read(self, p, r):
        """Snakemake's output, timestamped as it arrives; the jobs' progress bars (tqdm, written to the same
        stream with carriage returns) can sit before or after a Snakemake line, so every piece is searched."""
        pending = None  # "Error in rule X:" waits for its jobid
        starting = None  # "rule X:" waits for its jobid
        last = None  # the job whose "wildcards:" line may follow
        with open(r.log, "w", encoding="utf-8", errors="replace") as log:
            for raw in p.stdout:
                t = time.time()
                text = raw.decode("utf-8", errors="replace").rstrip("\n")
                log.write(f"{t - r.start:9.2f} {text}\n")
                for line in text.split("\r"):
                    line = line.strip()
                    if not line:
                        continue
                    if m := re.search(r"Error in rule (\w+):", line):
                        pending, starting = m.group(1), None
                        r.errors.append(line[:300])
                    elif m := re.search(r"Finished jobid: (\d+) \(Rule: (\w+)\)", line):
                        job = r.jobs.setdefault(int(m.group(1)), {"rule": m.group(2), "start": t, "run": r.name})
                        job["end"], job["ok"] = t, True
                    elif m := re.search(r"(?:^|[^\w/])(?:local)?rule (\w+):", line):
                        starting, last = {"rule": m.group(1), "start": t, "run": r.name}, None
                    elif last is not None and (m := re.search(r"\bwildcards: (.*)", line)):
                        last["wildcards"] = dict(kv.split("=", 1) for kv in m.group(1).split(", ") if "=" in kv)
                    elif m := re.search(r"\bjobid: (\d+)", line):
                        if pending:
                            job = r.jobs.get(int(m.group(1)))
                            if job is not None:
                                job["end"], job["ok"] = t, False
                            pending = None
                        elif starting is not None:
                            r.jobs[int(m.group(1))] = last = starting
                            starting = None
                    elif "Nothing to be done" in line:
                        r.nothing_to_do = True
                    elif re.search(r"Exception|Error", line) and len(r.errors) < 50 and "%|" not in line:
                        r.errors.append(line[:300])
                    if line == "Job stats:":
                        r._stats = True
                    elif getattr(r, "_stats", False):
                        m = re.fullmatch(r"(\w+)\s+(\d+)", line)
                        if m and m.group(1) != "total":
                            r.planned[m.group(1)] = int(m.group(2))
                        elif m or line.startswith("total"):
                            r._stats = False

    def kill(self, p, sig):
        """``sig`` to the run's process group, then to anything left in its session (jobs that made their own
        group); only processes this script started."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, sig)
        if sig == signal.SIGKILL:
            for pid, (_, sid) in _proc_table().items():
                if sid == p.pid:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)

    def sim_stats(self):
        if self.sim is None or self.sim.proc is None:
            return None
        try:
            return self.monitor.poll_stats()
        except OSError:
            return None

    # - the phases -

    def main_run(self):
        deadline = self.t0 + self.a.max_minutes * 60
        r1 = self.run("until-judging", self.snakemake_cmd(flags=["--until", "design_pairs"]), deadline=deadline)
        if r1.rc:
            return self.fail("the first run (--until design_pairs) failed", r1)
        expected = self.expected_judge_calls()
        judge_models = {self.sim_model(j["model"]) for j in self.config["judging"]["judges"].values()}
        self.out["expected_judge_calls"] = expected
        base = r1.sim_after or {"per_model": {}}

        def judged(stats):
            return sum(c.get("successes", 0) - base["per_model"].get(m, {}).get("successes", 0)
                       for m, c in stats["per_model"].items() if m in judge_models)

        def kill_when(run):
            s = self.monitor.last_stats
            if not s or not expected:
                return False
            if judged(s) >= self.a.kill_at * expected:
                s = self.sim.stats()  # fresh: what the server has answered and holds in flight at the kill
                self.out["kill"] = {"at_s": time.time() - run.start, "judge_successes": judged(s),
                                    "expected": expected, "successes_at_kill": s["successes"],
                                    "in_flight_at_kill": s["in_flight"]}
                print(f"  killing the run (SIGKILL to its process group): {judged(s)} of ~{expected} judge calls "
                      "answered", flush=True)
                return True
            return False

        prio = self.prioritize_flags()
        self.out["cache_files_before_judging"] = count_files(self.cache_dir)
        r2 = self.run("judging-killed", self.snakemake_cmd(flags=prio), kill_when=None if self.a.skip_kill else kill_when,
                      deadline=deadline)
        if r2.timed_out:
            return self.fail("time limit", r2)
        if r2.killed:
            time.sleep(max(5.0, 5 * self.a.latency))  # the simulator finishes what was in flight: answers nobody reads
            s = self.sim_stats() or {}
            k = self.out["kill"]
            # answered by the server after the client was gone: a rerun must ask for these again
            k["answered_after_kill"] = s.get("successes", 0) - k["successes_at_kill"]
            # every distinct request the server answered in this run vs the answers the jobs wrote to the cache:
            # the difference was answered (the server sent it) but never persisted (the job was still reading
            # it, or parsing it, when it was killed): a rerun has to ask for these again, and nothing else
            k["cache_files_after_kill"] = count_files(self.cache_dir)
            k["new_unique"] = s.get("unique_successes", 0) - r2.sim_before["unique_successes"]
            k["unpersisted"] = k["new_unique"] - (k["cache_files_after_kill"] - self.out["cache_files_before_judging"])
            recovery, flags = [], list(prio)
            r3 = self.run("rerun-after-kill", self.snakemake_cmd(flags=flags), deadline=deadline)
            for _ in range(3):  # what an operator does after kill -9: --unlock, --rerun-incomplete, as asked
                if not r3.rc or r3.timed_out:
                    break
                if self._log_has(r3, "cannot be locked"):
                    recovery.append("--unlock")
                    self.notes.append("after kill -9 the rerun refused to start: stale lock in .snakemake/locks "
                                      f"({self._log_line(r3, 'cannot be locked')}); `snakemake --unlock` was needed")
                    self.run("unlock", self.snakemake_cmd(flags=["--unlock"]), quiet=True)
                elif self._log_has(r3, "incomplete") and "--rerun-incomplete" not in flags:
                    recovery.append("--rerun-incomplete")
                    flags.append("--rerun-incomplete")
                    files = self._log_after(r3, "Incomplete files:")
                    self.notes.append("after kill -9 the rerun stopped on IncompleteFilesException (outputs of jobs "
                                      "killed after writing them, before Snakemake recorded them): " + ", ".join(files)
                                      + "; --rerun-incomplete was needed")
                else:
                    break
                r3 = self.run("rerun-after-kill", self.snakemake_cmd(flags=flags), deadline=deadline)
            self.out["kill"]["recovery"] = recovery
            if r3.rc:
                return self.fail("the rerun after the kill failed", r3)
        elif r2.rc:
            return self.fail("the run from judging on failed", r2)
        else:
            self.notes.append("the kill was not exercised: the run finished before the judges reached --kill-at")
        r4 = self.run("report", self.snakemake_cmd(flags=["--report", "results/report.html"]), deadline=deadline)
        self.checks.append(("report (--report results/report.html)", f"exit {r4.rc}", "exit 0",
                            "PASS" if r4.rc == 0 else "FAIL"))
        if r4.rc:
            self.notes.append(f"the report step failed (exit {r4.rc}, {r4.log}): " + " | ".join(r4.errors[:3]))
        self.out["main_wall_s"] = time.time() - self.t0
        return True

    def bound_per_s(self, model_cfg):
        """Calls/s a model's shard jobs can make at most: shards x min(rpm/60, max_concurrency/mean latency) with
        each job's share of the model's limits (``ModelSpec.share``); the mean of the simulator's log-normal
        latency."""
        from heart.llm.models import ModelSpec

        mean_latency = self.a.latency * self.a.time_scale * math.exp(self.a.sigma ** 2 / 2)
        n = self.config["llm"]["shards"]
        job = ModelSpec(name="m", model="m", max_concurrency=model_cfg.get("max_concurrency", 4),
                        rpm=model_cfg.get("rpm")).share(n)
        return n * min((job.rpm or 1e9) / 60, job.max_concurrency / mean_latency)

    def prioritize_flags(self):
        """--prioritize for the judge whose shards take longest at the config's limits (auto), so its
        shards get job slots first when judging, tagging and the quality checks want more than --cores."""
        if self.a.prioritize == "none":
            return []
        if self.a.prioritize != "auto":
            return ["--prioritize", self.a.prioritize]
        cfg, per = self.config, self.out.get("expected_judge_calls_per_judge") or {}
        if not per:
            return []

        def minutes(name):
            return per[name] / self.bound_per_s(cfg["models"][cfg["judging"]["judges"][name]["model"]]) / 60

        slowest = max(per, key=minutes)
        self.out["prioritized"] = {n: round(minutes(n), 1) for n in per}
        self.notes.append(f"--prioritize results/judging/llm/{slowest}.parquet for the judging runs: at the config's "
                          "limits the judges need about " + ", ".join(f"{n} {v} min" for n, v in
                                                                              self.out["prioritized"].items()))
        return ["--prioritize", f"results/judging/llm/{slowest}.parquet"]

    def fail(self, what, run):
        if run.timed_out:
            what = f"the time limit (--max-minutes {self.a.max_minutes:g}) was reached in {run.name}"
        self.out["main_failed"] = {"what": what, "run": run.name, "rc": run.rc, "errors": run.errors[:10],
                                   "log": str(run.log)}
        self.notes.append(f"{what}: {run.name} exit {run.rc}; log {run.log}; first errors: {run.errors[:4]}")
        return False

    def _log_has(self, run, word):
        return word in run.log.read_text(errors="replace").lower()

    def _log_after(self, run, marker):
        lines = [line[10:].strip() for line in run.log.read_text(errors="replace").splitlines()]
        if marker not in lines:
            return []
        out = []
        for line in lines[lines.index(marker) + 1:]:
            if not line.startswith("results/"):
                break
            out.append(line)
        return out

    def _log_line(self, run, word):
        for line in run.log.read_text(errors="replace").splitlines():
            if word in line.lower():
                return line[10:].strip()[:200]
        return ""

    def sim_model(self, name):
        """The model name the simulator sees for config model ``name`` (litellm's id without "openai/")."""
        return self.config["models"][name]["model"].split("/", 1)[1]

    def expected_judge_calls(self):
        sys.path.insert(0, str(self.wd / "workflow"))
        from heart.judging import llm_judge

        cfg = self.config
        families = {s: cfg["models"][c["model"]]["family"] for s, c in cfg["systems"].items()}
        families |= {s: c.get("family") or s for s, c in (cfg.get("imported_systems") or {}).items()}
        families |= {"original": "dataset", "human": "human"}
        pairs = pd.read_parquet(self.wd / "results" / "judging" / "pairs.parquet")
        orders = 1 if not cfg["judging"].get("both_orders") else 2
        total = 0
        per = {}
        for name, j in cfg["judging"]["judges"].items():
            fam = cfg["models"][j["model"]]["family"]
            n = int(llm_judge.eligible(pairs, fam, families, cfg["judging"]["exclude_own_family"]).sum()) * orders
            per[name] = n
            total += n
        self.out["pairs"] = len(pairs)
        self.out["expected_judge_calls_per_judge"] = per
        return total

    def snapshot(self, dest):
        """Copies of every Parquet table and CSV table under results/ (for the frame comparisons)."""
        n = 0
        for p in self.result_tables():
            target = dest / p.relative_to(self.wd / "results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)
            n += 1
        return n

    def result_tables(self, root=None):
        root = root or self.wd / "results"
        return sorted([*root.rglob("*.parquet"), *(root / "tables").glob("*.csv")])

    def noop(self):
        r = self.run("no-op", self.snakemake_cmd(), quiet=True)
        ran = sum(1 for j in r.jobs.values())
        self.out["noop"] = {"wall_s": r.wall, "rc": r.rc, "jobs": ran, "nothing_to_do": r.nothing_to_do}
        if ran:
            self.notes.append(f"the no-op rerun ran {ran} jobs: "
                              + ", ".join(sorted({j['rule'] for j in r.jobs.values()})))
        ok = r.rc == 0 and ran == 0 and r.wall <= TARGETS["noop_s"]
        self.checks.append(("no-op rerun", f"{r.wall:.1f} s, {ran} jobs, exit {r.rc}", f"<= {TARGETS['noop_s']:.0f} s, 0 jobs",
                            "PASS" if ok else "FAIL"))
        # for reference: Snakemake's dry run on the finished workdir
        d = self.run("dry-run", self.snakemake_cmd(flags=["-n"]), quiet=True)
        self.out["noop"]["dry_run_s"] = d.wall

    def alt_shards(self, reference):
        k = self.a.alt_shards
        overlay = self.write_overlay("shards.yaml", {"llm": {"shards": k}})
        before = self.sim_stats()
        r = self.run(f"shards-{k}", self.snakemake_cmd(overlays=[overlay]))
        after = self.sim_stats()
        calls = (after["successes"] - before["successes"]) if before and after else None
        self.out["shards"] = {"k": k, "wall_s": r.wall, "rc": r.rc, "calls": calls,
                              "jobs": len(r.jobs), "requests": (after["requests"] - before["requests"]) if after else None}
        if r.rc:
            self.notes.append(f"llm.shards {k}: the run failed (exit {r.rc}, {r.log}): {r.errors[:4]}")
            self.checks.append((f"llm.shards {k} vs {self.config['llm']['shards']}", f"run failed (exit {r.rc})",
                                "frame-equal", "FAIL"))
            return
        cmp = compare_trees(reference, self.wd / "results", self.result_tables())
        self.out["shards"]["compare"] = cmp
        self.checks.append((f"llm.shards {k} vs {self.config['llm']['shards']}: tables",
                            summary(cmp), "frame-equal (but from_cache)", "PASS" if compare_ok(cmp) else "FAIL"))
        self.checks.append((f"llm.shards {k}: calls made", f"{calls}", "0 (all from the cache)",
                            "PASS" if calls == 0 else "FAIL"))

    def replay(self, reference):
        """No simulator; llm.replay = a copy of the first run's export; empty cache dir; results/ emptied."""
        export = reference / "llm" / "cache.parquet"
        rdir = self.dir / "replay"
        (rdir / "empty_cache").mkdir(parents=True)
        shutil.copy2(export, rdir / "cache.parquet")
        # the first run's outputs move aside (results/ keeps its tracked files only)
        aside = self.dir / "before_replay"
        aside.mkdir()
        tracked = set(subprocess.run(["git", "ls-files", "results"], cwd=self.wd, capture_output=True, text=True).stdout.split())
        for rel in ("logs", "benchmarks"):
            if (self.wd / rel).exists():
                shutil.move(self.wd / rel, aside / rel)
        (aside / "results").mkdir()
        for p in (self.wd / "results").iterdir():
            if str(p.relative_to(self.wd)) not in tracked:
                shutil.move(p, aside / "results" / p.name)
        overlay = self.write_overlay("replay.yaml", {"llm": {"replay": ".rehearsal/replay/cache.parquet",
                                                             "cache_dir": ".rehearsal/replay/empty_cache"}})
        with Listener(self.a.port) as listener:
            cmd = self.snakemake_cmd(overlays=[overlay])
            cmd[cmd.index("--cores") + 1] = str(self.a.replay_cores)
            r = self.run("replay", cmd)
            attempts = listener.count
        replay_peak = self.monitor.phase_peaks["replay"]
        called = sum(v["called"] for v in self.rule_log_calls().values())
        cached = sum(1 for _ in (rdir / "empty_cache").rglob("*.json"))
        self.out["replay"] = {"wall_s": r.wall, "rc": r.rc, "connections": attempts, "called_in_logs": called,
                              "jobs": len(r.jobs), "peak_rss": replay_peak, "new_cache_files": cached,
                              "replay_bytes": (rdir / "cache.parquet").stat().st_size,
                              "stages": stage_walls([r]),
                              "bench": bench_by_stage(self.wd / "benchmarks")}
        self.checks.append(("replay: network calls", f"{attempts} connection attempts to :{self.a.port}, "
                            f"{called} 'called' in rule logs, exit {r.rc}", "0, run succeeds",
                            "PASS" if attempts == 0 and called == 0 and r.rc == 0 else "FAIL"))
        if r.rc:
            self.notes.append(f"replay: the run failed (exit {r.rc}, {r.log}): {r.errors[:4]}")
            return
        cmp = compare_trees(reference, self.wd / "results", self.result_tables())
        self.out["replay"]["compare"] = cmp
        self.checks.append(("replay: tables vs first run", summary(cmp), "frame-equal (but from_cache)",
                            "PASS" if compare_ok(cmp) else "FAIL"))

    # - measurements -

    def rule_log_calls(self):
        """logs/<stage>/... -> the last "N requests, M from cache, K called, F failed" of each rule log."""
        out = {}
        for p in sorted((self.wd / "logs").rglob("*.log")):
            found = CALLS_RE.findall(p.read_text(errors="replace"))
            if found:
                n, c, k, f = (sum(int(x[i]) for x in found) for i in range(4))
                stage = LOG_STAGE.get(p.relative_to(self.wd / "logs").parts[0], "other")
                out[str(p.relative_to(self.wd))] = {"stage": stage, "requests": n, "cached": c, "called": k, "failed": f}
        return out

    def cross_shard_duplicates(self):
        """Per stage: cache keys called (from_cache False) by more than one shard job. Each shard answers its
        own requests (identical ones within a job are sent once), so an identical request in two shards that
        run at the same time is paid twice: a repeated success at the simulator that no kill caused."""
        out = {}
        for folder in sorted((self.wd / "results").glob("*/shards/*")):
            called = defaultdict(set)
            for f in folder.glob("*.parquet"):
                try:
                    t = pd.read_parquet(f, columns=["cache_key", "from_cache"])
                except Exception:  # noqa: BLE001 - a table without these columns
                    continue
                for key in t.loc[~t["from_cache"].astype(bool), "cache_key"].dropna().unique():
                    called[key].add(f.name)
            extra = sum(len(v) - 1 for v in called.values() if len(v) > 1)
            if extra:
                out[str(folder.relative_to(self.wd / "results"))] = extra
        return out

    def llm_targets(self, runs):
        """Per LLM rule and target (system, judge, tagger): its shard jobs' span and wall, the calls the
        simulator answered for its model in the runs where that rule ran, and the bound the config sets:
        min(rpm / 60, max_concurrency / mean latency) per model (split over its shard jobs)."""
        wild = {"generate_completions": "system", "judge_pairs": "judge", "tag_strategies": "tagger"}
        cfg = self.config
        model_of = {"generate_completions": lambda n: cfg["systems"][n]["model"],
                    "judge_pairs": lambda n: cfg["judging"]["judges"][n]["model"],
                    "tag_strategies": lambda n: cfg["tagging"]["taggers"][n]["model"]}
        groups = defaultdict(list)
        for r in runs:
            for j in r.jobs.values():
                if j["rule"] in wild:
                    name = (j.get("wildcards") or {}).get(wild[j["rule"]], "?")
                    groups[(j["rule"], name)].append((j["start"], j.get("end") or r.end, bool(j.get("ok")), r))
        rows = []
        for (rule, name), jobs in sorted(groups.items(), key=lambda kv: min(j[0] for j in kv[1])):
            try:
                m = cfg["models"][model_of[rule](name)]
            except KeyError:
                m = {}
            sim_name = m.get("model", "/?").split("/", 1)[1]
            calls = 0
            for r in {j[3] for j in jobs}:
                if r.sim_before and r.sim_after:
                    calls += (r.sim_after["per_model"].get(sim_name, {}).get("successes", 0)
                              - r.sim_before["per_model"].get(sim_name, {}).get("successes", 0))
            first, last = min(j[0] for j in jobs), max(j[1] for j in jobs)
            bound = self.bound_per_s(m) if m else None
            rows.append({"rule": rule, "target": name, "jobs": sum(j[2] for j in jobs), "not_ok": sum(not j[2] for j in jobs),
                         "first": first, "last": last, "wall_s": union_length([(a, b) for a, b, _, _ in jobs]),
                         "sim_calls": calls, "bound_per_s": bound, "rpm": m.get("rpm"),
                         "max_concurrency": m.get("max_concurrency")})
        return rows

    def measure(self):
        runs = [r for r in self.runs if r.name in ("until-judging", "judging-killed", "rerun-after-kill", "report")]
        stages = stage_walls(runs)
        bench = bench_by_stage(self.wd / "benchmarks")
        logs = self.rule_log_calls()
        by_stage_logs = defaultdict(lambda: defaultdict(int))
        for v in logs.values():
            for k in ("requests", "cached", "called", "failed"):
                by_stage_logs[v["stage"]][k] += v[k]
        # simulator successes per stage: phase x model (completions in the first run; judges' and the tagger's
        # models in the runs after it: the paper config's judge and tagger models are distinct)
        judge_models = {self.sim_model(j["model"]) for j in self.config["judging"]["judges"].values()}
        tag_models = {self.sim_model(t["model"]) for t in self.config["tagging"]["taggers"].values()}
        sim_calls = defaultdict(int)
        for r in runs:
            if not (r.sim_before and r.sim_after):
                continue
            for m, c in r.sim_after["per_model"].items():
                d = c.get("successes", 0) - r.sim_before["per_model"].get(m, {}).get("successes", 0)
                if r.name == "until-judging":
                    sim_calls["completions"] += d
                elif m in judge_models and m in tag_models:
                    sim_calls["judging+tagging"] += d
                elif m in judge_models:
                    sim_calls["judging"] += d
                elif m in tag_models:
                    sim_calls["tagging"] += d
                else:
                    sim_calls["other"] += d
        self.out["stages"] = stages
        self.out["targets"] = self.llm_targets(runs)
        self.out["bench"] = bench
        self.out["calls_logs"] = {k: dict(v) for k, v in by_stage_logs.items()}
        self.out["calls_sim"] = dict(sim_calls)
        self.out["peak"] = {"rss": self.monitor.peak_rss, "pss": self.monitor.peak_pss, "procs": self.monitor.peak_procs,
                            "phase": self.monitor.peak_at, "sim_rss": self.monitor.sim_peak_rss,
                            "by_job": sorted(self.monitor.peak_by_job.items(), key=lambda kv: -kv[1])[:8]}
        self.out["cache"] = dir_size(self.cache_dir)
        self.out["cache"]["temp_files"] = count_files(self.cache_dir, temp=True)
        parq = sorted(((p.stat().st_size, str(p.relative_to(self.wd))) for p in (self.wd / "results").rglob("*.parquet")),
                      reverse=True)
        self.out["parquet"] = {"count": len(parq), "bytes": sum(s for s, _ in parq), "largest": parq[:10]}
        s = self.monitor.last_stats or {}
        self.out["sim"] = {k: s.get(k) for k in ("requests", "successes", "errors", "unique_successes",
                                                 "repeated_successes", "max_in_flight", "cpu_s")}
        self.out["sim_per_model"] = s.get("per_model", {})
        self.out["rate_peaks"] = self.rate_peaks()
        self.out["cross_shard_duplicates"] = self.cross_shard_duplicates()

    def rate_peaks(self):
        """Per model: the most successes the simulator gave in any 60 s (from the 2-s samples), vs config rpm."""
        series = self.monitor.series
        rpm = {self.sim_model(n): m.get("rpm") for n, m in self.config["models"].items()}
        out = {}
        j = 0
        for i, (t, counts, _, _) in enumerate(series):
            while series[j][0] < t - 60:
                j += 1
            for m, c in counts.items():
                d = c - series[j][1].get(m, 0)
                if d > out.get(m, (0,))[0]:
                    out[m] = (d, rpm.get(m))
        return out


class Listener:
    """A socket on the simulator's port that counts connection attempts and closes them (a replay that calls
    a model fails instead of being answered)."""

    def __init__(self, port):
        self.port, self.count = port, 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def __enter__(self):
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(64)
        self.sock.settimeout(0.5)
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def _serve(self):
        while not self.halt.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.count += 1
            conn.close()

    def __exit__(self, *exc):
        self.halt.set()
        self.thread.join(timeout=5)
        self.sock.close()


# --- analysis helpers ----------------------------------------------------------------------------------

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
        n += sum(1 for x in names if (x.startswith(".") and x.endswith(".tmp")) == temp and (temp or x.endswith(".json")))
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


def compare_trees(ref, root, files):
    out = {"equal": 0, "differ": {}, "missing": [], "extra": []}
    rel_new = {str(p.relative_to(root)) for p in files}
    rel_ref = {str(p.relative_to(ref)) for p in [*ref.rglob("*.parquet"), *(ref / "tables").glob("*.csv")]}
    out["missing"] = sorted(rel_ref - rel_new)
    out["extra"] = sorted(rel_new - rel_ref)
    for rel in sorted(rel_ref & rel_new):
        try:
            d = compare_frames(read_any(ref / rel), read_any(root / rel))
        except Exception as exc:  # noqa: BLE001
            d = {"kind": "unreadable", "detail": f"{type(exc).__name__}: {exc}"[:200]}
        if d is None:
            out["equal"] += 1
        else:
            out["differ"][rel] = d
    return out


# columns that record how this run got a row, not what the row says: they may differ between runs
RUN_COLUMNS = {"from_cache": "whether this run answered the row from the cache (true in a rerun or a replay)"}


def legit(d):
    return d["kind"] == "values" and set(d["columns"]) <= set(RUN_COLUMNS)


def compare_ok(cmp):
    return not cmp["missing"] and all(legit(d) for d in cmp["differ"].values())


def describe_compare(cmp, limit=25):
    """Lines: the differences in run-provenance columns grouped, every other difference listed."""
    lines = []
    groups = defaultdict(list)
    for rel, d in cmp["differ"].items():
        if legit(d):
            groups[tuple(sorted(d["columns"]))].append(rel)
    for cols, rels in groups.items():
        by_dir = defaultdict(int)
        for rel in rels:
            by_dir[rel.rsplit("/", 1)[0] if "/shards/" not in rel else rel.split("/shards/")[0] + "/shards/**"] += 1
        lines.append(f"only {', '.join(cols)} differs ({'; '.join(RUN_COLUMNS[c] for c in cols)}) in {len(rels)} tables: "
                     + ", ".join(f"{d}/ ({n})" for d, n in sorted(by_dir.items())))
    other = [(rel, d) for rel, d in cmp["differ"].items() if not legit(d)]
    for rel, d in other[:limit]:
        lines.append("DIFFERS: " + describe_diff(rel, d))
    if len(other) > limit:
        lines.append(f"... and {len(other) - limit} more tables differ")
    for rel in cmp["missing"]:
        lines.append("MISSING in the second run: " + rel)
    return lines


def summary(cmp):
    return (f"{cmp['equal']} equal, {len(cmp['differ'])} differ, {len(cmp['missing'])} missing, "
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


# --- the report ----------------------------------------------------------------------------------------

def report(reh):
    o, a = reh.out, reh.a
    lines = []
    p = lines.append
    p("")
    p("=" * 100)
    p("HEART paper-scale rehearsal against heart.simulation.simulator  (SIMULATED: no number here is a result)")
    p("=" * 100)
    p(f"workdir {reh.wd}; items: {'all released (300)' if not a.items else a.items}; simulator median latency {a.latency} s, "
      f"sigma {a.sigma}, error rate {a.error_rate}, rpm per model {a.sim_rpm}, time scale {a.time_scale}; "
      f"snakemake --cores {a.cores}; llm.shards {reh.config['llm']['shards']}")
    load = os.getloadavg()
    p(f"machine: {os.cpu_count()} CPUs, load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (shared)")
    p("")
    p("Runs")
    def delta(r, key):
        if not (r.sim_before and r.sim_after):
            return "-"
        return r.sim_after[key] - r.sim_before[key]

    p(table([[r.name, hms(r.wall), f"{r.wall:.1f}", r.rc, sum(1 for j in r.jobs.values() if j.get('ok')),
              delta(r, "successes"), delta(r, "repeated_successes"),
              "killed" if r.killed else "timed out" if r.timed_out else ""] for r in reh.runs],
            ["run", "wall", "s", "exit", "jobs ok", "sim calls", "repeated", ""]))
    if "stages" in o:
        p("")
        p("Stages of the main run (wall = union of the stage's job intervals across the runs; calls/s = simulator "
          "calls / wall)")
        rows = []
        sim = o["calls_sim"]
        for st, v in o["stages"].items():
            b = o["bench"].get(st, {})
            lg = o["calls_logs"].get(st, {})
            calls = sim.get(st)
            rate = f"{calls / v['wall_s']:.1f}" if calls and v["wall_s"] else "-"
            rows.append([st, v["jobs"], v["unfinished"], hms(v["wall_s"]), hms(v["first"] - reh.t0), hms(v["last"] - reh.t0),
                         f"{b['cpu_s']:.0f}" if b else "-", f"{b['max_rss_mb']:.0f}" if b else "-",
                         calls if calls is not None else "-", lg.get("called", "-"), lg.get("cached", "-"), rate])
        p(table(rows, ["stage", "jobs", "not ok", "wall", "from", "to", "bench cpu s", "bench max_rss MB",
                       "sim calls", "log called", "log cached", "calls/s"]))
        if o.get("targets"):
            p("")
            p("LLM targets (calls: the simulator's successes for the target's model in the runs where its jobs ran -- "
              "judges include their quality-check calls; bound: min(rpm/60, max_concurrency/mean latency), the "
              "model's limits, each shard job keeping its share)")
            rows = []
            for t in o["targets"]:
                span = t["last"] - t["first"]
                rows.append([t["rule"], t["target"], t["jobs"], t["not_ok"], hms(t["first"] - reh.t0), hms(t["last"] - reh.t0),
                             hms(span), t["sim_calls"], f"{t['sim_calls'] / span:.1f}" if span > 0 else "-",
                             f"{t['bound_per_s']:.1f}" if t["bound_per_s"] else "-", t["rpm"], t["max_concurrency"]])
            p(table(rows, ["rule", "target", "jobs", "not ok", "from", "to", "span", "calls", "calls/s", "bound/s",
                           "rpm", "conc"]))
        if "judging+tagging" in sim:
            p(f"  (judging and tagging share a model: {sim['judging+tagging']} calls not split)")
        p("  'not ok': jobs killed or failed; 'log called' counts the jobs that finished: calls made by jobs killed "
          "with SIGKILL are only in the simulator's count (the rerun found them in the cache: 'log cached').")
        p("")
        main = o.get("main_wall_s")
        p(f"Whole rehearsal (first run to report): {hms(main)}" + (f" ({main:.0f} s)" if main else "")
          + f"; simulator: {o['sim'].get('requests')} requests, {o['sim'].get('successes')} successes, errors "
          f"{o['sim'].get('errors')}, peak in flight {o['sim'].get('max_in_flight')}, server CPU {o['sim'].get('cpu_s')} s")
        pk = o["peak"]
        p(f"Peak memory: process tree {gib(pk['rss'])} RSS (PSS {gib(pk['pss'])}) over {pk['procs']} processes, in run "
          f"'{pk['phase']}'; simulator {mib(pk['sim_rss'])}; largest single processes: "
          + ", ".join(f"{n} {mib(v)}" for n, v in pk["by_job"][:6]))
        c = o["cache"]
        p(f"Response cache {reh.cache_dir.relative_to(reh.wd)}: {c['files']} files, {mib(c['bytes'])} "
          f"({mib(c['disk_bytes'])} on disk); {c.get('temp_files')} temporary files left by killed writes")
        pq_ = o["parquet"]
        p(f"Parquet under results/: {pq_['count']} files, {mib(pq_['bytes'])}; largest:")
        for size, path in pq_["largest"]:
            p(f"  {mib(size):>10}  {path}")
        over = {m: v for m, v in o["rate_peaks"].items() if v[1] and v[0] > v[1]}
        if over:
            p("Peak requests in any 60 s at the simulator above the model's configured rpm:")
            for m, (n, rpm) in sorted(over.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
                p(f"  {m}: {n} in 60 s vs rpm {rpm} ({n / rpm:.1f}x)")
        pm = o.get("sim_per_model", {})
        if pm:
            p("Simulator per model (successes / 429 / 5xx / repeated):")
            p("  " + "; ".join(f"{m} {c.get('successes', 0)}/{c.get('429', 0)}/{c.get('500', 0) + c.get('503', 0)}/"
                               f"{c.get('repeated_successes', 0)}" for m, c in sorted(pm.items())))
    if o.get("cross_shard_duplicates"):
        p("Identical requests called by two shard jobs (each a repeated success at the simulator, no kill needed): "
          + ", ".join(f"{k} {v}" for k, v in o["cross_shard_duplicates"].items()))
    if "kill" in o:
        k = o["kill"]
        written = k.get("cache_files_after_kill", 0) - o.get("cache_files_before_judging", 0)
        p("")
        p(f"Kill -9: at {k['at_s']:.0f} s into the judging run, {k['judge_successes']} of ~{k['expected']} judge calls "
          f"answered, {k['in_flight_at_kill']} requests in flight at the simulator ({k.get('answered_after_kill')} answered "
          f"after the kill); {k.get('new_unique')} distinct answers given in that run, {written} written to the "
          f"cache: {k.get('unpersisted')} answered but never "
          f"persisted; recovery: {' '.join(k.get('recovery') or []) or 'a plain rerun'}; "
          f"repeated successes over the killed run and its rerun: {k.get('repeated')} "
          f"({k.get('cross_shard_duplicates')} identical requests called by two judging/tagging shards)")
    if "noop" in o:
        n = o["noop"]
        p(f"No-op rerun: {n['wall_s']:.1f} s, {n['jobs']} jobs, exit {n['rc']} (snakemake -n on the same state: "
          f"{n.get('dry_run_s', float('nan')):.1f} s)")
    if "shards" in o:
        s = o["shards"]
        p(f"llm.shards {s['k']}: {hms(s['wall_s'])}, {s['jobs']} jobs, exit {s['rc']}, {s['calls']} calls at the simulator")
        for line in describe_compare(s["compare"]) if s.get("compare") else []:
            p("  " + line)
    if "replay" in o:
        r = o["replay"]
        p(f"Replay: {hms(r['wall_s'])}, {r['jobs']} jobs, exit {r['rc']}, {r['connections']} connection attempts, "
          f"{r['called_in_logs']} called in rule logs, replay file {mib(r['replay_bytes'])}, peak tree RSS "
          f"{gib(r['peak_rss'])}, {r['new_cache_files']} files written to the empty cache dir")
        if r.get("stages"):
            p("  replay stages: " + "; ".join(f"{st} {hms(v['wall_s'])}" for st, v in r["stages"].items()))
        if r.get("bench"):
            p("  replay LLM jobs (benchmarks): " + "; ".join(
                f"{st}: {v['files']} jobs, max {v['max_s']:.0f} s, max_rss {v['max_rss_mb']:.0f} MB"
                for st, v in r["bench"].items()))
        for line in describe_compare(r["compare"]) if r.get("compare") else []:
            p("  " + line)
    if o.get("extrapolation"):
        p("")
        p("Extrapolation (the main run did not finish):")
        for line in o["extrapolation"]:
            p("  " + line)
    p("")
    p("Checks")
    p(table([list(c) for c in reh.checks], ["check", "measured", "target", "result"]))
    if reh.notes:
        p("")
        p("Notes")
        for n in reh.notes:
            p("  - " + n)
    p("")
    return "\n".join(lines)


def extrapolate(reh):
    """Calls done, rates and the time left per LLM stage, when the main run stopped early."""
    s = reh.monitor.last_stats or {}
    lines = []
    runs = [r for r in reh.runs if r.name in ("until-judging", "judging-killed", "rerun-after-kill")]
    stages = stage_walls(runs)
    done = defaultdict(int)
    judge_models = {reh.sim_model(j["model"]) for j in reh.config["judging"]["judges"].values()}
    tag_models = {reh.sim_model(t["model"]) for t in reh.config["tagging"]["taggers"].values()}
    first = runs[0].sim_after if runs and runs[0].sim_after else None
    for m, c in s.get("per_model", {}).items():
        base = first["per_model"].get(m, {}).get("successes", 0) if first else 0
        if first is None:
            done["completions"] += c.get("successes", 0)
            continue
        done["completions"] += base
        if m in judge_models:
            done["judging"] += c.get("successes", 0) - base
        elif m in tag_models:
            done["tagging"] += c.get("successes", 0) - base
    expected = {"completions": len(reh.config["systems"]) * (reh.a.items or 300),
                "judging": reh.out.get("expected_judge_calls")}
    for st in ("completions", "judging", "tagging"):
        v = stages.get(st)
        if not v:
            continue
        rate = done[st] / v["wall_s"] if v["wall_s"] else 0
        exp = expected.get(st)
        left = (exp - done[st]) / rate if exp and rate else None
        lines.append(f"{st}: {done[st]} calls in {hms(v['wall_s'])} = {rate:.1f} calls/s"
                     + (f"; expected ~{exp}, {hms(left)} more at this rate" if left is not None else ""))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--workdir", required=True, help="a scratch checkout (its outputs are wiped)")
    ap.add_argument("--data", default="../shared/data", help="holds esconv/ESConv.json and heart-release/ (relative "
                    "to the workdir)")
    ap.add_argument("--items", type=int, default=None, help="small scale: the first N released items (default: all 300)")
    ap.add_argument("--latency", type=float, default=1.0, help="simulator median latency, s")
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--error-rate", type=float, default=0.005)
    ap.add_argument("--sim-rpm", type=int, default=20000, help="simulator rpm per model name (generous)")
    ap.add_argument("--time-scale", type=float, default=1.0, help="simulator time scale")
    ap.add_argument("--port", type=int, default=8799, help="config/rehearsal.yaml's port")
    ap.add_argument("--cores", type=int, default=10, help="snakemake --cores: concurrent jobs (each LLM job holds ~300 MB: "
                    "10 keeps the run under 4 GiB)")
    ap.add_argument("--replay-cores", type=int, default=8, help="--cores of the replay run (every LLM job of a "
                    "replay loads the whole replay file)")
    ap.add_argument("--prioritize", default="auto", help="auto: --prioritize the judge whose shards take longest "
                    "at the config's limits; none; or a target")
    ap.add_argument("--mem-guard", type=float, default=2.0, help="kill a run when the machine has less than this "
                    "many GiB available (a shared machine)")
    ap.add_argument("--rpm", choices=("paper", "none"), default="paper", help="paper: the models' rpm limits of "
                    "paper.yaml (per model, split over its shard jobs); none: lifted, each model bound by its "
                    "max_concurrency only (at paper.yaml's rpm the Claude judge alone needs ~40 min of rate-limited calls)")
    ap.add_argument("--kill-at", type=float, default=0.5, help="kill -9 once this share of the judge calls is answered")
    ap.add_argument("--alt-shards", type=int, default=8)
    ap.add_argument("--max-minutes", type=float, default=60, help="stop the main run after this long")
    ap.add_argument("--hf-online", action="store_true", help="leave HF_HUB_OFFLINE unset (litellm then tries to "
                    "download a llama tokenizer for every answer of the llama-3.1 models; offline that stalls the jobs)")
    ap.add_argument("--shards", type=int, default=None, help="development only: llm.shards instead of the config's")
    ap.add_argument("--skip-kill", action="store_true")
    ap.add_argument("--skip-noop", action="store_true")
    ap.add_argument("--skip-shards", action="store_true")
    ap.add_argument("--skip-replay", action="store_true")
    args = ap.parse_args()

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)  # the finally below then kills the running snakemake's group
    reh = Rehearsal(args)
    reh.prepare()
    sys.path.insert(0, str(reh.wd / "workflow"))
    from heart.simulation.simulator import Simulator

    reh.t0 = time.time()
    reh.monitor.start()
    reference = reh.dir / "first_run"
    try:
        with Simulator(port=args.port, median_latency=args.latency, sigma=args.sigma, error_rate=args.error_rate,
                       rpm=args.sim_rpm, time_scale=args.time_scale, start_timeout=60) as sim:
            reh.sim = sim
            reh.monitor.sim = sim
            print(f"simulator at {sim.api_base} (pid {sim.proc.pid})", flush=True)
            finished = reh.main_run()
            reh.measure()
            if "kill" in reh.out:
                after = [r for r in reh.runs if r.name in ("judging-killed", "unlock", "rerun-after-kill")]
                if after and after[0].sim_before and after[-1].sim_after:
                    k = reh.out["kill"]
                    rep = after[-1].sim_after["repeated_successes"] - after[0].sim_before["repeated_successes"]
                    dups = sum(v for key, v in reh.out["cross_shard_duplicates"].items()
                               if key.startswith(("judging/", "tagging/")))
                    lost = k.get("unpersisted", 0)
                    k.update(repeated=rep, cross_shard_duplicates=dups)
                    reh.out["repeated_after_kill"] = rep
                    # the literal target was 0; answers in flight at the kill cannot be: the provider answers
                    # them (and bills them) after the job is gone, or the job dies between reading an answer and
                    # writing it, so a rerun must ask again. Everything else must be 0.
                    rest = rep - lost - dups
                    reh.checks.append(("kill -9 mid-judging + rerun: calls repeated", str(rep),
                                       "only answers in flight at the kill", "-"))  # judged by the rows below
                    reh.checks.append(("  in flight at the kill: answered after it, or read but not yet written",
                                       str(lost), "(no client can store these)", "-"))
                    reh.checks.append(("  identical requests called by two shards", str(dups), "0",
                                       "PASS" if dups == 0 else "FAIL"))
                    reh.checks.append(("  beyond those", str(rest), "<= 0", "PASS" if rest <= 0 else "FAIL"))
            main = reh.out.get("main_wall_s")
            if not finished:
                reh.out["extrapolation"] = extrapolate(reh)
                reh.checks.append(("main run", f"did not finish ({reh.out['main_failed']['what']})", "finishes", "FAIL"))
            else:
                reh.checks.append(("whole rehearsal", hms(main), f"<= {hms(TARGETS['rehearsal_s'])}",
                                   "PASS" if main <= TARGETS["rehearsal_s"] else "FAIL"))
                reh.snapshot(reference)
                if not args.skip_noop:
                    reh.noop()
                if not args.skip_shards:
                    reh.alt_shards(reference)
            reh.out["sim_final"] = reh.sim_stats()
        reh.sim = reh.monitor.sim = None
        rep = (reh.out.get("sim_final") or {}).get("repeated_successes")
        lost = (reh.out.get("kill") or {}).get("unpersisted", 0)
        reh.checks.append(("repeated calls at the simulator", f"{rep} (all runs; {lost} in flight at the kill)",
                           "0 beyond those in flight at the kill",
                           "PASS" if rep is not None and rep - lost <= 0 else "FAIL"))
        reh.checks.append(("peak memory, process tree", f"{gib(reh.monitor.peak_rss)} RSS, {gib(reh.monitor.peak_pss)} PSS",
                           f"<= {gib(TARGETS['peak_bytes'])}", "PASS" if reh.monitor.peak_rss <= TARGETS["peak_bytes"]
                           else "FAIL"))
        if not args.skip_replay and "main_failed" not in reh.out:
            reh.replay(reference)
    except BaseException:
        traceback.print_exc()
        reh.notes.append("the rehearsal script stopped on an exception (above)")
    finally:
        if reh.current is not None and reh.current.poll() is None:
            reh.kill(reh.current, signal.SIGKILL)
        reh.monitor.halt.set()
    text = report(reh)
    print(text, flush=True)
    (reh.dir / "report.txt").write_text(text)
    (reh.dir / "report.json").write_text(json.dumps(reh.out, indent=1, default=str))
    print(f"(also in {reh.dir / 'report.txt'}, {reh.dir / 'report.json'}; run logs in {reh.dir})")


if __name__ == "__main__":
    main()
