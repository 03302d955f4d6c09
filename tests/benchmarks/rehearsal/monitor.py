"""The process tree and the simulator, sampled in a thread: peak RSS and PSS, the jobs' names, /stats."""

from __future__ import annotations

import os
import re
import threading
import time
from collections import defaultdict
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


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
        self.peak_parts: list[tuple[str, int]] = []
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
            # what made the peak: each process's RSS at that moment, by job
            self.peak_parts = sorted(((_job_name(p), r) for p, r in rss.items()), key=lambda x: -x[1])
        self.phase_peaks[self.phase] = max(self.phase_peaks[self.phase], total)
        for pid, r in rss.items():
            name = _job_name(pid)
            self.peak_by_job[name] = max(self.peak_by_job[name], r)
