"""Rule figure_ablations: the exploratory ablations of HEART §9.12, each ranker's ranking beside the main one
(a rank chart, the systems whose rank moves drawn in colour) and Kendall's τ with its bootstrap interval."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from heart.figures.style import FONT, absent_axes, display_name, new_figure, suptitle
from heart.stats.ablations import MAIN, RANKERS

#: the rankers' names on the figure
SHORT = {MAIN: "Bradley–Terry\n(main)", "davidson_ties": "with ties\n(Davidson)", "thurstone": "probit\n(Thurstone)",
         "win_rate": "win rate", "online_elo": "online Elo", "release_soft": "release's\nsoft scores"}
MOVED = ["#c0392b", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def ablations(table: pd.DataFrame, labels: Mapping | None = None, title_note: str | None = None) -> Figure:
    """Left: every system's rank under each ranker (lines join a system's ranks; grey where it keeps its
    main rank everywhere). Right: each ranker's Kendall τ with the main ranking, point and interval.

    ``table`` is ``results/stats/ablations.parquet`` (:func:`heart.stats.ablations.ablations`)."""
    ok = table[table["status"] == "ok"]
    rankers = [r for r in RANKERS if r in set(ok["ranker"])]
    systems = (ok[ok["ranker"] == MAIN].sort_values(["rank_main", "system"])["system"].tolist() if len(ok) else [])
    n = len(systems)
    fig = new_figure(11.5, 2.3 + 0.32 * max(n, 6))
    title = "Exploratory ablations (HEART §9.12): other rankers on the main ranking's comparisons"
    if not n:
        ax = fig.subplots()
        note = table["note"].dropna().iloc[0] if len(table) and table["note"].notna().any() else "absent"
        absent_axes(ax, "no ranking", note)
        suptitle(fig, title, title_note)
        return fig
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
    rank = ok.pivot(index="system", columns="ranker", values="rank").loc[systems, rankers]
    moved = [s for s in systems if rank.loc[s].nunique() > 1]
    # drawn by place: each ranker's order with equal ranks in the main order (the table keeps shared ranks)
    score = ok.pivot(index="system", columns="ranker", values="score").loc[systems, rankers]
    place = pd.DataFrame({r: pd.Series(range(1, n + 1), index=sorted(
        systems, key=lambda s: (-score.at[s, r], systems.index(s)))) for r in rankers}).loc[systems]
    colour = {s: MOVED[k % len(MOVED)] for k, s in enumerate(moved)}
    xs = np.arange(len(rankers))
    for s in systems:
        c = colour.get(s, "#b5b5b5")
        left.plot(xs, place.loc[s].to_numpy(dtype=float), "-o", color=c, lw=2.0 if s in colour else 1.0,
                  ms=5 if s in colour else 3.5, zorder=3 if s in colour else 2)
    left.set_yticks(range(1, n + 1))
    left.set_yticklabels([f"{rank.at[s, MAIN]}. {display_name(s, labels)}" for s in systems], fontsize=FONT)
    for tick, s in zip(left.get_yticklabels(), systems):
        tick.set_color(colour.get(s, "black"))
    left.set_ylim(n + 0.5, 0.5)
    left.set_xticks(xs)
    left.set_xticklabels([SHORT.get(r, r) for r in rankers], fontsize=FONT - 1)
    left.set_xlim(-0.3, len(rankers) - 0.7)
    left.grid(axis="y", color="#eeeeee", lw=0.6)
    left.set_title("Order by each ranker (labels: main rank, 1 = best; colour: the system's rank moves)",
                   fontsize=FONT)
    taus = ok.drop_duplicates("ranker").set_index("ranker").loc[[r for r in rankers if r != MAIN]]
    ys = np.arange(len(taus))
    lo = (taus["tau"] - taus["tau_lo"]).clip(lower=0).to_numpy(dtype=float)
    hi = (taus["tau_hi"] - taus["tau"]).clip(lower=0).to_numpy(dtype=float)
    has_ci = np.isfinite(lo) & np.isfinite(hi)
    right.errorbar(taus["tau"], ys, xerr=np.where(has_ci, [lo, hi], 0), fmt="o", color="#1f4e99", capsize=3)
    for y, (r, row) in zip(ys, taus.iterrows()):
        right.annotate(f"{row['tau']:.2f}", (row["tau"], y), xytext=(0, 6), textcoords="offset points",
                       ha="center", fontsize=FONT - 1)
    right.set_yticks(ys)
    right.set_yticklabels([SHORT.get(r, r).replace("\n", " ") for r in taus.index], fontsize=FONT - 1)
    right.set_ylim(len(taus) - 0.5, -0.5)
    low = np.nanmin(np.append(taus["tau_lo"].to_numpy(dtype=float), taus["tau"].to_numpy(dtype=float)))
    right.set_xlim(min(0.0, math.floor(low * 10) / 10), 1.05)
    right.axvline(1.0, color="#888888", lw=0.8, ls=":")
    n_tau = int(taus["n_tau"].max()) if len(taus) else 0
    right.set_title("Kendall τ-b with the main ranking" + (f"\n(bootstrap interval, {n_tau} replicates)" if n_tau
                                                            else "\n(no bootstrap)"), fontsize=FONT)
    right.grid(axis="x", color="#eeeeee", lw=0.6)
    suptitle(fig, title, title_note)
    fig.supxlabel(f"EXPLORATORY, not the paper's headline ranking: {len(moved)} of {n} systems change rank under "
                  f"some ranker. Source {ok['source'].iloc[0]!r}, overall verdict, all items; "
                  f"{int(ok['n_comparisons'].iloc[0])} decided comparisons, {int(ok['n_ties'].iloc[0])} ties; "
                  "equal ranks drawn in the main order.", fontsize=FONT - 1, color="#555555")
    return fig
