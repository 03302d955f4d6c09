"""Shared test helpers: paths, the tiny ESConv fixture, and a throwaway copy of the workflow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_ESCONV_DIR = Path(os.environ.get("HEART_SHARED_ESCONV", REPO.parent / "shared" / "data" / "esconv"))
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")

needs_shared = pytest.mark.skipif(
    not (SHARED_ESCONV_DIR / "ESConv.json").is_file(),
    reason=f"real ESConv not found at {SHARED_ESCONV_DIR} (set HEART_SHARED_ESCONV)",
)


@pytest.fixture
def tiny_esconv() -> Path:
    return FIXTURES / "esconv_tiny.json"


class WorkflowCopy:
    """The workflow copied into a temporary directory, run with this venv's snakemake."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True)
        for name in ("Snakefile", "workflow", "config", "envs", "profiles"):
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, root / name)

    def snakemake(self, *args: str, check: bool = True, timeout: float = 900,
                  env: dict | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [SNAKEMAKE, "--cores", "2", *args],
            cwd=self.root, capture_output=True, text=True, timeout=timeout,
            env=self._env(env),
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    @staticmethod
    def _env(extra: dict | None) -> dict:
        """This process's environment with ``extra`` applied (a None value removes the variable)."""
        env = dict(os.environ)
        for key, value in (extra or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def jobs(self, *args: str, env: dict | None = None) -> dict[str, int]:
        """Rule -> job count that a dry run with ``args`` would schedule."""
        out = self.snakemake("-n", "--quiet=rules", *args, env=env).stdout
        counts = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job"):
                counts[parts[0]] = int(parts[1])
        return counts


@pytest.fixture
def fake_llm():
    """The fault-injecting OpenAI-compatible server of tests/llm_test_server.py on 127.0.0.1: (state, api_base).

    Its settings (``state.retry_after``, ``state.hang``, ``state.by_model`` ...) are read per request, so a
    test may change them after the start.
    """
    import llm_test_server as srv

    state = srv.State()
    server = srv.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture
def workflow_copy(tmp_path) -> WorkflowCopy:
    return WorkflowCopy(tmp_path / "wf")


def run_notebook(path: Path, env: dict) -> dict:
    """Execute a notebook's code cells in order, headless (Agg backend), in one namespace; return it.

    The notebook is plain nbformat-4 JSON; no kernel is needed for code that only reads Parquet and
    plots, and an exception names the failing cell.
    """
    import json
    import os

    import matplotlib

    matplotlib.use("Agg")
    cells = [c for c in json.loads(Path(path).read_text())["cells"] if c["cell_type"] == "code"]
    namespace: dict = {"__name__": "__main__"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for i, cell in enumerate(cells):
            try:
                exec(compile("".join(cell["source"]), f"{path.name}[code cell {i}]", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{path.name}: code cell {i} failed: {exc!r}") from exc
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return namespace
