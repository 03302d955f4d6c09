"""Figure 1 (rule figure_rubric): the five HEART axes and their criteria, drawn from the rubric file.

The paper's Figure 1 is a "Venn-style overview of the five evaluation axes ... with representative
sub-criteria": five overlapping circles around the benchmark's name, each axis's criteria beside its
circle. Everything written comes from ``workflow/resources/rubric/<judging.rubric>.yaml`` (names and
``criteria``), so the figure follows the rubric the judges were given.
"""

from __future__ import annotations

import math
import textwrap

from matplotlib.patches import Circle
from matplotlib.figure import Figure

from heart.figures import style

#: one colour per axis, in the rubric's order (colour-blind safe: Okabe-Ito)
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00")
#: the same hues darkened for the axis names written on them
TEXT_COLORS = ("#005a8c", "#9a6a00", "#00704f", "#a0527f", "#a84200")


def rubric_figure(rubric: dict, title_note: str | None = None) -> Figure:
    """Five translucent circles on a ring (one per axis, labelled key and name) overlapping at the centre,
    and each axis's criteria as a list outside its circle. An axis without ``criteria`` shows its
    description instead."""
    axes = rubric["axes"]
    fig = style.new_figure(10.5, 8.6, layout=None)
    ax = fig.add_axes((0, 0, 1, 0.93))
    ax.set_xlim(-3.6, 3.6)
    ax.set_ylim(-3.2, 3.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ring, radius = 0.95, 1.15
    for k, axis in enumerate(axes):
        angle = math.pi / 2 - 2 * math.pi * k / len(axes)
        x, y = ring * math.cos(angle), ring * math.sin(angle)
        color = COLORS[k % len(COLORS)]
        ax.add_patch(Circle((x, y), radius, facecolor=color, edgecolor=color, alpha=0.22, linewidth=2))
        lx, ly = (ring + 0.55) * math.cos(angle), (ring + 0.55) * math.sin(angle)
        ax.text(lx, ly, f"{axis['key']}\n{axis['name']}", ha="center", va="center", fontsize=style.FONT + 2,
                fontweight="bold", color=TEXT_COLORS[k % len(TEXT_COLORS)])
        items = axis.get("criteria") or [axis["description"]]
        text = "\n".join("• " + "\n  ".join(textwrap.wrap(c, 34)) for c in items)
        tx, ty = (ring + 1.95) * math.cos(angle), (ring + 1.75) * math.sin(angle)
        ha = "center" if abs(math.cos(angle)) < 0.3 else ("left" if math.cos(angle) > 0 else "right")
        tx += {"left": -0.35, "right": 0.35, "center": 0.0}[ha]
        ax.text(tx, ty, text, ha=ha, va="center", multialignment="left", fontsize=style.FONT, color="#222222",
                linespacing=1.25)
    ax.text(0, 0, "HEART", ha="center", va="center", fontsize=style.FONT + 8, fontweight="bold", color="#222222")
    style.suptitle(fig, "HEART dimensions and rubric", title_note)
    version = rubric.get("version")
    fig.text(0.5, 0.01, "The five axes the judges mark, with their criteria (workflow/resources/rubric"
             + (f", version {version}" if version is not None else "") + ")", ha="center", va="bottom",
             fontsize=style.FONT - 1, color="#555555")
    return fig
