"""Run a Jupyter notebook in a real kernel, headless, and read what its cells put out.

:func:`execute_notebook` runs every cell with nbclient in an ipykernel kernel, as Jupyter would
for a person who opened the notebook and chose "Run All": the kernel's working directory is the
notebook's folder and its environment is this process's plus the caller's variables. The kernel
gets ``MPLBACKEND=Agg``, so nothing can open a window or need a display; a notebook that shows
figures says ``%matplotlib inline`` (as it must for Jupyter to show a figure drawn without pyplot
anyway), and each figure it shows is then an ``image/png`` output that :func:`has_image` finds.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookError(AssertionError):
    """A notebook cell failed or timed out; the message names the notebook and the cell.

    ``notebook`` is the notebook as far as it ran (the failing cell's outputs hold its error).
    """

    def __init__(self, message: str, notebook: nbformat.NotebookNode):
        super().__init__(message)
        self.notebook = notebook


def execute_notebook(path, env: dict, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute every cell of notebook ``path`` in a fresh kernel and return the executed notebook.

    ``env`` (e.g. ``HEART_ROOT``, ``HEART_RESULTS``) is added to ``os.environ`` for the kernel;
    ``timeout`` bounds each cell, in seconds. The file on disk is not changed.

    Raises
    ------
    NotebookError
        ``<notebook>: cell <index> (<first line>) failed: <error>`` and the traceback without colour
        codes, when a cell raises, times out or the kernel dies; ``<index>`` counts every cell of the
        notebook, markdown ones too, from 0.
    """
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    current = {"index": None}
    kernel_env = {**os.environ, "MPLBACKEND": "Agg", **{k: str(v) for k, v in env.items()}}
    try:
        with tempfile.TemporaryDirectory(prefix="heart-kernel-") as sockets:
            # the kernel talks over Unix sockets in a private folder: no TCP port is opened
            ipc = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel")}})
            NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False, config=ipc,
                           resources={"metadata": {"path": str(path.parent)}},  # the kernel's working directory
                           on_cell_start=lambda cell, cell_index: current.update(index=cell_index),
                           ).execute(env=kernel_env)
    except Exception as exc:  # CellExecutionError, CellTimeoutError, DeadKernelError ...
        index = current["index"]
        where = "before its first cell" if index is None else f"cell {index} ({_first_line(nb.cells[index])})"
        what = (f"{exc.ename}: {exc.evalue}" if isinstance(exc, CellExecutionError)
                else f"{type(exc).__name__}: {exc}")
        raise NotebookError(f"{path.name}: {where} failed: {_ANSI.sub('', what)}\n{_ANSI.sub('', str(exc))}",
                            nb) from None
    return nb


def _first_line(cell) -> str:
    line = next((s for s in cell.source.splitlines() if s.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def tagged(nb: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    """The one cell of ``nb`` with ``tag`` in its metadata tags (so tests need not count cells)."""
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{len(cells)} cells are tagged {tag!r}"
    return cells[0]


def output_text(cell: nbformat.NotebookNode) -> str:
    """What a cell printed (stdout and stderr) and the ``text/plain`` of what it displayed, in order."""
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def has_image(cell: nbformat.NotebookNode, mime: str = "image/png") -> bool:
    """Whether a cell displayed an image of type ``mime`` (a figure, with the inline backend)."""
    return any(mime in out.get("data", {}) for out in cell.get("outputs", []))
