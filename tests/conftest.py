"""The tests' fixtures and their tiers. Shared helpers (paths, markers, the workflow copy, the servers) are the
``support`` package (``tests/support/``); a test imports them from there, never from this file.

Tiers (markers; ``make test-fast`` runs ``unit`` and ``dag``, ``make test`` runs all):

- ``unit``: the library and the scripts' helpers, no Snakemake run (the default: a test with no tier marker
  is a unit test);
- ``dag``: Snakemake plans only -- lint, dry runs, job counts;
- ``e2e``: Snakemake runs jobs, against a fake OpenAI-compatible server on 127.0.0.1 where models are called, or
  a server or process of the project runs beside the test (the provider simulator, the annotation server, a job
  killed with -9);
- ``local_llm``: runs the real SmolLM2 model.

The end-to-end tests share one workflow, built and judged once per session against the fake server
(:func:`judged_workflow`); a test that changes it works on a copy (:func:`judged_copy`), which keeps
the files' mtimes and ``.snakemake/``, so Snakemake reruns only what the test's change touches.
(The copy is made *at the same path*, the pristine one set aside and put back after the test:
Snakemake records versioned resources by absolute path, so a copy elsewhere would rerun everything.)
"""

from __future__ import annotations

from collections import Counter
import json
import os
import shutil

# One BLAS thread per test process, before numpy loads (the support package below loads it): each of make
# test's two workers holds one of the two cores, as Snakemake gives a job its own threads (it sets
# OPENBLAS_NUM_THREADS for every job it starts). NumPy's OpenBLAS otherwise starts a thread per core in each
# worker, and its threads' spinning took CPU from the other worker (docs/benchmarks.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from support import KEY_ENV, TINY
from support import cpu_report, forked_jobs
from support import llm_server as srv
from support.workflow import WorkflowCopy, fake, judging_config, write_synthetic_human_files


@pytest.fixture
def tiny_esconv():
    return TINY


@pytest.fixture
def fake_llm():
    """The fault-injecting OpenAI-compatible server of ``support.llm_server`` on 127.0.0.1: (state, api_base).

    Its settings (``state.retry_after``, ``state.hang``, ``state.by_model`` ...) are read per request, so a
    test may change them after the start.
    """
    state = srv.State()
    server = srv.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture
def workflow_copy(tmp_path) -> WorkflowCopy:
    return WorkflowCopy(tmp_path / "wf")


TIERS = ("unit", "dag", "e2e", "local_llm")


# --- each test file's CPU (support.cpu_report): make test prints the costliest ----------------------

CPU = cpu_report.Ledger()
WORKERS_FORKED: Counter = Counter()  # the workers' forked_jobs.TALLY


def pytest_addoption(parser):
    parser.addoption("--cpu-files", type=int, default=0, metavar="N",
                     help="print the N test files that took the most CPU, their children's included")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = cpu_report.cpu_seconds()
    yield
    CPU.add(item.nodeid.split("::", 1)[0], cpu_report.cpu_seconds() - start)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: its ledger goes to the controller
        session.config.workeroutput["heart_cpu"] = CPU.dumps()
        session.config.workeroutput["heart_forked"] = json.dumps(forked_jobs.TALLY)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    CPU.merge(getattr(node, "workeroutput", {}).get("heart_cpu", "{}"))
    WORKERS_FORKED.update(json.loads(getattr(node, "workeroutput", {}).get("heart_forked", "{}")))


def pytest_terminal_summary(terminalreporter, config):
    if top := config.getoption("cpu_files"):
        terminalreporter.write_sep("=", f"the {top} test files that took the most CPU")
        for line in CPU.lines(top):
            terminalreporter.write_line(line)
        terminalreporter.write_line(forked_jobs.summary(WORKERS_FORKED + forked_jobs.TALLY))


# the longest files first: under pytest-xdist (``make test``: ``-n 2 --dist loadscope``, a file's tests on one
# worker, and the judged workflow's files on one) they start at once on the two workers and the short files
# fill in around them
LONGEST_FIRST = ("test_workflow_judging.py", "test_workflow_local_llm.py", "test_annotation_browser.py",
                 "test_workflow_llm.py", "test_workflow.py", "test_release.py", "test_screening.py", "test_engine.py")


#: the fixtures of the session's judged workflow, and the test files that use them: they run on one worker, which
#: builds it once (xdist gives each worker its own session); a test holds this list to the fixtures' users
JUDGED = {"judged_workflow", "judged_copy"}
JUDGED_FILES = {"test_workflow_judging.py", "test_workflow_batch.py", "test_bundle_round_trip.py"}


def pytest_collection_modifyitems(items):
    """A test without a tier marker is a unit test; the longest files run first."""
    for item in items:
        if not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.unit)
        if JUDGED & set(getattr(item, "fixturenames", ())) and item.path.name not in JUDGED_FILES:
            raise pytest.UsageError(f"{item.nodeid} uses the judged workflow: add {item.path.name} to "
                                    "tests/conftest.py's JUDGED_FILES, so that its file runs on the worker that "
                                    "built it")
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` by test file, the judged workflow's files one scope (pytest-xdist's own
    ``loadgroup`` cannot group under pytest 9: it renames node ids, which pytest 9 no longer lets it do,
    pytest-dev/pytest-xdist#1386)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "judged-workflow" if path.rsplit("/", 1)[-1] in JUDGED_FILES else path

    return ByFile(config, log)


# --- the session's judged workflow: one fake provider, one build ----------------------------------

@pytest.fixture(scope="session")
def judge_server():
    """The fake provider of the session: (state, api_base); :func:`support.workflow.fake` answers unless a
    test swaps it."""
    state = srv.State()
    state.responder = fake
    server = srv.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture
def provider(judge_server):
    """The session's fake provider, its answers reset to :func:`support.workflow.fake` after the test."""
    state, _ = judge_server
    yield judge_server
    state.responder = fake


@pytest.fixture(scope="session")
def judged_workflow(tmp_path_factory, judge_server):
    """The whole DAG run once against the fake provider: 3 regular items, systems remote-a and remote-b,
    the dataset's original replies, three SYNTHETIC human writers and two SYNTHETIC human raters, one fake
    judge, one fake tagger; with the report. Tests read it; a test that changes anything takes a copy."""
    state, base = judge_server
    wf = WorkflowCopy(tmp_path_factory.mktemp("judged") / "wf")
    args = judging_config(wf, base)
    wf.snakemake("results/items/items.parquet", *args, env=KEY_ENV)
    write_synthetic_human_files(wf)
    wf.snakemake(*args, env=KEY_ENV)
    wf.snakemake("--report", "results/report.html", *args, env=KEY_ENV)
    wf.args = args
    wf.bodies = list(state.bodies)  # what the provider was sent to build it
    return wf


@pytest.fixture
def judged_copy(judged_workflow):
    """The session's judged workflow for a test to change: the pristine one is copied aside (mtimes and
    ``.snakemake/`` kept) and put back in its place after the test."""
    root = judged_workflow.root
    pristine = root.with_name("pristine")
    shutil.copytree(root, pristine, symlinks=True)
    try:
        yield judged_workflow
    finally:
        shutil.rmtree(root)
        pristine.rename(root)
