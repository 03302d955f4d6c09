"""Figure 4 (rule figure_leaderboard): the HEART leaderboard heatmap.

The paper's Figure 4: one row per system, columns H, E, A, R, T (per-dimension *percentiles*),
"Overall Win Rate" and "Elo Rating", the cells coloured in six bins (≥70, 65–70, 60–65, 55–60, 50–55,
<50 %; darker is higher). The numbers come from :func:`heart.stats.figure4.headline` (what a percentile
is, and whose judgments each column uses, is said there and in :func:`heart.stats.figure4.describe`,
which the figure prints as its footnote).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from heart.figures.style import (ABSENT_COLOR, ABSENT_HATCH, BIN_COLORS, BIN_LABELS, FONT, PCT_DECIMALS,
                                 absent_rect, bin_color, display_name, is_ok, label_grid, leaderboard_order,
                                 new_figure, num, status_word, suptitle, text_color)

#: The Elo column is not binned (Elo is not a percentage): every Elo cell has this neutral shade.
ELO_COLOR = "#ececec"
#: Appended to the label of a derived row (best-human) and explained in the legend.
DERIVED_MARK = " \u2020"
DERIVED_LEGEND = "\u2020 best of the human completions per\ncontext, chosen after judging (flattered)"
#: Figure 4's columns: (leaderboard column, header), as the paper's.
HEATMAP_COLUMNS = (("H_pct", "H"), ("E_pct", "E"), ("A_pct", "A"), ("R_pct", "R"), ("T_pct", "T"),
                   ("win_pct", "Overall\nwin rate"), ("elo", "Elo\nrating"))
#: Title and legend title per ``columns`` (what H-T hold: :func:`heart.stats.figure4.headline`).
TITLES = {"percentile": "HEART leaderboard with per-dimension percentiles",
          "win_rate": "HEART leaderboard with per-dimension win rates"}
LEGEND_TITLES = {"percentile": "H–T: percentile; overall: win rate (%)", "win_rate": "Win rate (%)"}
#: Characters per line of the footnote (it is wrapped to the figure's width).
_FOOT_CHARS_PER_INCH = 17


def leaderboard_heatmap(leaderboard: pd.DataFrame, labels: Mapping | None = None, columns: str = "percentile",
                        footnote: str | None = None, title: str | None = None,
                        title_note: str | None = None) -> Figure:
    """Figure 4: per-axis percentiles (or win rates) and the overall win rate in the paper's colour bins, and Elo.

    Parameters
    ----------
    leaderboard : DataFrame
        :func:`heart.stats.figure4.headline` (``leaderboard.schema.yaml``): ``system``, ``status``,
        ``elo``, ``win_pct`` and ``H_pct`` ... ``T_pct``; optional ``derived``.
    labels : mapping, optional
        system -> display name (config ``figures.fig4.display_names``); unmapped systems are shown
        by their name.
    columns : {"percentile", "win_rate"}
        What ``H_pct`` ... ``T_pct`` hold (the ``columns`` given to ``headline``): sets the default
        title and the legend's title.
    footnote : str, optional
        Printed under the heatmap, wrapped (e.g. :func:`heart.stats.figure4.describe`: what each
        column is and whose judgments it uses).
    title, title_note : str
        Figure title (default :data:`TITLES` of ``columns``) and a note appended to it (e.g.
        "SIMULATED data").

    Returns
    -------
    Figure
        Rows: systems by Elo (highest on top); rows without an estimate (status "absent",
        "not_estimable") at the bottom, hatched grey and labelled with their status, never zeros.
        A derived row (``derived`` true: ``best-human``, the top human completion per context,
        chosen after judging) is labelled with a dagger (:data:`DERIVED_MARK`) and the legend
        says that it is chosen after judging and so flattered.
        Columns H, E, A, R, T, overall win rate: coloured by
        :func:`~heart.figures.style.bin_color` (``BIN_EDGES``, ``BIN_COLORS``); a missing value in
        an estimated row is a hatched "absent" cell. The Elo column is not binned: every Elo cell
        has the neutral :data:`ELO_COLOR` (Elo is not a percentage and its rank is already the row
        order). A white gap separates the five axes from the two overall columns. Each cell
        rectangle has ``gid = "cell|<system>|<column>"``; an absent row is one rectangle
        ``"absent|<system>"``; the footnote is the axes' x label (``gid`` "footnote").
    """
    if columns not in TITLES:
        raise ValueError(f"columns must be one of {', '.join(TITLES)}, not {columns!r}")
    order = leaderboard_order(leaderboard)
    rows = (leaderboard.assign(system=leaderboard["system"].astype(str))
            .drop_duplicates("system").set_index("system"))
    n, m = len(order), len(HEATMAP_COLUMNS)
    derived = (rows["derived"].astype("boolean").fillna(False).astype(bool) if "derived" in rows
               else pd.Series(False, index=rows.index))
    names = [display_name(s, labels) + (DERIVED_MARK if derived[s] else "") for s in order]
    label_w = 0.075 * max([len(s) for s in names] + [8])
    width = max(label_w + 0.82 * m + 0.4, 6.2)
    fig = new_figure(width, 1.9 + 0.29 * max(n, 3) + (0.5 if footnote else 0))
    ax = fig.add_subplot()
    for r, system in enumerate(order):
        row = rows.loc[system]
        if not (is_ok(row["status"]) and not math.isnan(num(row["elo"]))):
            ax.add_patch(absent_rect((0, r), m, 1, gid=f"absent|{system}", zorder=4))  # over the gap
            ax.text(m / 2, r + 0.5, status_word(row["status"]), ha="center", va="center", fontsize=FONT,
                    fontstyle="italic", bbox={"boxstyle": "square,pad=0.15", "facecolor": ABSENT_COLOR,
                                              "edgecolor": "none"}, gid=f"absent-text|{system}", zorder=5)
            continue
        for c, (col, _) in enumerate(HEATMAP_COLUMNS):
            v = num(row.get(col))
            gid = f"cell|{system}|{col}"
            if math.isnan(v):
                ax.add_patch(absent_rect((c, r), 1, 1, edgecolor="white", linewidth=1.2, gid=gid))
                ax.text(c + 0.5, r + 0.5, "absent", ha="center", va="center", fontsize=FONT - 1.5,
                        fontstyle="italic")
                continue
            face = ELO_COLOR if col == "elo" else bin_color(v)
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=face, edgecolor="white", linewidth=1.2, gid=gid))
            ax.text(c + 0.5, r + 0.5, f"{v:.1f}" if col == "elo" else f"{v:.{PCT_DECIMALS}f}",
                    ha="center", va="center", fontsize=FONT, color=text_color(face),
                    fontweight="bold" if col == "elo" else None)
    # the five axes | the two overall columns
    ax.axvline(5, color="white", linewidth=4, zorder=3, gid="column-gap")
    label_grid(ax, names, [h for _, h in HEATMAP_COLUMNS], top=True)
    for tick, name in zip(ax.get_yticklabels(), names):
        if name.endswith(DERIVED_MARK):
            tick.set_fontstyle("italic")
    handles = [Patch(facecolor=c, edgecolor="#888888", linewidth=0.5, label=lab)
               for c, lab in zip(BIN_COLORS, BIN_LABELS)]
    handles.append(Patch(facecolor=ELO_COLOR, edgecolor="#888888", linewidth=0.5, label="Elo (not binned)"))
    handles.append(Patch(facecolor=ABSENT_COLOR, hatch=ABSENT_HATCH, edgecolor="#a8a8a8", linewidth=0.5,
                         label="absent"))
    if derived.any():
        handles.append(Patch(facecolor="none", edgecolor="none", label=DERIVED_LEGEND))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=FONT - 0.5, frameon=False,
               title=LEGEND_TITLES[columns], title_fontsize=FONT - 0.5)
    if footnote:
        ax.xaxis.set_label_position("bottom")
        # wrapped to the heatmap's width (it starts at the heatmap's left edge)
        ax.set_xlabel("\n".join(textwrap.wrap(footnote, int(_FOOT_CHARS_PER_INCH * (0.82 * m + 0.8)))),
                      fontsize=FONT - 1.5, color="#333333", loc="left", labelpad=6, gid="footnote")
        ax.xaxis.label.set_horizontalalignment("left")
    suptitle(fig, title or TITLES[columns], title_note)
    return fig
