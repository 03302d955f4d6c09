"""Figure 6 (rule figure_strategies): usage of the 15 support strategies per group."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap, Normalize
from matplotlib.figure import Figure

from heart.figures.style import (ABSENT_COLOR, FONT, absent_axes, absent_rect, is_ok, label_grid, new_figure,
                                 num, suptitle, text_color)

#: Figure 6's colour map: light pink (low usage) -> dark teal (high usage), as in the paper's caption.
STRATEGY_CMAP = LinearSegmentedColormap.from_list(
    "heart_pink_teal", ["#f9dce6", "#eef3f2", "#9fd1cb", "#3a9a92", "#0b5450"])
#: Non-model strategy groups, drawn after the model families in this order, with these headers.
SPECIAL_GROUPS = {"dataset": "Dataset\n(original)", "original": "Dataset\n(original)", "human": "Human"}


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
    rate = pd.Series([num(v) if is_ok(s) else math.nan for v, s in zip(u["rate_pct"], u["status"])],
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
        ``strategy_usage.schema.yaml`` (:func:`heart.stats.strategy_stats.usage`).
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
    fig = new_figure(label_w + 0.62 * max(m, 3) + 1.4, 1.6 + 0.3 * max(n, 4) + (0.6 if rotate else 0))
    ax = fig.add_subplot()
    if n == 0 or m == 0:
        absent_axes(ax, "no strategy usage at this level: absent")
        suptitle(fig, title, title_note)
        return fig
    vals = mat.to_numpy(dtype=float)
    vmax = max(10.0, math.ceil(np.nanmax(vals) / 10.0) * 10.0) if np.isfinite(vals).any() else 100.0
    norm = Normalize(0.0, vmax)
    image = ax.imshow(np.ma.masked_invalid(vals), cmap=STRATEGY_CMAP, norm=norm, aspect="auto",
                      interpolation="nearest", extent=(0, m, n, 0))
    for c, g in enumerate(mat.columns):
        if status[g] != "present":
            ax.add_patch(absent_rect((c, 0), 1, n, gid=f"absent|{g}"))
            ax.text(c + 0.5, n / 2, "absent", rotation=90, ha="center", va="center", fontsize=FONT + 1,
                    fontstyle="italic", bbox={"boxstyle": "square,pad=0.2", "facecolor": ABSENT_COLOR,
                                              "edgecolor": "none"})
            continue
        for r in range(n):
            v = vals[r, c]
            if math.isnan(v):
                ax.add_patch(absent_rect((c, r), 1, 1))
                ax.text(c + 0.5, r + 0.5, "–", ha="center", va="center", fontsize=FONT)
                continue
            ax.text(c + 0.5, r + 0.5, f"{v:.0f}", ha="center", va="center", fontsize=FONT - 0.5,
                    color=text_color(STRATEGY_CMAP(norm(v))))
    for k in range(1, m):
        ax.axvline(k, color="white", linewidth=1.0)
    label_grid(ax, row_names, col_names, top=True, rotation=45 if rotate else 0,
               ha="left" if rotate else "center", rotation_mode="anchor")
    cb = fig.colorbar(image, ax=ax, shrink=min(0.9, 4.0 / max(n, 4) + 0.5), pad=0.02, aspect=25)
    cb.set_label("usage (% of completions)", fontsize=FONT)
    cb.ax.tick_params(labelsize=FONT - 1)
    tag = usage["tagger"].dropna().astype(str).unique() if "tagger" in usage else []
    used = tagger if tagger is not None else (sorted(tag)[0] if len(tag) else None)
    sub = f"rows sorted by mean usage over the columns; level: {level}" + \
        (f"; tagger: {used}" if used else "")
    ax.set_xlabel(sub, fontsize=FONT - 1, color="#555555", labelpad=6)
    suptitle(fig, title, title_note)
    return fig
