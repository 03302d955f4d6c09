"""Bias audits of the judges: position, length and self-preference (HEART paper §9.12). Each audit, its test
and its family of tests: ``docs/methods/bias.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from heart.stats import bootstrap
from heart.stats.agreement.majority import ENSEMBLE, HUMAN_MAJORITY, majority
from heart.stats.agreement.orientation import pair_meta
from heart.stats.agreement.trivial import NO_TEXTS, pair_lengths
from heart.stats.multiple_testing import adjust_within_families

POSITION_COLUMNS = ["judge", "n_verdicts", "n_shown_a_wins", "share_shown_a", "ci_low", "ci_high", "p_value",
                    "family", "p_adj", "reject", "status", "note"]
LENGTH_COLUMNS = ["judge", "judge_kind", "n_pairs", "n_longer_wins", "share_longer_wins", "ci_low", "ci_high",
                  "p_value", "n_equal_length", "n_unknown_length", "family", "p_adj", "reject", "status",
                  "note"]
SELF_COLUMNS = ["judge", "judge_family", "n_pairs", "n_conversations", "win_rate_self", "win_rate_others",
                "difference", "ci_low", "ci_high", "p_value", "family", "p_adj", "reject", "status", "note"]


def _binomial(k: int, n: int, ci: float) -> tuple[float, dict]:
    """k/n; its exact (Clopper–Pearson) interval at level ``ci`` and two-sided binomial p-value against 1/2."""
    test = stats.binomtest(int(k), int(n), 0.5, alternative="two-sided")
    interval = test.proportion_ci(confidence_level=ci, method="exact")
    return k / n, {"ci_low": float(interval.low), "ci_high": float(interval.high),
                   "p_value": float(test.pvalue)}


def _adjusted(rows: list[dict], family: str, columns: list[str], alpha: float) -> pd.DataFrame:
    out = pd.DataFrame(rows).assign(family=family)
    return adjust_within_families(out, alpha=alpha).reindex(columns=columns)


def position_bias(verdicts: pd.DataFrame, alpha: float = 0.05, ci: float = 0.95) -> pd.DataFrame:
    """Per LLM judge, the share of parsed single-order verdicts won by the response shown as A.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Per-(pair, judge, order) verdicts (``judge_verdicts`` schema), one or more judges
        concatenated: ``judge``, ``parse_ok``, ``winner_shown``.
    alpha : float
        FDR for the BH adjustment across judges (family "position_bias").
    ci : float
        Coverage of the exact interval.

    Returns
    -------
    pandas.DataFrame
        ``POSITION_COLUMNS``: share with exact (Clopper-Pearson) CI and two-sided binomial
        p-value against 1/2; judges without a parsed verdict get status "absent".
    """
    empty = {"n_verdicts": 0, "n_shown_a_wins": 0, "share_shown_a": math.nan, "ci_low": math.nan,
             "ci_high": math.nan, "p_value": math.nan, "status": "absent"}
    rows = []
    for judge, g in (verdicts.groupby("judge", sort=True) if len(verdicts) else []):
        ok = g["parse_ok"].fillna(False).astype(bool)
        unknown = ok & g["order"].isna() if "order" in g.columns else ok & False  # imported, order not given
        parsed = g[ok & ~unknown & g["winner_shown"].isin(["A", "B"])]
        n, k = len(parsed), int((parsed["winner_shown"] == "A").sum())
        left_out = (f"{int(unknown.sum())} verdict(s) of unknown shown order left out (the source does not "
                    "say which response was shown first)") if unknown.any() else ""
        if n:
            share, test = _binomial(k, n, ci)
            rows.append({"judge": judge, "n_verdicts": n, "n_shown_a_wins": k, "share_shown_a": share, **test,
                         "status": "ok", "note": left_out})
        else:
            rows.append({"judge": judge, **empty,
                         "note": "order unknown: " + left_out if unknown.any() else "no parsed verdict"})
    if not rows:
        rows.append({"judge": None, **empty, "note": "LLM verdicts are absent"})
    return _adjusted(rows, "position_bias", POSITION_COLUMNS, alpha)


def length_bias(judgments: pd.DataFrame, texts: pd.DataFrame, alpha: float = 0.05,
                ci: float = 0.95) -> pd.DataFrame:
    """Per judge, the share of decided pairs of unequal length won by the longer response.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    texts : pandas.DataFrame
        Completions (item_id, system, contributor_id, text); length in words.
    alpha : float
        FDR for the BH adjustment across the rows (family "length_bias").
    ci : float
        Coverage of the exact interval.

    Returns
    -------
    pandas.DataFrame
        ``LENGTH_COLUMNS``: one row per LLM judge, plus "llm-ensemble" (majority) and
        "human-majority" (one verdict per pair, so rows stay independent across raters), with
        exact CI and two-sided binomial p-value against 1/2. Missing kinds: "absent" rows.
        ``n_equal_length`` counts decided pairs whose two texts have the same length (null when no length is
        known), ``n_unknown_length`` those with a text missing: both are left out of the test.
    """
    measured = pair_lengths(judgments, texts)
    lengths, known = measured["longer"], measured["len_a"].notna() & measured["len_b"].notna()
    entries = []
    for judge in sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique()):
        g = judgments[judgments["judge"] == judge].drop_duplicates("pair_id").set_index("pair_id")["winner"]
        entries.append((judge, "llm", g))
    for name, kind in ((ENSEMBLE, "llm"), (HUMAN_MAJORITY, "human")):
        entries.append((name, kind, majority(judgments, kind).set_index("pair_id")["winner"]))
    rows = []
    for judge, kind, win in entries:
        win = win[win.isin(["a", "b"])]
        longer, seen = lengths.reindex(win.index), known.reindex(win.index, fill_value=False)
        use = longer.notna()
        n = int(use.sum())
        # equal and unknown are told apart: a pair whose text is missing has no length, never "equal"
        row = {"judge": judge, "judge_kind": kind, "n_unknown_length": int((~seen).sum()),
               "n_equal_length": int((seen & longer.isna()).sum()) if seen.any() else None}
        label = "LLM" if kind == "llm" else kind
        if n:
            k = int((win[use] == longer[use]).sum())
            share, test = _binomial(k, n, ci)
            row.update(n_pairs=n, n_longer_wins=k, share_longer_wins=share, **test, status="ok",
                       note="length in words; pairs of equal length left out" + (
                           f"; {row['n_unknown_length']} pair(s) of unknown length (a text missing) left out"
                           if row["n_unknown_length"] else ""))
        else:
            row.update(n_pairs=0, n_longer_wins=0, share_longer_wins=math.nan, ci_low=math.nan,
                       ci_high=math.nan, p_value=math.nan, status="absent",
                       note=(f"{NO_TEXTS}: lengths unknown" if texts is None or len(texts) == 0
                             else f"no decided {label} verdict on a pair of unequal length"
                             if len(win) else f"{label} judgments are absent"))
        rows.append(row)
    return _adjusted(rows, "length_bias", LENGTH_COLUMNS, alpha)


def self_preference(judgments: pd.DataFrame, judge_families: dict[str, str], system_families: dict[str, str],
                    n_boot: int = 1000, seed: int = 0, alpha: float = 0.05, ci: float = 0.95) -> pd.DataFrame:
    """Per LLM judge: does it favour its own family's systems more than other-family judges do?

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    judge_families : dict
        LLM judge -> model family.
    system_families : dict
        System -> family ("human", "dataset" for the non-model systems).
    n_boot, seed : int
        Conversation-level bootstrap of the difference (:mod:`heart.stats.bootstrap`; the conversations of
        the whole judgments table are resampled).
    alpha : float
        FDR for the BH adjustment across judges (family "self_preference").
    ci : float
        Coverage of the percentile interval.

    Returns
    -------
    pandas.DataFrame
        ``SELF_COLUMNS``. On the pairs the judge decided that hold exactly one system of its
        family and that at least one other-family LLM judge decided: ``win_rate_self`` (the judge
        picks the own-family side), ``win_rate_others`` (mean over pairs of the other-family
        judges' share of votes for that side) and their ``difference`` with bootstrap CI and
        p-value. Under family exclusion a judge never sees its own family: status "absent".
    """
    llm = judgments[judgments["judge_kind"] == "llm"]
    meta = pair_meta(judgments)
    fam_a = meta["system_a"].map(system_families)
    fam_b = meta["system_b"].map(system_families)
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    decided = llm[llm["winner"].isin(["a", "b"])].assign(family_=lambda d: d["judge"].map(judge_families))
    empty = {"n_pairs": 0, "n_conversations": 0, "win_rate_self": math.nan, "win_rate_others": math.nan,
             "difference": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan}
    rows = []
    for judge in sorted(llm["judge"].unique()):
        fam = judge_families.get(judge)
        base = {"judge": judge, "judge_family": fam}
        if fam is None:
            rows.append({**base, **empty, "status": "absent", "note": "judge family unknown"})
            continue
        own_side = pd.Series(np.where((fam_a == fam) & (fam_b != fam), "a",
                                      np.where((fam_b == fam) & (fam_a != fam), "b", None)),
                             index=meta.index, dtype=object)
        mine = decided[decided["judge"] == judge].drop_duplicates("pair_id").set_index("pair_id")["winner"]
        mine = mine[own_side.reindex(mine.index).notna()]
        if mine.empty:
            rows.append({**base, **empty, "status": "absent",
                         "note": "the judge decided no pair holding exactly one system of its family "
                                 "(family exclusion?)"})
            continue
        others = decided[(decided["family_"] != fam) & decided["family_"].notna()
                         & decided["pair_id"].isin(mine.index)]
        others_own = own_side.reindex(others["pair_id"]).to_numpy(object)
        others_share = others["winner"].to_numpy(object) == others_own
        others_share = pd.Series(others_share.astype(float), index=others["pair_id"].to_numpy()).groupby(
            level=0).mean()
        pids = mine.index.intersection(others_share.index)
        if pids.empty:
            rows.append({**base, **empty, "status": "no_pairs",
                         "note": "no other-family LLM judge decided the same pairs"})
            continue
        self_win = (mine.reindex(pids) == own_side.reindex(pids)).to_numpy(float)
        other_win = others_share.reindex(pids).to_numpy(float)
        c = meta["conversation_id"].reindex(pids).to_numpy()
        diff, reps = boot.rate(c, self_win - other_win)
        lo, hi = bootstrap.interval(reps, ci)
        rows.append({**base, "n_pairs": int(len(pids)), "n_conversations": int(len(np.unique(c))),
                     "win_rate_self": float(self_win.mean()), "win_rate_others": float(other_win.mean()),
                     "difference": diff, "ci_low": lo, "ci_high": hi,
                     "p_value": bootstrap.p_value(diff, reps), "status": "ok",
                     "note": "reference: other-family LLM judges on the same pairs"})
    if not rows:
        rows.append({"judge": None, "judge_family": None, **empty, "status": "absent",
                     "note": "LLM judgments are absent"})
    return _adjusted(rows, "self_preference", SELF_COLUMNS, alpha)
