"""Who is preferred when a human completion meets a model's: preference shares (HEART paper §4.5).
Which side is the human, what counts, and the paper's numbers: ``docs/methods/preferences.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from heart.stats import bootstrap
from heart.stats.agreement.orientation import axis_marks, pair_axis_votes
from heart.judging.pairs import source_of
from heart.common.vocabulary import AXES, SUBSET_SCOPES

SUBSETS = SUBSET_SCOPES
KIND = "human-model"
HUMAN_RATERS = "human raters"
LLM_JUDGES = "llm judges"

#: (source, measure) -> reading, unit, outcomes
MEASURES = {
    (HUMAN_RATERS, "per rating"): ("literal", "rating", ("model", "human", "tie")),
    (HUMAN_RATERS, "per pair, raters' majority"): ("variant", "pair", ("model", "human", "tie")),
    (LLM_JUDGES, "per verdict"): (
        "literal", "verdict", ("model wins all axes", "human wins all axes", "neither wins all axes")),
    (LLM_JUDGES, "overall winner per verdict"): (
        "context", "verdict", ("model", "human", "no verdict")),
    (LLM_JUDGES, "per pair, ensemble majority per axis"): (
        "variant", "pair", ("model wins all axes", "human wins all axes", "neither wins all axes")),
}
COLUMNS = ["source", "measure", "reading", "unit", "outcome", "subset", "n", "count", "share", "ci_low",
           "ci_high", "n_conversations", "n_excluded", "status", "note"]
_ALL_AXES = ("model wins all axes", "human wins all axes", "neither wins all axes")


def human_side(judgments: pd.DataFrame, sources: dict | None = None) -> pd.Series:
    """Per row, the side ("a" / "b") holding the human completion, from the row's own systems.

    Parameters
    ----------
    judgments : pandas.DataFrame
        Rows with ``system_a``, ``contributor_a``, ``system_b``, ``contributor_b``.
    sources : dict, optional
        system -> "model" / "human" / "dataset", overriding :func:`heart.judging.pairs.source_of`.

    Returns
    -------
    pandas.Series of object
        "a" when side a is a human's and side b a model's, "b" for the reverse, None otherwise
        (two models, a human against the dataset's reply, ...). Same index as ``judgments``.
    """
    out = []
    for sa, ca, sb, cb in zip(judgments["system_a"], judgments["contributor_a"], judgments["system_b"],
                              judgments["contributor_b"]):
        pair = (source_of(sa, ca, sources), source_of(sb, cb, sources))
        out.append("a" if pair == ("human", "model") else "b" if pair == ("model", "human") else None)
    return pd.Series(out, index=judgments.index, dtype=object)


def _marks_toward_model(rows: pd.DataFrame, model_sign: np.ndarray) -> np.ndarray:
    """Signed axis marks turned toward the model (positive = the model's side), shape (n, 5); a missing
    mark (or a missing axis column) is NaN."""
    return axis_marks(rows, [f"axis_{k}" for k in AXES]) * model_sign[:, None]


def _all_axes_outcome(toward_model: np.ndarray) -> np.ndarray:
    """"model wins all axes" where every column is > 0, "human wins all axes" where every one is < 0, else
    "neither wins all axes" (NaN compares False: a missing mark is nobody's win)."""
    with np.errstate(invalid="ignore"):
        model = (toward_model > 0).all(axis=1)
        human = (toward_model < 0).all(axis=1)
    return np.where(model, _ALL_AXES[0], np.where(human, _ALL_AXES[1], _ALL_AXES[2])).astype(object)


def _units(judgments: pd.DataFrame, sources: dict | None) -> tuple[dict, dict, dict]:
    """Per (source, measure): its units (``conversation_id``, ``subset``, ``outcome``), the rows left out
    (:func:`_dropped`), and why a whole measure is absent (None where it is not)."""
    rows = judgments[judgments["kind"] == KIND].copy()
    rows["human_side"] = human_side(rows, sources)
    resolved = rows["human_side"].notna()
    units, excluded, why = {}, {}, {}

    # human raters
    has_human = bool((judgments["judge_kind"] == "human").any())
    h_all = rows[rows["judge_kind"] == "human"]
    h = h_all[resolved[h_all.index]]
    winner = h["winner"].where(h["winner"].isin(["a", "b"]), None)
    outcome = np.where(winner.isna(), np.where(h["status"] == "tie", "tie", None),
                       np.where(winner == h["human_side"], "human", "model")).astype(object)
    h = h.assign(outcome=outcome)
    dropped = _dropped(h_all[~resolved[h_all.index]], h[h["outcome"].isna()], "without a choice")
    h = h[h["outcome"].notna()]
    units[(HUMAN_RATERS, "per rating")] = h[["conversation_id", "subset", "outcome"]]
    excluded[(HUMAN_RATERS, "per rating")] = dropped
    vote = np.where(h["outcome"] == "model", 1, np.where(h["outcome"] == "human", -1, 0))
    pairs = (h.assign(vote=vote).groupby("pair_id", sort=True)
             .agg(conversation_id=("conversation_id", "first"), subset=("subset", "first"),
                  vote=("vote", "sum")))
    pairs["outcome"] = np.where(pairs["vote"] > 0, "model", np.where(pairs["vote"] < 0, "human", "tie"))
    units[(HUMAN_RATERS, "per pair, raters' majority")] = pairs[["conversation_id", "subset", "outcome"]]
    excluded[(HUMAN_RATERS, "per pair, raters' majority")] = excluded[(HUMAN_RATERS, "per rating")]
    reason = (None if len(h) else "human judgments are absent" if not has_human
              else "no human judgment of a human-model pair" if h_all.empty
              else "no human judgment of a human-model pair could be used")
    for key in units:
        why[key] = reason

    # LLM judges
    has_llm = bool((judgments["judge_kind"] == "llm").any())
    l_all = rows[rows["judge_kind"] == "llm"]
    lr = l_all[resolved[l_all.index]]
    n_unparsed = int((lr["status"] == "unparsed").sum())
    dropped = _dropped(l_all[~resolved[l_all.index]], lr[lr["status"] == "unparsed"], "unparsed")
    lr = lr[lr["status"] != "unparsed"]
    model_sign = np.where(lr["human_side"] == "a", -1.0, 1.0)  # model on side b: a mark > 0 favours the human
    toward = _marks_toward_model(lr, model_sign)
    winner = lr["winner"].where(lr["winner"].isin(["a", "b"]), None)
    overall = np.where(winner.isna(), "no verdict", np.where(winner == lr["human_side"], "human", "model"))
    base = lr[["pair_id", "conversation_id", "subset"]]
    units[(LLM_JUDGES, "per verdict")] = base.assign(outcome=_all_axes_outcome(toward))
    units[(LLM_JUDGES, "overall winner per verdict")] = base.assign(outcome=overall.astype(object))
    per_pair = pair_axis_votes(toward, lr["pair_id"])
    meta = base.drop_duplicates("pair_id").set_index("pair_id").reindex(per_pair.index)
    units[(LLM_JUDGES, "per pair, ensemble majority per axis")] = meta.assign(
        outcome=_all_axes_outcome(per_pair.to_numpy(float)))
    reason = (None if len(lr) else "LLM judgments are absent" if not has_llm
              else "no LLM judgment of a human-model pair" if l_all.empty
              else f"every LLM verdict on a human-model pair is unparsed ({n_unparsed})" if n_unparsed
              else "no LLM judgment of a human-model pair could be used")
    for key in MEASURES:
        if key[0] == LLM_JUDGES:
            excluded[key] = dropped
            why[key] = reason
    return units, excluded, why


UNRESOLVED = "with sides not one human and one model"


def _dropped(unresolved: pd.DataFrame, other: pd.DataFrame, why: str) -> pd.DataFrame:
    """The rows left out: their ``subset`` and ``reason`` (``why`` for ``other``, else :data:`UNRESOLVED`)."""
    return pd.DataFrame({"subset": [*other["subset"], *unresolved["subset"]],
                         "reason": [why] * len(other) + [UNRESOLVED] * len(unresolved)})


def _left_out(dropped: pd.DataFrame) -> tuple[int, str]:
    """How many rows were left out, and a note: "<k> <reason> left out" per reason, in order of appearance."""
    counts = dropped["reason"].value_counts(sort=False)
    return len(dropped), "; ".join(f"{k} {reason} left out" for reason, k in counts.items())


NOTES = {
    (HUMAN_RATERS, "per rating"): "a unit is one human rating of a human-model pair; tie = 'about the same'",
    (HUMAN_RATERS, "per pair, raters' majority"): (
        "a unit is one pair: the side with more rater votes ('about the same' votes for neither); "
        "equal votes = tie"),
    (LLM_JUDGES, "per verdict"): (
        "a verdict is one (pair, LLM judge), both orders combined; a side wins an axis when the "
        "signed mark favours it; a zero or missing mark is not a win"),
    (LLM_JUDGES, "overall winner per verdict"): (
        "a verdict is one (pair, LLM judge), both orders combined; no verdict = inconsistent "
        "(the orders cancel out)"),
    (LLM_JUDGES, "per pair, ensemble majority per axis"): (
        "a unit is one pair: per axis the side more LLM judges' marks favour (zero or missing: neither; "
        "strengths do not weigh; equal: nobody wins the axis)"),
}


def preference_shares(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                      subsets=SUBSETS, sources: dict | None = None) -> pd.DataFrame:
    """Shares of human-model comparisons won by the model, the human, or neither (``docs/methods/preferences.md``).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (``judgments.schema.yaml``).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
    subsets : sequence of str
        Scopes: "all" (every item) or a value of ``subset``.
    sources : dict, optional
        system -> source, overriding :func:`heart.judging.pairs.source_of` (:func:`human_side`).

    Returns
    -------
    pandas.DataFrame
        ``COLUMNS``, one row per (source, measure, outcome, subset): ``n`` units in the denominator,
        ``count`` with the outcome, ``share`` = count / n with its interval ``ci_low`` / ``ci_high``,
        ``n_conversations`` of those units, ``n_excluded`` rows of the scope left out (unparsed LLM verdicts,
        human rows without a choice, rows whose sides are not one human and one model), ``status`` "ok"
        or "absent" (share NaN, ``note`` says what is missing).
    """
    units, excluded, why = _units(judgments, sources)
    universe = judgments.loc[judgments["kind"] == KIND, "conversation_id"]
    boot = bootstrap.ClusterBootstrap(universe, n_boot, seed)
    rows = []
    for (source, measure), (reading, unit, outcomes) in MEASURES.items():
        u, dropped = units[(source, measure)], excluded[(source, measure)]
        for subset in subsets:
            scope = u if subset == "all" else u[u["subset"] == subset]
            n_excl, left = _left_out(dropped if subset == "all" else dropped[dropped["subset"] == subset])
            base = {"source": source, "measure": measure, "reading": reading, "unit": unit, "subset": subset,
                    "n": len(scope), "n_conversations": int(scope["conversation_id"].nunique()),
                    "n_excluded": n_excl}
            if scope.empty:
                missing = why[(source, measure)] or f"no {unit} of a human-model pair on {subset} items"
                note = "; ".join(p for p in (f"absent: {missing}", left) if p)
                rows += [{**base, "outcome": o, "count": 0, "share": math.nan, "ci_low": math.nan,
                          "ci_high": math.nan, "status": "absent", "note": note}
                         for o in outcomes]
                continue
            hits = np.column_stack([(scope["outcome"] == o).to_numpy(float) for o in outcomes])
            est, reps = boot.rate(scope["conversation_id"].to_numpy(), hits)
            lo, hi = bootstrap.interval(reps, ci)  # NaN without replicates
            note = "; ".join(p for p in (NOTES[(source, measure)], left,
                                         "" if boot.n_boot else "no bootstrap (n_boot 0)") if p)
            rows += [{**base, "outcome": o, "count": int(hits[:, i].sum()), "share": float(est[i]),
                      "ci_low": float(lo[i]), "ci_high": float(hi[i]), "status": "ok", "note": note}
                     for i, o in enumerate(outcomes)]
    out = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("n", "count", "n_conversations", "n_excluded"):
        out[col] = out[col].astype("int64")
    for col in ("share", "ci_low", "ci_high"):
        out[col] = out[col].astype(float)
    return out
