"""Figure 7 (rule figure_protocol): the evaluation protocol, drawn from the workflow's own rule graph and the
run's counts.

The paper's Figure 7 is a hand-drawn diagram whose caption and text disagree on its numbers (eight human
judges and 18 LLMs in the caption, 15 raters in §4.2, 16 models in Figure 4). Here every number is this
run's, counted from its tables (items, completions, pairs, judgments, tags), and every box lists the
Snakemake rules that made that step (the rules of ``workflow/rules/`` with a log file: those that ran), so
the figure cannot drift from what ran. What is absent (no human judgments, say) is written as absent, never as
zero people.
"""

from __future__ import annotations

import textwrap

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from heart.figures import style

#: the steps of the protocol, top to bottom: (title, the rule files whose rules make it)
STEPS = (("Items", ("data", "items")), ("Completions", ("completions",)), ("Pairs", ("judging",)),
         ("Judgments", ("judging",)), ("Strategy tags", ("tagging",)), ("Ratings and statistics", ("stats",)),
         ("Figures and tables", ("figures", "tables")))
#: the rules that belong to a step of a shared rule file (judging.smk makes the pairs and the judgments)
PAIR_RULES = ("design_pairs", "bundle_pairs", "import_judgments")
#: a run from a bundle (bundle.smk) reads each step's table instead of making it
BUNDLE_RULES = {"bundle_items": "Items", "bundle_pairs": "Pairs", "bundle_verdicts": "Judgments",
                "bundle_checks": "Judgments", "bundle_tags": "Strategy tags"}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def counts(items: pd.DataFrame, systems: pd.DataFrame, pairs: pd.DataFrame, judgments: pd.DataFrame,
           tags: pd.DataFrame | None, n_boot: int) -> dict[str, str]:
    """One line of this run's numbers per step of :data:`STEPS`."""
    sub = items["subset"].value_counts()
    present = systems[systems["status"].eq("present")]
    models = present[present["source"].eq("model")]
    human = present[present["source"].eq("human")]
    dataset = present[present["source"].eq("dataset")]
    writers = (f"{int(human['n_completions'].sum()):,} human completions" if len(human)
               else "human completions absent")
    llm = judgments[judgments["judge_kind"].eq("llm")]
    people = judgments[judgments["judge_kind"].eq("human")]
    raters = (f"{_plural(int(people['judge'].nunique()), 'human rater')}: {len(people):,} ratings of "
              f"{people['pair_id'].nunique():,} pairs" if len(people) else "human ratings absent")
    kinds = ", ".join(f"{n:,} {k}" for k, n in pairs["kind"].value_counts().sort_index().items())
    tagged = ("no strategy tags" if tags is None or tags.empty else
              f"{_plural(int(tags['tagger'].nunique()), 'tagger')}, "
              f"{tags[['item_id', 'system', 'contributor_id']].drop_duplicates().shape[0]:,} completions tagged")
    return {
        "Items": f"{len(items):,} dialogue histories ({int(sub.get('regular', 0)):,} regular, "
                 f"{int(sub.get('adversarial', 0)):,} adversarial)",
        "Completions": f"{_plural(len(models), 'model system')}, {writers}, "
                       f"{'the dataset' if len(dataset) else 'no dataset'} reply: one next turn each",
        "Pairs": f"{len(pairs):,} blinded A/B pairs ({kinds})" if len(pairs) else "no pairs",
        "Judgments": f"{_plural(int(llm['judge'].nunique()), 'LLM judge')}: {len(llm):,} verdicts (HEART rubric, "
                     f"no ties); {raters}",
        "Strategy tags": tagged,
        "Ratings and statistics": f"Bradley–Terry / Elo per axis and subset; conversation-level bootstrap "
                                  f"({n_boot:,} replicates); agreement, bias audits, factors, BH-adjusted tests",
        "Figures and tables": "the paper's figures and tables, the side-by-side table, the report",
    }


def rules_that_ran(rules: dict[str, dict[str, list[str]]], root=".") -> dict[str, list[str]]:
    """Rule file -> the names of its rules that ran for this run's results: those with a log file (``rules``:
    rule file -> rule -> its possible log files). A rule this configuration defines but never needed (a
    download with a local copy given, a model call when the tables came from a bundle) has none."""
    from pathlib import Path

    return {stem: sorted(name for name, logs in named.items() if any((Path(root) / log).is_file() for log in logs))
            for stem, named in rules.items()}


def _rules_of(step: str, files: tuple[str, ...], rules: dict[str, list[str]]) -> list[str]:
    names = [r for f in files for r in rules.get(f, [])]
    if step == "Pairs":
        names = [r for r in names if r in PAIR_RULES]
    elif step == "Judgments":
        names = [r for r in names if r not in PAIR_RULES]
    return names + [r for r in rules.get("bundle", []) if BUNDLE_RULES.get(r) == step]


def protocol_figure(lines: dict[str, str], rules: dict[str, list[str]], title_note: str | None = None) -> Figure:
    """The steps of :data:`STEPS` as boxes joined by arrows, each with this run's numbers (``lines``, from
    :func:`counts`) and the workflow's rules for it (``rules``: rule file stem -> the names of the rules it
    defines in this run's configuration; which of them ran depends on the inputs, e.g. the download rules
    only without a local copy)."""
    fig = style.new_figure(11, 9.2, layout=None)
    ax = fig.add_axes((0, 0, 1, 0.94))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    step_h = 1 / len(STEPS)
    for k, (title, files) in enumerate(STEPS):
        top = 1 - k * step_h - 0.012
        box = FancyBboxPatch((0.04, top - step_h + 0.035), 0.92, step_h - 0.05, boxstyle="round,pad=0.006",
                             facecolor="#eef4fa", edgecolor="#2171b5", linewidth=1.2)
        ax.add_patch(box)
        ax.text(0.06, top - 0.022, title, ha="left", va="top", fontsize=style.FONT + 2, fontweight="bold",
                color="#08306b")
        ax.text(0.06, top - 0.055, "\n".join(textwrap.wrap(lines.get(title, ""), 78)), ha="left", va="top",
                fontsize=style.FONT + 0.5, color="#222222")
        names = _rules_of(title, files, rules)
        if names:
            ax.text(0.625, top - 0.022, "\n".join(textwrap.wrap("rules: " + ", ".join(names), 52)), ha="left",
                    va="top", fontsize=style.FONT - 1.5, color="#555555", family="DejaVu Sans Mono")
        if k:
            ax.add_patch(FancyArrowPatch((0.5, top + 0.027), (0.5, top + 0.002), arrowstyle="-|>",
                                         mutation_scale=14, color="#2171b5"))
    style.suptitle(fig, "Evaluation protocol and ranking pipeline", title_note)
    return fig
