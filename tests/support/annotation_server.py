"""The annotation app's real server for the tests and the load benchmark (tests/benchmarks/bench_annotation.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "workflow"),
                                                    *filter(None, [os.environ.get("PYTHONPATH")])])}


def cli(*args: str, cwd=REPO) -> str:
    """``python -m heart.annotation <args>``'s output; an error names the command and shows its stderr."""
    out = subprocess.run([sys.executable, "-m", "heart.annotation", *args], cwd=cwd, env=ENV,
                         capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise AssertionError(f"heart.annotation {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def wait_listening(proc: subprocess.Popen, port: int, timeout: float, failed) -> None:
    """Return once 127.0.0.1:``port`` accepts a connection; if ``proc`` exits first or ``timeout`` s pass,
    call ``failed()`` (it stops the process and raises, saying why)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                failed()
            time.sleep(0.05)


def terminate(proc: subprocess.Popen | None) -> None:
    """A clean shutdown of ``proc`` (SIGTERM; SIGKILL after 10 s), if it runs."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def synthetic_rating_tasks(raters: int, seed: int = 5):
    """Two SYNTHETIC items, each with two model replies and the original: 3 pairs an item, 6 in all, each to
    2 of ``raters`` raters, no quality checks."""
    import pandas as pd

    from heart.annotation import tasks as tasks_mod
    from heart.judging import pairs as pairs_mod

    items = pd.DataFrame([{
        "item_id": f"synthetic-{i}", "conversation_id": 900 + i, "subset": "regular",
        "history": [{"role": "seeker", "text": f"[synthetic] I feel low, day {i}."},
                    {"role": "supporter", "text": "[synthetic] What happened?"},
                    {"role": "seeker", "text": f"[synthetic] Exams, round {i}."}],
        "original_reply": f"[synthetic] Exams are a lot to carry (item {i})."} for i in range(2)])
    comp = pd.DataFrame(
        [{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
          "text": f"[synthetic] {s} answers {it.item_id}"} for it in items.itertuples() for s in ("m1", "m2")]
        + [{"item_id": it.item_id, "system": "original", "source": "dataset", "contributor_id": None,
            "text": it.original_reply} for it in items.itertuples()])
    pairs = pairs_mod.design(comp, items, seed)
    return tasks_mod.rating_tasks(items, pairs, comp, raters=raters, per_pair=2, qc_rate=0.0, qc_replies=[],
                                  seed=seed)


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AnnotationServer:
    """The annotation app's real server (``python -m heart.annotation serve``) as a subprocess on a free port
    of 127.0.0.1; :meth:`start` returns once it answers, :meth:`kill` sends SIGKILL (no clean shutdown)."""

    def __init__(self, db, tasks=None, cwd=REPO, log=None, db_flag=True, port=None, serve_args=()):
        """``db_flag=False``: serve without --db, as ``make annotate`` does (the store named beside the tasks);
        ``port``: always this one (a restart keeps the address), else a free one at each start;
        ``serve_args``: more ``serve`` options (e.g. ``--proxy 127.0.0.2``)."""
        self.db, self.tasks, self.cwd, self.db_flag, self.port = Path(db), tasks, cwd, db_flag, port
        self.serve_args = list(serve_args)
        self.log = Path(log) if log else Path(db).with_name("server.log")
        self.proc = None
        self.url = None

    def start(self, timeout: float = 60) -> "AnnotationServer":
        port = self.port or free_port()
        args = (["--db", str(self.db)] if self.db_flag else []) + ["--port", str(port)]
        args += ["--tasks", str(self.tasks)] if self.tasks else []
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "heart.annotation", "serve", *args, *self.serve_args],
                                         cwd=self.cwd, env=ENV, stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"

        def failed():
            self.kill()
            raise AssertionError(f"the annotation server did not start:\n{self.log.read_text()}")

        wait_listening(self.proc, port, timeout, failed)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """A clean shutdown (SIGTERM; SIGKILL after 10 s)."""
        terminate(self.proc)

    def links(self) -> dict[str, str]:
        """person_id -> secret link, as ``heart.annotation links`` prints them."""
        out = cli("links", "--db", str(self.db), "--base", self.url, cwd=self.cwd)
        return {person: link for person, _, link in (line.split("\t") for line in out.splitlines())}
