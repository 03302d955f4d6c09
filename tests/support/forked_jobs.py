"""Snakemake's Python script jobs started as forks of one interpreter that has already imported the libraries
they use, in the test process's Snakemake only (:func:`support.workflow.in_process`).

Snakemake starts a ``script:`` job as ``bash -c 'set -euo pipefail; <python> <script>'``; such a process spends
~0.7 CPU-s importing pandas, pyarrow and NumPy before the job's first line (~0.4 more where SciPy or Matplotlib
are needed), and the suite starts some 480. Here a server (:func:`serve`, this file run as
``python forked_jobs.py <socket>``) imports those libraries once (:data:`PRELOAD`) and forks a child per job,
which takes the job's working directory, environment (with what bash sets), umask, ``sys.path``, arguments and
standard streams (the file descriptors Snakemake's process would have been given), runs the script as the main
module and ends as the interpreter ends after a script: the uncaught error reported by ``sys.excepthook`` from the
script's own frame, non-daemon threads joined, ``atexit`` handlers run, what the job made finalised (the preloaded
libraries are not torn down), the status of ``SystemExit``, 1, or death by SIGINT. The server keeps an ended job
unreaped until its client asks for the status, as a ``Popen`` child stays until waited for, and a job dies with
its server. Snakemake sees a process (:class:`ForkedJob`: ``pid``, ``wait``, ``kill``) and does the rest as it
always does: its benchmark, its kill, its error on a non-zero status. What differs: the job's parent is the
server, not Snakemake's shell; the jobs of one server share its hash seed; the preloaded libraries are in
``sys.modules`` from the start (and their own exit handlers run in every job); the resource limits and CPU
affinity are the server's, fixed as it started.

A job is forked only where a fresh interpreter would start as the server's child does: no conda env, container
or environment module; the command exactly Snakemake's own; no ``matplotlibrc`` in the working directory; no
module on the job's ``sys.path`` before the interpreter's own named as one the server has imported; the same
value as the server's for every variable that Python, the C library, the BLAS and the allocators read as a
process starts or a library loads (:data:`STARTUP_VARIABLES`: names and prefixes, for reads outside Python) and
every variable the preloaded libraries read through ``os.environ`` while loading (recorded as they load). A job
whose environment differs in one of those gets a server of its own (:data:`LIMIT` at most); past the limit, or
where its server failed to start (a library that warned or started a thread as it loaded: remembered, not tried
again) or did not answer, the job starts the ordinary way. ``make test`` prints how many were forked and why
others were not (:data:`TALLY`). ``tests/workflow/test_forked_jobs.py`` compares a probe script both ways.
Tests that run Snakemake as a command of its own (``support.SNAKEMAKE``) start their jobs the ordinary way.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import shutil
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
STARTUP_VARIABLES = ("PYTHON", "LANG", "LANGUAGE", "LC_", "TZ", "TZDIR", "HOME", "PATH", "LD_", "MALLOC_",
                     "GLIBC_", "OMP_", "OPENBLAS_", "GOTO_", "MKL_", "VECLIB_", "NUMEXPR_", "GFORTRAN_", "NPY_",
                     "NUMPY_", "ARROW_", "PYARROW_", "JE_", "MIMALLOC_", "OPENSSL_", "TMPDIR", "TMP", "TEMP",
                     "TEMPDIR")

#: native threads a preloaded library starts that survive a fork safely: jemalloc's background thread (pyarrow's
#: allocator; its fork handlers take its locks and reset the thread in the child)
FORK_SAFE_THREADS = {"jemalloc_bg_thd"}

LIMIT = 4  # servers per test process at most; a job that would need another starts the ordinary way

#: script jobs of this process, forked or why they were not, and its servers (``make test`` prints it,
#: tests/conftest.py)
TALLY: Counter = Counter()
FORKED, STARTED, FAILED = "forked", "servers started", "servers that failed to start"


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
    """Import :data:`PRELOAD`; the names of the variables they read through ``os.environ`` while loading."""
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


class _Job:
    """A forked job as the server follows it: reaped once it has ended and its client has asked (until then a
    zombie, as a ``Popen`` child is until waited for: its pid stays its own, for a benchmark or a kill)."""

    def __init__(self, pid: int, conn: socket.socket):
        self.pid, self.conn, self.pidfd = pid, conn, os.pidfd_open(pid)
        self.ended = self.asked = False

    def settle(self) -> bool:
        """Reap and answer if both have happened; whether it is done with."""
        if not (self.ended and self.asked):
            return False
        _, status, usage = os.wait4(self.pid, 0)
        with contextlib.suppress(OSError):
            _send(self.conn, {"status": status, "cpu": usage.ru_utime + usage.ru_stime})
        self.conn.close()
        return True


def serve(path: str) -> None:
    """Import :data:`PRELOAD`, listen on the Unix socket ``path`` and fork a child per request, until standard
    input closes (the test process ended or stopped it: any job still running is killed and reaped)."""
    import select
    import signal

    atexit.unregister(stop_servers)  # the test process's handler: not the server's, nor its jobs'
    tail = sys.path[1:]  # the interpreter's own path after its script's folder (started without PYTHONPATH)
    read = _preload()
    if sys.path[1:] != tail:
        sys.exit(f"forked_jobs: importing the preloaded libraries changed sys.path: {sys.path[1:]} (was {tail})")
    others = _thread_names()
    if threading.active_count() != 1 or set(others) - FORK_SAFE_THREADS:
        sys.exit(f"forked_jobs: a preloaded library started a thread ({others}); forking would not be safe")
    import gc

    gc.collect()
    gc.freeze()  # the preloaded objects out of the collector's passes: a child's pass copies no page of them
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    modules = sorted({name.partition(".")[0] for name in sys.modules})
    times = os.times()
    print(json.dumps({"read": read, "modules": modules, "cpu": times.user + times.system}), flush=True)
    jobs: dict[int, _Job] = {}  # by its pidfd while running, by its connection until its client asks
    live: set[_Job] = set()  # until reaped
    while True:
        ready, _, _ = select.select([sys.stdin, listener, *jobs], [], [])
        for r in ready:
            if r is sys.stdin:
                if not os.read(0, 4096):
                    for job in live:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(job.pid, signal.SIGKILL)
                        os.waitpid(job.pid, 0)
                    return
            elif r is listener:
                conn, _ = listener.accept()
                conn.settimeout(10)  # a request follows its connection at once
                try:
                    request, fds = _recv(conn, with_fds=3)
                except (EOFError, OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for job in live:  # the other jobs' connections and pidfds, whichever are still open
                        job.conn.close()
                        if job.pidfd is not None:
                            os.close(job.pidfd)
                    conn.close()
                    _become(request, fds, tail)  # never returns
                for fd in fds:
                    os.close(fd)
                job = _Job(pid, conn)
                jobs[job.pidfd] = jobs[conn.fileno()] = job
                live.add(job)
                with contextlib.suppress(OSError):
                    _send(conn, {"pid": pid})
            else:
                job = jobs.pop(r)
                if r == job.pidfd:
                    job.ended = True
                    os.close(job.pidfd)
                    job.pidfd = None
                else:  # the client asks for the status (or has gone: its job is reaped all the same)
                    job.asked = True
                    with contextlib.suppress(OSError, EOFError, ValueError):
                        _recv(job.conn)
                if job.settle():
                    live.discard(job)


def _python_path(env: dict) -> list[str]:
    """``sys.path``'s entries from PYTHONPATH as a starting interpreter makes them (absolute, the first kept)."""
    out: list[str] = []
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        if entry and os.path.abspath(entry) not in out:
            out.append(os.path.abspath(entry))
    return out


def _from_script(tb, script: str):
    """A traceback from the script's own frame on (None where the error came before its first line, as a
    syntax error does: the interpreter then prints no frame either)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    return tb


def _become(request: dict, fds: list[int], tail: list[str]) -> None:
    """In the forked child: become ``python <script>`` in the job's directory and environment, run it and end
    as the interpreter ends after a script (:func:`_end`)."""
    import ctypes
    import importlib.machinery
    import random
    import signal
    import types

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a job does not outlive its server
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    script = request["argv"][1]
    sys.orig_argv = list(request["argv"])
    sys.argv = list(request["argv"][1:])
    sys.path[:] = [os.path.dirname(os.path.realpath(script)), *_python_path(request["env"]), *tail]
    random.seed()  # a fresh interpreter's generators are seeded afresh, not the server's
    sys.modules["numpy"].random.seed()
    preloaded = set(sys.modules)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __annotations__={}, __builtins__=__builtins__,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", script))
    sys.modules["__main__"] = main

    def uncaught(e: BaseException) -> None:  # as the interpreter reports an error the script did not catch,
        e.__traceback__ = _from_script(e.__traceback__, script)  # and takes back the script's file name
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, e.__traceback__
        sys.excepthook(type(e), e, e.__traceback__)
        finished()

    def finished() -> None:  # (after the script's run or its uncaught error; not after SystemExit)
        main.__dict__.pop("__file__", None)
        main.__dict__.pop("__cached__", None)

    status: int | str = 0
    try:
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec", dont_inherit=True)
        exec(code, main.__dict__)
        finished()
    except SystemExit as e:  # as the interpreter: its code, or its message printed and 1
        if e.code is None or isinstance(e.code, int):
            status = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt as e:
        uncaught(e)
        status = "SIGINT"  # the interpreter ends, then kills itself by the signal
    except BaseException as e:  # noqa: BLE001
        uncaught(e)
        status = 1
    _end(status, preloaded)


def _end(status: "int | str", preloaded: set[str]) -> None:
    """End the job as the interpreter ends: non-daemon threads joined, exit handlers run, then what the job made
    let go of and collected -- the globals of the main module and of every module the job imported, newest
    first (finalisers run: an unclosed file is flushed) -- the streams flushed, the status given. The preloaded
    libraries are not torn down: the server froze them out of the collector, and finalising them in each
    child would copy most of the server's memory (the pages a finaliser writes to) for nothing the job made."""
    import gc
    import signal

    threading._shutdown()
    atexit._run_exitfuncs()
    for name in reversed(list(sys.modules)):
        if name not in preloaded or name == "__main__":
            module = sys.modules.pop(name, None)
            if module is not None and hasattr(module, "__dict__"):
                module.__dict__.clear()
    del module
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if status == "SIGINT":
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(int(status) & 0xFF)


# --- the test process's side --------------------------------------------------------------------------------

class Server:
    """A server process of this test process, started by the first job that needs it with that job's
    environment (but PYTHONPATH); one that failed to start (:attr:`failed`) stands for its environment too, so
    that its jobs start the ordinary way without trying again."""

    _lock = threading.Lock()
    _servers: list["Server"] = []

    def __init__(self, folder: str, env: dict):
        self.folder, self.path = folder, os.path.join(folder, "forked-jobs.sock")
        self.env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self.read: set[str] = set()
        self.modules: set[str] = set()
        self.failed: str | None = None
        self.jobs_cpu = self.own_cpu = 0.0
        with open(os.path.join(folder, "server.log"), "wb") as log:  # its own errors, not a test's
            self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), self.path], env=self.env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=folder)
        line = self.proc.stdout.readline()
        try:
            ready = json.loads(line)
            self.read, self.modules, self.own_cpu = set(ready["read"]), set(ready["modules"]), ready["cpu"]
        except (ValueError, KeyError, TypeError):
            self.proc.wait()
            with open(os.path.join(folder, "server.log"), errors="replace") as log:
                said = log.read().strip().splitlines()
            self.failed = said[-1] if said else f"it ended with status {self.proc.returncode}"
            self.own_cpu = 0.0
        _add_cpu(self.own_cpu)

    def serves(self, env: dict) -> bool:
        """Whether a job in ``env`` would start as this server's fresh child does."""
        if "*" in self.read:
            return {k: v for k, v in env.items() if k != "PYTHONPATH"} == self.env
        names = {k for k in (*env, *self.env) if _startup_variable(k) and k != "PYTHONPATH"} | self.read
        return all(env.get(k) == self.env.get(k) for k in names)

    def shadowed(self, folders: list[str]) -> str | None:
        """A module in one of ``folders`` (the job's ``sys.path`` before the interpreter's own) that the server
        has already imported under that name: the job would import the folder's."""
        for folder in folders:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.endswith((".py", ".so", ".pyc")):
                    stem = name.split(".", 1)[0]
                elif "." not in name and os.path.isfile(os.path.join(folder, name, "__init__.py")):
                    stem = name  # a package (a folder without __init__.py comes after every regular one)
                else:
                    continue
                if stem in self.modules:
                    return os.path.join(folder, name)
        return None

    def reaped(self) -> None:
        """Its start-up and its jobs' CPU, counted here so far, are now this process's child's."""
        _add_cpu(-self.own_cpu - self.jobs_cpu)

    @classmethod
    def for_environment(cls, env: dict) -> "Server | None":
        """The server whose children start as a fresh interpreter in ``env`` would, started if need be (or
        the record of its failing to start); None past :data:`LIMIT`."""
        with cls._lock:
            for server in [s for s in cls._servers if not s.failed and s.proc.poll() is not None]:
                cls._servers.remove(server)  # ended: reaped just now
                server.reaped()
            for server in cls._servers:
                if server.serves(env):
                    return server
            if len(cls._servers) >= LIMIT:
                return None
            import tempfile

            server = cls(tempfile.mkdtemp(prefix="heart-forked-jobs-", dir="/tmp"), env)  # a socket's path is short
            cls._servers.append(server)
            TALLY[FAILED if server.failed else STARTED] += 1
            return server

    def start(self, argv: list[str], env: dict, streams=(0, 1, 2)) -> "ForkedJob":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)  # a server that does not answer at once is not waited for: the job starts elsewhere
        try:
            sock.connect(self.path)
            _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": env, "umask": _umask()}, fds=streams)
            reply, _ = _recv(sock)
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)  # the job itself may take as long as it takes
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
    forked, servers, failed = tally.get(FORKED, 0), tally.get(STARTED, 0), tally.get(FAILED, 0)
    other = {k: v for k, v in tally.items() if k not in (FORKED, STARTED, FAILED)}
    why = "; ".join(f"{v} {k}" for k, v in sorted(other.items())) or "none"
    return (f"script jobs: {forked} forked from {servers} server{'' if servers == 1 else 's'} "
            f"(tests/support/forked_jobs.py{f'; {failed} failed to start' if failed else ''}); "
            f"started as processes of their own: {sum(other.values())} ({why})")


def servers() -> list[Server]:
    return [s for s in Server._servers if not s.failed]


def server_pids() -> set[int]:
    return {s.proc.pid for s in Server._servers}


_cpu = [0.0]  # the servers' start-up and their jobs' CPU seconds, until the servers are reaped
_cpu_lock = threading.Lock()


def _add_cpu(seconds: float, server: "Server | None" = None) -> None:
    with _cpu_lock:
        _cpu[0] += seconds
        if server is not None:
            server.jobs_cpu += seconds


def forked_cpu_seconds() -> float:
    """CPU seconds of the servers' start-up and of the jobs they forked, not yet in this process's children's
    (a server's are, with its jobs', once it is reaped)."""
    return _cpu[0]


def stop_servers() -> None:
    """End every server (its standard input closed) and reap it, so that its CPU counts as this process's
    child's."""
    with Server._lock:
        stopping, Server._servers = Server._servers, []
    for server in stopping:
        if not server.failed:
            server.proc.stdin.close()
            try:
                server.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.proc.kill()
                server.proc.wait()
            server.reaped()
        with contextlib.suppress(OSError):
            shutil.rmtree(server.folder)


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
                    _send(self.sock, {"wait": True})
                    reply, _ = _recv(self.sock)
                except (EOFError, OSError):  # the server ended, and its job with it (PR_SET_PDEATHSIG)
                    self.returncode = -9
                else:
                    self.returncode = os.waitstatus_to_exitcode(reply["status"])
                    _add_cpu(reply["cpu"], self.server)
                self.sock.close()
            return self.returncode

    def poll(self):
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:  # not reaped before it is waited for: the pid is still the job's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self):
        import signal

        self.send_signal(signal.SIGKILL)

    def terminate(self):
        import signal

        self.send_signal(signal.SIGTERM)


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
    the working directory), ``_`` (the command run) and, where it is unset, ``SHLVL`` (0: bash counts itself, then
    runs the script in its own place)."""
    env, cwd = dict(env), os.getcwd()
    try:
        keep = os.path.samefile(env.get("PWD", ""), cwd)
    except OSError:
        keep = False
    if not keep:
        env["PWD"] = cwd
    env["_"] = sys.executable
    env.setdefault("SHLVL", "0")
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
        elif server.failed:
            TALLY[f"their server failed to start ({server.failed})"] += 1
        elif server.shadowed([os.path.dirname(os.path.realpath(fname)), *_python_path(env)]):
            TALLY["a module on their path named as one the server has imported"] += 1
        else:
            # the streams Popen would give the job: its stdout argument (a descriptor or a file's) or ours
            out = 1 if stdout is None else stdout if isinstance(stdout, int) else stdout.fileno()
            try:
                job = server.start([sys.executable, fname], _as_bash_sets(env), (0, out, 2))
            except (OSError, EOFError, ValueError, KeyError):
                TALLY["their server did not answer"] += 1
            else:
                TALLY[FORKED] += 1
                return job
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
