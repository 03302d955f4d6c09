"""Rule figure_bias_factors: position, length and self-preference audits, order flips and factor loadings."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from heart.common.vocabulary import AXES
from heart.figures.style import (FONT, absent_axes, absent_rect, first_note, label_grid, new_figure,
                                 num, ok_mask, suptitle, text_color)


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
    fig = new_figure(12.5, top_h + bottom_h + 0.8)
    axd = fig.subplot_mosaic([["pos", "pos", "len", "len", "self", "self"],
                              ["flip", "flip", "flip", "load", "load", "load"]],
                             height_ratios=[top_h, bottom_h])
    _forest_axes(axd["pos"], position, "share_shown_a", 0.5, "response shown first wins (%)", "Position bias")
    _forest_axes(axd["len"], length, "share_longer_wins", 0.5, "longer response wins (%)", "Length bias")
    _forest_axes(axd["self"], self_pref, "difference", 0.0, "own-family minus other-family win rate (pp)",
                 "Self-preference")
    _flips_axes(axd["flip"], flips)
    _loadings_axes(axd["load"], loadings)
    fig.supxlabel("red and *: rejected at the family's FDR (Benjamini–Hochberg); dashed line: no bias",
                  fontsize=FONT - 1, color="#555555")
    suptitle(fig, title, title_note)
    return fig


def _forest_axes(ax, table: pd.DataFrame, value: str, ref: float, xlabel: str, panel: str,
                 scale: float = 100.0) -> None:
    """One audit forest: per judge the estimate with its CI, a reference line, '*' where BH rejects."""
    ok = table[ok_mask(table)] if len(table) and "status" in table else table
    ok = ok[[not math.isnan(num(v)) for v in ok[value]]] if len(ok) else ok
    if not len(ok):
        absent_axes(ax, f"{panel}: absent", first_note(table))
        ax.set_title(panel, fontsize=FONT + 1)
        return
    names = []
    xs = [ref * scale]
    for i, row in enumerate(ok.itertuples()):
        v = scale * num(getattr(row, value))
        lo = scale * num(getattr(row, "ci_low", math.nan))
        hi = scale * num(getattr(row, "ci_high", math.nan))
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
    ax.set_yticks(range(len(names)), names, fontsize=FONT)
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(True, axis="x", color="#eeeeee", zorder=0)
    ax.set_title(panel, fontsize=FONT + 1)


def _flips_axes(ax, flips: pd.DataFrame) -> None:
    """Flip rate (%) per judge x axis; a NaN cell is hatched "absent"."""
    f = flips.copy() if len(flips) else flips
    if not len(f) or not any(not math.isnan(num(v)) for v in f["flip_rate"]):
        absent_axes(ax, "flip rates: absent", "no pair judged in both orders")
        ax.set_title("Order flips", fontsize=FONT + 1)
        return
    judges = sorted(f["judge"].astype(str).unique())
    axes_present = list(dict.fromkeys(f["axis"].astype(str)))
    cols = [a for a in ("overall", *AXES) if a in axes_present] + \
        [a for a in axes_present if a not in ("overall", *AXES)]
    mat = np.full((len(judges), len(cols)), np.nan)
    npairs = {}
    for row in f.itertuples():
        mat[judges.index(str(row.judge)), cols.index(str(row.axis))] = 100 * num(row.flip_rate)
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
                ax.add_patch(absent_rect((b, a), 1, 1))
                ax.text(b + 0.5, a + 0.5, "absent", ha="center", va="center", fontsize=FONT - 1.5,
                        fontstyle="italic")
            else:
                ax.text(b + 0.5, a + 0.5, f"{v:.1f}%", ha="center", va="center", fontsize=FONT - 0.5,
                        color=text_color(cmap(norm(v))))
    label_grid(ax, [f"{j} (n={npairs[j]})" if j in npairs else j for j in judges], cols)
    ax.set_title("Order flips (winner changes when A/B are swapped)", fontsize=FONT + 1)


def _loadings_axes(ax, loadings: pd.DataFrame) -> None:
    """The factor loading matrix (variables x factors), each variable's communality in its label."""
    ld = loadings[[not math.isnan(num(v)) for v in loadings["loading"]]] if len(loadings) else loadings
    if not len(ld):
        absent_axes(ax, "factor loadings: absent", first_note(loadings))
        ax.set_title("Factor loadings", fontsize=FONT + 1)
        return
    variables = list(dict.fromkeys(ld["variable"].astype(str)))
    factors = sorted(ld["factor"].astype(str).unique())
    mat = np.full((len(variables), len(factors)), np.nan)
    comm = {}
    for row in ld.itertuples():
        mat[variables.index(str(row.variable)), factors.index(str(row.factor))] = num(row.loading)
        c = num(getattr(row, "communality", math.nan))
        if not math.isnan(c):
            comm[str(row.variable)] = c
    cmap, norm = matplotlib.colormaps["RdBu_r"], Normalize(-1.0, 1.0)
    ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, aspect="auto",
              extent=(0, len(factors), len(variables), 0))
    for a in range(len(variables)):
        for b in range(len(factors)):
            v = mat[a, b]
            ax.text(b + 0.5, a + 0.5, "–" if math.isnan(v) else f"{v:.2f}", ha="center", va="center",
                    fontsize=FONT, color="black" if math.isnan(v) else text_color(cmap(norm(v))))
    ylabels = [v.removeprefix("z_") + (f"  (h² = {comm[v]:.2f})" if v in comm else "") for v in variables]
    label_grid(ax, ylabels, factors)
    ax.set_title("Factor loadings of the axis z-scores", fontsize=FONT + 1)
