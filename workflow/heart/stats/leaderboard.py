"""The HEART leaderboard in every scope the paper reports (§4.1, §4.5, §9.8): one Bradley–Terry/Elo fit
(:mod:`heart.stats.bradley_terry`) per (axis, subset, source), every system listed in every scope, absent or
not estimable where the data say so, and Best Human (:mod:`heart.stats.best_human`) beside or in place of the
pooled human row. Scopes, statuses and Best Human: ``docs/methods/leaderboard.md``; Figure 4's table from
these ratings: :mod:`heart.stats.figure4`.
"""

from __future__ import annotations

import math

import pandas as pd
import numpy as np

from heart.common.vocabulary import AXES, SUBSET_SCOPES
from heart.judging import pairs
from heart.stats import bradley_terry as bt
from heart.stats.best_human import (BEST_HUMAN, BEST_HUMAN_MODES, DERIVED, HUMAN, IN_FIT, best_human,
                                    best_human_comparisons, best_human_row, choice_note)

SUBSETS = SUBSET_SCOPES
COLUMNS = ["axis", "subset", "source", "status", "note", "derived", *bt.RATING_COLUMNS]
SEPARABILITY_COLUMNS = ["axis", "subset", "source", "status", "n_systems", "n_comparisons", "n_conversations",
                        "separability_asym", "separability_boot"]


def sources(judgments: pd.DataFrame) -> list[str]:
    """The judgment sources of the leaderboard: combined, llm, human, then one per LLM judge."""
    judges = sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique())
    return ["combined", "llm", "human", *(f"judge:{j}" for j in judges)]


def select(judgments: pd.DataFrame, subset: str, source: str) -> pd.DataFrame:
    """The judgments of one (subset, source)."""
    rows = judgments if subset == "all" else judgments[judgments["subset"] == subset]
    if source in ("llm", "human"):
        return rows[rows["judge_kind"] == source]
    if source.startswith("judge:"):
        return rows[(rows["judge_kind"] == "llm") & (rows["judge"] == source.removeprefix("judge:"))]
    return rows


def _absent(systems, scope: dict, status: str, note: str) -> list[dict]:
    return [{**scope, "status": status, "note": note, "system": s} for s in systems]


def judged(judgments: pd.DataFrame, axis: str = "overall") -> pd.DataFrame:
    """A scope's comparisons (:func:`heart.stats.bradley_terry.comparisons`), their contexts and human completions.

    Returns
    -------
    DataFrame
        ``bradley_terry.COMPARISON_COLUMNS`` plus ``item_id`` and ``winner_contributor`` /
        ``loser_contributor`` (the contributor id of a human completion, "" where it is missing;
        meaningless for other systems).
    """
    if not judgments.index.is_unique:  # the comparisons keep the row labels: they must name one row
        judgments = judgments.reset_index(drop=True)
    comp = bt.comparisons(judgments, axis=None if axis == "overall" else axis)
    at = judgments.index.get_indexer(comp.index)

    def column(name: str) -> np.ndarray:  # a column of the kept rows; all None where the table lacks it
        if name not in judgments.columns:
            return np.full(len(comp), None, dtype=object)
        return judgments[name].to_numpy(dtype=object)[at]

    a_won = comp["winner"].to_numpy(dtype=object) == column("system_a")
    ca, cb = pairs.key_text(column("contributor_a")), pairs.key_text(column("contributor_b"))
    return comp.assign(item_id=column("item_id"), winner_contributor=np.where(a_won, ca, cb),
                       loser_contributor=np.where(a_won, cb, ca))


def scope_ratings(judgments: pd.DataFrame, systems: list[str], axis: str, subset: str, source: str,
                  n_boot: int, seed: int, alpha: float, ci: float,
                  best: str = DERIVED) -> tuple[list[dict], dict]:
    """Rows of one scope and its separability row: every system listed, ``best-human`` next to "human"
    (``best`` "derived") or in its place, a system of the one fit (``best`` "in_fit";
    ``docs/methods/leaderboard.md``). ``judgments`` are the scope's (:func:`select`)."""
    scope = {"axis": axis, "subset": subset, "source": source}
    in_fit = best == IN_FIT and HUMAN in systems
    listed = ([BEST_HUMAN if s == HUMAN else s for s in systems] if in_fit
              else [*systems, BEST_HUMAN] if HUMAN in systems else list(systems))
    full = judged(judgments, axis)
    comp, in_fit_note = full[bt.COMPARISON_COLUMNS], None
    if in_fit and (full["winner"].eq(HUMAN).any() or full["loser"].eq(HUMAN).any()):
        choice = best_human(full)
        comp = best_human_comparisons(full, choice)
        in_fit_note = choice_note(choice) + ("a system of this scope's one fit in place of the pooled human, the "
                                              "paper's Figure 4 (stats.best_human: in_fit)")
    sep = {**scope, "n_systems": 0, "n_comparisons": len(comp),
           "n_conversations": int(comp["conversation_id"].nunique()),
           "separability_asym": math.nan, "separability_boot": math.nan}
    if comp.empty:
        why = ("no human judgments" if source == "human" else "no judgments") + \
            (f" on axis {axis} (no clear advantage marked)" if axis != "overall" else "") + \
            (f" on {subset} items" if subset != "all" else "")
        return _absent(listed, scope, "absent", why), {**sep, "status": "absent"}
    rated = sorted(set(comp["winner"].unique()) | set(comp["loser"].unique()))
    missing = [s for s in (listed if in_fit else systems) if s not in rated]
    try:
        table = bt.ratings(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
    except ValueError as err:
        return _absent(listed, scope, "not_estimable", str(err)), {**sep, "status": "not_estimable"}
    rows = [{**scope, "status": "ok", "note": in_fit_note if r["system"] == BEST_HUMAN else None, **r}
            for r in table.to_dict("records")]
    rows += _absent(missing, scope, "absent", "no comparisons involving this system in this scope")
    if HUMAN in systems and not in_fit:
        at = next(k for k, r in enumerate(rows) if r["system"] == HUMAN) + 1
        best = ({**scope, **best_human_row(full, table, n_boot, seed, alpha, ci), "system": BEST_HUMAN}
                if HUMAN in rated else {**rows[at - 1], "system": BEST_HUMAN})
        rows.insert(at, best)
    summary = bt.summary(table)
    return rows, {**sep, "status": "ok", "n_systems": len(rated),
                  "separability_asym": summary["separability_asym"],
                  "separability_boot": summary["separability_boot"]}


def leaderboard(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, alpha: float = bt.DEFAULT_ALPHA,
                ci: float = 0.95, axes=("overall", *AXES), subsets=SUBSETS,
                best_human: str = DERIVED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings and separability in every (axis, subset, source) scope.

    Returns
    -------
    (DataFrame, DataFrame)
        ``COLUMNS`` (one row per scope x system, plus the derived ``best-human``
        after "human" where humans appear, or in its place with ``best_human="in_fit"``; ``derived``
        marks it) and ``SEPARABILITY_COLUMNS`` (one row per scope, of the main fits).
    """
    if best_human not in BEST_HUMAN_MODES:
        raise ValueError(f"best_human must be one of {', '.join(BEST_HUMAN_MODES)}, not {best_human!r}")
    judgments = judgments.reset_index(drop=True)  # unique row labels, once (judged() joins on them)
    systems = sorted(set(judgments["system_a"]) | set(judgments["system_b"]))
    scopes = {(subset, source): select(judgments, subset, source)  # each axis fits the same rows of a scope
              for subset in subsets for source in sources(judgments)}
    rows, seps = [], []
    for axis in axes:
        for (subset, source), selected in scopes.items():
            r, s = scope_ratings(selected, systems, axis, subset, source, n_boot, seed, alpha, ci, best_human)
            rows += r
            seps.append(s)
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    table["derived"] = table["system"].eq(BEST_HUMAN)
    for col in ("n_comparisons", "wins", "rank_asym", "rank_boot"):
        table[col] = table[col].astype("Int64")
    return table, pd.DataFrame(seps).reindex(columns=SEPARABILITY_COLUMNS)
