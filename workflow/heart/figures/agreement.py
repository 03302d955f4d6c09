"""Rule figure_agreement: human-LLM agreement per judge with reference lines, and the cross-judge matrix."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from heart.figures.style import (FONT, absent_axes, absent_rect, first_note, label_grid, new_figure, num,
                                 ok_mask, suptitle, text_color)


def _judge_sort(judges) -> list[str]:
    return sorted(judges, key=lambda j: (j != "llm-ensemble", j != "mean-of-judges", str(j)))


def agreement_panel(human_llm: pd.DataFrame, cross_judge: pd.DataFrame, trivial: pd.DataFrame,
                    title: str = "Judge agreement", title_note: str | None = None, ci: float = 0.95) -> Figure:
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
    h_all = h[(h["scope"] == "all") & ok_mask(h)] if len(h) else h
    judges = _judge_sort(h_all["judge"].astype(str).unique()) if len(h_all) else []
    pw = cross_judge[(cross_judge["scope"] == "pairwise") & ok_mask(cross_judge)] \
        if len(cross_judge) else cross_judge
    mjudges = sorted(set(pw["judge_1"].astype(str)) | set(pw["judge_2"].astype(str))) if len(pw) else []
    rows = max(len(judges), len(mjudges), 3)
    fig = new_figure(11.0, 2.3 + 0.42 * rows)
    ax, mx = fig.subplots(1, 2, width_ratios=[1.25, 1.0])
    if not judges:
        note = first_note(h) or "no pair has both a human majority and an LLM verdict"
        absent_axes(ax, "human judgments absent", note)
        ax.set_title("Agreement with the human majority", fontsize=FONT + 1)
    else:
        _human_llm_axes(fig, ax, h, h_all, judges, trivial, ci)
    if not mjudges:
        absent_axes(mx, "cross-judge agreement absent",
                    first_note(cross_judge) or "fewer than two LLM judges")
        mx.set_title("Cross-judge agreement", fontsize=FONT + 1)
    else:
        _cross_judge_axes(mx, pw, cross_judge, mjudges)
    suptitle(fig, title, title_note)
    return fig


def _human_llm_axes(fig: Figure, ax, h: pd.DataFrame, h_all: pd.DataFrame, judges: list[str],
                    trivial: pd.DataFrame, ci: float) -> None:
    """Left panel: each judge's agreement with the human majority, trivial judges and the human ceiling."""
    xs = []
    for i, j in enumerate(judges):
        row = h_all[h_all["judge"] == j].iloc[0]
        a, lo, hi = 100 * num(row["agreement"]), 100 * num(row["ci_low"]), 100 * num(row["ci_high"])
        err = None if math.isnan(lo) or math.isnan(hi) else [[a - lo], [hi - a]]
        ax.errorbar([a], [i], xerr=err, fmt="o", color="#1f4e99", markersize=6, capsize=3, elinewidth=1.5,
                    zorder=3)
        xs += [a, lo, hi]
        for scope, dy, marker in (("clear", -0.22, "^"), ("ambiguous", 0.22, "v")):
            s = h[(h["scope"] == scope) & (h["judge"] == j) & ok_mask(h)]
            if len(s):
                v = 100 * num(s.iloc[0]["agreement"])
                ax.plot([v], [i + dy], marker=marker, linestyle="none", markersize=5,
                        markerfacecolor="white", markeredgecolor="#1f4e99", zorder=3)
                xs.append(v)
    handles = [Line2D([], [], color="#1f4e99", marker="o", label=f"all pairs ({100 * ci:g}% CI)"),
               Line2D([], [], linestyle="none", marker="^", markerfacecolor="white",
                      markeredgecolor="#1f4e99", label="clear human majority"),
               Line2D([], [], linestyle="none", marker="v", markerfacecolor="white",
                      markeredgecolor="#1f4e99", label="ambiguous")]
    has = len(trivial) and {"reference", "judge", "judge_type", "agreement"} <= set(trivial.columns)
    t = trivial[(trivial["reference"] == "human-majority") & ok_mask(trivial)] if has \
        else pd.DataFrame(columns=["judge", "judge_type", "agreement", "ci_low", "ci_high"])
    styles = [("#7f7f7f", "--"), ("#b07d2b", "-."), ("#6a3d9a", (0, (1, 1.5))), ("#2f8f5b", (0, (5, 2)))]
    for k, row in enumerate(t[t["judge_type"] == "trivial"].itertuples()):
        color, ls = styles[k % len(styles)]
        v = 100 * num(row.agreement)
        ax.axvline(v, color=color, linestyle=ls, linewidth=1.2, zorder=1, gid=f"trivial|{row.judge}")
        handles.append(Line2D([], [], color=color, linestyle=ls, label=f"{row.judge} ({v:.0f}%)"))
        xs.append(v)
    for row in t[t["judge_type"] == "human"].itertuples():
        v = 100 * num(row.agreement)
        lo, hi = 100 * num(getattr(row, "ci_low", None)), 100 * num(getattr(row, "ci_high", None))
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
    ax.set_yticks(range(len(judges)), judges, fontsize=FONT)
    ax.set_xlabel("agreement with the human majority (%)", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(True, axis="x", color="#eeeeee", zorder=0)
    ax.set_title("Agreement with the human majority", fontsize=FONT + 1)
    # just under the x label: a fixed distance (inches) converted to an axes fraction
    axes_h = max(fig.get_size_inches()[1] - 1.5, 1.0)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.37 / axes_h), ncols=2,
              fontsize=FONT - 1, frameon=False)


def _cross_judge_axes(mx, pw: pd.DataFrame, cross_judge: pd.DataFrame, mjudges: list[str]) -> None:
    """Right panel: the judge x judge agreement matrix; the mean-pairwise and all-agree rates below it."""
    k = len(mjudges)
    mat = np.full((k, k), np.nan)
    kap = np.full((k, k), np.nan)
    for row in pw.itertuples():
        a, b = mjudges.index(str(row.judge_1)), mjudges.index(str(row.judge_2))
        mat[a, b] = mat[b, a] = 100 * num(row.agreement)
        kap[a, b] = kap[b, a] = num(row.kappa)
    norm = Normalize(50.0, 100.0)
    cmap = matplotlib.colormaps["PuBu"]
    mx.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, extent=(0, k, k, 0), aspect="auto")
    for a in range(k):
        for b in range(k):
            if a == b:
                mx.add_patch(Rectangle((b, a), 1, 1, facecolor="#f3f3f3", edgecolor="white"))
                mx.text(b + 0.5, a + 0.5, "—", ha="center", va="center", fontsize=FONT, color="#888888")
            elif math.isnan(mat[a, b]):
                mx.add_patch(absent_rect((b, a), 1, 1))
                mx.text(b + 0.5, a + 0.5, "no pairs", ha="center", va="center", fontsize=FONT - 1,
                        fontstyle="italic")
            else:
                show_kappa = k <= 5 and not math.isnan(kap[a, b])  # more judges: no room
                txt = f"{mat[a, b]:.1f}%" + (f"\nκ = {kap[a, b]:.2f}" if show_kappa else "")
                mx.text(b + 0.5, a + 0.5, txt, ha="center", va="center",
                        fontsize=FONT - (1 if k > 4 else 0), color=text_color(cmap(norm(mat[a, b]))))
    label_grid(mx, mjudges, mjudges, rotation=30 if k > 2 else 0, ha="right" if k > 2 else "center",
               rotation_mode="anchor")
    extra = []
    for scope, name in (("mean-pairwise", "mean pairwise"), ("all", "all judges agree")):
        s = cross_judge[(cross_judge["scope"] == scope) & ok_mask(cross_judge)]
        if len(s):
            v, lo, hi = (100 * num(s.iloc[0][c]) for c in ("agreement", "ci_low", "ci_high"))
            extra.append(f"{name} {v:.1f}%" + ("" if math.isnan(lo) else f" [{lo:.1f}, {hi:.1f}]"))
    mx.set_title("Cross-judge agreement (% of pairs" + (", Cohen's κ)" if k <= 5 else ")"),
                 fontsize=FONT + 1)
    if extra:
        mx.set_xlabel("\n".join(extra), fontsize=FONT, labelpad=6)
    mx.set_aspect("equal" if k <= 6 else "auto")
