"""The harness's forked script jobs (support/forked_jobs.py): a probe script run as Snakemake starts it and forked
from the server sees the same of itself and its process, and ends the same way; where a job cannot be forked
faithfully, it starts the ordinary way."""

from __future__ import annotations

import json
import re
import textwrap
import time

import pytest

from support import forked_jobs
from support.workflow import in_process

pytestmark = pytest.mark.e2e

SNAKEFILE = """
rule probe:
    output: "out/{mode}.txt"
    script: "probe.py"

rule broken:
    output: "out/broken.txt"
    script: "broken.py"
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
        "name": __name__, "file": __file__, "argv": sys.argv, "orig_argv": sys.orig_argv, "path": sys.path,
        "cwd": os.getcwd(), "env": dict(os.environ), "umask": status("Umask"),
        "main": {k: type(v).__name__ for k, v in globals().items() if k.startswith("__")},
        "spec_package": [__spec__, __package__], "main_module": sys.modules["__main__"].__dict__ is globals(),
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
    def at_exit():  # the main module while the interpreter ends: the script's (its __file__ taken back after a run)
        main = vars(sys.modules["__main__"])
        with open(f"views/{mode}.atexit", "w") as f:
            f.write(f"{main.get('mode')} {'__file__' in main}")
    atexit.register(at_exit)
    def late():
        time.sleep(0.3)
        open(f"views/{mode}.thread", "w").close()
    threading.Thread(target=late).start()
    unclosed = open(f"views/{mode}.unclosed", "w")  # written out only as the interpreter finalises it
    unclosed.write("buffered")
    if mode == "exit3":
        sys.exit(3)
    if mode == "exitmessage":
        sys.exit("the job's own message")
    if mode == "raise":
        raise ValueError("boom")
    if mode == "hooked":
        sys.excepthook = lambda kind, value, tb: print(f"HOOKED {kind.__name__}: {value}", file=sys.stderr)
        raise ValueError("hooked")
    if mode == "interrupted":
        raise KeyboardInterrupt
    if mode == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    open(snakemake.output[0], "w").close()
""")

MODES = ("ok", "exit3", "exitmessage", "raise", "hooked", "interrupted", "killed")


def forked_so_far() -> int:
    return forked_jobs.TALLY[forked_jobs.FORKED]


def workflow(root, files: dict[str, str]) -> None:
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def run_probes(root, fork: bool):
    workflow(root, {"Snakefile": SNAKEFILE, "probe.py": PROBE, "broken.py": "x = (\n"})
    before = forked_so_far()
    targets = [*(f"out/{m}.txt" for m in MODES), "out/broken.txt"]
    proc = in_process(root, ["--cores", "2", "--keep-going", *targets], fork_jobs=fork)
    views = {m: json.loads((root / "views" / f"{m}.json").read_text()) for m in MODES}
    ended = {m: {p.suffix: p.read_text() for p in (root / "views").glob(f"{m}.*") if p.suffix != ".json"}
             for m in MODES}
    return proc, views, json.loads(json.dumps(ended).replace(str(root), "<root>")), forked_so_far() - before


def comparable(view: dict) -> dict:
    """A view with the run's folder and Snakemake's temporary names as placeholders, without the random draws
    (compared separately)."""
    text = json.dumps({k: v for k, v in view.items() if k != "random"}).replace(view["cwd"], "<root>")
    text = re.sub(r"tmp[A-Za-z0-9_]+\.probe\.py", "<script>", text)
    text = re.sub(r"snakemake-runtime-cache/tmp[A-Za-z0-9_]+", "<runtime-cache>", text)  # one per run
    text = re.sub(r"/tmp/#[0-9]+ \(deleted\)", "<the command's capture>", text)  # a temporary file per command
    return json.loads(text)


def stderr_of(proc) -> str:
    return re.sub(r"/[^\s\"']+/wf/\.snakemake/scripts/tmp[A-Za-z0-9_]+\.(\w+)\.py", r"<\1>", proc.stderr)


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    plain = run_probes(tmp_path_factory.mktemp("plain") / "wf", fork=False)
    forked = run_probes(tmp_path_factory.mktemp("forked") / "wf", fork=True)
    return plain, forked


def test_a_forked_job_sees_what_the_job_snakemake_starts_sees(both_ways):
    (_, plain, _, plain_forked), (_, forked, _, forked_count) = both_ways
    assert plain_forked == 0 and forked_count == len(MODES) + 1
    for mode in MODES:
        assert comparable(plain[mode]) == comparable(forked[mode]), mode
    assert plain["ok"]["main_module"] and plain["ok"]["main"]["__loader__"] == "SourceFileLoader"


def test_two_forked_jobs_draw_different_random_numbers(both_ways):
    _, (_, forked, _, _) = both_ways
    draws = [tuple(forked[m]["random"]) for m in MODES]
    assert len({d[0] for d in draws}) == len(MODES) and len({d[1] for d in draws}) == len(MODES)


def test_a_forked_job_ends_as_the_job_snakemake_starts_ends(both_ways):
    (plain_proc, _, plain_ended, _), (forked_proc, _, forked_ended, _) = both_ways
    assert plain_ended == forked_ended
    # threads joined, exit handlers run with the script as the main module, open files flushed as it finalises
    assert plain_ended["ok"] == {".atexit": "ok False", ".thread": "", ".unclosed": "buffered"}
    assert plain_ended["exit3"][".atexit"] == "exit3 True" and plain_ended["killed"] == {".unclosed": ""}
    for proc in (plain_proc, forked_proc):
        assert proc.returncode != 0
        for mode in MODES:  # (standard output goes where Snakemake's own went when it loaded: pytest's capture)
            assert f"ERR-MARK {mode}" in proc.stderr
        assert "the job's own message" in proc.stderr and "HOOKED ValueError: hooked" in proc.stderr
        assert "non-zero exit status 3" in proc.stderr and "died with <Signals.SIGKILL: 9>" in proc.stderr
        assert "died with <Signals.SIGINT: 2>" in proc.stderr

    def excerpt(proc, start, end):  # the last ``start`` before ``end`` (the jobs' output interleaves)
        text = stderr_of(proc)
        last = text.index(end) + len(end)
        return text[text.rindex(start, 0, last):last]

    for start, end in (("Traceback (most recent call last):", "ValueError: boom"),
                       ("Traceback (most recent call last):", "raise KeyboardInterrupt\nKeyboardInterrupt"),
                       ('File "<broken>", line', "SyntaxError: '(' was never closed")):
        assert excerpt(plain_proc, start, end) == excerpt(forked_proc, start, end)


def test_the_server_keys_on_what_it_read_while_loading():
    server = object.__new__(forked_jobs.Server)
    server.env = {"HOME": "/h", "PATH": "/bin", "PANDAS_FUTURE": "default", "HEART_X": "1"}
    server.read = {"PANDAS_FUTURE", "MPLBACKEND"}
    assert server.serves({**server.env, "HEART_X": "2", "OPENAI_API_KEY": "k", "PYTHONPATH": "/w"})
    assert not server.serves({**server.env, "PANDAS_FUTURE": "infer_string"})  # read while pandas loaded
    assert not server.serves({**server.env, "MPLBACKEND": "Agg"})  # read, unset in the server: set here
    assert not server.serves({**server.env, "LC_ALL": "C"})  # the C library's, at start-up
    assert not server.serves({**server.env, "PYTHONHASHSEED": "0"})  # the interpreter's
    assert not server.serves({**server.env, "NPY_DISABLE_CPU_FEATURES": "AVX2"})  # NumPy's C code, as it loads
    server.read = {"*"}  # a library that read the whole environment: only the very same one
    assert not server.serves({**server.env, "HEART_X": "2"})
    assert server.serves({**server.env, "PYTHONPATH": "/w"})


def test_the_running_server_recorded_what_its_libraries_read(both_ways):
    read = set().union(*(s.read for s in forked_jobs.servers()))
    assert {"MPLBACKEND", "MPLCONFIGDIR", "PANDAS_FUTURE", "NPY_PROMOTION_STATE"} <= read


def tally_after(root, argv, env=None):
    before = forked_jobs.TALLY.copy()
    proc = in_process(root, argv, env, fork_jobs=True)
    return proc, forked_jobs.TALLY - before


def test_a_job_with_a_matplotlibrc_beside_it_starts_the_ordinary_way(tmp_path):
    workflow(tmp_path / "wf", {"Snakefile": SNAKEFILE, "probe.py": PROBE, "matplotlibrc": "figure.dpi: 50\n"})
    proc, tally = tally_after(tmp_path / "wf", ["--cores", "1", "out/ok.txt"])
    assert proc.returncode == 0 and tally == {"a matplotlibrc in the working directory": 1}


def test_a_job_whose_path_holds_a_module_the_server_imported_imports_its_own(tmp_path):
    root = tmp_path / "wf"
    workflow(root, {"Snakefile": 'rule own:\n    output: "out.txt"\n    script: "own.py"\n',
                    "own.py": "import yaml\nopen(snakemake.output[0], 'w').write(yaml.WHOSE)\n",
                    "lib/yaml.py": "WHOSE = 'the job path'\n"})
    proc, tally = tally_after(root, ["--cores", "1", "out.txt"], {"PYTHONPATH": str(root / "lib")})
    assert (root / "out.txt").read_text() == "the job path"
    assert tally == {"a module on their path named as one the server has imported": 1}


def test_a_job_whose_server_cannot_start_starts_the_ordinary_way(tmp_path):
    # two threads: Snakemake gives the job OPENBLAS_NUM_THREADS=2, OpenBLAS starts a thread as NumPy loads, and
    # a server must not fork a process with threads
    root = tmp_path / "wf"
    workflow(root, {"Snakefile": 'rule two:\n    output: "out.txt"\n    threads: 2\n    script: "two.py"\n',
                    "two.py": "import numpy\nopen(snakemake.output[0], 'w').close()\n"})
    proc, tally = tally_after(root, ["--cores", "2", "out.txt"])
    assert proc.returncode == 0 and (root / "out.txt").exists()
    (reason,) = [k for k in tally if k.startswith("their server failed to start")]
    assert "started a thread" in reason and tally[reason] == 1
    # the failure is remembered: the next such job does not start a server again
    (root / "out.txt").unlink()
    _, tally = tally_after(root, ["--cores", "2", "out.txt"])
    assert tally == {reason: 1}


def test_a_job_that_ends_before_snakemake_looks_at_it_is_still_there_to_benchmark(tmp_path, monkeypatch):
    root = tmp_path / "wf"
    workflow(root, {"Snakefile": 'rule quick:\n    output: "out.txt"\n    benchmark: "bench.tsv"\n'
                                 '    script: "quick.py"\n',
                    "quick.py": "open(snakemake.output[0], 'w').close()\n"})
    start = forked_jobs.Server.start

    def late(self, *args, **kwargs):  # Snakemake's thread comes back after the job has ended
        job = start(self, *args, **kwargs)
        time.sleep(1.5)
        return job

    monkeypatch.setattr(forked_jobs.Server, "start", late)
    proc, tally = tally_after(root, ["--cores", "1", "out.txt"])
    assert proc.returncode == 0, proc.stderr
    assert tally == {"forked": 1} and (root / "bench.tsv").read_text().startswith("s\t")


def test_a_forked_jobs_cpu_is_counted_as_the_test_processes_child_would_be(tmp_path):
    from support import cpu_report

    root = tmp_path / "wf"
    workflow(root, {"Snakefile": 'rule burn:\n    output: "burnt"\n    script: "burn.py"\n',
                    "burn.py": "import time\nend = time.process_time() + 2\n"  # more than Snakemake's own
                               "while time.process_time() < end: pass\nopen(snakemake.output[0], 'w').close()\n"})
    forked, start = forked_so_far(), cpu_report.cpu_seconds()
    in_process(root, ["--cores", "1", "burnt"], fork_jobs=True)
    assert forked_so_far() == forked + 1 and cpu_report.cpu_seconds() - start >= 2


def test_what_shadows_a_preloaded_module_is_a_module_or_a_package_of_its_name(tmp_path):
    server = object.__new__(forked_jobs.Server)
    server.modules = {"yaml", "numpy", "json"}
    (tmp_path / "numpy").mkdir()  # a folder without __init__.py: every regular package comes before it
    (tmp_path / "tmpq1w2.json.py").write_text("")  # Snakemake's temporary script of a rule named json
    (tmp_path / "notes.txt").write_text("")
    assert server.shadowed([str(tmp_path)]) is None
    (tmp_path / "numpy" / "__init__.py").write_text("")
    assert server.shadowed([str(tmp_path / "absent"), str(tmp_path)]) == str(tmp_path / "numpy")
    (tmp_path / "numpy" / "__init__.py").unlink()
    (tmp_path / "yaml.cpython-311-x86_64-linux-gnu.so").write_text("")
    assert server.shadowed([str(tmp_path)]) == str(tmp_path / "yaml.cpython-311-x86_64-linux-gnu.so")
