"""Glue for the figure rules: a figure's style file, applied while it is drawn and saved."""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; no display is needed or assumed
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402


@contextlib.contextmanager
def style(path):
    """Apply ``workflow/resources/figures/<figure>.yaml`` (``rc`` settings) and yield its ``dpi``."""
    spec = yaml.safe_load(Path(path).read_text()) or {}
    rc = spec.get("rc") or {}
    unknown = [k for k in rc if k not in matplotlib.rcParams]
    if unknown:
        raise ValueError(f"{path}: rc: unknown matplotlib settings {unknown}")
    dpi = spec.get("dpi", 200)
    if not isinstance(dpi, int) or not 50 <= dpi <= 1200:
        raise ValueError(f"{path}: dpi must be an integer between 50 and 1200, not {dpi!r}")
    with plt.rc_context(rc):
        yield dpi
    plt.close("all")
