"""Agreement of the judges: majorities, human–LLM, cross-judge, inter-human (paper §4.2-4.4, §4.9, §9.9).

Input is ``results/judging/judgments.parquet`` (:func:`heart.judging.judgments`): one row per
(pair, LLM judge) with the two presentation orders combined, and one row per (pair, human rater).
Every table returned here is tidy and carries ``status`` and ``note`` columns; when the data a
statistic needs are absent (no human judgments, a single LLM judge, family exclusion, no axis
marks, ...) the row says so with ``status`` "absent" / "no_pairs" / "unavailable" and a NaN value,
never a zero.

Orientation (:func:`orient`)
    A pair has two sides, ``system_a`` / ``contributor_a`` and ``system_b`` / ``contributor_b``;
    ``winner`` "a", a positive ``preference`` and a positive axis mark (``axis_H`` ... ``axis_T``)
    favour side a. Every public function here first orients the rows of each pair to one canonical
    order (that of the pair's first row, or of a pairs table): a row giving the sides the other way
    round has its sides swapped back, its winner flipped a <-> b and its preference and axis marks
    negated; a row whose sides are neither order is an error naming the pair and the row.

Votes and majorities (:func:`majority`)
    A judgment with a winner ("a"/"b") is a vote for that side. A human "about the same"
    (status "tie") and an LLM "inconsistent" verdict (the two orders cancel out) are votes for
    neither side: they count in the denominator of the majority share but for no side. An
    "unparsed" LLM verdict is no vote at all. The majority winner is the side with more votes;
    equal votes (or no votes) give no winner (``None``). The majority *share* is the winner's
    votes over all votes (both sides and "neither").

Consensus (config ``stats.consensus``, :func:`consensus_fraction`)
    A majority is *clear* when it has a winner and winner votes / all votes >= ``consensus``,
    compared exactly in integers (winner votes * q >= p * all votes for consensus p/q), so that a
    share of exactly 2/3 (2 of 3, 4 of 6) reaches a consensus of 2/3. ``consensus`` is a
    :class:`fractions.Fraction`, a "p/q" string (exact: "2/3"), or a number; a number (or a
    decimal string) is read as the nearest fraction with a denominator of at most 100
    (``Fraction(x).limit_denominator(100)``: 0.6667 -> 2/3, 0.75 -> 3/4, 0.7 -> 7/10; 0.501 -> 1/2,
    so write "501/1000" for that). The default is 2/3: with 3 raters 2-1 is clear; with 5 raters
    4-1 is clear and 3-2 or 3-1-1 is not (3/5 < 2/3).

Ambiguous pairs (§4.4, :func:`ambiguity`)
    The paper: "cases where our 5 human annotators did not have a clear consensus and per-category
    rankings by the LLM evaluators were mixed with no clear winner" (agreement there 61.3 %). Both
    conditions, our reading:

    * no clear human consensus: the human majority has no winner or its share is below
      ``consensus``;
    * LLM per-axis rankings mixed with no clear winner: on every HEART axis (H, E, A, R, T) the LLM
      judges' signed marks of the pair are reduced to an *axis majority* (each judge's mark is a
      vote for a, for b or, unmarked / 0, for neither; the side with more votes; equal votes: no
      winner); the rankings are *mixed* unless at least one axis has a majority winner and every
      axis that has one names the same side (axes favouring a and axes favouring b, or no axis
      with a winner at all, are mixed). Unparsed LLM verdicts carry no marks; a pair on which no
      LLM judgment carries a mark has unknown axes (``axes_mixed`` NA) and is left out of the
      ambiguous subset (counted in the note).

    Scope "ambiguous" is the paper's subset (both conditions). Without any LLM axis mark in the
    table it cannot be formed: its rows are "absent" and say so, and nothing falls back silently.
    Scope "ambiguous-human-only" is the first condition alone (the definition used before), and
    scope "clear" its complement (a clear human consensus). Agreement is computed only where the
    human majority has a winner, so tied pairs of these scopes are counted in ``n_no_reference``.

Agreement with the human majority (§4.4, §4.9, §9.9; :func:`human_llm_agreement`)
    The share of pairs on which a judge names the same winner as the human majority, over the
    pairs where both have a winner. Three kinds of rows, per scope:

    * "llm-ensemble": the LLM-ensemble majority against the human majority, the paper's §9.9
      definition ("the fraction of response pairs where the LLM-ensemble majority matches the human
      majority");
    * "mean-of-judges": the unweighted mean over the LLM judges of each judge's agreement with the
      human majority (§4.4's "average human-model agreement rate", 78.7 % "across 1,125
      comparisons"); its interval comes from the same bootstrap resamples (the mean of the judges'
      replicates); ``n_pairs`` / ``n_agree`` / ``n_no_verdict`` / ``n_no_reference`` are summed over
      the judges (judge-pair comparisons counted), so ``n_agree / n_pairs`` is the pooled rate,
      which differs from the unweighted mean when judges judged different numbers of pairs;
    * one row per LLM judge.

    Scopes: "all", "clear", "ambiguous", "ambiguous-human-only", "subset=regular",
    "subset=adversarial" (always present; §4.9's 78 % vs 76 %), any other "subset=<s>", and
    "kind=<k>" (model-model, human-model ...). One definition of the counts for every table of this
    module: a pair a judge was never shown (no row of it, e.g. family exclusion, §9.6) is outside
    that judge's denominator and outside ``n_no_verdict``; ``n_no_verdict`` counts the pairs the judge
    was shown (a row exists, parsed or not) where the reference has a winner but the judge named
    none (inconsistent orders, unparsed, or for the ensemble a tied majority). Cross-judge agreement
    is the same between two LLM judges (or two groups of judges, e.g. families, each reduced to
    its majority) on the pairs both judged, with Cohen's κ (:func:`heart.stats.reliability.cohen_kappa`)
    on the same pairs; "all" is the share of pairs on which every judge (group) judged and all named
    the same winner (the paper's three-way agreement).

Inter-human agreement and reliability (§4.2, §4.4, §9.9; :func:`inter_human`)
    Percent agreement (§4.4: "inter-human agreement of 79.5 %"): rater-to-rater agreement on the
    same pair -- over every pair with >= 2 human ratings and all unordered pairs of its ratings,
    the share of rater pairs choosing the same option among a / about the same / b (two "about the
    same" agree; "about the same" against a or b disagrees), pooled over rater pairs
    (:func:`heart.stats.reliability.rater_pair_agreement`; with the same number of raters on every pair
    it is Fleiss' observed agreement P̄). Fleiss' κ over the
    raters of each pair, on the winner (a / about the same / b) and on the 5-point preference
    (-2..2), and Krippendorff's α nominal and ordinal on the preference and nominal on the winner
    (the coefficients are in :mod:`heart.stats.reliability`). Fleiss' κ needs the same number of raters
    on every pair, so it uses the pairs with the most common number (>= 2) of ratings; the others
    are counted in the note. Humans give no axis marks (Figure 2), so per-axis κ is reported as
    "unavailable".

Stability under judge subsampling (§9.9)
    The agreement of the majority of k random LLM judges with the reference, for every k; the
    spread over subsets is summarised by its mean, SD and central ``ci`` range
    (:func:`subsampling_stability`). The reference winner does not depend on ``consensus``, so the
    function takes none.

Trivial judges and the human ceiling (AlpacaEval style)
    "always-longer" picks the longer response (whitespace-separated words of the completion
    text; equal lengths give no verdict), "always-position-A" picks the pair's ``system_a``
    (the stored order, which was randomised). The *leave-one-out* human ceiling
    ("human-loo-ceiling"): every rater's winner against the majority of the *other* raters of the
    pair, pooled over all (rater, pair) comparisons; it compares one rater with n-1 others, so it
    slightly understates what the full n-rater majority would reach, and it is not the paper's
    rater-to-rater percent agreement (that is :func:`inter_human`'s "percent_agreement").
    :func:`pair_lengths` (words of both completions of every pair) serves "always-longer" here
    and the length audit of :mod:`heart.stats.bias`.

Uncertainty (§9.12)
    Intervals (``ci_low`` / ``ci_high``, level ``ci``, config ``stats.ci``) are percentile
    intervals of the conversation-level cluster bootstrap of :mod:`heart.stats.bootstrap`: the
    conversation_ids of the whole judgments table are resampled with replacement (drawn once per
    call, so every row of one call shares the resamples) and a rate is re-estimated as (resampled
    sum of hits) / (resampled number of units); κ and α are recomputed on the resampled pairs.
    The bias audits are in :mod:`heart.stats.bias`, Benjamini–Hochberg in :mod:`heart.stats.multiple_testing`.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd

from heart.stats import bootstrap, reliability
from heart.judging.pairs import key_text

ENSEMBLE = "llm-ensemble"
MEAN_OF_JUDGES = "mean-of-judges"
HUMAN_MAJORITY = "human-majority"
LLM_MAJORITY = "llm-ensemble-majority"
LONGER = "always-longer"
POSITION_A = "always-position-A"
HUMAN_CEILING = "human-loo-ceiling"
CONSENSUS = Fraction(2, 3)
#: a consensus given as a number is read as the nearest fraction with at most this denominator
CONSENSUS_MAX_DENOMINATOR = 100
PREFERENCE_DOMAIN = [-2, -1, 0, 1, 2]
WINNER_DOMAIN = ["a", "tie", "b"]
SUBSETS = ("regular", "adversarial")
SIDES = ("system_a", "contributor_a", "system_b", "contributor_b")

MAJORITY_COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "kind", "judge_kind", "n_judgments",
                    "votes_a", "votes_b", "votes_neither", "n_unparsed", "winner", "share", "ambiguous",
                    "status", "note"]
AMBIGUITY_COLUMNS = ["pair_id", "conversation_id", "subset", "kind", "human_winner", "human_share",
                     "human_ambiguous", "axes_a", "axes_b", "axes_mixed", "ambiguous"]
AGREEMENT_COLUMNS = ["reference", "judge", "scope", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                     "n_conversations", "n_no_verdict", "n_no_reference", "status", "note"]
CROSS_COLUMNS = ["scope", "judge_1", "judge_2", "n_judges", "n_pairs", "n_agree", "agreement", "ci_low",
                 "ci_high", "kappa", "kappa_ci_low", "kappa_ci_high", "n_conversations", "status", "note"]
HUMAN_COLUMNS = ["measure", "labels", "level", "value", "ci_low", "ci_high", "n_units", "n_ratings",
                 "n_raters", "status", "note"]
STABILITY_COLUMNS = ["reference", "k", "n_judges", "n_subsets", "sampling", "mean_agreement", "sd_agreement",
                     "q_low", "q_high", "min_agreement", "max_agreement", "mean_n_pairs", "mean_coverage",
                     "status", "note"]
TRIVIAL_COLUMNS = ["reference", "judge", "judge_type", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                   "n_conversations", "n_no_verdict", "status", "note"]


# --- small helpers ------------------------------------------------------------------------------

def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=columns)


def consensus_fraction(consensus=CONSENSUS) -> Fraction:
    """``consensus`` as an exact fraction in [1/2, 1] (module docstring: consensus).

    Parameters
    ----------
    consensus : Fraction, int, float or str
        A :class:`fractions.Fraction` or an integer is taken as is; a "p/q" string (spaces allowed
        around "/") exactly; a float or a decimal string as the nearest fraction with a
        denominator of at most :data:`CONSENSUS_MAX_DENOMINATOR` (100): 0.6667 -> 2/3.

    Returns
    -------
    fractions.Fraction

    Raises
    ------
    TypeError
        For a boolean or another type.
    ValueError
        For a string that is not a number or "p/q", a zero denominator, or a value outside [1/2, 1].
    """
    if isinstance(consensus, (bool, np.bool_)):
        raise TypeError(f"consensus must be a number or a fraction 'p/q', not {consensus!r}")
    if isinstance(consensus, Fraction):
        frac = consensus
    elif isinstance(consensus, numbers.Integral):
        frac = Fraction(int(consensus))
    elif isinstance(consensus, numbers.Real):
        if not math.isfinite(float(consensus)):
            raise ValueError(f"consensus must be a finite share, not {consensus!r}")
        frac = Fraction(float(consensus)).limit_denominator(CONSENSUS_MAX_DENOMINATOR)
    elif isinstance(consensus, str):
        text = consensus.strip()
        try:
            if "/" in text:
                p, q = (int(part.strip()) for part in text.split("/", 1))
                frac = Fraction(p, q)
            else:
                frac = Fraction(text).limit_denominator(CONSENSUS_MAX_DENOMINATOR)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"consensus must be a number or a fraction 'p/q' such as '2/3', "
                             f"not {consensus!r}") from None
    else:
        raise TypeError(f"consensus must be a number or a fraction 'p/q', not {type(consensus).__name__}")
    if not Fraction(1, 2) <= frac <= 1:  # as the config schema: a consensus is at least half the votes
        raise ValueError(f"consensus must lie in [1/2, 1], not {consensus!r} (= {frac})")
    return frac


def _show_fraction(frac: Fraction) -> str:
    return f"{frac.numerator}/{frac.denominator}"


def axis_columns(judgments: pd.DataFrame) -> list[str]:
    """The signed per-axis mark columns of a judgments table (``axis_H`` ... ``axis_T``)."""
    return [c for c in judgments.columns if str(c).startswith("axis_")]


def axis_marks(rows: pd.DataFrame, columns) -> np.ndarray:
    """The signed axis marks of ``rows`` as floats, shape (n, len(columns)): NaN where a mark is missing,
    and a whole column of NaN where the table has no such column."""
    out = np.full((len(rows), len(columns)), np.nan)
    for k, c in enumerate(columns):
        if c in rows.columns:
            out[:, k] = pd.to_numeric(rows[c], errors="coerce").astype("Float64").to_numpy(float, na_value=np.nan)
    return out


def pair_axis_votes(marks: np.ndarray, pair_ids) -> pd.DataFrame:
    """Per pair (index, sorted) and axis: judges whose mark is > 0 minus those whose mark is < 0 (a zero or
    missing mark is no vote, and a mark's strength does not weigh) -- > 0: the axis's majority is side a."""
    return pd.DataFrame(np.sign(np.nan_to_num(marks, nan=0.0)),
                        index=np.asarray(pair_ids, dtype=object)).groupby(level=0, sort=True).sum()


def _side_key(system, contributor, n: int) -> np.ndarray:
    """(system, contributor) as one text key per row; a table without contributors: "" for all."""
    contributor = key_text(contributor) if contributor is not None else np.full(n, "", dtype=object)
    return (key_text(system) + "\x1f" + contributor).astype(object)


def _show_side(key: str) -> str:
    system, contributor = key.split("\x1f", 1)
    return f"{system} ({contributor})" if contributor else system


def orient(judgments: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Judgments with every row oriented to its pair's canonical order of sides (module docstring).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table: ``pair_id``, ``system_a``, ``system_b`` (and ``contributor_a`` /
        ``contributor_b`` where present; missing contributors are the same as none).
    pairs : pandas.DataFrame, optional
        A table giving each pair's canonical sides (``pair_id``, ``system_a``, ``contributor_a``,
        ``system_b``, ``contributor_b``), e.g. ``results/pairs.parquet``. Default: the sides of each
        pair's first row in ``judgments``.

    Returns
    -------
    pandas.DataFrame
        A copy, same index and row order. Rows whose sides are the canonical order are unchanged;
        rows giving them the other way round get the canonical sides, ``winner`` "a" <-> "b" (no
        winner stays none), ``preference`` and every ``axis_*`` mark negated (missing stays missing);
        everything else (strength, status, rationale ...) is unchanged.

    Raises
    ------
    ValueError
        When a row's sides are neither the canonical order nor its reverse, or (with ``pairs``)
        its pair is not in ``pairs`` or ``pairs`` gives one pair two different orders; the message
        names the pair_id and the row index.
    """
    out = judgments.copy()
    if out.empty:
        return out
    missing = [c for c in ("pair_id", "system_a", "system_b") if c not in out.columns]
    if missing:
        raise ValueError(f"orient: the judgments lack column(s) {missing}")
    n = len(out)
    ka = _side_key(out["system_a"], out.get("contributor_a"), n)
    kb = _side_key(out["system_b"], out.get("contributor_b"), n)
    pid = out["pair_id"].to_numpy(dtype=object)
    if pairs is None:
        first = ~out["pair_id"].duplicated(keep="first").to_numpy()
        canon = pd.DataFrame({"a": ka[first], "b": kb[first]}, index=pid[first])
    else:
        m = len(pairs)
        canon = pd.DataFrame({"a": _side_key(pairs["system_a"], pairs.get("contributor_a"), m),
                              "b": _side_key(pairs["system_b"], pairs.get("contributor_b"), m)},
                             index=pairs["pair_id"].to_numpy(dtype=object))
        conflict = (canon.groupby(level=0).nunique() > 1).any(axis=1)
        if conflict.any():
            raise ValueError(f"orient: the pairs table gives pair_id {conflict[conflict].index[0]!r} two "
                             "different orders of sides")
        canon = canon[~canon.index.duplicated()]
        unknown = ~pd.Index(pid).isin(canon.index)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise ValueError(f"orient: pair_id {pid[i]!r} (row {out.index[i]!r}) is not in the pairs table "
                             f"({int(unknown.sum())} row(s) of unknown pairs)")
    ca = canon["a"].reindex(pid).to_numpy(dtype=object)
    cb = canon["b"].reindex(pid).to_numpy(dtype=object)
    same = (ka == ca) & (kb == cb)
    swapped = ~same & (ka == cb) & (kb == ca)
    bad = ~(same | swapped)
    if bad.any():
        pos = np.flatnonzero(bad)
        shown = "; ".join(f"pair_id {pid[i]!r}, row {out.index[i]!r}: sides {_show_side(ka[i])} vs "
                          f"{_show_side(kb[i])} are neither {_show_side(ca[i])} vs {_show_side(cb[i])} "
                          "nor the reverse" for i in pos[:5])
        raise ValueError(f"orient: {len(pos)} judgment row(s) whose sides match neither order of their pair: "
                         f"{shown}")
    if not swapped.any():
        return out
    pos = np.flatnonzero(swapped)
    for x, y in (("system_a", "system_b"), ("contributor_a", "contributor_b")):
        if x in out.columns and y in out.columns:
            vx, vy = judgments[x].iloc[pos].array, judgments[y].iloc[pos].array
            out.iloc[pos, out.columns.get_loc(x)] = vy
            out.iloc[pos, out.columns.get_loc(y)] = vx
    if "winner" in out.columns:
        w = judgments["winner"].iloc[pos]
        flipped = np.where(w.isin(["a"]), "b", np.where(w.isin(["b"]), "a", None)).astype(object)
        keep = ~w.isin(["a", "b"]).to_numpy()
        flipped[keep] = w.to_numpy(dtype=object)[keep]
        out.iloc[pos, out.columns.get_loc("winner")] = flipped
    for col in ["preference", *axis_columns(out)]:
        if col in out.columns:
            values = judgments[col].iloc[pos]
            negated = -pd.to_numeric(values, errors="coerce")
            out.iloc[pos, out.columns.get_loc(col)] = negated.array
    return out


def pair_meta(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per pair (sorted by pair_id, its index): item, conversation, subset, kind and both sides
    (those of the pair's first row: orient the table first, :func:`orient`)."""
    cols = [c for c in ("pair_id", "item_id", "conversation_id", "subset", "kind", "system_a",
                        "contributor_a", "system_b", "contributor_b") if c in judgments.columns]
    return judgments[cols].drop_duplicates("pair_id").sort_values("pair_id").set_index("pair_id")


def _winners(judgments: pd.DataFrame, judge_kind: str = "llm") -> pd.DataFrame:
    """Pairs x judges of ``judge_kind``: "a" / "b" where the judge named a winner, else None."""
    ok = judgments[(judgments["judge_kind"] == judge_kind) & judgments["winner"].isin(["a", "b"])]
    wide = ok.drop_duplicates(["pair_id", "judge"]).pivot(index="pair_id", columns="judge", values="winner")
    wide = wide.reindex(pair_meta(judgments).index).astype(object)
    return wide.where(wide.notna(), None)


def _shown(judgments: pd.DataFrame, index, judge_kind: str, judge: str | None = None) -> np.ndarray:
    """Pairs of ``index`` that a judge (or any judge of ``judge_kind``) was shown: it has a row for them."""
    sel = judgments["judge_kind"] == judge_kind
    if judge is not None:
        sel &= judgments["judge"] == judge
    return np.isin(np.asarray(index, dtype=object), judgments.loc[sel, "pair_id"].unique())


def _as_vote(winners) -> np.ndarray:
    """"a" -> +1, "b" -> -1, anything else -> 0."""
    w = pd.DataFrame(winners) if not isinstance(winners, (pd.Series, pd.DataFrame)) else winners
    return np.where(w == "a", 1, np.where(w == "b", -1, 0)).astype(np.int64)


def _from_vote(votes: np.ndarray) -> np.ndarray:
    return np.where(votes > 0, "a", np.where(votes < 0, "b", None)).astype(object)


def _rate(boot: bootstrap.ClusterBootstrap, conv, hits, ci: float) -> tuple[dict, np.ndarray]:
    """Agreement fields of a row (rate, interval, counts) and the bootstrap replicates of the rate."""
    est, reps = boot.rate(conv, hits)
    lo, hi = bootstrap.interval(reps, ci)
    hits = np.asarray(hits)
    return ({"n_pairs": int(hits.size), "n_agree": int(hits.astype(float).sum()) if hits.size else 0,
             "agreement": est, "ci_low": lo, "ci_high": hi, "n_conversations": int(len(np.unique(conv)))},
            reps)


def _rate_row(boot: bootstrap.ClusterBootstrap, conv, hits, ci: float) -> dict:
    return _rate(boot, conv, hits, ci)[0]


def _no_rate() -> dict:
    return {"n_pairs": 0, "n_agree": 0, "agreement": math.nan, "ci_low": math.nan, "ci_high": math.nan,
            "n_conversations": 0}


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


# --- majorities ---------------------------------------------------------------------------------

def majority(judgments: pd.DataFrame, judge_kind: str, consensus=CONSENSUS, judges=None) -> pd.DataFrame:
    """Per pair, the majority winner of one kind of judge (module docstring: votes, consensus).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`).
    judge_kind : {"llm", "human"}
        Whose votes: the LLM ensemble, or the human raters.
    consensus : Fraction, number or "p/q" str
        A pair is ``ambiguous`` unless its majority has a winner with winner votes / all votes
        >= ``consensus`` (exact integer comparison; :func:`consensus_fraction`).
    judges : collection of str, optional
        Restrict to these judges (e.g. one family, or all but one judge).

    Returns
    -------
    pandas.DataFrame
        One row per pair of ``judgments`` (sorted by pair_id) with ``MAJORITY_COLUMNS``:
        vote counts, ``winner`` ("a"/"b"/None), ``share``, ``ambiguous`` and ``status``
        ("ok", "tie" = votes but no winner, "absent" = no vote of this kind on the pair).
    """
    return _majority(orient(judgments), judge_kind, consensus_fraction(consensus), judges)


def _majority(judgments: pd.DataFrame, judge_kind: str, consensus: Fraction = CONSENSUS,
              judges=None) -> pd.DataFrame:
    """:func:`majority` on an oriented table with a :class:`~fractions.Fraction` consensus."""
    meta = pair_meta(judgments)
    j = judgments[judgments["judge_kind"] == judge_kind]
    if judges is not None:
        j = j[j["judge"].isin(list(judges))]
    flags = pd.DataFrame({
        "pair_id": j["pair_id"].to_numpy(),
        "n_judgments": 1,
        "votes_a": j["winner"].isin(["a"]).to_numpy(int),
        "votes_b": j["winner"].isin(["b"]).to_numpy(int),
        "n_unparsed": j["status"].isin(["unparsed"]).to_numpy(int),
    })
    flags["votes_neither"] = flags["n_judgments"] - flags["votes_a"] - flags["votes_b"] - flags["n_unparsed"]
    counts = flags.groupby("pair_id").sum().reindex(meta.index, fill_value=0)
    out = meta.reindex(columns=["item_id", "conversation_id", "subset", "kind"]).join(counts)
    out["judge_kind"] = judge_kind
    a, b = out["votes_a"].to_numpy(np.int64), out["votes_b"].to_numpy(np.int64)
    n = out["n_judgments"].to_numpy(np.int64)
    total = a + b + out["votes_neither"].to_numpy(np.int64)
    out["winner"] = pd.Series(_from_vote(np.sign(a - b)), index=out.index, dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share"] = np.where(total > 0, np.maximum(a, b) / np.where(total > 0, total, 1), np.nan)
    # exact: winner votes / total >= p / q  <=>  winner votes * q >= p * total (no float rounding)
    clear = (a != b) & (np.maximum(a, b) * consensus.denominator >= consensus.numerator * total)
    out["ambiguous"] = ~clear
    out["status"] = np.where(total == 0, "absent", np.where(a == b, "tie", "ok"))
    out["note"] = np.where(
        n == 0, f"no {judge_kind} judgment of this pair",
        np.where(total == 0, "only unparsed verdicts",
                 np.where(a == b, "equal votes for a and b: no majority winner", "")))
    return out.reset_index().reindex(columns=MAJORITY_COLUMNS)


def _loo_majority(judgments: pd.DataFrame, judge_kind: str) -> pd.DataFrame:
    """Every judgment of ``judge_kind`` against the majority winner of the other judges of its kind.

    Returns one row per judgment (parsed or not): ``pair_id``, ``judge``, ``winner`` ("a"/"b" or
    None), ``other_winner`` (None when the others are tied or absent).
    """
    j = judgments[judgments["judge_kind"] == judge_kind].copy()
    j["va"] = j["winner"].isin(["a"]).astype(int)
    j["vb"] = j["winner"].isin(["b"]).astype(int)
    tot = j.groupby("pair_id")[["va", "vb"]].transform("sum")
    j["other_winner"] = _from_vote(np.sign((tot["va"] - j["va"]) - (tot["vb"] - j["vb"])).to_numpy())
    j["winner"] = np.where(j["winner"].isin(["a", "b"]), j["winner"].astype(object), None)
    return j[["pair_id", "judge", "winner", "other_winner"]]


# --- ambiguous pairs ----------------------------------------------------------------------------

def ambiguity(judgments: pd.DataFrame, consensus=CONSENSUS) -> pd.DataFrame:
    """Per pair, the two conditions of the paper's ambiguous subset (§4.4; module docstring).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    consensus : Fraction, number or "p/q" str
        Human majority share needed for a clear consensus (:func:`consensus_fraction`).

    Returns
    -------
    pandas.DataFrame
        ``AMBIGUITY_COLUMNS``, one row per pair (sorted by pair_id): ``human_winner``,
        ``human_share``, ``human_ambiguous`` (no clear human consensus); ``axes_a`` / ``axes_b``
        (number of axes whose LLM-judge majority favours a / b; 0 where unknown), ``axes_mixed``
        (nullable boolean: the LLM per-axis rankings are mixed with no clear winner; NA when no LLM
        judgment of the pair carries an axis mark) and ``ambiguous`` = human_ambiguous and
        axes_mixed (False where axes_mixed is NA).
    """
    j = orient(judgments)
    human = _majority(j, "human", consensus_fraction(consensus))
    return _ambiguity(j, human).reset_index()


def _ambiguity(judgments: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """:func:`ambiguity` from an oriented table and its human majority (indexed by pair_id)."""
    index = pd.Index(human["pair_id"], name="pair_id")
    out = pd.DataFrame({"conversation_id": human["conversation_id"].to_numpy(),
                        "subset": human["subset"].to_numpy(), "kind": human["kind"].to_numpy(),
                        "human_winner": human["winner"].to_numpy(object),
                        "human_share": human["share"].to_numpy(float),
                        "human_ambiguous": human["ambiguous"].to_numpy(bool)}, index=index)
    axes = axis_columns(judgments)
    llm = judgments[(judgments["judge_kind"] == "llm") & ~judgments["status"].isin(["unparsed"])]
    if axes and len(llm):
        marks = axis_marks(llm, axes)
        pid = llm["pair_id"].to_numpy(dtype=object)
        axis_winner = np.sign(pair_axis_votes(marks, pid).reindex(index, fill_value=0.0).to_numpy())
        marked = pd.Series((~np.isnan(marks)).any(axis=1), index=pid).groupby(level=0).any()
        has_marks = marked.reindex(index, fill_value=False).to_numpy(bool)
    else:
        axis_winner = np.zeros((len(index), 1))
        has_marks = np.zeros(len(index), bool)
    n_a, n_b = (axis_winner > 0).sum(axis=1), (axis_winner < 0).sum(axis=1)
    one_side = (n_a > 0) != (n_b > 0)  # some axis has a winner and all those that do name the same side
    out["axes_a"], out["axes_b"] = n_a.astype(np.int64), n_b.astype(np.int64)
    out["axes_mixed"] = pd.array(np.where(has_marks, ~one_side, False), dtype="boolean")
    out.loc[~has_marks, "axes_mixed"] = pd.NA
    out["ambiguous"] = out["human_ambiguous"].to_numpy(bool) & out["axes_mixed"].fillna(False).to_numpy(bool)
    return out.reindex(columns=AMBIGUITY_COLUMNS[1:])


# --- human-LLM agreement ------------------------------------------------------------------------

def _scopes(amb: pd.DataFrame, consensus: Fraction) -> list[tuple[str, np.ndarray | None, str]]:
    """(scope, pair mask or None when the scope cannot be formed, note) for every scope."""
    c = _show_fraction(consensus)
    h_amb = amb["human_ambiguous"].to_numpy(bool)
    mixed = amb["axes_mixed"]
    all_pairs = np.ones(len(amb), bool)
    if mixed.notna().any():
        paper = amb["ambiguous"].to_numpy(bool)
        unknown = int((h_amb & mixed.isna().to_numpy(bool)).sum())
        paper_note = _join(f"paper §4.4: no clear human consensus (no human majority winner, or share < {c}) "
                           "and mixed LLM per-axis rankings (the axes' LLM-majority winners do not all name "
                           f"one side); {int(paper.sum())} of {int(h_amb.sum())} pairs without a clear human "
                           "consensus",
                           f"{unknown} of those without any LLM axis mark left out" if unknown else "")
    else:
        paper = None
        paper_note = ("LLM axis marks are absent (no LLM judgment carries a per-axis mark): the paper's "
                      "ambiguous subset (no clear human consensus and mixed per-axis LLM rankings) cannot be "
                      "formed; the human-only criterion is scope 'ambiguous-human-only'")
    scopes = [("all", all_pairs, ""),
              ("clear", ~h_amb, f"clear human consensus: a human majority winner with share >= {c}"),
              ("ambiguous", paper, paper_note),
              ("ambiguous-human-only", h_amb,
               f"no clear human consensus alone (no human majority winner, or share < {c}); LLM axis marks "
               "not considered")]
    subsets = amb["subset"].dropna().astype(str)
    for value in [*SUBSETS, *sorted(set(subsets) - set(SUBSETS))]:
        scopes.append((f"subset={value}", (subsets.reindex(amb.index) == value).to_numpy(bool), ""))
    kinds = amb["kind"].dropna().astype(str)
    for value in sorted(set(kinds)):
        scopes.append((f"kind={value}", (kinds.reindex(amb.index) == value).to_numpy(bool), ""))
    return scopes


def human_llm_agreement(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                        consensus=CONSENSUS) -> pd.DataFrame:
    """Agreement with the human majority: the LLM-ensemble majority, the mean of the judges, each judge.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
    consensus : Fraction, number or "p/q" str
        Human majority share needed for a clear consensus (:func:`consensus_fraction`).

    Returns
    -------
    pandas.DataFrame
        ``AGREEMENT_COLUMNS``, one row per (judge, scope) (module docstring: agreement). ``judge``
        is "llm-ensemble" (ensemble majority vs human majority, §9.9), "mean-of-judges" (unweighted
        mean of the judges' agreements, §4.4; counts summed over judges) or an LLM judge; ``scope``
        is "all", "clear", "ambiguous" (paper: both conditions), "ambiguous-human-only",
        "subset=regular", "subset=adversarial", other "subset=<s>" or "kind=<k>".
        ``n_no_verdict``: pairs in scope the judge was shown, with a human winner but no verdict of
        the judge; ``n_no_reference``: pairs in scope the judge was shown without a human winner
        (ties, or no human rating). Without human (or LLM) judgments: one "absent" row per judge
        and scope "all"/"ambiguous", agreement NaN.
    """
    judgments = orient(judgments)
    frac = consensus_fraction(consensus)
    human = _majority(judgments, "human", frac)
    llm_judges = sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique())
    names = [ENSEMBLE, MEAN_OF_JUDGES, *llm_judges]
    if not llm_judges or not human["winner"].notna().any():
        missing = []
        if not (judgments["judge_kind"] == "human").any():
            missing.append("human judgments are absent")
        elif not human["winner"].notna().any():
            missing.append("no pair has a human majority winner")
        if not llm_judges:
            missing.append("LLM judgments are absent")
        missing = "; ".join(missing)
        return _frame([{"reference": HUMAN_MAJORITY, "judge": name, "scope": scope, **_no_rate(),
                        "n_no_verdict": 0, "n_no_reference": 0, "status": "absent",
                        "note": f"{missing}: human-LLM agreement cannot be computed"}
                       for name in names for scope in ("all", "ambiguous")], AGREEMENT_COLUMNS)
    amb = _ambiguity(judgments, human)
    scopes = _scopes(amb, frac)
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    wide = _winners(judgments, "llm")
    pair_ids = human["pair_id"].to_numpy()
    ref = human["winner"].to_numpy(object)
    conv = human["conversation_id"].to_numpy()
    comparators = {ENSEMBLE: (_majority(judgments, "llm", frac)["winner"].to_numpy(object),
                              _shown(judgments, pair_ids, "llm"))}
    comparators.update({j: (wide[j].to_numpy(object), _shown(judgments, pair_ids, "llm", j))
                        for j in llm_judges})
    rows, reps, used = {}, {}, {}
    for name, (comp, seen) in comparators.items():
        for scope, mask, scope_note in scopes:
            row = {"reference": HUMAN_MAJORITY, "judge": name, "scope": scope}
            if mask is None:
                row.update(_no_rate(), n_no_verdict=0, n_no_reference=0, status="absent", note=scope_note)
                rows[name, scope] = row
                continue
            base = mask & seen
            use = base & pd.notna(ref) & pd.notna(comp)
            row.update(n_no_verdict=int((base & pd.notna(ref) & pd.isna(comp)).sum()),
                       n_no_reference=int((base & pd.isna(ref)).sum()))
            name_note = "LLM-ensemble majority vs human majority (paper §9.9)" if name == ENSEMBLE else ""
            if use.any():
                fields, reps[name, scope] = _rate(boot, conv[use], (comp[use] == ref[use]).astype(float), ci)
                row.update(fields, status="ok", note=_join(name_note, scope_note))
                used[name, scope] = use
            else:
                row.update(_no_rate(), status="no_pairs",
                           note=_join(name_note, scope_note, f"no pair in scope '{scope}' with both a human "
                                                             "majority winner and a verdict"))
            rows[name, scope] = row
    for scope, mask, scope_note in scopes:
        rows[MEAN_OF_JUDGES, scope] = _mean_of_judges(scope, mask, scope_note, llm_judges, rows, reps, used,
                                                      conv, boot, ci)
    return _frame([rows[name, scope] for name in names for scope, _, _ in scopes], AGREEMENT_COLUMNS)


def _mean_of_judges(scope, mask, scope_note, judges, rows, reps, used, conv, boot, ci) -> dict:
    """The "mean-of-judges" row of one scope from the judges' rows and bootstrap replicates."""
    row = {"reference": HUMAN_MAJORITY, "judge": MEAN_OF_JUDGES, "scope": scope}
    if mask is None:
        return {**row, **_no_rate(), "n_no_verdict": 0, "n_no_reference": 0, "status": "absent",
                "note": scope_note}
    judge_rows = [rows[j, scope] for j in judges]
    ok = [j for j in judges if rows[j, scope]["status"] == "ok"]
    row.update({k: int(sum(r[k] for r in judge_rows)) for k in ("n_no_verdict", "n_no_reference")})
    if not ok:
        return {**row, **_no_rate(), "status": "no_pairs",
                "note": _join(scope_note, f"no LLM judge has a pair in scope '{scope}' with a human majority "
                                          "winner and a verdict")}
    n_pairs = int(sum(rows[j, scope]["n_pairs"] for j in ok))
    n_agree = int(sum(rows[j, scope]["n_agree"] for j in ok))
    if boot.n_boot:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate without any judge's pair
            mean_reps = np.nanmean(np.vstack([reps[j, scope] for j in ok]), axis=0)
    else:
        mean_reps = np.array([])
    lo, hi = bootstrap.interval(mean_reps, ci)
    any_used = np.logical_or.reduce([used[j, scope] for j in ok])
    row.update(n_pairs=n_pairs, n_agree=n_agree,
               agreement=float(np.mean([rows[j, scope]["agreement"] for j in ok])), ci_low=lo, ci_high=hi,
               n_conversations=int(len(np.unique(conv[any_used]))), status="ok",
               note=_join(f"unweighted mean over {len(ok)} of {len(judges)} LLM judges of each judge's "
                          "agreement with the human majority (paper §4.4); n_pairs, n_agree, n_no_verdict, "
                          f"n_no_reference summed over the judges (pooled rate {n_agree / n_pairs:.4f})",
                          scope_note))
    return row


# --- cross-judge agreement ----------------------------------------------------------------------

def cross_judge_agreement(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                          judge_groups: dict[str, str] | None = None) -> pd.DataFrame:
    """Agreement between LLM judges: every two, their mean, and all at once (paper §4.4).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`; only LLM rows are used).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
        Cohen's κ gets its asymptotic interval at the same level.
    judge_groups : dict, optional
        judge -> group (e.g. family, for "Gemini-OpenAI"). Each group is first reduced to its
        majority winner per pair (:func:`majority`), and the groups are compared.

    Returns
    -------
    pandas.DataFrame
        ``CROSS_COLUMNS``. ``scope`` "pairwise" (one row per two judges, with Cohen's κ and its
        asymptotic interval on the pairs both judged), "mean-pairwise" (unweighted mean of the
        pairwise agreements, bootstrap interval from the same resamples) and "all" (pairs judged
        by every judge; agreement = all named the same winner). Fewer than two judges: one
        "absent" row.
    """
    judgments = orient(judgments)
    llm = judgments[judgments["judge_kind"] == "llm"]
    if judge_groups is not None:
        llm = llm[llm["judge"].isin(list(judge_groups))]
        units = sorted(set(judge_groups[j] for j in llm["judge"].unique()))
        members = {g: [j for j, gg in judge_groups.items() if gg == g] for g in units}
        wide = pd.DataFrame({g: _majority(judgments, "llm", judges=members[g]).set_index("pair_id")["winner"]
                             for g in units})
    else:
        units = sorted(llm["judge"].unique())
        wide = _winners(judgments, "llm")[units] if units else pd.DataFrame()
    if len(units) < 2:
        return _frame([{"scope": "pairwise", "judge_1": units[0] if units else None, "judge_2": None,
                        "n_judges": len(units), "n_pairs": 0, "n_agree": 0, "agreement": math.nan,
                        "ci_low": math.nan, "ci_high": math.nan, "kappa": math.nan, "kappa_ci_low": math.nan,
                        "kappa_ci_high": math.nan, "n_conversations": 0, "status": "absent",
                        "note": f"{len(units)} LLM judge{'' if len(units) == 1 else 's'}"
                                f"{' (groups)' if judge_groups else ''}: cross-judge agreement needs two"}],
                      CROSS_COLUMNS)
    meta = pair_meta(judgments)
    conv = meta["conversation_id"].reindex(wide.index).to_numpy()
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    rows, reps_all = [], []
    for u1, u2 in itertools.combinations(units, 2):
        w1, w2 = wide[u1].to_numpy(object), wide[u2].to_numpy(object)
        use = pd.notna(w1) & pd.notna(w2)
        row = {"scope": "pairwise", "judge_1": u1, "judge_2": u2, "n_judges": 2}
        if use.any():
            hits = (w1[use] == w2[use]).astype(float)
            est, reps = boot.rate(conv[use], hits)
            reps_all.append(reps)
            lo, hi = bootstrap.interval(reps, ci)
            kap = reliability.cohen_kappa(w1[use], w2[use], categories=["a", "b"], ci=ci)
            row.update(n_pairs=int(use.sum()), n_agree=int(hits.sum()), agreement=est, ci_low=lo, ci_high=hi,
                       kappa=kap["kappa"], kappa_ci_low=kap["kappa_ci_low"],
                       kappa_ci_high=kap["kappa_ci_high"],
                       n_conversations=int(len(np.unique(conv[use]))), status="ok",
                       note="" if not np.isnan(kap["kappa"]) else "kappa undefined: one winner side only")
        else:
            row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       kappa=math.nan, kappa_ci_low=math.nan, kappa_ci_high=math.nan, n_conversations=0,
                       status="no_pairs", note="no pair judged by both (e.g. family exclusion)")
        rows.append(row)
    ok = [r for r in rows if r["status"] == "ok"]
    mean_row = {"scope": "mean-pairwise", "judge_1": "mean", "judge_2": None, "n_judges": len(units),
                "n_pairs": int(sum(r["n_pairs"] for r in ok)), "n_agree": int(sum(r["n_agree"] for r in ok)),
                "kappa": float(np.nanmean([r["kappa"] for r in ok])) if ok and not all(
                    np.isnan(r["kappa"]) for r in ok) else math.nan,
                "kappa_ci_low": math.nan, "kappa_ci_high": math.nan,
                "n_conversations": int(len(np.unique(conv[wide.notna().sum(axis=1).to_numpy() >= 2]))),
                "status": "ok" if ok else "no_pairs",
                "note": f"unweighted mean over {len(ok)} judge pairs; kappa: mean of the pairwise kappas"}
    if ok:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_reps = np.nanmean(np.vstack(reps_all), axis=0) if boot.n_boot else np.array([])
        lo, hi = bootstrap.interval(mean_reps, ci)
        mean_row.update(agreement=float(np.mean([r["agreement"] for r in ok])), ci_low=lo, ci_high=hi)
    else:
        mean_row.update(agreement=math.nan, ci_low=math.nan, ci_high=math.nan)
    rows.append(mean_row)
    every = wide[units].notna().all(axis=1).to_numpy()
    all_row = {"scope": "all", "judge_1": "all", "judge_2": None, "n_judges": len(units),
               "kappa": math.nan, "kappa_ci_low": math.nan, "kappa_ci_high": math.nan}
    if every.any():
        vals = wide[units].to_numpy(object)[every]
        hits = (vals == vals[:, :1]).all(axis=1).astype(float)
        all_row.update(_rate_row(boot, conv[every], hits, ci), status="ok",
                       note=f"pairs judged by all of {', '.join(units)}")
    else:
        all_row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       n_conversations=0, status="no_pairs", note="no pair was judged by every judge")
    rows.append(all_row)
    return _frame(rows, CROSS_COLUMNS)


# --- inter-human reliability --------------------------------------------------------------------

def _human_ratings(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per human rating (status "ok"/"tie"): unit, rater, conversation, preference (float, NaN if
    missing) and winner ("a"/"tie"/"b": from the preference's sign, else from the winner)."""
    h = judgments[(judgments["judge_kind"] == "human") & judgments["status"].isin(["ok", "tie"])]
    if "preference" in h.columns:  # nullable Int64 with NA, object with None ...: float with NaN
        pref = pd.to_numeric(h["preference"], errors="coerce").astype("float64").to_numpy(dtype=float)
    else:
        pref = np.full(len(h), np.nan)
    fallback = np.where(h["winner"].isin(["a"]), "a", np.where(h["winner"].isin(["b"]), "b", "tie"))
    with np.errstate(invalid="ignore"):
        winner = np.where(np.isnan(pref), fallback, np.where(pref > 0, "a", np.where(pref < 0, "b", "tie")))
    return pd.DataFrame({"unit": h["pair_id"].to_numpy(), "rater": h["judge"].to_numpy(),
                         "conversation_id": h["conversation_id"].to_numpy(),
                         "preference": pref, "winner": winner})


def _percent_agreement(table: np.ndarray) -> float:
    agree, pairs = reliability.rater_pair_agreement(table)
    total = pairs.sum()
    return float(agree.sum() / total) if total else math.nan


def inter_human(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Inter-human agreement and reliability: percent agreement, Fleiss' κ, Krippendorff's α (§4.2, §4.4).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`; human rows with status "ok" or "tie"
        are used; a missing ``preference`` -- None, NaN or a nullable-integer NA -- leaves the rating
        out of the preference measures only).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`) for the percentile intervals at level ``ci``:
        κ and α are recomputed on the pairs of the resampled conversations, each pair as often as its
        conversation was drawn; percent agreement is re-estimated as (resampled agreeing rater pairs)
        / (resampled rater pairs).

    Returns
    -------
    pandas.DataFrame
        ``HUMAN_COLUMNS``; ``measure`` "fleiss_kappa" / "krippendorff_alpha" / "percent_agreement"
        (one row, on the winner: rater-to-rater, pooled over the unordered rater pairs of every pair
        with >= 2 ratings, the paper's 79.5 %; module docstring), ``labels`` "winner (a/tie/b)" or
        "preference (-2..2)", ``level`` of measurement. A "per-axis" row is "unavailable" (humans
        give no axis marks). No pair with >= 2 human ratings: "absent" rows that say why.
    """
    judgments = orient(judgments)
    ratings = _human_ratings(judgments)
    specs = [("fleiss_kappa", "winner (a/tie/b)", "nominal"),
             ("fleiss_kappa", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "winner (a/tie/b)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "ordinal"),
             ("percent_agreement", "winner (a/tie/b)", "nominal")]
    axis_row = {"measure": "fleiss_kappa", "labels": "per-axis", "level": "nominal", "value": math.nan,
                "ci_low": math.nan, "ci_high": math.nan, "n_units": 0, "n_ratings": 0, "n_raters": 0,
                "status": "unavailable",
                "note": "human raters give one overall choice (Figure 2) and no axis marks: "
                        "per-axis inter-human agreement cannot be computed"}
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    conv_of_unit = ratings.drop_duplicates("unit").set_index("unit")["conversation_id"]
    n_no_pref = int(ratings["preference"].isna().sum())
    rows = []
    for measure, labels, level in specs:
        on_pref = labels.startswith("preference")
        if not on_pref:
            r, domain = ratings.assign(label=ratings["winner"]), WINNER_DOMAIN
        else:
            r = ratings[ratings["preference"].notna()]
            r, domain = r.assign(label=r["preference"].astype(int)), PREFERENCE_DOMAIN
        left_out = f"{n_no_pref} human ratings without a preference left out" if on_pref and n_no_pref else ""
        counts = reliability.unit_counts(r, domain)
        row = {"measure": measure, "labels": labels, "level": level, "n_raters": int(r["rater"].nunique())}
        if counts.empty:
            if ratings.empty:
                why = "human judgments are absent"
            elif r.empty:
                why = "no human rating carries a 5-point preference (-2..2)"
            else:
                why = "no pair has two or more human ratings" + (" with a preference" if on_pref else "")
            row.update(value=math.nan, ci_low=math.nan, ci_high=math.nan, n_units=0, n_ratings=0,
                       status="absent", note=_join(why, left_out))
            rows.append(row)
            continue
        if measure == "fleiss_kappa":
            kept, m = reliability.fleiss_units(counts)
            note = (f"pairs with {m} ratings; {len(counts) - len(kept)} pairs with another number of "
                    f"ratings left out")
            value = reliability.fleiss_kappa_table
        elif measure == "krippendorff_alpha":
            kept, note = counts, "pairs with >= 2 ratings"
            value = functools.partial(reliability.krippendorff_alpha_table, level=level, value_domain=domain)
        else:
            kept, value = counts, _percent_agreement
            n_comparisons = int(reliability.rater_pair_agreement(counts.to_numpy(dtype=float))[1].sum())
            note = ("rater-to-rater percent agreement (paper §4.4): over every pair with >= 2 human ratings "
                    "and all unordered rater pairs on it, the share of rater pairs choosing the same option "
                    "among a / about the same / b ('about the same' agrees only with 'about the same'); "
                    f"pooled over {n_comparisons} rater pairs (equal to Fleiss' observed agreement when "
                    "every pair has the same number of ratings)")
        table = kept.to_numpy(dtype=float)
        unit_conv = conv_of_unit.reindex(kept.index).to_numpy()
        est = value(table)
        if measure == "percent_agreement":
            reps = boot.ratio(unit_conv, *reliability.rater_pair_agreement(table))
        else:
            reps = boot.apply(unit_conv, table, value)
        lo, hi = bootstrap.interval(reps, ci)
        note = _join(note, left_out)
        row.update(value=est, ci_low=lo, ci_high=hi, n_units=int(len(kept)), n_ratings=int(table.sum()),
                   status="ok" if not np.isnan(est) else "undefined",
                   note=note if not np.isnan(est) else note + "; undefined (a single category observed)")
        rows.append(row)
    rows.append(axis_row)
    return _frame(rows, HUMAN_COLUMNS)


# --- stability under judge subsampling ----------------------------------------------------------

def subsampling_stability(judgments: pd.DataFrame, n_rep: int = 200, seed: int = 0, ks=None,
                          ci: float = 0.95) -> pd.DataFrame:
    """Agreement of the majority of k random LLM judges with the reference, for each k (§9.9).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`).
    n_rep : int
        Random judge subsets per k; when there are at most ``n_rep`` subsets of size k, all of
        them are used instead (``sampling`` "exhaustive").
    seed : int
        Seed of the subset draws.
    ks : sequence of int, optional
        Subset sizes (default 1 .. number of LLM judges).
    ci : float
        Share of the subsets' agreements between ``q_low`` and ``q_high``.

    Returns
    -------
    pandas.DataFrame
        ``STABILITY_COLUMNS``, one row per k. ``reference`` is "human-majority", or
        "llm-ensemble-majority" (all LLM judges) when no pair has a human majority winner, in
        which case k = all judges agrees trivially. Per subset, agreement is over pairs where the
        reference and the subset majority both have a winner (a majority winner does not depend
        on ``stats.consensus``, so there is no such parameter); ``mean_coverage`` is the mean share
        of reference pairs that the subset majority decided. ``q_low``/``q_high`` are the
        ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles over subsets (2.5 % and 97.5 % for ci = 0.95).
    """
    judgments = orient(judgments)
    wide = _winners(judgments, "llm")
    judges = list(wide.columns)
    if not judges:
        return _frame([{"reference": None, "k": 0, "n_judges": 0, "n_subsets": 0, "sampling": None,
                        "mean_agreement": math.nan, "sd_agreement": math.nan, "q_low": math.nan,
                        "q_high": math.nan, "min_agreement": math.nan, "max_agreement": math.nan,
                        "mean_n_pairs": math.nan, "mean_coverage": math.nan, "status": "absent",
                        "note": "LLM judgments are absent"}], STABILITY_COLUMNS)
    human = _majority(judgments, "human").set_index("pair_id")["winner"].reindex(wide.index)
    if human.notna().any():
        reference, ref = HUMAN_MAJORITY, _as_vote(human.to_frame())[:, 0]
        ref_note = "reference: human majority"
    else:
        reference = LLM_MAJORITY
        ref = _as_vote(_majority(judgments, "llm").set_index("pair_id")["winner"]
                       .reindex(wide.index).to_frame())[:, 0]
        ref_note = "human judgments are absent: reference is the majority of all LLM judges"
    votes = _as_vote(wide)
    n_ref = int((ref != 0).sum())
    rng = np.random.default_rng(seed)
    K = len(judges)
    rows = []
    for k in (ks if ks is not None else range(1, K + 1)):
        k = int(k)
        if not 1 <= k <= K:
            raise ValueError(f"k={k} outside 1..{K} (number of LLM judges)")
        total = math.comb(K, k)
        if total <= n_rep:
            subsets, sampling = [list(s) for s in itertools.combinations(range(K), k)], "exhaustive"
        else:
            subsets, sampling = [rng.choice(K, size=k, replace=False) for _ in range(n_rep)], "random"
        agr, npairs, cover = [], [], []
        for s in subsets:
            maj = np.sign(votes[:, s].sum(axis=1))
            use = (ref != 0) & (maj != 0)
            npairs.append(int(use.sum()))
            cover.append(use.sum() / n_ref if n_ref else math.nan)
            agr.append(float((maj[use] == ref[use]).mean()) if use.any() else math.nan)
        agr = np.array(agr, dtype=float)
        valid = agr[~np.isnan(agr)]
        row = {"reference": reference, "k": k, "n_judges": K, "n_subsets": len(subsets), "sampling": sampling,
               "mean_n_pairs": float(np.mean(npairs)), "mean_coverage": float(np.nanmean(cover)) if n_ref else
               math.nan}
        if valid.size:
            row.update(mean_agreement=float(valid.mean()),
                       sd_agreement=float(valid.std(ddof=1)) if valid.size > 1 else math.nan,
                       q_low=float(np.quantile(valid, (1 - ci) / 2)),
                       q_high=float(np.quantile(valid, (1 + ci) / 2)),
                       min_agreement=float(valid.min()), max_agreement=float(valid.max()), status="ok",
                       note=ref_note + (f"; {len(agr) - valid.size} subsets without a common pair"
                                        if valid.size < len(agr) else ""))
        else:
            row.update(mean_agreement=math.nan, sd_agreement=math.nan, q_low=math.nan, q_high=math.nan,
                       min_agreement=math.nan, max_agreement=math.nan, status="no_pairs",
                       note=ref_note + "; no subset decided a reference pair")
        rows.append(row)
    return _frame(rows, STABILITY_COLUMNS)


# --- trivial judges and the human ceiling -------------------------------------------------------

def pair_lengths(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    """Length in words (whitespace-separated) of both completions of every pair.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (pair_id, item_id, system_a/b, contributor_a/b; oriented first,
        :func:`orient`).
    texts : pandas.DataFrame
        Completions: item_id, system, contributor_id, text.

    Returns
    -------
    pandas.DataFrame
        Indexed by pair_id: ``len_a``, ``len_b`` (NaN when a text is missing) and ``longer``
        ("a"/"b", None when equal or unknown).
    """
    return _pair_lengths(orient(judgments), texts)


def _pair_lengths(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    meta = pair_meta(judgments)
    t = texts.copy()
    lengths = pd.Series(t["text"].fillna("").astype(str).str.split().str.len().to_numpy(),
                        index=pd.MultiIndex.from_arrays([t["item_id"].astype(str).to_numpy(),
                                                         key_text(t["system"]),
                                                         key_text(t["contributor_id"])]))
    lengths = lengths[~lengths.index.duplicated()]
    out = pd.DataFrame(index=meta.index)
    for side in ("a", "b"):
        idx = pd.MultiIndex.from_arrays([meta["item_id"].astype(str).to_numpy(),
                                         key_text(meta[f"system_{side}"]),
                                         key_text(meta[f"contributor_{side}"])])
        out[f"len_{side}"] = lengths.reindex(idx).to_numpy(dtype=float)
    diff = out["len_a"] - out["len_b"]
    out["longer"] = np.where(diff > 0, "a", np.where(diff < 0, "b", None)).astype(object)
    return out


def trivial_judges(judgments: pd.DataFrame, texts: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                   ci: float = 0.95) -> pd.DataFrame:
    """Real, trivial and ceiling judges side by side, against the human and the LLM-ensemble majority.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`).
    texts : pandas.DataFrame
        Completions (item_id, system, contributor_id, text), for "always-longer".
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.

    Returns
    -------
    pandas.DataFrame
        ``TRIVIAL_COLUMNS``. Against "human-majority": the LLM ensemble, each LLM judge,
        "always-longer", "always-position-A" and the leave-one-out human ceiling
        ("human-loo-ceiling"). Against "llm-ensemble-majority": each LLM judge against the majority
        of the *other* LLM judges (leave-one-out), the two trivial judges, and the human majority.
        Counts as in :func:`human_llm_agreement`: a pair a judge was never shown (no row of it) is
        neither in its ``n_pairs`` nor in its ``n_no_verdict``; ``n_no_verdict`` = pairs shown, with a
        reference winner, but without the judge's winner (the trivial judges are shown every pair;
        "always-longer" has no verdict on equal or unknown lengths). The reference winners do not
        depend on ``stats.consensus``, so there is no such parameter. A missing reference gives
        "absent" rows.
    """
    judgments = orient(judgments)
    meta = pair_meta(judgments)
    conv = meta["conversation_id"].to_numpy()
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    human = _majority(judgments, "human").set_index("pair_id")["winner"].reindex(meta.index)
    ens = _majority(judgments, "llm").set_index("pair_id")["winner"].reindex(meta.index)
    wide = _winners(judgments, "llm")
    llm_judges = list(wide.columns)
    longer = _pair_lengths(judgments, texts)["longer"].reindex(meta.index)
    pos_a = pd.Series("a", index=meta.index, dtype=object)
    has_llm = bool(llm_judges)
    has_human = bool(human.notna().any())
    every_pair = np.ones(len(meta), bool)
    shown_llm = _shown(judgments, meta.index, "llm")
    shown = {j: _shown(judgments, meta.index, "llm", j) for j in llm_judges}

    def row(reference, judge, judge_type, ref, comp, judged, note=""):
        ref, comp = np.asarray(ref, object), np.asarray(comp, object)
        use = pd.notna(ref) & pd.notna(comp) & judged
        out = {"reference": reference, "judge": judge, "judge_type": judge_type,
               "n_no_verdict": int((pd.notna(ref) & pd.isna(comp) & judged).sum())}
        if use.any():
            out.update(_rate_row(boot, conv[use], (ref[use] == comp[use]).astype(float), ci), status="ok",
                       note=note)
        else:
            out.update(_no_rate(), status="no_pairs", note=_join(note, "no common pair"))
        return out

    def absent(reference, judge, judge_type, why):
        return {"reference": reference, "judge": judge, "judge_type": judge_type, **_no_rate(),
                "n_no_verdict": 0, "status": "absent", "note": why}

    longer_note = "longer in words; equal lengths give no verdict"
    pos_note = "always the pair's system_a (stored order, randomised)"
    rows = []
    # reference: human majority
    why_h = ("human judgments are absent" if not (judgments["judge_kind"] == "human").any()
             else "no pair has a human majority winner")
    entries = [(ENSEMBLE, "llm-ensemble", ens, shown_llm, ""),
               *((j, "llm", wide[j], shown[j], "") for j in llm_judges),
               (LONGER, "trivial", longer, every_pair, longer_note),
               (POSITION_A, "trivial", pos_a, every_pair, pos_note)]
    for judge, jtype, comp, judged, note in entries:
        if not has_human:
            rows.append(absent(HUMAN_MAJORITY, judge, jtype, why_h))
        elif jtype.startswith("llm") and not has_llm:
            rows.append(absent(HUMAN_MAJORITY, judge, jtype, "LLM judgments are absent"))
        else:
            rows.append(row(HUMAN_MAJORITY, judge, jtype, human, comp, judged, note))
    loo = _loo_majority(judgments, "human")
    loo = loo[loo["winner"].notna()]  # raters who named a winner
    loo_use = loo[loo["other_winner"].notna()]
    if loo_use.empty:
        rows.append(absent(HUMAN_MAJORITY, HUMAN_CEILING, "human",
                           why_h if not has_human else "no pair with two or more decisive human raters"))
    else:
        c = meta["conversation_id"].reindex(loo_use["pair_id"]).to_numpy()
        r = {"reference": HUMAN_MAJORITY, "judge": HUMAN_CEILING, "judge_type": "human",
             "n_no_verdict": int(loo["other_winner"].isna().sum()), "status": "ok",
             "note": "leave-one-out human ceiling: each rater's winner vs the majority of the other raters "
                     "of the pair, pooled over (rater, pair); n_pairs counts rater-pair comparisons, "
                     "n_no_verdict those whose other raters are tied; not the paper's rater-to-rater percent "
                     "agreement (agreement_inter_human, measure percent_agreement)"}
        r.update(_rate_row(boot, c, (loo_use["winner"] == loo_use["other_winner"]).to_numpy(float), ci))
        r["n_conversations"] = int(len(np.unique(c)))
        rows.append(r)
    # reference: LLM-ensemble majority
    if not has_llm:
        for judge, jtype in ((LONGER, "trivial"), (POSITION_A, "trivial"), (HUMAN_MAJORITY, "human")):
            rows.append(absent(LLM_MAJORITY, judge, jtype, "LLM judgments are absent"))
    else:
        loo_llm = _loo_majority(judgments, "llm")
        for j in llm_judges:
            lj = loo_llm[loo_llm["judge"] == j].drop_duplicates("pair_id").set_index("pair_id")
            rows.append(row(LLM_MAJORITY, j, "llm", lj["other_winner"].reindex(meta.index), wide[j], shown[j],
                            "against the majority of the other LLM judges (leave-one-out)"))
        rows.append(row(LLM_MAJORITY, LONGER, "trivial", ens, longer, every_pair, longer_note))
        rows.append(row(LLM_MAJORITY, POSITION_A, "trivial", ens, pos_a, every_pair, pos_note))
        if has_human:
            rows.append(row(LLM_MAJORITY, HUMAN_MAJORITY, "human", ens, human,
                            _shown(judgments, meta.index, "human")))
        else:
            rows.append(absent(LLM_MAJORITY, HUMAN_MAJORITY, "human", why_h))
    return _frame(rows, TRIVIAL_COLUMNS)
