"""Snakemake's Python script jobs started as forks of one interpreter that has already imported the libraries
they use, in the test process's Snakemake only (:func:`support.workflow.in_process`).

Snakemake starts a ``script:`` job as ``bash -c 'set -euo pipefail; <python> <script>'``; such a process spends
~0.7 CPU-s importing pandas, pyarrow and NumPy before the job's first line (~0.4 more where SciPy or Matplotlib
are needed), and the suite starts some 480. Here a server (:func:`serve`, this file run as
``python forked_jobs.py <socket>``) imports those libraries once (:data:`PRELOAD`) and forks a child per job,
which takes the job's working directory, environment, umask, ``sys.path``, arguments and standard streams (the
file descriptors Snakemake's process would have been given), runs the script as ``__main__`` and ends as the
interpreter ends: non-daemon threads joined, ``atexit`` handlers run, streams flushed, the exit status of
``SystemExit`` or 1 after the traceback (from the script's own frame). Snakemake sees a process
(:class:`ForkedJob`: ``pid``, ``wait``, ``kill``) and does the rest as it always does: its benchmark, its kill,
its error on a non-zero status. What differs: the job's parent is the server, not Snakemake's shell; the jobs of
one server share its hash seed; the preloaded libraries are in ``sys.modules`` from the start (and their own exit
handlers run in every job).

A job is forked only where a fresh interpreter would start as the server's child does: no conda env, container
or environment module; the command exactly Snakemake's own; no ``matplotlibrc`` in the working directory; the
same value as the server's for every variable that Python, the C runtime and allocators read while starting
(:data:`STARTUP_VARIABLES`) and every variable the preloaded libraries read while loading (recorded as they
load). A job whose environment differs in one of those gets a server of its own (:data:`LIMIT` at most, then
the ordinary process). ``tests/workflow/test_forked_jobs.py`` compares a probe script's view of itself both ways.
Tests that run Snakemake as a command of its own (``support.SNAKEMAKE``) start their jobs the ordinary way.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import socket
import struct
import subprocess
import sys
import threading
from collections import Counter

#: what the server imports once: what most jobs import (their tables, figures and statistics)
#: (not Snakemake's own modules: importing them appends to ``sys.path``, which a job must do after its preamble
#: has extended it, and they are quick to import once those libraries are loaded)
PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "yaml", "scipy.stats", "matplotlib",
           "matplotlib.figure", "matplotlib.backends.backend_agg")

#: variables read by the interpreter, the C library, the BLAS and the allocators as a process starts or a library
#: loads (outside Python's ``os.environ``, so not recorded): names, or prefixes ending in ``_``
STARTUP_VARIABLES = ("PYTHON", "LANG", "LANGUAGE", "LC_", "TZ", "HOME", "PATH", "LD_", "MALLOC_", "GLIBC_",
                     "OMP_", "OPENBLAS_", "GOTO_", "MKL_", "VECLIB_", "NUMEXPR_", "ARROW_", "JE_", "MIMALLOC_",
                     "TMPDIR", "TMP", "TEMP", "TEMPDIR")

#: native threads a preloaded library starts that survive a fork safely: jemalloc's background thread (pyarrow's
#: allocator; its fork handlers take its locks and reset the thread in the child)
FORK_SAFE_THREADS = {"jemalloc_bg_thd"}

LIMIT = 4  # servers per test process at most; a job that would need another starts the ordinary way


def _startup_variable(name: str) -> bool:
    return name.startswith("PYTHON") or any(
        name.startswith(p) if p.endswith("_") else name == p for p in STARTUP_VARIABLES)


# --- the wire: a length-prefixed JSON message, a request carrying the job's three standard streams ----------

def _send(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    head = struct.pack("!I", len(data))
    if fds:  # the descriptors ride with the 4-byte header (one sendmsg), the body follows however it is split
        if socket.send_fds(sock, [head], list(fds)) != len(head):
            raise OSError("forked_jobs: the request's header was cut")
        sock.sendall(data)
    else:
        sock.sendall(head + data)


def _recv_exactly(sock, n, buf=b""):
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def _recv(sock, with_fds=0):
    fds = []
    if with_fds:
        head, fds, _, _ = socket.recv_fds(sock, 4, with_fds)
        if not head:
            raise EOFError("connection closed")
        head = _recv_exactly(sock, 4, head)
    else:
        head = _recv_exactly(sock, 4)
    (n,) = struct.unpack("!I", head)
    return json.loads(_recv_exactly(sock, n)), fds


# --- the server ---------------------------------------------------------------------------------------------

def _preload() -> list[str]:
    """Import :data:`PRELOAD`; the names of the variables they read from ``os.environ`` while loading."""
    import importlib
    import warnings

    read: set[str] = set()
    plain = type(os.environ)

    class Recording(plain):
        def __getitem__(self, key):
            read.add(key)
            return super().__getitem__(key)

        def __contains__(self, key):
            read.add(key)
            return super().__contains__(key)

        def __iter__(self):
            read.add("*")  # the whole environment read: a job is forked only in the very same one
            return super().__iter__()

    os.environ.__class__ = Recording
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for name in PRELOAD:
                importlib.import_module(name)
    finally:
        os.environ.__class__ = plain
    if caught:  # a warning shown here would not be shown again by a job
        sys.exit(f"forked_jobs: importing the preloaded libraries warned: {caught[0].message}")
    return sorted(read)


def _thread_names() -> list[str]:
    names = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != os.getpid():
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
    return names


def serve(path: str) -> None:
    """Import :data:`PRELOAD`, listen on the Unix socket ``path`` and fork a child per request, until standard
    input closes (the test process ended or stopped it)."""
    import select

    tail = sys.path[1:]  # the interpreter's own path after its script's folder (started without PYTHONPATH)
    read = _preload()
    if sys.path[1:] != tail:
        sys.exit(f"forked_jobs: importing the preloaded libraries changed sys.path: {sys.path[1:]} (was {tail})")
    others = _thread_names()
    if threading.active_count() != 1 or set(others) - FORK_SAFE_THREADS:
        sys.exit(f"forked_jobs: a preloaded library started a thread ({others}); forking would not be safe")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print(json.dumps({"ready": True, "read": read}), flush=True)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    while True:
        ready, _, _ = select.select([sys.stdin, listener, *running], [], [])
        for r in ready:
            if r is sys.stdin:
                if not os.read(0, 4096):
                    return
            elif r is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _recv(conn, with_fds=3)
                except (EOFError, OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for pidfd, (_, other) in running.items():
                        other.close()
                        os.close(pidfd)
                    conn.close()
                    _run_child(request, fds, tail)  # never returns
                for fd in fds:
                    os.close(fd)
                running[os.pidfd_open(pid)] = (pid, conn)
                with contextlib.suppress(OSError):
                    _send(conn, {"pid": pid})
            else:
                pid, conn = running.pop(r)
                os.close(r)
                _, status, usage = os.wait4(pid, 0)
                with contextlib.suppress(OSError):
                    _send(conn, {"status": status, "cpu": usage.ru_utime + usage.ru_stime})
                conn.close()


def _python_path(env: dict) -> list[str]:
    """``sys.path``'s entries from PYTHONPATH as a starting interpreter makes them (absolute, the first kept)."""
    out: list[str] = []
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        if entry and os.path.abspath(entry) not in out:
            out.append(os.path.abspath(entry))
    return out


def _run_child(request: dict, fds: list[int], tail: list[str]) -> None:
    """In the forked child: become ``python <script>`` in the job's directory and environment, run it, exit."""
    import random
    import runpy
    import traceback

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        script = request["argv"][1]
        sys.argv = list(request["argv"][1:])
        sys.path[:] = [os.path.dirname(os.path.realpath(script)), *_python_path(request["env"]), *tail]
        random.seed()  # a fresh interpreter's generators are seeded afresh, not the server's
        sys.modules["numpy"].random.seed()
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
        except BaseException as e:  # noqa: BLE001 -- as the interpreter: the traceback, status 1
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != script:
                tb = tb.tb_next
            traceback.print_exception(type(e), e, tb or e.__traceback__)
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code & 0xFF)


# --- the test process's side --------------------------------------------------------------------------------

class Server:
    """A server process of this test process, started by the first job that needs it with that job's
    environment (but PYTHONPATH)."""

    _lock = threading.Lock()
    _servers: list["Server"] = []

    def __init__(self, folder: str, env: dict):
        self.path = os.path.join(folder, "forked-jobs.sock")
        self.env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), self.path], env=self.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=folder)
        line = self.proc.stdout.readline()
        try:
            self.read = set(json.loads(line)["read"])
        except (ValueError, KeyError, TypeError):
            self.proc.wait()
            raise RuntimeError(f"forked_jobs: the server did not start (status {self.proc.returncode})") from None
        self.forked = 0

    def serves(self, env: dict) -> bool:
        """Whether a job in ``env`` would start as this server's fresh child does."""
        if "*" in self.read:
            return {k: v for k, v in env.items() if k != "PYTHONPATH"} == self.env
        names = {k for k in (*env, *self.env) if _startup_variable(k) and k != "PYTHONPATH"} | self.read
        return all(env.get(k) == self.env.get(k) for k in names)

    @classmethod
    def for_environment(cls, env: dict) -> "Server | None":
        """A running server whose children start as a fresh interpreter in ``env`` would, started if need be;
        None past :data:`LIMIT`."""
        with cls._lock:
            cls._servers = [s for s in cls._servers if s.proc.poll() is None]
            for server in cls._servers:
                if server.serves(env):
                    return server
            if len(cls._servers) >= LIMIT:
                return None
            import tempfile

            server = cls(tempfile.mkdtemp(prefix="heart-forked-jobs-", dir="/tmp"), env)  # a socket's path is short
            cls._servers.append(server)
            TALLY["servers started"] += 1
            return server

    def start(self, argv: list[str], env: dict, streams=(0, 1, 2)) -> "ForkedJob":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.path)
        _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": env, "umask": _umask()}, fds=streams)
        reply, _ = _recv(sock)
        self.forked += 1
        return ForkedJob(self, sock, reply["pid"])


def _umask() -> int:
    """This process's umask, read without setting it (other threads may be creating files)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    raise RuntimeError("no Umask in /proc/self/status")


def summary(tally: Counter) -> str:
    """One line: how the script jobs started."""
    forked, servers = tally.get("forked", 0), tally.get("servers started", 0)
    other = {k: v for k, v in tally.items() if k not in ("forked", "servers started")}
    why = "; ".join(f"{v} {k}" for k, v in sorted(other.items())) or "none"
    return (f"script jobs: {forked} forked from {servers} server{'' if servers == 1 else 's'} "
            "(tests/support/forked_jobs.py); "
            f"started as processes of their own: {sum(other.values())} ({why})")


def servers() -> list[Server]:
    return list(Server._servers)


def server_pids() -> set[int]:
    return {s.proc.pid for s in Server._servers}


_cpu = [0.0]  # the forked jobs' CPU seconds (their server reaps them, not this process)


def forked_cpu_seconds() -> float:
    """CPU seconds of the jobs forked so far by this process's servers, ended ones' included."""
    return _cpu[0]


def stop_servers() -> None:
    """End every server (its standard input closed) and reap it, so that its CPU counts as this process's
    child's."""
    with Server._lock:
        stopping, Server._servers = Server._servers, []
    for server in stopping:
        server.proc.stdin.close()
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(server.path)
            os.rmdir(os.path.dirname(server.path))


atexit.register(stop_servers)


class ForkedJob:
    """A forked job, as Snakemake's shell uses a ``subprocess.Popen``."""

    stdout = stderr = stdin = None

    def __init__(self, server: Server, sock: socket.socket, pid: int):
        self.server, self.sock, self.pid, self.returncode = server, sock, pid, None
        self._lock = threading.Lock()

    def wait(self, timeout=None):  # (Snakemake's shell waits without one)
        with self._lock:
            if self.returncode is None:
                try:
                    reply, _ = _recv(self.sock)
                except (EOFError, OSError):  # the server died with its job
                    self.returncode = -9
                else:
                    self.returncode = os.waitstatus_to_exitcode(reply["status"])
                    with Server._lock:
                        _cpu[0] += reply["cpu"]
                self.sock.close()
            return self.returncode

    def poll(self):
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self):
        import signal

        self.send_signal(signal.SIGKILL)

    def terminate(self):
        import signal

        self.send_signal(signal.SIGTERM)


#: script jobs of this process, "forked" or why they were not (``make test`` prints it, tests/conftest.py)
TALLY: Counter = Counter()

_pending = threading.local()  # the script file this Snakemake job thread is about to start


def patched_execute_script(original):
    """``PythonScript.execute_script``, noting the script its thread is about to start where a fork may start
    it (no conda env, container or environment module: the venv's own Python)."""

    def execute_script(self, fname, edit=False):
        if edit or self.conda_env is not None or self.container_img is not None or self.env_modules is not None:
            return original(self, fname, edit)
        _pending.fname = fname
        try:
            return original(self, fname, edit)
        finally:
            _pending.fname = None

    return execute_script


def _as_bash_sets(env: dict) -> dict:
    """The environment the script gets from the shell Snakemake runs it in: bash sets ``PWD`` (kept if it names
    the working directory) and ``_`` (the command run)."""
    env, cwd = dict(env), os.getcwd()
    try:
        keep = os.path.samefile(env.get("PWD", ""), cwd)
    except OSError:
        keep = False
    if not keep:
        env["PWD"] = cwd
    env["_"] = sys.executable
    return env


class PopenOrFork:
    """``subprocess`` as Snakemake's shell module uses it, its ``Popen`` forking the pending script job."""

    def __getattr__(self, name):
        return getattr(subprocess, name)

    def Popen(self, cmd, *args, **kwargs):  # noqa: N802 -- subprocess's name
        fname = getattr(_pending, "fname", None)
        if fname is None:
            return subprocess.Popen(cmd, *args, **kwargs)
        _pending.fname = None
        env, stdout = kwargs.get("env"), kwargs.get("stdout")
        if args or not isinstance(cmd, str) or not kwargs.get("shell") or env is None \
                or stdout in (subprocess.PIPE, subprocess.DEVNULL) \
                or {"stdin", "stderr", "cwd", "preexec_fn", "start_new_session"} & kwargs.keys() \
                or shlex.split(cmd) != ["set", "-euo", "pipefail;", sys.executable, fname]:
            TALLY["not Snakemake's own command"] += 1
        elif os.path.exists("matplotlibrc"):  # read from the working directory as Matplotlib loads
            TALLY["a matplotlibrc in the working directory"] += 1
        elif (server := Server.for_environment(env)) is None:
            TALLY[f"a start-up environment past the {LIMIT} servers'"] += 1
        else:
            TALLY["forked"] += 1
            # the streams Popen would give the job: its stdout argument (a descriptor or a file's) or ours
            out = 1 if stdout is None else stdout if isinstance(stdout, int) else stdout.fileno()
            return server.start([sys.executable, fname], _as_bash_sets(env), (0, out, 2))
        return subprocess.Popen(cmd, *args, **kwargs)


@contextlib.contextmanager
def forking():
    """For its length, Snakemake's Python script jobs in this process are forked where they may be."""
    from unittest import mock

    from snakemake.script import PythonScript

    with mock.patch.object(sys.modules["snakemake.shell"], "sp", PopenOrFork()), \
            mock.patch.object(PythonScript, "execute_script", patched_execute_script(PythonScript.execute_script)):
        yield


if __name__ == "__main__":
    serve(sys.argv[1])
