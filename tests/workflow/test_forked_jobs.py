"""The harness's forked script jobs (support/forked_jobs.py): a job forked from the server sees itself as the
process Snakemake starts sees itself, and ends the same way."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from support import forked_jobs
from support.workflow import in_process

pytestmark = pytest.mark.e2e

SNAKEFILE = """
rule probe:
    output: "out/{mode}.txt"
    script: "probe.py"
"""

# what a job can see of itself and its process, written before it ends as its mode says
PROBE = textwrap.dedent("""
    import atexit, json, os, random, signal, sys, threading, time
    import numpy as np
    import pandas, pyarrow.parquet  # as every job of the workflow (pyarrow's allocator starts a thread)

    mode = snakemake.wildcards.mode
    def status(name):
        with open("/proc/self/status") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith(name + ":"))
    view = {
        "name": __name__, "file": __file__, "argv": sys.argv, "path": sys.path, "cwd": os.getcwd(),
        "env": dict(os.environ), "umask": status("Umask"),
        "signals": {k: status(k) for k in ("SigBlk", "SigIgn", "SigCgt")},
        "fds": {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in sorted(os.listdir("/proc/self/fd"), key=int)
                if os.path.exists(f"/proc/self/fd/{fd}")},
        "flags": list(sys.flags), "dont_write_bytecode": sys.dont_write_bytecode,
        "stdout": [sys.stdout.encoding, sys.stdout.line_buffering, sys.stderr.encoding],
        "threads": threading.active_count(), "main_thread": threading.current_thread() is threading.main_thread(),
        "random": [random.random(), float(np.random.random())],
    }
    os.makedirs("views", exist_ok=True)
    with open(f"views/{mode}.json", "w") as f:
        json.dump(view, f)
    print(f"OUT-MARK {mode}")
    print(f"ERR-MARK {mode}", file=sys.stderr)
    atexit.register(lambda: open(f"views/{mode}.atexit", "w").close())
    def late():
        time.sleep(0.3)
        open(f"views/{mode}.thread", "w").close()
    threading.Thread(target=late).start()
    if mode == "exit3":
        sys.exit(3)
    if mode == "exitmessage":
        sys.exit("the job's own message")
    if mode == "raise":
        raise ValueError("boom")
    if mode == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    open(snakemake.output[0], "w").close()
""")

MODES = ("ok", "exit3", "exitmessage", "raise", "killed")


def forked_so_far() -> int:
    return sum(s.forked for s in forked_jobs.servers())


def run_probes(root, fork: bool):
    root.mkdir()
    (root / "Snakefile").write_text(SNAKEFILE)
    (root / "probe.py").write_text(PROBE)
    before = forked_so_far()
    proc = in_process(root, ["--cores", "2", "--keep-going", *(f"out/{m}.txt" for m in MODES)], fork_jobs=fork)
    views = {m: json.loads((root / "views" / f"{m}.json").read_text()) for m in MODES}
    ended = {m: sorted(p.suffix for p in (root / "views").glob(f"{m}.*")) for m in MODES}
    return proc, views, ended, forked_so_far() - before


def comparable(view: dict, root) -> dict:
    """A view with the run's folder and Snakemake's temporary script name as placeholders, without the random
    draws (compared separately)."""
    text = json.dumps({k: v for k, v in view.items() if k != "random"})
    text = text.replace(str(root), "<root>")
    text = re.sub(r"tmp[A-Za-z0-9_]+\.probe\.py", "<script>", text)
    text = re.sub(r"snakemake-runtime-cache/tmp[A-Za-z0-9_]+", "<runtime-cache>", text)  # one per run
    return json.loads(text)


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    plain = run_probes(tmp_path_factory.mktemp("plain") / "wf", fork=False)
    forked = run_probes(tmp_path_factory.mktemp("forked") / "wf", fork=True)
    return plain, forked


def test_a_forked_job_sees_what_the_job_snakemake_starts_sees(both_ways):
    (plain_proc, plain, _, plain_forked), (forked_proc, forked, _, forked_count) = both_ways
    assert plain_forked == 0 and forked_count == len(MODES)
    for mode in MODES:
        assert comparable(plain[mode], plain[mode]["cwd"]) == comparable(forked[mode], forked[mode]["cwd"]), mode


def test_two_forked_jobs_draw_different_random_numbers(both_ways):
    _, (_, forked, _, _) = both_ways
    draws = [tuple(forked[m]["random"]) for m in MODES]
    assert len(set(d[0] for d in draws)) == len(MODES) and len(set(d[1] for d in draws)) == len(MODES)


def test_a_forked_job_ends_as_the_job_snakemake_starts_ends(both_ways):
    (plain_proc, _, plain_ended, _), (forked_proc, _, forked_ended, _) = both_ways
    assert plain_ended == forked_ended
    assert plain_ended["ok"] == [".atexit", ".json", ".thread"]  # threads joined, atexit handlers run
    assert plain_ended["killed"] == [".json"]
    for proc in (plain_proc, forked_proc):
        assert proc.returncode != 0
        for mode in MODES:  # (standard output goes where Snakemake's own went when it loaded: pytest's capture)
            assert f"ERR-MARK {mode}" in proc.stderr
        assert "the job's own message" in proc.stderr
        assert "non-zero exit status 3" in proc.stderr and "died with <Signals.SIGKILL: 9>" in proc.stderr

    def traceback_of(proc):
        text = re.sub(r"/[^\s\"]+/wf/\.snakemake/scripts/tmp[A-Za-z0-9_]+\.probe\.py", "<script>", proc.stderr)
        start = text.index("Traceback (most recent call last):")
        return text[start:text.index("ValueError: boom", start)]

    assert traceback_of(plain_proc) == traceback_of(forked_proc)


def test_the_server_keys_on_what_it_read_while_loading():
    server = object.__new__(forked_jobs.Server)
    server.env = {"HOME": "/h", "PATH": "/bin", "PANDAS_FUTURE": "default", "HEART_X": "1"}
    server.read = {"PANDAS_FUTURE", "MPLBACKEND"}
    assert server.serves({**server.env, "HEART_X": "2", "OPENAI_API_KEY": "k", "PYTHONPATH": "/w"})
    assert not server.serves({**server.env, "PANDAS_FUTURE": "infer_string"})  # read while pandas loaded
    assert not server.serves({**server.env, "MPLBACKEND": "Agg"})  # read, unset in the server: set here
    assert not server.serves({**server.env, "LC_ALL": "C"})  # the C library's, at start-up
    assert not server.serves({**server.env, "PYTHONHASHSEED": "0"})  # the interpreter's
    server.read = {"*"}  # a library that read the whole environment: only the very same one
    assert not server.serves({**server.env, "HEART_X": "2"})
    assert server.serves({**server.env, "PYTHONPATH": "/w"})


def test_the_running_server_recorded_what_its_libraries_read(both_ways):
    read = set().union(*(s.read for s in forked_jobs.servers()))
    assert {"MPLBACKEND", "MPLCONFIGDIR", "PANDAS_FUTURE", "NPY_PROMOTION_STATE"} <= read


def test_a_job_with_a_matplotlibrc_beside_it_starts_the_ordinary_way(tmp_path):
    root = tmp_path / "wf"
    root.mkdir()
    (root / "Snakefile").write_text(SNAKEFILE)
    (root / "probe.py").write_text(PROBE)
    (root / "matplotlibrc").write_text("figure.dpi: 50\n")
    before = forked_so_far()
    in_process(root, ["--cores", "1", "out/ok.txt"], fork_jobs=True)
    assert (root / "out" / "ok.txt").exists() and forked_so_far() == before


def test_a_forked_jobs_cpu_is_counted_as_the_test_processes_child_would_be(tmp_path):
    from support import cpu_report

    root = tmp_path / "wf"
    root.mkdir()
    (root / "Snakefile").write_text('rule burn:\n    output: "burnt"\n    script: "burn.py"\n')
    (root / "burn.py").write_text("import time\nend = time.process_time() + 2\n"  # more than Snakemake's own
                                  "while time.process_time() < end: pass\nopen(snakemake.output[0], 'w').close()\n")
    forked, start = forked_so_far(), cpu_report.cpu_seconds()
    in_process(root, ["--cores", "1", "burnt"], fork_jobs=True)
    assert forked_so_far() == forked + 1 and cpu_report.cpu_seconds() - start >= 2
