"""The paper's figures (HEART §4, Figures 2-6) and the audit figures, drawn from the statistics tables.

Every plotting function takes DataFrames (the Parquet tables of ``results/stats/`` and
``results/judging/``, schemas in ``workflow/schemas/tables/``) and returns a
:class:`matplotlib.figure.Figure`; nothing here reads or writes a file except :func:`save`,
which writes the PNG and the PDF of one figure atomically. Figures are made with
:class:`~matplotlib.figure.Figure` directly (no pyplot, so no global state and no GUI backend).

* :func:`leaderboard_heatmap` -- Figure 4: per-axis and overall win rates (%) binned in the
  paper's six colour bins, and the overall Elo.
* :func:`elo_vs_ttft` (and :func:`ttft_points` to build its input) -- Figure 5: Elo against
  median time-to-first-token, log x, coloured by provider, dashed field-mean line.
* :func:`strategy_heatmap` -- Figure 6: usage (%) of the 15 support strategies per group.
* :func:`elo_forest` -- Elo with both interval kinds, one panel per item subset.
* :func:`agreement_panel` -- human-LLM agreement with reference lines; cross-judge matrix.
* :func:`bias_panel` -- position, length and self-preference audits, flip rates, factor loadings.
* :func:`example_pair` -- Figures 2/3: one judged pair as HTML and as a figure.

Missing data are drawn as missing: a system, group or panel with no estimate (``status``
"absent", "not_estimable", "no_pairs", ... or an empty table) is shown hatched grey with the
word "absent" (or its status) -- never as a zero and never as an empty panel. Every function
takes ``title_note`` (e.g. "SIMULATED data"), appended to the title, so that figures drawn
from simulated inputs say so. Figure sizes grow with the number of rows so the same code
reads at 3 systems and at the paper's 21.
"""

from __future__ import annotations

import html
import math
import os
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LinearSegmentedColormap, Normalize, to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import Bbox

AXES = ("H", "E", "A", "R", "T")

# --- Figure 4: colour bins ---------------------------------------------------------------------

#: Lower edges of the paper's colour bins, top bin first: a value v (%) is in bin i when
#: ``BIN_EDGES[i] <= v`` and v is below every earlier edge; below 50 is the last bin. Bins are
#: closed below: exactly 70 is "≥70%", exactly 50 is "50–55%".
BIN_EDGES = (70.0, 65.0, 60.0, 55.0, 50.0)
#: Legend labels of the bins, same order as :data:`BIN_COLORS` (top bin first).
BIN_LABELS = ("≥70%", "65–70%", "60–65%", "55–60%", "50–55%", "<50%")
#: One colour per bin, top bin first; darker = higher (paper Figure 4 caption).
BIN_COLORS = ("#08306b", "#2171b5", "#4a98c9", "#94c4df", "#c6dbef", "#f2f7fd")
#: The Elo column is not binned (Elo is not a percentage): every Elo cell has this neutral shade.
ELO_COLOR = "#ececec"
#: Face colour of absent cells, rows and panels (drawn hatched).
ABSENT_COLOR = "#d4d4d4"
ABSENT_HATCH = "////"
#: Digits shown in the binned cells; a value is binned as shown (69.96 is shown and binned as 70.0).
PCT_DECIMALS = 1
#: Figure 4's columns: (leaderboard column, header).
HEATMAP_COLUMNS = (("H_pct", "H"), ("E_pct", "E"), ("A_pct", "A"), ("R_pct", "R"), ("T_pct", "T"),
                   ("win_pct", "Overall\nwin rate"), ("elo", "Elo"))

# --- Figure 5 / 6 ------------------------------------------------------------------------------

#: Model family (``models.csv``) -> provider, for Figure 5's colours; unknown families are their own provider.
PROVIDERS = {"gpt": "OpenAI", "claude": "Anthropic", "gemini": "Google", "llama": "Meta",
             "kimi": "Moonshot AI", "polaris": "Hippocratic AI", "human": "Human", "dataset": "Dataset"}
#: Marker per TTFT source in Figure 5: measured by this workflow (filled circle) or external (hollow diamond).
TTFT_MARKERS = {"measured": "o", "external": "D"}
#: The paper's real-time design target for median TTFT (§9.7), drawn dotted in Figure 5.
TTFT_TARGET_S = 0.5
#: Figure 6's colour map: light pink (low usage) -> dark teal (high usage), as in the paper's caption.
STRATEGY_CMAP = LinearSegmentedColormap.from_list(
    "heart_pink_teal", ["#f9dce6", "#eef3f2", "#9fd1cb", "#3a9a92", "#0b5450"])
#: Non-model strategy groups, drawn after the model families in this order, with these headers.
SPECIAL_GROUPS = {"dataset": "Dataset\n(original)", "original": "Dataset\n(original)", "human": "Human"}

_OK = ("ok", "present")
_FONT = 9


def _new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    fig = Figure(figsize=(width, height), layout=layout)
    FigureCanvasAgg(fig)
    return fig


def _title(fig: Figure, text: str, title_note: str | None, subtitle: str | None = None) -> None:
    head = f"{text} — {title_note}" if title_note else text
    fig.suptitle(head if subtitle is None else f"{head}\n{subtitle}", fontsize=_FONT + 2,
                 fontweight="bold" if subtitle is None else None)


def _ok(status) -> bool:
    return isinstance(status, str) and status in _OK


def _ok_mask(table: pd.DataFrame) -> np.ndarray:
    """Rows with an estimate (status "ok" / "present")."""
    if "status" not in table:
        return np.ones(len(table), dtype=bool)
    return np.array([_ok(s) for s in table["status"]], dtype=bool)


def _status_word(status) -> str:
    """'absent', 'not estimable', 'no pairs', ... (what an empty estimate is shown as)."""
    if not isinstance(status, str) or not status or status in _OK:
        return "absent"
    return status.replace("_", " ")


def _num(v) -> float:
    """A float, NaN for None / pd.NA / non-numbers."""
    try:
        out = float(v)
    except (TypeError, ValueError):
        return math.nan
    return out


def _text_color(face) -> str:
    r, g, b = to_rgb(face)
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5 else "black"


def _label(system: str, labels: Mapping | None) -> str:
    return str((labels or {}).get(system, system))


def _absent_axes(ax, message: str, note: str | None = None) -> None:
    """An axes with nothing to plot: hatched grey with the message (never an empty panel)."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor=ABSENT_COLOR,
                           hatch=ABSENT_HATCH, edgecolor="#b0b0b0", linewidth=0, zorder=0,
                           gid="absent-panel"))
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="bottom" if note else "center",
            fontsize=_FONT + 1.5, fontweight="bold", color="#444444", gid="absent-message",
            bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "#999999"})
    if note:
        ax.text(0.5, 0.44, "\n".join(textwrap.wrap(str(note), 56)), transform=ax.transAxes, ha="center",
                va="top", fontsize=_FONT - 0.5, color="#333333",
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def _first_note(table: pd.DataFrame) -> str | None:
    if table is None or table.empty or "note" not in table:
        return None
    notes = [str(n) for n in table["note"] if isinstance(n, str) and n.strip()]
    return notes[0] if notes else None


# --- save --------------------------------------------------------------------------------------

def save(fig: Figure, png_path, pdf_path, dpi: int = 200) -> None:
    """Write ``fig`` as PNG and PDF, each atomically (a temporary file in the same directory, then rename).

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
    for path, fmt in ((Path(png_path), "png"), (Path(pdf_path), "pdf")):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            # no timestamps / software strings: the same figure gives the same bytes
            meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
            fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


# --- Figure 4 ----------------------------------------------------------------------------------

def bin_index(value: float) -> int | None:
    """The colour bin of a percentage (0 = "≥70%" ... 5 = "<50%"), as displayed; None for NaN.

    The value is rounded to :data:`PCT_DECIMALS` first, so the colour always matches the number
    written in the cell.
    """
    v = _num(value)
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


def leaderboard_order(leaderboard: pd.DataFrame) -> list[str]:
    """Systems top to bottom: estimated rows by Elo (descending, ties by name), then the others by name."""
    lb = leaderboard.copy()
    lb["_ok"] = [_ok(s) and not math.isnan(_num(e)) for s, e in zip(lb["status"], lb["elo"])]
    lb["_elo"] = [_num(e) for e in lb["elo"]]
    mask = np.asarray(lb["_ok"], dtype=bool)  # (an empty object column would select columns, not rows)
    ok = lb.loc[mask].sort_values(["_elo", "system"], ascending=[False, True])
    rest = lb.loc[~mask].sort_values("system")
    return [*ok["system"].astype(str), *rest["system"].astype(str)]


def leaderboard_heatmap(leaderboard: pd.DataFrame, labels: Mapping | None = None,
                        title: str = "HEART leaderboard", title_note: str | None = None) -> Figure:
    """Figure 4: per-axis and overall win rates (%) in the paper's colour bins, and Elo.

    Parameters
    ----------
    leaderboard : DataFrame
        ``leaderboard.schema.yaml`` (:func:`heart.leaderboard.headline`): ``system``, ``status``,
        ``elo``, ``win_pct`` and ``H_pct`` ... ``T_pct``.
    labels : mapping, optional
        system -> display name (e.g. ``models.csv`` "model"); default the system name.
    title, title_note : str
        Figure title and a note appended to it (e.g. "SIMULATED data").

    Returns
    -------
    Figure
        Rows: systems by Elo (highest on top); rows without an estimate (status "absent",
        "not_estimable") at the bottom, hatched grey and labelled with their status, never zeros.
        Columns H, E, A, R, T, overall win rate: coloured by :func:`bin_color` (:data:`BIN_EDGES`,
        :data:`BIN_COLORS`); a missing value in an estimated row is a hatched "absent" cell. The Elo
        column is not binned: every Elo cell has the neutral :data:`ELO_COLOR` (Elo is not a
        percentage and its rank is already the row order). Each cell rectangle has
        ``gid = "cell|<system>|<column>"``; an absent row is one rectangle ``"absent|<system>"``.
    """
    order = leaderboard_order(leaderboard)
    rows = (leaderboard.assign(system=leaderboard["system"].astype(str))
            .drop_duplicates("system").set_index("system"))
    n, m = len(order), len(HEATMAP_COLUMNS)
    names = [_label(s, labels) for s in order]
    label_w = 0.075 * max([len(s) for s in names] + [8])
    fig = _new_figure(label_w + 0.82 * m + 0.4, 1.55 + 0.29 * max(n, 3))
    ax = fig.add_subplot()
    for r, system in enumerate(order):
        row = rows.loc[system]
        if not (_ok(row["status"]) and not math.isnan(_num(row["elo"]))):
            ax.add_patch(Rectangle((0, r), m, 1, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                   edgecolor="#a8a8a8", linewidth=0, gid=f"absent|{system}"))
            ax.text(m / 2, r + 0.5, _status_word(row["status"]), ha="center", va="center", fontsize=_FONT,
                    fontstyle="italic", bbox={"boxstyle": "square,pad=0.15", "facecolor": ABSENT_COLOR,
                                              "edgecolor": "none"}, gid=f"absent-text|{system}")
            continue
        for c, (col, _) in enumerate(HEATMAP_COLUMNS):
            v = _num(row.get(col))
            gid = f"cell|{system}|{col}"
            if math.isnan(v):
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                       edgecolor="white", linewidth=1.2, gid=gid))
                ax.text(c + 0.5, r + 0.5, "absent", ha="center", va="center", fontsize=_FONT - 1.5,
                        fontstyle="italic")
                continue
            face = ELO_COLOR if col == "elo" else bin_color(v)
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=face, edgecolor="white", linewidth=1.2, gid=gid))
            ax.text(c + 0.5, r + 0.5, f"{v:.1f}" if col == "elo" else f"{v:.{PCT_DECIMALS}f}",
                    ha="center", va="center", fontsize=_FONT, color=_text_color(face),
                    fontweight="bold" if col == "elo" else None)
    ax.set_xlim(0, m)
    ax.set_ylim(n, 0)
    ax.set_yticks(np.arange(n) + 0.5, names, fontsize=_FONT)
    ax.set_xticks(np.arange(m) + 0.5, [h for _, h in HEATMAP_COLUMNS], fontsize=_FONT)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    handles = [Patch(facecolor=c, edgecolor="#888888", linewidth=0.5, label=lab)
               for c, lab in zip(BIN_COLORS, BIN_LABELS)]
    handles.append(Patch(facecolor=ELO_COLOR, edgecolor="#888888", linewidth=0.5, label="Elo (not binned)"))
    handles.append(Patch(facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH, edgecolor="#a8a8a8", linewidth=0.5,
                         label="absent"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=_FONT - 0.5, frameon=False,
               title="Win rate (%)", title_fontsize=_FONT - 0.5)
    _title(fig, title, title_note)
    return fig


# --- Figure 5 ----------------------------------------------------------------------------------

def ttft_points(leaderboard: pd.DataFrame, models: pd.DataFrame | None = None,
                completions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Figure 5's input: per system with an Elo, its median TTFT, provider and where the TTFT came from.

    Parameters
    ----------
    leaderboard : DataFrame
        ``system``, ``status``, ``elo`` (rows not "ok" are left out).
    models : DataFrame, optional
        ``workflow/resources/external/models.csv``: ``system``, ``family``, ``ttft_median_s``
        (external, e.g. the paper's / Artificial Analysis), optional ``model`` (display name).
    completions : DataFrame, optional
        Completions with ``system`` and per-response ``ttft_s`` (measured by the workflow).

    Returns
    -------
    DataFrame
        ``system``, ``label``, ``elo``, ``ttft_s``, ``provider``, ``ttft_source``, ``n_ttft``.
        A measured median (``ttft_source`` "measured", over the non-null ``ttft_s``) is preferred
        to the external value ("external"); a system with neither has ``ttft_s`` NaN and
        ``ttft_source`` "absent" (:func:`elo_vs_ttft` lists it in a footnote rather than plotting it).
    """
    lb = leaderboard[_ok_mask(leaderboard)]
    out = pd.DataFrame({"system": lb["system"].astype(str).to_numpy(),
                        "elo": [_num(e) for e in lb["elo"]]})
    meta = (models.drop_duplicates("system").set_index("system") if models is not None and len(models)
            else pd.DataFrame(index=pd.Index([], name="system")))
    measured = pd.Series(dtype=float)
    counts = pd.Series(dtype=int)
    if completions is not None and len(completions) and "ttft_s" in completions:
        t = completions[["system", "ttft_s"]].assign(
            ttft_s=pd.to_numeric(completions["ttft_s"], errors="coerce"))
        t = t[t["ttft_s"].notna()]
        measured = t.groupby("system")["ttft_s"].median()
        counts = t.groupby("system")["ttft_s"].size()
    ext = (pd.to_numeric(meta["ttft_median_s"], errors="coerce") if "ttft_median_s" in meta
           else pd.Series(dtype=float))
    ttft, source, n_ttft, provider, label = [], [], [], [], []
    for s in out["system"]:
        if s in measured.index:
            ttft.append(float(measured[s]))
            source.append("measured")
            n_ttft.append(int(counts[s]))
        elif s in ext.index and not math.isnan(_num(ext[s])):
            ttft.append(float(ext[s]))
            source.append("external")
            n_ttft.append(pd.NA)
        else:
            ttft.append(math.nan)
            source.append("absent")
            n_ttft.append(pd.NA)
        fam = meta["family"].get(s) if "family" in meta else None
        fam = fam if isinstance(fam, str) and fam else {"human": "human", "original": "dataset"}.get(s, s)
        provider.append(PROVIDERS.get(fam, fam))
        name = meta["model"].get(s) if "model" in meta else None
        label.append(name if isinstance(name, str) and name else s)
    out["ttft_s"] = ttft
    out["provider"] = provider
    out["ttft_source"] = source
    out["n_ttft"] = pd.array(n_ttft, dtype="Int64")
    out.insert(1, "label", label)
    return out


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _place_labels(fig: Figure, ax, xs, ys, texts, marker_px: float, fontsize: float,
                  obstacles: Sequence = ()) -> list:
    """Greedy label placement: for each point try offsets of growing distance in 8 directions and keep
    the first whose text box overlaps no placed label, no marker and stays inside the axes; if none
    does, the least-overlapping candidate. Far labels get a thin leader line. Returns the annotations."""
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


def elo_vs_ttft(points: pd.DataFrame, title: str = "HEART Elo vs median time-to-first-token",
                title_note: str | None = None, target_s: float | None = TTFT_TARGET_S) -> Figure:
    """Figure 5: Elo against median TTFT (log x), coloured by provider, dashed field-mean line.

    Parameters
    ----------
    points : DataFrame
        :func:`ttft_points`: ``system``, ``elo``, ``ttft_s`` (seconds, the median), ``provider``
        (or ``family``), ``ttft_source`` ("measured" / "external"); optional ``label``. Rows without
        a positive TTFT or an Elo are not plotted and are listed in a footnote.
    title, title_note : str
        Figure title and a note appended to it.
    target_s : float or None
        Draw the paper's real-time target (§9.7, 500 ms) as a dotted vertical line; None: no line.

    Returns
    -------
    Figure
        Markers: :data:`TTFT_MARKERS` (measured: filled circle; external: hollow diamond). The dashed
        line (``gid="field-mean"``) is at the mean Elo of the plotted systems. Labels are placed by a
        greedy search for free space (:func:`_place_labels`), with leader lines when moved far.
    """
    p = points.copy()
    prov_col = "provider" if "provider" in p else ("family" if "family" in p else None)
    p["_prov"] = p[prov_col].astype(str) if prov_col else "unknown"
    p["_src"] = p["ttft_source"].astype(str) if "ttft_source" in p else "external"
    p["_label"] = p["label"].astype(str) if "label" in p else p["system"].astype(str)
    p["_x"] = [_num(v) for v in p["ttft_s"]]
    p["_y"] = [_num(v) for v in p["elo"]]
    usable = p["_x"].gt(0) & p["_y"].notna()
    skipped = p.loc[~usable, "_label"].tolist()
    p = p[usable].reset_index(drop=True)
    n = len(p)
    fig = _new_figure(8.6 if n > 8 else 7.2, 5.6 if n > 8 else 4.4)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    if n == 0:
        _absent_axes(ax, "no system with both an Elo and a TTFT: absent")
        _title(fig, title, title_note)
        return fig
    providers = sorted(p["_prov"].unique())
    cmap = matplotlib.colormaps["tab10" if len(providers) <= 10 else "tab20"]
    colors = {pv: cmap(i % cmap.N) for i, pv in enumerate(providers)}
    msize = 7.5
    for (pv, src), g in p.groupby(["_prov", "_src"], sort=True):
        marker = TTFT_MARKERS.get(src, "s")
        filled = src == "measured"
        ax.plot(g["_x"], g["_y"], linestyle="none", marker=marker, markersize=msize,
                markerfacecolor=colors[pv] if filled else "white", markeredgecolor=colors[pv],
                markeredgewidth=1.6, zorder=3, gid=f"points|{pv}|{src}")
    mean = float(p["_y"].mean())
    ax.axhline(mean, linestyle="--", color="#555555", linewidth=1.0, zorder=1, gid="field-mean")
    lx, hx = np.log10(p["_x"].min()), np.log10(p["_x"].max())
    span = max(hx - lx, 0.6)
    ax.set_xlim(10 ** (lx - 0.14 * span - 0.05), 10 ** (hx + 0.14 * span + 0.05))
    ly, hy = p["_y"].min(), p["_y"].max()
    yspan = max(hy - ly, 40.0)
    ax.set_ylim(ly - 0.12 * yspan, hy + 0.12 * yspan)
    ax.autoscale(False)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g} s"))
    ax.xaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6) in (2.0, 5.0) else ""))
    ax.set_xlabel("median time to first token (s, log scale)", fontsize=_FONT + 1)
    ax.set_ylabel("HEART Elo", fontsize=_FONT + 1)
    ax.tick_params(labelsize=_FONT)
    ax.grid(True, which="major", color="#eeeeee", linewidth=0.8, zorder=0)
    x0, x1 = ax.get_xlim()
    show_target = target_s is not None and x0 < target_s < x1
    if show_target:
        ax.axvline(target_s, linestyle=":", color="#aa3333", linewidth=1.0, zorder=1, gid="ttft-target")
    handles = [Line2D([], [], linestyle="none", marker="o", markersize=7, markerfacecolor=colors[pv],
                      markeredgecolor=colors[pv], label=pv) for pv in providers]
    handles.append(Line2D([], [], linestyle="none", label=" "))
    for src, marker in TTFT_MARKERS.items():
        if (p["_src"] == src).any():
            handles.append(Line2D([], [], linestyle="none", marker=marker, markersize=7,
                                  markerfacecolor="#666666" if src == "measured" else "white",
                                  markeredgecolor="#666666", markeredgewidth=1.4, label=f"TTFT {src}"))
    handles.append(Line2D([], [], linestyle="--", color="#555555", label=f"field mean ({mean:.0f})"))
    if show_target:
        handles.append(Line2D([], [], linestyle=":", color="#aa3333",
                              label=f"{target_s * 1000:.0f} ms target"))
    # an axes legend (not a figure legend): the layout then keeps it clear of the title
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              fontsize=_FONT, frameon=False, title="Provider", title_fontsize=_FONT, alignment="left")
    if skipped:
        shown = ", ".join(skipped[:12]) + (f" and {len(skipped) - 12} more" if len(skipped) > 12 else "")
        # anchored under the x label, as an axes child so that the layout makes room for it
        ax.annotate("\n".join(textwrap.wrap(f"No TTFT (not plotted): {shown}", 110)), xy=(0.5, 0.0),
                    xycoords=ax.xaxis.label, xytext=(0, -6), textcoords="offset points", ha="center",
                    va="top", fontsize=_FONT - 1, color="#555555", gid="no-ttft-note")
    _title(fig, title, title_note)
    # the layout must be final before labels are placed in display space; then freeze it
    fig.canvas.draw()
    fig.set_layout_engine("none")
    _place_labels(fig, ax, p["_x"].to_numpy(), p["_y"].to_numpy(), p["_label"].tolist(),
                  marker_px=msize / 2 * fig.dpi / 72 + 1, fontsize=_FONT - 0.5 if n > 12 else _FONT)
    return fig


# --- Figure 6 ----------------------------------------------------------------------------------

def _pretty_strategy(key: str) -> str:
    return str(key).replace("_", " ").capitalize()


def strategy_matrix(usage: pd.DataFrame, level: str = "family", tagger: str | None = None
                    ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Figure 6's matrix (strategies by overall usage x groups, rate %) and each group's status.

    Overall usage of a strategy is the unweighted mean of its rate over the groups with an
    estimate; rows are sorted by it, highest first (ties by name). Columns: model families in
    name order, then "dataset" / "original", then "human". A group whose rows are all without a
    rate (status "absent") has an all-NaN column and status "absent".
    """
    u = usage[usage["level"] == level]
    if "tagger" in u and u["tagger"].notna().any():
        taggers = sorted(u["tagger"].dropna().astype(str).unique())
        u = u[u["tagger"] == (tagger if tagger is not None else taggers[0])]
    rate = pd.Series([_num(v) if _ok(s) else math.nan for v, s in zip(u["rate_pct"], u["status"])],
                     index=u.index)
    mat = u.assign(rate=rate).pivot_table(index="strategy", columns="group", values="rate", aggfunc="first",
                                          dropna=False)
    groups = list(dict.fromkeys(u["group"].astype(str)))
    special = [g for g in SPECIAL_GROUPS if g in groups]
    cols = sorted(g for g in groups if g not in SPECIAL_GROUPS) + special
    mat = mat.reindex(index=list(dict.fromkeys(u["strategy"].astype(str))), columns=cols)
    overall = mat.mean(axis=1, skipna=True)
    key = pd.DataFrame({"o": overall.fillna(-1), "s": overall.index})
    mat = mat.loc[key.sort_values(["o", "s"], ascending=[False, True]).index]
    status = {g: ("present" if mat[g].notna().any() else "absent") for g in cols}
    return mat, status


def strategy_heatmap(usage: pd.DataFrame, level: str = "family", tagger: str | None = None,
                     names: Mapping | None = None, labels: Mapping | None = None,
                     title: str = "Support-strategy usage", title_note: str | None = None) -> Figure:
    """Figure 6: usage (% of completions) of each support strategy per group.

    Parameters
    ----------
    usage : DataFrame
        ``strategy_usage.schema.yaml`` (:func:`heart.strategy_stats.usage`).
    level : str
        "family" (the paper's columns: model families and humans), "system" or "source".
    tagger : str, optional
        Which tagger's rows (default: the first by name); named in the subtitle.
    names : mapping, optional
        strategy key -> display name (e.g. from the taxonomy YAML); default the key, prettified.
    labels : mapping, optional
        group -> column header.
    title, title_note : str
        Figure title and a note appended to it.

    Returns
    -------
    Figure
        Rows sorted by overall usage (:func:`strategy_matrix`), pink (low) to teal (high), rate
        written in each cell. A group without tagged completions is a hatched grey column reading
        "absent" (``gid="absent|<group>"``), never zeros.
    """
    mat, status = strategy_matrix(usage, level, tagger)
    n, m = mat.shape
    row_names = [str((names or {}).get(s, _pretty_strategy(s))) for s in mat.index]
    col_names = [str((labels or {}).get(g, SPECIAL_GROUPS.get(g, g))) for g in mat.columns]
    rotate = m > 6 or max([len(c) for c in col_names] + [0]) > 12
    label_w = 0.072 * max([len(s) for s in row_names] + [10])
    fig = _new_figure(label_w + 0.62 * max(m, 3) + 1.4, 1.6 + 0.3 * max(n, 4) + (0.6 if rotate else 0))
    ax = fig.add_subplot()
    if n == 0 or m == 0:
        _absent_axes(ax, "no strategy usage at this level: absent")
        _title(fig, title, title_note)
        return fig
    vals = mat.to_numpy(dtype=float)
    vmax = max(10.0, math.ceil(np.nanmax(vals) / 10.0) * 10.0) if np.isfinite(vals).any() else 100.0
    norm = Normalize(0.0, vmax)
    image = ax.imshow(np.ma.masked_invalid(vals), cmap=STRATEGY_CMAP, norm=norm, aspect="auto",
                      interpolation="nearest", extent=(0, m, n, 0))
    for c, g in enumerate(mat.columns):
        if status[g] != "present":
            ax.add_patch(Rectangle((c, 0), 1, n, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                   edgecolor="#a8a8a8", linewidth=0, gid=f"absent|{g}"))
            ax.text(c + 0.5, n / 2, "absent", rotation=90, ha="center", va="center", fontsize=_FONT + 1,
                    fontstyle="italic", bbox={"boxstyle": "square,pad=0.2", "facecolor": ABSENT_COLOR,
                                              "edgecolor": "none"})
            continue
        for r in range(n):
            v = vals[r, c]
            if math.isnan(v):
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                       edgecolor="#a8a8a8", linewidth=0))
                ax.text(c + 0.5, r + 0.5, "–", ha="center", va="center", fontsize=_FONT)
                continue
            ax.text(c + 0.5, r + 0.5, f"{v:.0f}", ha="center", va="center", fontsize=_FONT - 0.5,
                    color=_text_color(STRATEGY_CMAP(norm(v))))
    for k in range(1, m):
        ax.axvline(k, color="white", linewidth=1.0)
    ax.set_xlim(0, m)
    ax.set_ylim(n, 0)
    ax.set_yticks(np.arange(n) + 0.5, row_names, fontsize=_FONT)
    ax.set_xticks(np.arange(m) + 0.5, col_names, fontsize=_FONT, rotation=45 if rotate else 0,
                  ha="left" if rotate else "center", rotation_mode="anchor")
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    cb = fig.colorbar(image, ax=ax, shrink=min(0.9, 4.0 / max(n, 4) + 0.5), pad=0.02, aspect=25)
    cb.set_label("usage (% of completions)", fontsize=_FONT)
    cb.ax.tick_params(labelsize=_FONT - 1)
    tag = usage["tagger"].dropna().astype(str).unique() if "tagger" in usage else []
    used = tagger if tagger is not None else (sorted(tag)[0] if len(tag) else None)
    sub = f"rows sorted by mean usage over the columns; level: {level}" + \
        (f"; tagger: {used}" if used else "")
    ax.set_xlabel(sub, fontsize=_FONT - 1, color="#555555", labelpad=6)
    _title(fig, title, title_note)
    return fig


# --- Elo forest --------------------------------------------------------------------------------

def elo_forest(ratings: pd.DataFrame, source: str = "combined", axis: str = "overall",
               subsets: Sequence[str] = ("all", "regular", "adversarial"), labels: Mapping | None = None,
               title: str | None = None, title_note: str | None = None) -> Figure:
    """Elo with both interval kinds per system, one panel per item subset, side by side.

    Parameters
    ----------
    ratings : DataFrame
        ``ratings.schema.yaml`` (:func:`heart.leaderboard.leaderboard`).
    source, axis : str
        The scope drawn (default: combined judges, overall verdict).
    subsets : sequence of str
        Panels, left to right (subsets missing from the table are drawn as absent panels).
    labels : mapping, optional
        system -> display name.
    title, title_note : str
        Figure title (default names the scope) and a note appended to it.

    Returns
    -------
    Figure
        Systems ordered by Elo in the first subset with estimates (shared y; each panel its own
        x range, since the adversarial subset's intervals are much wider). Per system two
        error bars: the asymptotic (Wald) interval (circle, above) and the cluster-bootstrap
        interval (square, below), i.e. ``2 x systems`` error-bar containers per panel. Systems
        without an estimate in a panel read "absent" / "not estimable" at their row.
    """
    r = ratings[(ratings["source"] == source) & (ratings["axis"] == axis)]
    systems = list(dict.fromkeys(r["system"].astype(str)))
    order = None
    for sub in subsets:
        rs = r[r["subset"] == sub]
        ok = rs[_ok_mask(rs)]
        if len(ok):
            order = leaderboard_order(rs)
            break
    order = order or sorted(systems)
    order += [s for s in systems if s not in order]
    n, k = len(order), len(subsets)
    names = [_label(s, labels) for s in order]
    label_w = 0.075 * max([len(s) for s in names] + [8])
    fig = _new_figure(label_w + 3.0 * k + 0.3, 1.7 + 0.3 * max(n, 3))
    axs = fig.subplots(1, k, sharey=True, squeeze=False)[0]
    colors = {"asym": "#1f4e99", "boot": "#d9661f"}
    for ax, sub in zip(axs, subsets):
        lo_all, hi_all = [], []
        rs = r[r["subset"] == sub].drop_duplicates("system").set_index("system")
        n_ok = 0
        for i, system in enumerate(order):
            row = rs.loc[system] if system in rs.index else None
            if row is None or not _ok(row["status"]) or math.isnan(_num(row["elo"])):
                word = "absent" if row is None else _status_word(row["status"])
                ax.text(0.5, i, word, transform=ax.get_yaxis_transform(), ha="center", va="center",
                        fontsize=_FONT - 0.5, fontstyle="italic", color="#555555", gid=f"absent|{system}")
                continue
            n_ok += 1
            elo = _num(row["elo"])
            for kind, dy, marker in (("asym", -0.17, "o"), ("boot", 0.17, "s")):
                lo, hi = _num(row[f"elo_lo_{kind}"]), _num(row[f"elo_hi_{kind}"])
                err = None
                if not (math.isnan(lo) or math.isnan(hi)):
                    err = [[max(elo - lo, 0.0)], [max(hi - elo, 0.0)]]
                    lo_all.append(lo)
                    hi_all.append(hi)
                ax.errorbar([elo], [i + dy], xerr=err, fmt=marker, color=colors[kind], markersize=4,
                            elinewidth=1.6 if kind == "asym" else 1.0, capsize=2, zorder=3)
            lo_all.append(elo)
            hi_all.append(elo)
        head = {"all": "all items", "regular": "regular items",
                "adversarial": "adversarial items"}.get(sub, sub)
        ax.set_title(head if n_ok else f"{head}: absent", fontsize=_FONT + 1)
        ax.tick_params(labelsize=_FONT)
        if not n_ok:
            ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor=ABSENT_COLOR,
                                   hatch=ABSENT_HATCH, edgecolor="#c0c0c0", linewidth=0, zorder=0,
                                   gid="absent-panel"))
            ax.set_xticks([])
            continue
        # x range per panel: the adversarial subset's wide intervals must not squash the others
        lo, hi = min(lo_all + [1500.0]), max(hi_all + [1500.0])
        pad = 0.06 * max(hi - lo, 50.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.axvline(1500.0, color="#999999", linewidth=0.8, linestyle=":", zorder=1)
        ax.grid(True, axis="x", color="#eeeeee", linewidth=0.8, zorder=0)
        ax.set_xlabel("Elo", fontsize=_FONT)
    axs[0].set_ylim(n - 0.5, -0.5)
    axs[0].set_yticks(np.arange(n), names, fontsize=_FONT)
    handles = [Line2D([], [], color=colors["asym"], marker="o", markersize=4, linewidth=1.6,
                      label="asymptotic CI"),
               Line2D([], [], color=colors["boot"], marker="s", markersize=4, linewidth=1.0,
                      label="conversation-bootstrap CI"),
               Line2D([], [], color="#999999", linestyle=":", label="1500 (mean rating)")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=_FONT, frameon=False)
    _title(fig, title or f"Elo by item subset (source: {source}, verdict: {axis})", title_note)
    return fig


# --- agreement ---------------------------------------------------------------------------------

def _judge_sort(judges) -> list[str]:
    return sorted(judges, key=lambda j: (j != "llm-ensemble", str(j)))


def agreement_panel(human_llm: pd.DataFrame, cross_judge: pd.DataFrame, trivial: pd.DataFrame,
                    title: str = "Judge agreement", title_note: str | None = None) -> Figure:
    """Human-LLM agreement per judge (with reference lines) and the cross-judge agreement matrix.

    Parameters
    ----------
    human_llm : DataFrame
        ``agreement_human_llm.schema.yaml``: rows with ``reference`` "human-majority"; scope "all"
        is the point with its CI, scopes "clear" / "ambiguous" small hollow markers.
    cross_judge : DataFrame
        ``agreement_cross_judge.schema.yaml``: "pairwise" rows fill the matrix (% agreement and
        Cohen's kappa); "mean-pairwise" and "all" go in the panel title.
    trivial : DataFrame
        ``trivial_judges.schema.yaml``: rows of ``reference`` "human-majority" with ``judge_type``
        "trivial" are dashed reference lines, "human" (the leave-one-out human ceiling) a line
        with its CI band.
    title, title_note : str
        Figure title and a note appended to it.

    Returns
    -------
    Figure
        Left: agreement (%) with the human majority per judge; when no human judgment exists
        the axes read "human judgments absent" (no zeros). Right: the judge x judge matrix, or
        "absent" with one LLM judge.
    """
    h = human_llm[human_llm["reference"] == "human-majority"] if len(human_llm) else human_llm
    h_all = h[(h["scope"] == "all") & _ok_mask(h)] if len(h) else h
    judges = _judge_sort(h_all["judge"].astype(str).unique()) if len(h_all) else []
    pw = cross_judge[(cross_judge["scope"] == "pairwise") & _ok_mask(cross_judge)] \
        if len(cross_judge) else cross_judge
    mjudges = sorted(set(pw["judge_1"].astype(str)) | set(pw["judge_2"].astype(str))) if len(pw) else []
    rows = max(len(judges), len(mjudges), 3)
    fig = _new_figure(11.0, 2.3 + 0.42 * rows)
    ax, mx = fig.subplots(1, 2, width_ratios=[1.25, 1.0])

    # left: human-LLM agreement
    if not judges:
        note = _first_note(h) or "no pair has both a human majority and an LLM verdict"
        _absent_axes(ax, "human judgments absent", note)
        ax.set_title("Agreement with the human majority", fontsize=_FONT + 1)
    else:
        xs = []
        for i, j in enumerate(judges):
            row = h_all[h_all["judge"] == j].iloc[0]
            a, lo, hi = 100 * _num(row["agreement"]), 100 * _num(row["ci_low"]), 100 * _num(row["ci_high"])
            err = None if math.isnan(lo) or math.isnan(hi) else [[a - lo], [hi - a]]
            ax.errorbar([a], [i], xerr=err, fmt="o", color="#1f4e99", markersize=6, capsize=3, elinewidth=1.5,
                        zorder=3)
            xs += [a, lo, hi]
            for scope, dy, marker in (("clear", -0.22, "^"), ("ambiguous", 0.22, "v")):
                s = h[(h["scope"] == scope) & (h["judge"] == j) & _ok_mask(h)]
                if len(s):
                    v = 100 * _num(s.iloc[0]["agreement"])
                    ax.plot([v], [i + dy], marker=marker, linestyle="none", markersize=5,
                            markerfacecolor="white", markeredgecolor="#1f4e99", zorder=3)
                    xs.append(v)
        handles = [Line2D([], [], color="#1f4e99", marker="o", label="all pairs (95% CI)"),
                   Line2D([], [], linestyle="none", marker="^", markerfacecolor="white",
                          markeredgecolor="#1f4e99", label="clear human majority"),
                   Line2D([], [], linestyle="none", marker="v", markerfacecolor="white",
                          markeredgecolor="#1f4e99", label="ambiguous")]
        has = len(trivial) and {"reference", "judge", "judge_type", "agreement"} <= set(trivial.columns)
        t = trivial[(trivial["reference"] == "human-majority") & _ok_mask(trivial)] if has \
            else pd.DataFrame(columns=["judge", "judge_type", "agreement", "ci_low", "ci_high"])
        styles = [("#7f7f7f", "--"), ("#b07d2b", "-."), ("#6a3d9a", (0, (1, 1.5))), ("#2f8f5b", (0, (5, 2)))]
        for k, row in enumerate(t[t["judge_type"] == "trivial"].itertuples()):
            color, ls = styles[k % len(styles)]
            v = 100 * _num(row.agreement)
            ax.axvline(v, color=color, linestyle=ls, linewidth=1.2, zorder=1, gid=f"trivial|{row.judge}")
            handles.append(Line2D([], [], color=color, linestyle=ls, label=f"{row.judge} ({v:.0f}%)"))
            xs.append(v)
        for row in t[t["judge_type"] == "human"].itertuples():
            v = 100 * _num(row.agreement)
            lo, hi = 100 * _num(getattr(row, "ci_low", None)), 100 * _num(getattr(row, "ci_high", None))
            if not (math.isnan(lo) or math.isnan(hi)):
                ax.axvspan(lo, hi, color="#2ca02c", alpha=0.12, linewidth=0, zorder=0)
                xs += [lo, hi]
            ax.axvline(v, color="#2ca02c", linewidth=1.6, zorder=1, gid="human-ceiling")
            handles.append(Line2D([], [], color="#2ca02c", linewidth=1.6,
                                  label=f"human ceiling, LOO ({v:.0f}%)"))
            xs.append(v)
        xs = [x for x in xs if not math.isnan(x)]
        lo, hi = min(xs), max(xs)
        pad = 0.08 * max(hi - lo, 10.0)
        ax.set_xlim(max(0.0, lo - pad), min(100.0, hi + pad))
        ax.set_ylim(len(judges) - 0.5, -0.5)
        ax.set_yticks(range(len(judges)), judges, fontsize=_FONT)
        ax.set_xlabel("agreement with the human majority (%)", fontsize=_FONT)
        ax.tick_params(labelsize=_FONT)
        ax.grid(True, axis="x", color="#eeeeee", zorder=0)
        ax.set_title("Agreement with the human majority", fontsize=_FONT + 1)
        # just under the x label: a fixed distance (inches) converted to an axes fraction
        axes_h = max(fig.get_size_inches()[1] - 1.5, 1.0)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.37 / axes_h), ncols=2,
                  fontsize=_FONT - 1, frameon=False)

    # right: cross-judge matrix
    if not mjudges:
        _absent_axes(mx, "cross-judge agreement absent",
                     _first_note(cross_judge) or "fewer than two LLM judges")
        mx.set_title("Cross-judge agreement", fontsize=_FONT + 1)
    else:
        k = len(mjudges)
        mat = np.full((k, k), np.nan)
        kap = np.full((k, k), np.nan)
        for row in pw.itertuples():
            a, b = mjudges.index(str(row.judge_1)), mjudges.index(str(row.judge_2))
            mat[a, b] = mat[b, a] = 100 * _num(row.agreement)
            kap[a, b] = kap[b, a] = _num(row.kappa)
        norm = Normalize(50.0, 100.0)
        cmap = matplotlib.colormaps["PuBu"]
        mx.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, extent=(0, k, k, 0), aspect="auto")
        for a in range(k):
            for b in range(k):
                if a == b:
                    mx.add_patch(Rectangle((b, a), 1, 1, facecolor="#f3f3f3", edgecolor="white"))
                    mx.text(b + 0.5, a + 0.5, "—", ha="center", va="center", fontsize=_FONT, color="#888888")
                elif math.isnan(mat[a, b]):
                    mx.add_patch(Rectangle((b, a), 1, 1, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                           edgecolor="#a8a8a8", linewidth=0))
                    mx.text(b + 0.5, a + 0.5, "no pairs", ha="center", va="center", fontsize=_FONT - 1,
                            fontstyle="italic")
                else:
                    show_kappa = k <= 5 and not math.isnan(kap[a, b])  # more judges: no room
                    txt = f"{mat[a, b]:.1f}%" + (f"\nκ = {kap[a, b]:.2f}" if show_kappa else "")
                    mx.text(b + 0.5, a + 0.5, txt, ha="center", va="center",
                            fontsize=_FONT - (1 if k > 4 else 0), color=_text_color(cmap(norm(mat[a, b]))))
        mx.set_xlim(0, k)
        mx.set_ylim(k, 0)
        mx.set_xticks(np.arange(k) + 0.5, mjudges, fontsize=_FONT, rotation=30 if k > 2 else 0,
                      ha="right" if k > 2 else "center", rotation_mode="anchor")
        mx.set_yticks(np.arange(k) + 0.5, mjudges, fontsize=_FONT)
        mx.tick_params(length=0)
        extra = []
        for scope, name in (("mean-pairwise", "mean pairwise"), ("all", "all judges agree")):
            s = cross_judge[(cross_judge["scope"] == scope) & _ok_mask(cross_judge)]
            if len(s):
                v, lo, hi = (100 * _num(s.iloc[0][c]) for c in ("agreement", "ci_low", "ci_high"))
                extra.append(f"{name} {v:.1f}%" + ("" if math.isnan(lo) else f" [{lo:.1f}, {hi:.1f}]"))
        mx.set_title("Cross-judge agreement (% of pairs" + (", Cohen's κ)" if k <= 5 else ")"),
                     fontsize=_FONT + 1)
        if extra:
            mx.set_xlabel("\n".join(extra), fontsize=_FONT, labelpad=6)
        mx.set_aspect("equal" if k <= 6 else "auto")
    _title(fig, title, title_note)
    return fig


# --- bias --------------------------------------------------------------------------------------

def _forest_axes(ax, table: pd.DataFrame, value: str, ref: float, xlabel: str, panel: str,
                 scale: float = 100.0) -> None:
    """One audit forest: per judge the estimate with its CI, a reference line, '*' where BH rejects."""
    ok = table[_ok_mask(table)] if len(table) and "status" in table else table
    ok = ok[[not math.isnan(_num(v)) for v in ok[value]]] if len(ok) else ok
    if not len(ok):
        _absent_axes(ax, f"{panel}: absent", _first_note(table))
        ax.set_title(panel, fontsize=_FONT + 1)
        return
    names = []
    xs = [ref * scale]
    for i, row in enumerate(ok.itertuples()):
        v = scale * _num(getattr(row, value))
        lo = scale * _num(getattr(row, "ci_low", math.nan))
        hi = scale * _num(getattr(row, "ci_high", math.nan))
        err = None if math.isnan(lo) or math.isnan(hi) else [[v - lo], [hi - v]]
        rej = bool(getattr(row, "reject", False)) if pd.notna(getattr(row, "reject", None)) else False
        ax.errorbar([v], [i], xerr=err, fmt="o", color="#b2182b" if rej else "#1f4e99", markersize=5,
                    capsize=3, zorder=3)
        xs += [x for x in (v, lo, hi) if not math.isnan(x)]
        names.append(f"{row.judge} *" if rej else str(row.judge))
    ax.axvline(ref * scale, color="#777777", linestyle="--", linewidth=1.0, zorder=1)
    lo, hi = min(xs), max(xs)
    pad = 0.1 * max(hi - lo, 4.0)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_yticks(range(len(names)), names, fontsize=_FONT)
    ax.set_xlabel(xlabel, fontsize=_FONT)
    ax.tick_params(labelsize=_FONT)
    ax.grid(True, axis="x", color="#eeeeee", zorder=0)
    ax.set_title(panel, fontsize=_FONT + 1)


def bias_panel(position: pd.DataFrame, length: pd.DataFrame, self_pref: pd.DataFrame, flips: pd.DataFrame,
               loadings: pd.DataFrame, title: str = "Judge audits and factor structure",
               title_note: str | None = None) -> Figure:
    """Position, length and self-preference audits, flip rates and factor loadings in one figure.

    Parameters
    ----------
    position : DataFrame
        ``bias_position.schema.yaml``: ``judge``, ``share_shown_a``, ``ci_low``, ``ci_high``, ``reject``.
    length : DataFrame
        ``bias_length.schema.yaml``: ``share_longer_wins`` with its CI.
    self_pref : DataFrame
        ``bias_self_preference.schema.yaml``: ``difference`` (own-family win rate minus others') with its CI.
    flips : DataFrame
        ``flip_rates.schema.yaml``: ``judge``, ``axis`` (overall or H..T), ``n_pairs``, ``flip_rate``.
    loadings : DataFrame
        ``factor_loadings.schema.yaml``: ``variable`` (z_H ...), ``factor``, ``loading``, ``communality``.
    title, title_note : str
        Figure title and a note appended to it.

    Returns
    -------
    Figure
        Top row: three forests (reference line at no bias; red and "*": rejected after
        Benjamini-Hochberg). Bottom: flip rate per judge x axis and the loading matrix. A table
        that is empty or has no estimate is an "absent" panel, not an empty one.
    """
    n_j = max([len(t) for t in (position, length, self_pref)] + [3])
    n_f = len(flips["judge"].unique()) if len(flips) else 0
    n_v = len(loadings["variable"].unique()) if len(loadings) else 0
    top_h = 0.9 + 0.34 * n_j
    bottom_h = 1.0 + 0.36 * max(n_f, n_v, 3)
    fig = _new_figure(12.5, top_h + bottom_h + 0.8)
    axd = fig.subplot_mosaic([["pos", "pos", "len", "len", "self", "self"],
                              ["flip", "flip", "flip", "load", "load", "load"]],
                             height_ratios=[top_h, bottom_h])
    _forest_axes(axd["pos"], position, "share_shown_a", 0.5, "response shown first wins (%)", "Position bias")
    _forest_axes(axd["len"], length, "share_longer_wins", 0.5, "longer response wins (%)", "Length bias")
    _forest_axes(axd["self"], self_pref, "difference", 0.0, "own-family minus other-family win rate (pp)",
                 "Self-preference")

    ax = axd["flip"]
    f = flips.copy() if len(flips) else flips
    if not len(f) or not any(not math.isnan(_num(v)) for v in f["flip_rate"]):
        _absent_axes(ax, "flip rates: absent", "no pair judged in both orders")
        ax.set_title("Order flips", fontsize=_FONT + 1)
    else:
        judges = sorted(f["judge"].astype(str).unique())
        axes_present = list(dict.fromkeys(f["axis"].astype(str)))
        cols = [a for a in ("overall", *AXES) if a in axes_present] + \
            [a for a in axes_present if a not in ("overall", *AXES)]
        mat = np.full((len(judges), len(cols)), np.nan)
        npairs = {}
        for row in f.itertuples():
            mat[judges.index(str(row.judge)), cols.index(str(row.axis))] = 100 * _num(row.flip_rate)
            if str(row.axis) == "overall":
                npairs[str(row.judge)] = row.n_pairs
        vmax = max(10.0, math.ceil(np.nanmax(mat) / 10.0) * 10.0)
        cmap, norm = matplotlib.colormaps["Oranges"], Normalize(0.0, vmax)
        ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, aspect="auto",
                  extent=(0, len(cols), len(judges), 0))
        for a in range(len(judges)):
            for b in range(len(cols)):
                v = mat[a, b]
                if math.isnan(v):
                    ax.add_patch(Rectangle((b, a), 1, 1, facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH,
                                           edgecolor="#a8a8a8", linewidth=0))
                    ax.text(b + 0.5, a + 0.5, "absent", ha="center", va="center", fontsize=_FONT - 1.5,
                            fontstyle="italic")
                else:
                    ax.text(b + 0.5, a + 0.5, f"{v:.1f}%", ha="center", va="center", fontsize=_FONT - 0.5,
                            color=_text_color(cmap(norm(v))))
        ylabels = [f"{j} (n={npairs[j]})" if j in npairs else j for j in judges]
        ax.set_xlim(0, len(cols))
        ax.set_ylim(len(judges), 0)
        ax.set_yticks(np.arange(len(judges)) + 0.5, ylabels, fontsize=_FONT)
        ax.set_xticks(np.arange(len(cols)) + 0.5, cols, fontsize=_FONT)
        ax.tick_params(length=0)
        ax.set_title("Order flips (winner changes when A/B are swapped)", fontsize=_FONT + 1)

    ax = axd["load"]
    ld = loadings[[not math.isnan(_num(v)) for v in loadings["loading"]]] if len(loadings) else loadings
    if not len(ld):
        _absent_axes(ax, "factor loadings: absent", _first_note(loadings))
        ax.set_title("Factor loadings", fontsize=_FONT + 1)
    else:
        variables = list(dict.fromkeys(ld["variable"].astype(str)))
        factors = sorted(ld["factor"].astype(str).unique())
        mat = np.full((len(variables), len(factors)), np.nan)
        comm = {}
        for row in ld.itertuples():
            mat[variables.index(str(row.variable)), factors.index(str(row.factor))] = _num(row.loading)
            c = _num(getattr(row, "communality", math.nan))
            if not math.isnan(c):
                comm[str(row.variable)] = c
        cmap, norm = matplotlib.colormaps["RdBu_r"], Normalize(-1.0, 1.0)
        ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, aspect="auto",
                  extent=(0, len(factors), len(variables), 0))
        for a in range(len(variables)):
            for b in range(len(factors)):
                v = mat[a, b]
                ax.text(b + 0.5, a + 0.5, "–" if math.isnan(v) else f"{v:.2f}", ha="center", va="center",
                        fontsize=_FONT, color="black" if math.isnan(v) else _text_color(cmap(norm(v))))
        ylabels = [v.removeprefix("z_") + (f"  (h² = {comm[v]:.2f})" if v in comm else "")
                   for v in variables]
        ax.set_xlim(0, len(factors))
        ax.set_ylim(len(variables), 0)
        ax.set_yticks(np.arange(len(variables)) + 0.5, ylabels, fontsize=_FONT)
        ax.set_xticks(np.arange(len(factors)) + 0.5, factors, fontsize=_FONT)
        ax.tick_params(length=0)
        ax.set_title("Factor loadings of the axis z-scores", fontsize=_FONT + 1)
    fig.supxlabel("red and *: rejected at the family's FDR (Benjamini–Hochberg); dashed line: no bias",
                  fontsize=_FONT - 1, color="#555555")
    _title(fig, title, title_note)
    return fig


# --- Figures 2/3: one judged pair --------------------------------------------------------------

def format_mark(value) -> str:
    """A signed axis mark as the judges write it: +3 -> 'A+++', -1 -> 'B+', 0 -> 'none', missing -> '–'."""
    v = _num(value)
    if math.isnan(v):
        return "–"
    v = int(v)
    return "none" if v == 0 else ("A" if v > 0 else "B") + "+" * abs(v)


_PREFERENCE = {2: "A significantly better", 1: "A slightly better", 0: "about the same",
               -1: "B slightly better", -2: "B significantly better"}


def _plain_text(ax, x, y, text, **kw):
    """Text drawn verbatim: a '$' in a dialogue is a dollar sign, not mathtext."""
    return ax.text(x, y, text, parse_math=False, **kw)


def _turns(dialogue) -> list[tuple[str, str]]:
    if isinstance(dialogue, pd.DataFrame):
        d = dialogue.sort_values("turn_index") if "turn_index" in dialogue else dialogue
        return [(str(r), str(t)) for r, t in zip(d["role"], d["text"])]
    out = []
    for t in dialogue:
        if isinstance(t, Mapping):
            out.append((str(t.get("role", "")), str(t.get("text", ""))))
        else:
            role, text = t
            out.append((str(role), str(text)))
    return out


def _response(resp, default: str) -> tuple[str, str]:
    if isinstance(resp, Mapping):
        return str(resp.get("system") or default), str(resp.get("text", ""))
    return default, str(resp)


def _verdict_rows(verdicts: pd.DataFrame) -> list[dict]:
    rows = []
    for v in (verdicts.to_dict("records") if verdicts is not None else []):
        kind = v.get("judge_kind") or ("human" if str(v.get("judge", "")).startswith("human:") else "llm")
        winner = v.get("winner")
        winner = winner.upper() if isinstance(winner, str) and winner else None
        strength = _num(v.get("strength"))
        pref = _num(v.get("preference"))
        if kind == "human" and not math.isnan(pref):
            verdict = _PREFERENCE.get(int(pref), str(int(pref)))
        elif winner:
            verdict = f"{winner} wins" + ("" if math.isnan(strength) else f" (strength {int(strength)})")
        else:
            verdict = _status_word(v.get("status")) if v.get("status") not in (None, "ok") else "no verdict"
        marks = {a: format_mark(v.get(f"axis_{a}")) for a in AXES} if kind == "llm" else {}
        rationale = v.get("rationale")
        rows.append({"judge": str(v.get("judge", "")), "kind": kind, "verdict": verdict, "marks": marks,
                     "rationale": rationale if isinstance(rationale, str) else ""})
    return rows


def example_pair(dialogue, response_a, response_b, verdicts: pd.DataFrame, title: str = "Example judged pair",
                 title_note: str | None = None, max_turns: int = 8, wrap: int = 74,
                 max_lines: int = 10) -> tuple[str, Figure]:
    """One judged pair rendered like the paper's Figures 2/3: dialogue, both responses, every verdict.

    Parameters
    ----------
    dialogue : DataFrame or sequence
        The dialogue history: a ``turns`` table slice (``role``, ``text``, optional ``turn_index``) or
        a sequence of (role, text) / {"role", "text"}.
    response_a, response_b : str or mapping
        The two responses in the pair's order (system_a, system_b): text, or {"system", "text"}.
    verdicts : DataFrame
        ``judgments.schema.yaml`` rows of this pair: ``judge``, ``judge_kind``, ``winner`` (a/b),
        ``strength``, ``preference`` (humans), ``axis_H`` ... ``axis_T`` (signed, positive = A),
        ``rationale``, ``status``.
    title, title_note : str
        Title and a note appended to it.
    max_turns : int
        Only the last ``max_turns`` turns are shown (the figure says how many were left out).
    wrap : int
        Characters per line of the figure's text columns.
    max_lines : int
        Lines shown per turn, response or rationale in the figure (the rest is cut with "…"; the
        HTML keeps every word).

    Returns
    -------
    (str, Figure)
        A self-contained HTML fragment (every text HTML-escaped) and the same content as a figure.
    """
    turns = _turns(dialogue)
    hidden = max(0, len(turns) - max_turns)
    shown = turns[hidden:]
    name_a, text_a = _response(response_a, "A")
    name_b, text_b = _response(response_b, "B")
    rows = _verdict_rows(verdicts)
    head = f"{title} — {title_note}" if title_note else title

    # HTML
    e = html.escape

    def para(text: str) -> str:
        return e(text).replace("\n", "<br>")

    parts = ['<div class="heart-example" style="font-family:sans-serif;font-size:14px;max-width:960px">',
             f"<h3>{e(head)}</h3>", '<div class="dialogue"><h4>Dialogue</h4>']
    if hidden:
        parts.append(f"<p><em>… {hidden} earlier turn{'s' if hidden > 1 else ''} not shown</em></p>")
    for role, text in shown:
        parts.append(f'<p class="turn {e(role)}"><strong>{e(role.capitalize())}:</strong> {para(text)}</p>')
    parts.append("</div>")
    for label, name, text in (("A", name_a, text_a), ("B", name_b, text_b)):
        who = "" if name == label else f" ({e(name)})"
        parts.append(f'<div class="response"><h4>Response {label}{who}</h4><p>{para(text)}</p></div>')
    parts.append('<table class="verdicts" border="1" style="border-collapse:collapse"><thead><tr>'
                 "<th>judge</th><th>verdict</th>" + "".join(f"<th>{a}</th>" for a in AXES)
                 + "<th>rationale</th></tr></thead><tbody>")
    for r in rows:
        marks = "".join(f"<td>{e(r['marks'].get(a, '–'))}</td>" for a in AXES)
        parts.append(f"<tr><td>{e(r['judge'])}</td><td>{e(r['verdict'])}</td>{marks}"
                     f"<td>{para(r['rationale'])}</td></tr>")
    if not rows:
        parts.append(f'<tr><td colspan="{len(AXES) + 3}"><em>no verdicts (absent)</em></td></tr>')
    parts.append("</tbody></table></div>")
    out_html = "\n".join(parts)

    # figure: text blocks laid out top-down in inches on one invisible axes
    line_h = 1.3 * _FONT / 72
    width = 11.0
    col_w = (width - 0.5) / 2
    def lines_of(text: str, width: int) -> list[str]:
        out = textwrap.wrap(text, width) or [""]
        if len(out) > max_lines:
            out = out[:max_lines]
            out[-1] = out[-1][:max(0, width - 2)] + " …"
        return out

    left = []
    if hidden:
        left.append(("note", [f"… {hidden} earlier turn{'s' if hidden > 1 else ''} not shown"]))
    for role, text in shown:
        left.append((role, lines_of(f"{role.capitalize()}: {text}", wrap)))
    right = [(f"Response A{'' if name_a == 'A' else f' ({name_a})'}", lines_of(text_a, wrap)),
             (f"Response B{'' if name_b == 'B' else f' ({name_b})'}", lines_of(text_b, wrap))]
    vrows = []
    for r in rows:
        marks = "   ".join(f"{a}: {m}" for a, m in r["marks"].items())
        header = f"{r['judge']} — {r['verdict']}" + (f"   |   {marks}" if marks else "")
        vrows.append((header, lines_of(r["rationale"], int(wrap * 2.05)) if r["rationale"] else []))
    if not vrows:
        vrows.append(("no verdicts (absent)", []))

    def block_h(lines: int) -> float:
        return lines * line_h + 0.22

    left_h = sum(block_h(len(lines)) + 0.1 for _, lines in left) + 0.35
    right_h = sum(block_h(len(lines) + 1) + 0.1 for _, lines in right) + 0.35
    verdict_h = sum((len(lines) + 1) * line_h + 0.14 for _, lines in vrows) + 0.45
    height = 0.55 + max(left_h, right_h) + verdict_h
    fig = _new_figure(width, height, layout=None)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    _plain_text(ax, 0.25, 0.2, head, fontsize=_FONT + 3, fontweight="bold", va="top")
    y0 = 0.55
    _plain_text(ax, 0.25, y0, "Dialogue", fontsize=_FONT + 1, fontweight="bold", va="top")
    y = y0 + 0.3
    colors = {"seeker": "#fdf1e6", "supporter": "#e8f1fb", "note": "#ffffff"}
    for role, lines in left:
        h = block_h(len(lines))
        ax.add_patch(Rectangle((0.25, y), col_w - 0.2, h, facecolor=colors.get(role, "#f4f4f4"),
                               edgecolor="#cccccc", linewidth=0.6))
        _plain_text(ax, 0.35, y + 0.11, "\n".join(lines), fontsize=_FONT, va="top", linespacing=1.3,
                fontstyle="italic" if role == "note" else None)
        y += h + 0.1
    x = 0.25 + col_w + 0.05
    _plain_text(ax, x, y0, "Responses", fontsize=_FONT + 1, fontweight="bold", va="top")
    y = y0 + 0.3
    for header, lines in right:
        h = block_h(len(lines) + 1)
        ax.add_patch(Rectangle((x, y), col_w - 0.1, h, facecolor="#f5f5f5", edgecolor="#999999",
                               linewidth=0.8))
        _plain_text(ax, x + 0.1, y + 0.11, header, fontsize=_FONT, fontweight="bold", va="top")
        _plain_text(ax, x + 0.1, y + 0.11 + line_h, "\n".join(lines), fontsize=_FONT, va="top",
                    linespacing=1.3)
        y += h + 0.1
    y = y0 + max(left_h, right_h)
    _plain_text(ax, 0.25, y, "Verdicts (axis marks: A+ … A+++++ favour response A; none = no clear "
                "advantage)", fontsize=_FONT + 1, fontweight="bold", va="top")
    y += 0.32
    for header, lines in vrows:
        _plain_text(ax, 0.25, y, header, fontsize=_FONT, fontweight="bold", va="top")
        if lines:
            _plain_text(ax, 0.45, y + line_h, "\n".join(lines), fontsize=_FONT - 0.5, va="top",
                        linespacing=1.3, color="#333333")
        y += (len(lines) + 1) * line_h + 0.14
    return out_html, fig


def pick_example(judgments: pd.DataFrame):
    """The pair shown as the example (deterministic): judged by humans and LLMs if any, then by the most judges
    with a verdict, then the smallest pair id. None when no pair has a verdict."""
    ok = judgments[judgments["status"] == "ok"]
    if ok.empty:
        return None
    score = ok.groupby("pair_id").agg(kinds=("judge_kind", "nunique"), n=("judge", "size"))
    score = score.reset_index().sort_values(["kinds", "n", "pair_id"], ascending=[False, False, True])
    return score.iloc[0]["pair_id"]
