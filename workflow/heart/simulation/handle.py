"""The simulated provider in its own process, from Python: :class:`Simulator` (a context manager)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Self

from heart import WORKFLOW_DIR
from heart.simulation.simulator import Options


class Simulator:
    """The simulator in its own process while the block runs: ``.api_base``, ``.stats()``, ``.reset()``.

    Takes the fields of :class:`Options` as keyword arguments (``port`` 0 by default: a free port). The
    process is terminated on exit (killed if it does not stop within ``stop_timeout``), at interpreter
    exit if the block was never left, and stops itself if this process dies.
    """

    def __init__(self, start_timeout: float = 30.0, stop_timeout: float = 5.0, **options):
        self.options = Options(**{**options, "parent_pid": os.getpid()})
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.api_base: str | None = None
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(WORKFLOW_DIR), *filter(None, [os.environ.get("PYTHONPATH")])])}
        cmd = [sys.executable, "-m", "heart.simulation.simulator", *self.options.args()]
        self._err = tempfile.TemporaryFile(mode="w+")
        # its own session: a Ctrl-C at the terminal reaches this process, which then stops it in order
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err,
                                     text=True, env=env, start_new_session=True)
        atexit.register(self.stop)
        try:
            line = self._first_line()
            if not line.startswith("http://"):
                raise RuntimeError(f"simulator failed to start: {self._tail() or line!r}\n  command: {' '.join(cmd)}")
            self.api_base = line
            root = line.removesuffix("/v1")
            deadline = time.monotonic() + self.start_timeout
            while True:
                try:
                    urllib.request.urlopen(f"{root}/health", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise RuntimeError(f"simulator at {root} does not answer /health: {self._tail()}") from None
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def _first_line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.start_timeout)
        return self.proc.stdout.readline().strip() if ready else ""

    def _tail(self) -> str:
        self._err.flush()
        self._err.seek(0)
        return "".join(self._err.read().splitlines(keepends=True)[-10:]).strip()

    def _url(self, path: str) -> str:
        if self.api_base is None:
            raise RuntimeError("the simulator is not running")
        return self.api_base.removesuffix("/v1") + path

    def stats(self) -> dict:
        """The server's counters (``GET /stats``)."""
        with urllib.request.urlopen(self._url("/stats"), timeout=10) as r:
            return json.loads(r.read())

    def reset(self) -> None:
        """Zero the counters, the attempt counts and the rate-limit windows (``POST /stats/reset``)."""
        urllib.request.urlopen(urllib.request.Request(self._url("/stats/reset"), method="POST"), timeout=10).read()

    def stop(self) -> None:
        """Terminate the process (then kill it); safe to call more than once."""
        proc, self.proc = self.proc, None
        atexit.unregister(self.stop)
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(OSError):
            proc.stdout.close()
        self._err.close()
        self.api_base = None

    def __exit__(self, *exc) -> None:
        self.stop()
