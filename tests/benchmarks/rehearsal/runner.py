"""Snakemake runs of the rehearsal: the workdir set up, each run started, watched, killed and timed."""

from __future__ import annotations

import contextlib
import json
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
from pathlib import Path

import yaml

from rehearsal.common import KEY_VARS, gib, hms, merge
from rehearsal.compare import mem_available
from rehearsal.monitor import Monitor, _proc_table


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


class Runner:
    """The workdir, its overlays and the Snakemake runs in it (the phases are :class:`rehearsal.phases.Rehearsal`'s)."""

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

    def prepare(self):
        wd = self.wd
        if not (wd / "Snakefile").is_file() or not (wd / "config" / "rehearsal.yaml").is_file():
            sys.exit(f"{wd}: not a checkout of the workflow (no Snakefile or config/rehearsal.yaml)")
        tracked = set(subprocess.run(["git", "ls-files", "results"], cwd=wd, capture_output=True,
                                     text=True).stdout.split())
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
        # the configs say only what differs from the schema's defaults: the workdir's schema fills them in
        if str(wd / "workflow") not in sys.path:
            sys.path.insert(0, str(wd / "workflow"))
        from heart.common.config import validate_config

        self.config = validate_config(merge(base, over), schema_path=wd / "workflow/schemas/config.schema.yaml",
                                      source="config/paper.yaml + config/rehearsal.yaml")
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
                f"{n} {v}" for n, v in limited.items()) + " per model); each model is bound by its "
                "max_concurrency only")
        if self.a.adaptive:
            adaptive = {"enabled": True, "first": self.a.adaptive, "step": self.a.adaptive}
            local["judging"] = {"adaptive": adaptive}
            self.config["judging"]["adaptive"].update(adaptive)
            self.notes.append(f"ADAPTIVE: judging.adaptive on (rounds of {self.a.adaptive:.0%} of the fixed design's "
                              "pairs, each one batch per judge; results/judging/adaptive.parquet)")
        batched = sorted(n for n, m in self.config["models"].items() if m.get("batch"))
        if self.a.sync:
            local.setdefault("models", {}).update({n: {**local.get("models", {}).get(n, {}), "batch": None}
                                                   for n in batched})
            for n in batched:
                self.config["models"][n]["batch"] = None
            self.notes.append("--sync: every model synchronous (paper.yaml's batch interfaces of " + ", ".join(batched)
                              + " switched off)")
        else:
            self.notes.append("batch mode: " + ", ".join(f"{n} ({self.config['models'][n]['batch']})" for n in batched)
                              + f" judge and tag through the simulator's batch desk (batches end after "
                              f"{self.a.batch_delay} s; {self.a.batch_error_rate:.1%} of requests fail, "
                              f"{self.a.batch_expire_rate:.0%} of batches expire half answered)")
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

    def snakemake_cmd(self, targets=("all",), flags=(), overlays=()):
        # the memory budget binds the jobs' declared mem_mb (profiles/default/config.yaml); the whole top-level
        # `resources` of the profile is replaced by a command line's, so local_llm is given again
        budget = ["--resources", "local_llm=1", f"mem_mb={self.a.mem_budget_mb}"] if self.a.mem_budget_mb else []
        return [self.snakemake, *targets, "--cores", str(self.a.cores), *budget, *flags,
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
                                      f"--mem-guard {self.a.mem_guard} GiB (peak tree RSS "
                                      f"{gib(self.monitor.phase_peaks[name])})")
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
                    print(f"  [{hms(time.time() - self.t0)}] {name}: "
                          f"{done} of {sum(r.planned.values()) or '?'} jobs done, "
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
