"""Rule figure_elo_forest: Elo with both interval kinds per system, one panel per item subset."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from heart.figures.style import (FONT, absent_rect, display_name, is_ok, leaderboard_order, new_figure, num,
                                 ok_mask, status_word, suptitle)


def elo_forest(ratings: pd.DataFrame, source: str = "combined", axis: str = "overall",
               subsets: Sequence[str] = ("all", "regular", "adversarial"), labels: Mapping | None = None,
               title: str | None = None, title_note: str | None = None) -> Figure:
    """Elo with both interval kinds per system, one panel per item subset, side by side.

    Parameters
    ----------
    ratings : DataFrame
        ``ratings.schema.yaml`` (:func:`heart.stats.leaderboard.leaderboard`).
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
        ok = rs[ok_mask(rs)]
        if len(ok):
            order = leaderboard_order(rs)
            break
    order = order or sorted(systems)
    order += [s for s in systems if s not in order]
    n, k = len(order), len(subsets)
    names = [display_name(s, labels) for s in order]
    label_w = 0.075 * max([len(s) for s in names] + [8])
    fig = new_figure(label_w + 3.0 * k + 0.3, 1.7 + 0.3 * max(n, 3))
    axs = fig.subplots(1, k, sharey=True, squeeze=False)[0]
    colors = {"asym": "#1f4e99", "boot": "#d9661f"}
    for ax, sub in zip(axs, subsets):
        lo_all, hi_all = [], []
        rs = r[r["subset"] == sub].drop_duplicates("system").set_index("system")
        n_ok = 0
        for i, system in enumerate(order):
            row = rs.loc[system] if system in rs.index else None
            if row is None or not is_ok(row["status"]) or math.isnan(num(row["elo"])):
                word = "absent" if row is None else status_word(row["status"])
                ax.text(0.5, i, word, transform=ax.get_yaxis_transform(), ha="center", va="center",
                        fontsize=FONT - 0.5, fontstyle="italic", color="#555555", gid=f"absent|{system}")
                continue
            n_ok += 1
            elo = num(row["elo"])
            for kind, dy, marker in (("asym", -0.17, "o"), ("boot", 0.17, "s")):
                lo, hi = num(row[f"elo_lo_{kind}"]), num(row[f"elo_hi_{kind}"])
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
        ax.set_title(head if n_ok else f"{head}: absent", fontsize=FONT + 1)
        ax.tick_params(labelsize=FONT)
        if not n_ok:
            ax.add_patch(absent_rect((0, 0), 1, 1, transform=ax.transAxes, edgecolor="#c0c0c0", zorder=0,
                                     gid="absent-panel"))
            ax.set_xticks([])
            continue
        # x range per panel: the adversarial subset's wide intervals must not squash the others
        lo, hi = min(lo_all + [1500.0]), max(hi_all + [1500.0])
        pad = 0.06 * max(hi - lo, 50.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.axvline(1500.0, color="#999999", linewidth=0.8, linestyle=":", zorder=1)
        ax.grid(True, axis="x", color="#eeeeee", linewidth=0.8, zorder=0)
        ax.set_xlabel("Elo", fontsize=FONT)
    axs[0].set_ylim(n - 0.5, -0.5)
    axs[0].set_yticks(np.arange(n), names, fontsize=FONT)
    handles = [Line2D([], [], color=colors["asym"], marker="o", markersize=4, linewidth=1.6,
                      label="asymptotic CI"),
               Line2D([], [], color=colors["boot"], marker="s", markersize=4, linewidth=1.0,
                      label="conversation-bootstrap CI"),
               Line2D([], [], color="#999999", linestyle=":", label="1500 (mean rating)")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=FONT, frameon=False)
    suptitle(fig, title or f"Elo by item subset (source: {source}, verdict: {axis})", title_note)
    return fig
