"""Rule figure_judge_board: the judge leaderboard, one row per LLM judge and one for the ensemble.

Seven panels share the rows: agreement with people (majority and per vote, κ written beside), the
first-shown and longer-reply rates, self-preference, the order-flip rate and the QC accuracy against their
targets, how well the judge's own Elo separates the systems, and the cost per 1,000 judgments. A cell
without an estimate is a hatched band with the word "absent" (or why), never a zero bar; a panel with no
estimate at all says why across it.
"""

from __future__ import annotations

import math
import textwrap

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from heart.figures.style import FONT, absent_rect, new_figure, num, suptitle

BLUE, RED, GREY, GREEN = "#1f4e99", "#b2182b", "#777777", "#2f8f5b"
#: the targets of heart.judging.judge_qc (quality checks), drawn as lines
TARGET_QC, TARGET_FLIP = 70.0, 50.0


def board_order(board: pd.DataFrame) -> pd.DataFrame:
    """Judges by agreement with the human majority (then QC accuracy, then name), the ensemble last."""
    b = board.copy()
    b["_agree"] = [-num(v) if not math.isnan(num(v)) else math.inf for v in b["agreement_majority"]]
    b["_qc"] = [-num(v) if not math.isnan(num(v)) else math.inf for v in b["qc_accuracy"]]
    b["_ens"] = b["kind"].eq("ensemble")
    return b.sort_values(["_ens", "_agree", "_qc", "judge"]).drop(columns=["_agree", "_qc", "_ens"])


def _absent_cell(ax, y: float, x0: float, x1: float, word: str = "absent", gid: str = "absent-cell") -> None:
    """One row of a panel without an estimate: a hatched band with ``word`` on it (``gid`` names both)."""
    ax.add_patch(absent_rect((x0, y - 0.38), x1 - x0, 0.76, zorder=0.5, gid=gid))
    ax.text((x0 + x1) / 2, y, word, ha="center", va="center", fontsize=FONT - 1.5, fontstyle="italic",
            color="#333333", zorder=2, gid=gid,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})


def _absent_panel(ax, message: str) -> None:
    """A whole panel without an estimate: hatched, the message across it (the row ticks stay)."""
    ax.add_patch(absent_rect((0, 0), 1, 1, transform=ax.transAxes, edgecolor="#b0b0b0", zorder=0,
                             gid="absent-panel"))
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(message, 24)), transform=ax.transAxes, ha="center", va="center",
            fontsize=FONT, fontweight="bold", color="#444444", gid="absent-message",
            bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "#999999"})
    ax.set_xticks([])


def _frame(ax, n: int, title: str, xlabel: str, xlim: tuple[float, float]) -> None:
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(*xlim)
    ax.set_title(title, fontsize=FONT + 1)
    ax.set_xlabel(xlabel, fontsize=FONT - 0.5)
    ax.tick_params(labelsize=FONT - 0.5, left=False, labelleft=False)
    ax.grid(True, axis="x", color="#eeeeee", zorder=0)


def _ensemble_rule(ax, b: pd.DataFrame) -> None:
    ens = [i for i, k in enumerate(b["kind"]) if k == "ensemble"]
    if ens and ens[0] > 0:
        ax.axhline(ens[0] - 0.5, color="#444444", linewidth=0.9, zorder=1)


def _agreement_axes(ax, b: pd.DataFrame) -> None:
    n = len(b)
    status = [s for s in b["human_status"] if isinstance(s, str)]
    if not any(not math.isnan(num(v)) for v in [*b["agreement_majority"], *b["agreement_per_vote"]]):
        _frame(ax, n, "Agreement with people", "", (0, 100))
        _absent_panel(ax, next((s for s in status if s != "ok"), "absent: no pair to compare"))
        return
    for i, r in enumerate(b.itertuples()):
        a, lo, hi, pv = (100 * num(v) for v in (r.agreement_majority, r.agreement_ci_low, r.agreement_ci_high,
                                                 r.agreement_per_vote))
        if math.isnan(a) and math.isnan(pv):
            _absent_cell(ax, i, 0, 100, "absent" if r.human_status == "ok" else str(r.human_status),
                         gid=f"absent|agreement|{r.judge}")
            continue
        if not math.isnan(a):
            err = None if math.isnan(lo) or math.isnan(hi) else [[a - lo], [hi - a]]
            ax.errorbar([a], [i - 0.12], xerr=err, fmt="o", color=BLUE, markersize=5.5, capsize=3, zorder=3)
        if not math.isnan(pv):
            ax.plot([pv], [i + 0.14], marker="D", linestyle="none", color="#6a3d9a", markersize=4.5, zorder=3)
        k = num(r.kappa)
        ax.text(99, i + 0.32, f"κ {k:.2f}" if not math.isnan(k) else "κ absent", ha="right", va="center",
                fontsize=FONT - 2, color="#333333")
    ax.axvline(50, color=GREY, linestyle="--", linewidth=0.9, zorder=1)
    _frame(ax, n, "Agreement with people", "% (dashed: a coin)", (0, 105))
    _legend(ax, [Line2D([], [], color=BLUE, marker="o", label="with the majority (CI)"),
                 Line2D([], [], color="#6a3d9a", marker="D", linestyle="none", label="per vote")])


def _bias_axes(ax, b: pd.DataFrame) -> None:
    n = len(b)
    marks = (("first_shown_rate", "o", "#d6604d", "first shown wins"), ("longer_rate", "s", "#4393c3", "longer wins"))
    if all(math.isnan(num(v)) for c, *_ in marks for v in b[c]):
        _frame(ax, n, "Position and length", "", (0, 100))
        _absent_panel(ax, "absent: no per-order verdicts and no lengths")
        return
    for i, r in enumerate(b.itertuples()):
        values = [100 * num(getattr(r, c)) for c, *_ in marks]
        if all(math.isnan(v) for v in values):
            _absent_cell(ax, i, 0, 100)
            continue
        for (col, marker, color, _), v, dy in zip(marks, values, (-0.14, 0.14)):
            if math.isnan(v):
                ax.text(50, i + dy, f"{'first shown' if col.startswith('first') else 'longer'}: absent",
                        ha="center", va="center", fontsize=FONT - 2.5, fontstyle="italic", color="#555555")
            else:
                ax.plot([50, v], [i + dy, i + dy], color=color, linewidth=1.2, zorder=2)
                ax.plot([v], [i + dy], marker=marker, color=color, markersize=5, linestyle="none", zorder=3)
    ax.axvline(50, color=GREY, linestyle="--", linewidth=0.9, zorder=1)
    _frame(ax, n, "Position and length", "% of verdicts (dashed: no bias)", (-3, 103))
    _legend(ax, [Line2D([], [], color=c, marker=m, label=lab) for _, m, c, lab in marks])


def _legend(ax, handles) -> None:
    """A legend under the panel's x label."""
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=FONT - 2, frameon=False,
              ncols=2, handlelength=1.2, borderaxespad=0)


def _bar_axes(ax, b: pd.DataFrame, col: str, title: str, xlabel: str, target: float | None = None,
              bad=None, scale: float = 100.0, center: bool = False, fmt: str = "{:.0f}%") -> None:
    n = len(b)
    values = [scale * num(v) for v in b[col]]
    if all(math.isnan(v) for v in values):
        _frame(ax, n, title, "", (0, 1))
        note = next((str(x) for x in b["note"] if isinstance(x, str) and x), "")
        why = next((p.split(": ", 1)[1] for p in note.split("; ") if p.lower().startswith(title.split()[0].lower())),
                   "no estimate")
        _absent_panel(ax, f"absent: {why}")
        return
    if center:
        span = max(10.0, max(abs(v) for v in values if not math.isnan(v)) * 1.4)
        lim = (-span, span)
    else:
        lim = (0.0, 1.12 * scale)  # room for the value written after a full bar
    for i, (v, judge) in enumerate(zip(values, b["judge"])):
        if math.isnan(v):
            _absent_cell(ax, i, *lim, gid=f"absent|{col}|{judge}")
            continue
        color = RED if bad is not None and bad(v) else BLUE
        ax.barh([i], [v], height=0.55, color=color, alpha=0.85, zorder=2, gid=f"bar|{col}|{judge}")
        ax.text(v + (lim[1] - lim[0]) * (0.02 if v >= 0 else -0.02), i, fmt.format(v), va="center",
                ha="left" if v >= 0 else "right", fontsize=FONT - 1.5, zorder=3)
    if target is not None:
        ax.axvline(target, color=GREEN, linestyle="-", linewidth=1.3, zorder=2.5)
    if center:
        ax.axvline(0, color=GREY, linestyle="--", linewidth=0.9, zorder=1)
    _frame(ax, n, title, xlabel, lim)


def _separation_axes(ax, b: pd.DataFrame) -> None:
    n = len(b)
    sep, tau = [num(v) for v in b["separability"]], [num(v) for v in b["rank_tau"]]
    if all(math.isnan(v) for v in sep + tau):
        _frame(ax, n, "Separating systems", "", (0, 1))
        _absent_panel(ax, "absent: fewer than two systems rated")
        return
    lo = min([0.0, *[t - 0.1 for t in tau if not math.isnan(t)]])
    for i, (s, t, k) in enumerate(zip(sep, tau, b["n_systems"])):
        if math.isnan(s) and math.isnan(t):
            _absent_cell(ax, i, lo, 1.08)
            continue
        if not math.isnan(s):
            ax.barh([i], [s], height=0.5, color="#8c6bb1", alpha=0.8, zorder=2)
            pairs = f" of {int(k) * (int(k) - 1) // 2}" if pd.notna(k) else ""
            ax.text(0.03 if s > 0.55 else max(s, 0) + 0.03, i, f"{s:.0%}{pairs}", va="center",
                    fontsize=FONT - 1.5, color="white" if s > 0.55 else "black", zorder=3)
        if not math.isnan(t):
            ax.plot([t], [i + 0.3], marker="D", color="#222222", markersize=4.5, linestyle="none", zorder=3)
            right = t > 0.7  # the label on the side with room
            ax.text(t, i + 0.3, f"τ {t:.2f}  " if right else f"  τ {t:.2f}", ha="right" if right else "left",
                    va="center", fontsize=FONT - 2.5, zorder=3)
    _frame(ax, n, "Separating systems", "bar: separable system pairs; ◆: rank τ", (lo, 1.05))


def _cost_axes(ax, b: pd.DataFrame) -> None:
    n = len(b)
    _frame(ax, n, "Cost per 1,000 judgments", "", (0, 1))
    ax.set_xticks([])
    ax.grid(False)
    for i, r in enumerate(b.itertuples()):
        usd, sec = num(r.usd_per_1000), num(r.seconds_per_1000)
        local = "local model" in str(r.note)  # "(a local model)", "(a local model each)"
        if math.isnan(usd):
            _absent_cell(ax, i - 0.05, 0.02, 0.48, "no price (local)" if local else "no price")
        else:
            ax.text(0.25, i, f"${usd:,.2f}", ha="center", va="center", fontsize=FONT, fontweight="bold")
        if math.isnan(sec):
            _absent_cell(ax, i - 0.05, 0.52, 0.98)
        else:
            ax.text(0.75, i, f"{sec:,.0f} s", ha="center", va="center", fontsize=FONT)
    ax.set_xticks([0.25, 0.75], ["dollars", "model seconds"], fontsize=FONT - 1)
    ax.tick_params(bottom=False)


def judge_board_figure(board: pd.DataFrame, ensembles: pd.DataFrame | None = None,
                       title: str = "Judge leaderboard", title_note: str | None = None) -> Figure:
    """The judge leaderboard as one figure (module docstring).

    Parameters
    ----------
    board : DataFrame
        ``judge_board.schema.yaml`` (:func:`heart.stats.judge_board.judge_board`).
    ensembles : DataFrame, optional
        ``judge_ensembles.schema.yaml``: the recommended subset is named under the figure.
    title, title_note : str
        Figure title and a note appended to it (e.g. "SIMULATED data").

    Returns
    -------
    Figure
        One row per judge, the ensemble last under a rule; panels as the module docstring says. The flip
        rate and QC accuracy panels draw their targets (green lines) and a judge on the wrong side in red.
    """
    b = board_order(board).reset_index(drop=True)
    n = max(len(b), 1)
    fig = new_figure(17.5, 1.9 + 0.52 * n)
    axes = fig.subplots(1, 7, gridspec_kw={"width_ratios": [1.35, 1.25, 1.0, 1.0, 1.0, 1.1, 1.0], "wspace": 0.08})
    if b.empty:
        for ax in axes:
            _frame(ax, 1, "", "", (0, 1))
            _absent_panel(ax, "absent: no LLM judge")
        suptitle(fig, title, title_note)
        return fig
    _agreement_axes(axes[0], b)
    _bias_axes(axes[1], b)
    _bar_axes(axes[2], b, "self_preference", "Self-preference", "own-family picks − others' (points)",
              center=True, fmt="{:+.0f}")
    _bar_axes(axes[3], b, "flip_rate", "Order flips", "% of pairs (target ≤ 50 %)", target=TARGET_FLIP,
              bad=lambda v: v > TARGET_FLIP)
    _bar_axes(axes[4], b, "qc_accuracy", "QC accuracy", "% of checks (target ≥ 70 %)", target=TARGET_QC,
              bad=lambda v: v < TARGET_QC)
    _separation_axes(axes[5], b)
    _cost_axes(axes[6], b)
    labels = [f"{r.judge}" + (f"\n{int(r.n_pairs)} pairs" if pd.notna(r.n_pairs) else "")
              + ("" if r.status == "ok" else " (absent)") for r in b.itertuples()]
    axes[0].set_yticks(range(len(b)), labels)
    axes[0].tick_params(labelleft=True, labelsize=FONT)
    for tick, kind in zip(axes[0].get_yticklabels(), b["kind"]):
        if kind == "ensemble":
            tick.set_fontweight("bold")
    for ax in axes:
        _ensemble_rule(ax, b)
    fig.supxlabel(_footer(b, ensembles), fontsize=FONT - 1, color="#444444")
    suptitle(fig, title, title_note)
    return fig


def _footer(b: pd.DataFrame, ensembles: pd.DataFrame | None) -> str:
    human = next((s for s in b["human_status"] if isinstance(s, str) and s != "ok"), None)
    parts = [f"Human columns {human}." if human else
             "Agreement: the judge's winner vs the human majority (pairs where both have one), and vs every human "
             "vote (ties left out)."]
    if ensembles is not None and len(ensembles):
        pick = ensembles[ensembles["recommended"].astype(bool)]
        if len(pick):
            r = pick.iloc[0]
            parts.append(f"Ensemble chooser: {r['ensemble']} (agreement {num(r['agreement']):.0%} on "
                         f"{int(r['n_pairs'])} pairs, ${num(r['usd_per_1000']):,.2f} per 1,000 judgments: the best "
                         "agreement per dollar within 2 points of the best agreement).")
        else:
            status = next((s for s in ensembles["status"] if s != "ok"), "no priced subset near the best agreement")
            parts.append(f"Ensemble chooser: nothing recommended ({status}).")
    parts.append("These columns measure agreement, biases, consistency and cost, not whether a judge applies "
                 "the HEART rubric as intended.")
    return "\n".join(textwrap.wrap(" ".join(parts), 200))
