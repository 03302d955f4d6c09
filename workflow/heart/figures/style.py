"""What the figures share: colours, Figure 4's bins, the font size, absent-data drawing, label placement,
the style file a rule applies (:func:`applied`) and atomic saving (:func:`save`).

Nothing here draws a whole figure; the figure modules next to this one do. Figures are made with
:class:`~matplotlib.figure.Figure` directly (:func:`new_figure`: no pyplot, so no global state and no GUI
backend).
"""

from __future__ import annotations

import contextlib
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.transforms import Bbox

from heart.common.atomic import atomic_path


#: Base font size (points); titles are a little larger, notes a little smaller.
FONT = 9
#: Face colour of absent cells, rows and panels (drawn hatched).
ABSENT_COLOR = "#d4d4d4"
ABSENT_HATCH = "////"
#: Statuses of a row that has an estimate; any other status is drawn as absent.
OK_STATUSES = ("ok", "present")

# --- Figure 4's colour bins --------------------------------------------------------------------

#: Lower edges of the paper's colour bins, top bin first: a value v (%) is in bin i when
#: ``BIN_EDGES[i] <= v`` and v is below every earlier edge; below 50 is the last bin. Bins are
#: closed below: exactly 70 is "≥70%", exactly 50 is "50–55%".
BIN_EDGES = (70.0, 65.0, 60.0, 55.0, 50.0)
#: Legend labels of the bins, same order as :data:`BIN_COLORS` (top bin first).
BIN_LABELS = ("≥70%", "65–70%", "60–65%", "55–60%", "50–55%", "<50%")
#: One colour per bin, top bin first; darker = higher (paper Figure 4 caption).
BIN_COLORS = ("#08306b", "#2171b5", "#4a98c9", "#94c4df", "#c6dbef", "#f2f7fd")
#: Digits shown in the binned cells; a value is binned as shown (69.96 is shown and binned as 70.0).
PCT_DECIMALS = 1


def bin_index(value: float) -> int | None:
    """The colour bin of a percentage (0 = "≥70%" ... 5 = "<50%"), as displayed; None for NaN.

    The value is rounded to :data:`PCT_DECIMALS` first, so the colour always matches the number
    written in the cell.
    """
    v = num(value)
    if math.isnan(v):
        return None
    v = round(v, PCT_DECIMALS)
    for i, edge in enumerate(BIN_EDGES):
        if v >= edge:
            return i
    return len(BIN_EDGES)


def bin_color(value: float) -> str | None:
    """The Figure 4 colour of a percentage (None for NaN: drawn as absent)."""
    i = bin_index(value)
    return None if i is None else BIN_COLORS[i]


# --- a rule's style file and saving ------------------------------------------------------------

#: the run's label while a figure rule's block runs (:func:`applied`); :func:`save` writes it across
#: the figure: "SIMULATED" for a rehearsal against heart.simulation.simulator (config ``simulated``)
_LABEL: list[str | None] = [None]


@contextlib.contextmanager
def applied(path, label: str | None = None):
    """Apply the figure's style files (``rc`` settings; ``path``: one file, or several read in order, the
    house style ``workflow/resources/figures/style.yaml`` first, a figure's own ``<figure>.yaml`` over it)
    and yield the ``dpi``.

    A figure rule draws and saves its figure inside this block, so the file's settings reach every
    text and line of it; they are undone when the block ends. With a ``label`` (the rule's
    ``params.label``: "SIMULATED" for a rehearsal), every figure saved in the block carries it.
    """
    _LABEL[0] = label
    try:
        with _applied(path) as dpi:
            yield dpi
    finally:
        _LABEL[0] = None


@contextlib.contextmanager
def _applied(paths):
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    spec, rc = {}, {}
    for path in paths:
        read = yaml.safe_load(Path(path).read_text()) or {}
        rc.update(read.get("rc") or {})
        spec.update(read)
    path = ", ".join(map(str, paths))
    unknown = [k for k in rc if k not in matplotlib.rcParams]
    if unknown:
        raise ValueError(f"{path}: rc: unknown matplotlib settings {unknown}")
    dpi = spec.get("dpi", 200)
    if not isinstance(dpi, int) or not 50 <= dpi <= 1200:
        raise ValueError(f"{path}: dpi must be an integer between 50 and 1200, not {dpi!r}")
    # names come from config and imported files: a '$' is a dollar sign, never mathtext (a system named
    # "gpt $\foo{$ 4o" crashed the figure); a figure file may turn it back on
    with matplotlib.rc_context({"text.parse_math": False, **rc}):
        yield dpi


def save(fig: Figure, png_path, pdf_path, dpi: int = 200) -> None:
    """Write ``fig`` as PNG and PDF, each atomically (:func:`heart.common.atomic.atomic_path`).

    Parameters
    ----------
    fig : Figure
        The figure (``bbox_inches="tight"``: nothing outside the axes is cut off).
    png_path, pdf_path : str or Path
        Targets; their directories are created if missing. A reader never sees a partial file and
        a failed write leaves no temporary file behind.
    dpi : int
        PNG resolution.
    """
    if _LABEL[0]:
        mark(fig, _LABEL[0])
    for path, fmt in ((png_path, "png"), (pdf_path, "pdf")):
        with atomic_path(path) as tmp:
            # no timestamps / software strings: the same figure gives the same bytes
            meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
            fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)


def mark(fig: Figure, label: str) -> None:
    """Write ``label`` across ``fig`` (large, diagonal, translucent) and as a line above it, so that no
    crop of the figure loses it: a rehearsal's figures are not results."""
    fig.text(0.5, 0.5, label, transform=fig.transFigure, ha="center", va="center", rotation=30,
             fontsize=64, fontweight="bold", color="#c0392b", alpha=0.18, zorder=1000)
    fig.text(0.5, 1.0, f"{label}: made by heart.simulation, not by models or people; no number here is a result",
             transform=fig.transFigure, ha="center", va="bottom", fontsize=9, fontweight="bold", color="#c0392b")


def warn(fig: Figure, text: str | None) -> None:
    """A warning line under ``fig`` (wrapped, red): e.g. that its judges fail their quality checks."""
    if text:
        import textwrap

        # under everything: lay the figure out, freeze that layout (else saving it with bbox_inches="tight"
        # lays it out again on the enlarged canvas and an "outside lower" legend lands on the text), then
        # place the text below the lowest artist
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
        for leg in fig.legends:  # an "outside" legend is anchored to the canvas edge: pin it where it is
            box = leg.get_window_extent().transformed(fig.transFigure.inverted())
            leg.set_bbox_to_anchor(box, transform=fig.transFigure)
            leg.set_loc("center")
        bottom = min(0.0, fig.get_tightbbox().y0 / fig.get_figheight())
        fig.text(0.5, bottom - 0.02, "\n".join(textwrap.wrap(text, 130)), transform=fig.transFigure,
                 ha="center", va="top", fontsize=8, color="#c0392b", gid="quality-warning")


# --- figure, title, values ---------------------------------------------------------------------

def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    """A figure of ``width`` x ``height`` inches with its own Agg canvas (no pyplot)."""
    fig = Figure(figsize=(width, height), layout=layout)
    FigureCanvasAgg(fig)
    return fig


def headline(text: str, title_note: str | None) -> str:
    """A title with ``title_note`` (e.g. "SIMULATED data") appended after a dash."""
    return f"{text} — {title_note}" if title_note else text


def suptitle(fig: Figure, text: str, title_note: str | None) -> None:
    """The figure's bold title (:func:`headline`)."""
    fig.suptitle(headline(text, title_note), fontsize=FONT + 2, fontweight="bold")


def is_ok(status) -> bool:
    """Whether a row's status says it has an estimate (:data:`OK_STATUSES`)."""
    return isinstance(status, str) and status in OK_STATUSES


def ok_mask(table: pd.DataFrame) -> np.ndarray:
    """Rows with an estimate (status "ok" / "present")."""
    if "status" not in table:
        return np.ones(len(table), dtype=bool)
    return np.array([is_ok(s) for s in table["status"]], dtype=bool)


def status_word(status) -> str:
    """'absent', 'not estimable', 'no pairs', ... (what an empty estimate is shown as)."""
    if not isinstance(status, str) or not status or status in OK_STATUSES:
        return "absent"
    return status.replace("_", " ")


def num(v) -> float:
    """A float, NaN for None / pd.NA / non-numbers."""
    try:
        out = float(v)
    except (TypeError, ValueError):
        return math.nan
    return out


def text_color(face) -> str:
    """White on a dark face, black on a light one."""
    r, g, b = to_rgb(face)
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5 else "black"


def display_name(system: str, labels: Mapping | None) -> str:
    """``labels[system]`` (e.g. the ``models.csv`` "model"), else the system name."""
    return str((labels or {}).get(system, system))


def first_note(table: pd.DataFrame) -> str | None:
    """The first non-blank ``note`` of a table (why its estimates are absent), None if there is none."""
    if table is None or table.empty or "note" not in table:
        return None
    notes = [str(n) for n in table["note"] if isinstance(n, str) and n.strip()]
    return notes[0] if notes else None


def leaderboard_order(leaderboard: pd.DataFrame) -> list[str]:
    """Systems top to bottom: estimated rows by Elo (descending, ties by name), then the others by name."""
    lb = leaderboard.copy()
    lb["_ok"] = [is_ok(s) and not math.isnan(num(e)) for s, e in zip(lb["status"], lb["elo"])]
    lb["_elo"] = [num(e) for e in lb["elo"]]
    mask = np.asarray(lb["_ok"], dtype=bool)  # (an empty object column would select columns, not rows)
    ok = lb.loc[mask].sort_values(["_elo", "system"], ascending=[False, True])
    rest = lb.loc[~mask].sort_values("system")
    return [*ok["system"].astype(str), *rest["system"].astype(str)]


# --- absent data and matrices ------------------------------------------------------------------

def absent_rect(xy, width: float, height: float, edgecolor: str = "#a8a8a8", linewidth: float = 0,
                **kwargs) -> Rectangle:
    """A hatched grey rectangle: a cell, row, column or panel without an estimate."""
    return Rectangle(xy, width, height, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH, edgecolor=edgecolor,
                     linewidth=linewidth, **kwargs)


def absent_axes(ax, message: str, note: str | None = None) -> None:
    """An axes with nothing to plot: hatched grey with the message (never an empty panel)."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.add_patch(absent_rect((0, 0), 1, 1, transform=ax.transAxes, edgecolor="#b0b0b0", zorder=0,
                             gid="absent-panel"))
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="bottom" if note else "center",
            fontsize=FONT + 1.5, fontweight="bold", color="#444444", gid="absent-message",
            bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "#999999"})
    if note:
        ax.text(0.5, 0.44, "\n".join(textwrap.wrap(str(note), 56)), transform=ax.transAxes, ha="center",
                va="top", fontsize=FONT - 0.5, color="#333333",
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def label_grid(ax, row_labels: Sequence[str], col_labels: Sequence[str], top: bool = False,
               **xtick_kwargs) -> None:
    """Limits and labels of a matrix of unit cells (row 0 on top): one centred tick label per row and
    column, no tick marks; ``xtick_kwargs`` go to the column labels (e.g. rotation). ``top``: column
    labels above the matrix, and no frame (a heatmap)."""
    n, m = len(row_labels), len(col_labels)
    ax.set_xlim(0, m)
    ax.set_ylim(n, 0)
    ax.set_yticks(np.arange(n) + 0.5, row_labels, fontsize=FONT)
    ax.set_xticks(np.arange(m) + 0.5, col_labels, fontsize=FONT, **xtick_kwargs)
    if top:
        ax.xaxis.tick_top()
    ax.tick_params(length=0)
    if top:
        for spine in ax.spines.values():
            spine.set_visible(False)


# --- point labels ------------------------------------------------------------------------------

def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(fig: Figure, ax, xs, ys, texts, marker_px: float, fontsize: float,
                 obstacles: Sequence = ()) -> list:
    """Greedy label placement: for each point try offsets of growing distance in 8 directions and keep
    the first whose text box overlaps no placed label, no marker and stays inside the axes; if none
    does, the least-overlapping candidate. Far labels get a thin leader line. Returns the annotations.

    The figure's layout must be final (drawn, then frozen) before this is called: boxes are measured
    in display space."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    px = fig.dpi / 72.0
    boxes = [Bbox.from_extents(x - marker_px, y - marker_px, x + marker_px, y + marker_px) for x, y in pts]
    boxes += list(obstacles)
    directions = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
    radii = (5, 9, 14, 20, 28, 38, 50)
    # crowded points first, so they get the near offsets
    density = [sum(1 for q in pts if 0 < np.hypot(*(q - p)) < 60 * px) for p in pts]
    order = sorted(range(len(texts)), key=lambda i: (-density[i], -pts[i][1]))
    placed = [None] * len(texts)
    for i in order:
        best = None
        for r in radii:
            for dx, dy in directions:
                norm = math.hypot(dx, dy)
                off = (dx / norm * r + (marker_px / px if dx else 0) * np.sign(dx),
                       dy / norm * r + (marker_px / px if dy else 0) * np.sign(dy))
                ha = "left" if dx > 0 else ("right" if dx < 0 else "center")
                va = "bottom" if dy > 0 else ("top" if dy < 0 else "center")
                ann = ax.annotate(texts[i], (xs[i], ys[i]), xytext=off, textcoords="offset points",
                                  ha=ha, va=va, fontsize=fontsize)
                bb = ann.get_window_extent(renderer).expanded(1.0, 1.0).padded(1.5 * px)
                ann.remove()
                cost = sum(_overlap(bb, o) for o in boxes)
                outside = (max(0, frame.x0 - bb.x0) + max(0, bb.x1 - frame.x1) + max(0, frame.y0 - bb.y0)
                           + max(0, bb.y1 - frame.y1))
                cost += outside * 50 * px
                if best is None or cost < best[0] - 1e-9:
                    best = (cost, off, ha, va, bb, r)
                if cost == 0:
                    break
            if best[0] == 0:
                break
        cost, off, ha, va, bb, r = best
        arrow = {"arrowstyle": "-", "color": "#777777", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3} \
            if r >= 14 or (off[0] and off[1]) else None
        placed[i] = ax.annotate(texts[i], (xs[i], ys[i]), xytext=off, textcoords="offset points", ha=ha,
                                va=va, fontsize=fontsize, arrowprops=arrow, gid="point-label", zorder=4)
        boxes.append(bb)
    return placed
