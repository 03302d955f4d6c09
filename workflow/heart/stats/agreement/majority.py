"""Votes, majorities, consensus and the paper's ambiguous pairs (§4.4).

(:mod:`heart.stats.agreement`: votes and majorities, consensus, ambiguous pairs.) Also the small helpers
every agreement table shares: a rate with its conversation-bootstrap interval, absent rows, notes.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np
import pandas as pd

from heart.stats import bootstrap
from heart.stats.agreement.orientation import axis_columns, axis_marks, orient, pair_axis_votes, pair_meta


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


MAJORITY_COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "kind", "judge_kind", "n_judgments",
                    "votes_a", "votes_b", "votes_neither", "n_unparsed", "winner", "share", "ambiguous",
                    "status", "note"]
AMBIGUITY_COLUMNS = ["pair_id", "conversation_id", "subset", "kind", "human_winner", "human_share",
                     "human_ambiguous", "axes_a", "axes_b", "axes_mixed", "ambiguous"]


def frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=columns)


def consensus_fraction(consensus=CONSENSUS) -> Fraction:
    """``consensus`` as an exact fraction in [1/2, 1] (``docs/methods/agreement.md``: consensus).

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


def show_fraction(frac: Fraction) -> str:
    return f"{frac.numerator}/{frac.denominator}"


def winners(judgments: pd.DataFrame, judge_kind: str = "llm") -> pd.DataFrame:
    """Pairs x judges of ``judge_kind``: "a" / "b" where the judge named a winner, else None."""
    ok = judgments[(judgments["judge_kind"] == judge_kind) & judgments["winner"].isin(["a", "b"])]
    wide = ok.drop_duplicates(["pair_id", "judge"]).pivot(index="pair_id", columns="judge", values="winner")
    wide = wide.reindex(pair_meta(judgments).index).astype(object)
    return wide.where(wide.notna(), None)


def shown_pairs(judgments: pd.DataFrame, index, judge_kind: str, judge: str | None = None) -> np.ndarray:
    """Pairs of ``index`` that a judge (or any judge of ``judge_kind``) was shown: it has a row for them."""
    sel = judgments["judge_kind"] == judge_kind
    if judge is not None:
        sel &= judgments["judge"] == judge
    # a hash lookup: numpy's isin on object arrays compares every pair (minutes at paper scale)
    return pd.Index(np.asarray(index, dtype=object)).isin(judgments.loc[sel, "pair_id"].unique())


def as_vote(winners) -> np.ndarray:
    """"a" -> +1, "b" -> -1, anything else -> 0."""
    w = pd.DataFrame(winners) if not isinstance(winners, (pd.Series, pd.DataFrame)) else winners
    return np.where(w == "a", 1, np.where(w == "b", -1, 0)).astype(np.int64)


def from_vote(votes: np.ndarray) -> np.ndarray:
    return np.where(votes > 0, "a", np.where(votes < 0, "b", None)).astype(object)


def rate(boot: bootstrap.ClusterBootstrap, conv, hits, ci: float) -> tuple[dict, np.ndarray]:
    """Agreement fields of a row (rate, interval, counts) and the bootstrap replicates of the rate."""
    est, reps = boot.rate(conv, hits)
    lo, hi = bootstrap.interval(reps, ci)
    hits = np.asarray(hits)
    return ({"n_pairs": int(hits.size), "n_agree": int(hits.astype(float).sum()) if hits.size else 0,
             "agreement": est, "ci_low": lo, "ci_high": hi, "n_conversations": int(len(np.unique(conv)))},
            reps)


def rate_row(boot: bootstrap.ClusterBootstrap, conv, hits, ci: float) -> dict:
    return rate(boot, conv, hits, ci)[0]


def no_rate() -> dict:
    return {"n_pairs": 0, "n_agree": 0, "agreement": math.nan, "ci_low": math.nan, "ci_high": math.nan,
            "n_conversations": 0}


def join_notes(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


# --- majorities ---------------------------------------------------------------------------------

def majority(judgments: pd.DataFrame, judge_kind: str, consensus=CONSENSUS, judges=None) -> pd.DataFrame:
    """Per pair, the majority winner of one kind of judge (``docs/methods/agreement.md``: votes, consensus).

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
    return majority_oriented(orient(judgments), judge_kind, consensus_fraction(consensus), judges)


def majority_oriented(judgments: pd.DataFrame, judge_kind: str, consensus: Fraction = CONSENSUS,
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
    out["winner"] = pd.Series(from_vote(np.sign(a - b)), index=out.index, dtype=object)
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


def loo_majority(judgments: pd.DataFrame, judge_kind: str) -> pd.DataFrame:
    """Every judgment of ``judge_kind`` against the majority winner of the other judges of its kind.

    Returns one row per judgment (parsed or not): ``pair_id``, ``judge``, ``winner`` ("a"/"b" or
    None), ``other_winner`` (None when the others are tied or absent).
    """
    j = judgments[judgments["judge_kind"] == judge_kind].copy()
    j["va"] = j["winner"].isin(["a"]).astype(int)
    j["vb"] = j["winner"].isin(["b"]).astype(int)
    tot = j.groupby("pair_id")[["va", "vb"]].transform("sum")
    j["other_winner"] = from_vote(np.sign((tot["va"] - j["va"]) - (tot["vb"] - j["vb"])).to_numpy())
    j["winner"] = np.where(j["winner"].isin(["a", "b"]), j["winner"].astype(object), None)
    return j[["pair_id", "judge", "winner", "other_winner"]]


# --- ambiguous pairs ----------------------------------------------------------------------------

def ambiguity(judgments: pd.DataFrame, consensus=CONSENSUS) -> pd.DataFrame:
    """Per pair, the two conditions of the paper's ambiguous subset (§4.4; ``docs/methods/agreement.md``).

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
    human = majority_oriented(j, "human", consensus_fraction(consensus))
    return ambiguity_oriented(j, human).reset_index()


def ambiguity_oriented(judgments: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
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
