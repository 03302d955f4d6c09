"""Agreement of the LLM judges with the human majority, in every scope (§4.4, §4.9, §9.9).

(:mod:`heart.stats.agreement`: agreement with the human majority.)
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd

from heart.common.vocabulary import SUBSETS
from heart.stats import bootstrap
from heart.stats.agreement.majority import (
    CONSENSUS, ENSEMBLE, HUMAN_MAJORITY, MEAN_OF_JUDGES, ambiguity_oriented, consensus_fraction, frame, join_notes,
    majority_oriented, no_rate, rate, show_fraction, shown_pairs, winners)
from heart.stats.agreement.orientation import orient


AGREEMENT_COLUMNS = ["reference", "judge", "scope", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                     "n_conversations", "n_no_verdict", "n_no_reference", "status", "note"]


def _scopes(amb: pd.DataFrame, consensus: Fraction) -> list[tuple[str, np.ndarray | None, str]]:
    """(scope, pair mask or None when the scope cannot be formed, note) for every scope."""
    c = show_fraction(consensus)
    h_amb = amb["human_ambiguous"].to_numpy(bool)
    mixed = amb["axes_mixed"]
    all_pairs = np.ones(len(amb), bool)
    if mixed.notna().any():
        paper = amb["ambiguous"].to_numpy(bool)
        unknown = int((h_amb & mixed.isna().to_numpy(bool)).sum())
        paper_note = join_notes(f"paper §4.4: no clear human consensus (no human majority winner, or share < {c}) "
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
        ``AGREEMENT_COLUMNS``, one row per (judge, scope) (``docs/methods/agreement.md``: agreement). ``judge``
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
    human = majority_oriented(judgments, "human", frac)
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
        return frame([{"reference": HUMAN_MAJORITY, "judge": name, "scope": scope, **no_rate(),
                        "n_no_verdict": 0, "n_no_reference": 0, "status": "absent",
                        "note": f"{missing}: human-LLM agreement cannot be computed"}
                       for name in names for scope in ("all", "ambiguous")], AGREEMENT_COLUMNS)
    amb = ambiguity_oriented(judgments, human)
    scopes = _scopes(amb, frac)
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    wide = winners(judgments, "llm")
    pair_ids = human["pair_id"].to_numpy()
    ref = human["winner"].to_numpy(object)
    conv = human["conversation_id"].to_numpy()
    comparators = {ENSEMBLE: (majority_oriented(judgments, "llm", frac)["winner"].to_numpy(object),
                              shown_pairs(judgments, pair_ids, "llm"))}
    comparators.update({j: (wide[j].to_numpy(object), shown_pairs(judgments, pair_ids, "llm", j))
                        for j in llm_judges})
    rows, reps, used = {}, {}, {}
    for name, (comp, seen) in comparators.items():
        for scope, mask, scope_note in scopes:
            row = {"reference": HUMAN_MAJORITY, "judge": name, "scope": scope}
            if mask is None:
                row.update(no_rate(), n_no_verdict=0, n_no_reference=0, status="absent", note=scope_note)
                rows[name, scope] = row
                continue
            base = mask & seen
            use = base & pd.notna(ref) & pd.notna(comp)
            row.update(n_no_verdict=int((base & pd.notna(ref) & pd.isna(comp)).sum()),
                       n_no_reference=int((base & pd.isna(ref)).sum()))
            name_note = "LLM-ensemble majority vs human majority (paper §9.9)" if name == ENSEMBLE else ""
            if use.any():
                fields, reps[name, scope] = rate(boot, conv[use], (comp[use] == ref[use]).astype(float), ci)
                row.update(fields, status="ok", note=join_notes(name_note, scope_note))
                used[name, scope] = use
            else:
                row.update(no_rate(), status="no_pairs",
                           note=join_notes(name_note, scope_note, f"no pair in scope '{scope}' with both a human "
                                                             "majority winner and a verdict"))
            rows[name, scope] = row
    for scope, mask, scope_note in scopes:
        rows[MEAN_OF_JUDGES, scope] = _mean_of_judges(scope, mask, scope_note, llm_judges, rows, reps, used,
                                                      conv, boot, ci)
    return frame([rows[name, scope] for name in names for scope, _, _ in scopes], AGREEMENT_COLUMNS)


def _mean_of_judges(scope, mask, scope_note, judges, rows, reps, used, conv, boot, ci) -> dict:
    """The "mean-of-judges" row of one scope from the judges' rows and bootstrap replicates."""
    row = {"reference": HUMAN_MAJORITY, "judge": MEAN_OF_JUDGES, "scope": scope}
    if mask is None:
        return {**row, **no_rate(), "n_no_verdict": 0, "n_no_reference": 0, "status": "absent",
                "note": scope_note}
    judge_rows = [rows[j, scope] for j in judges]
    ok = [j for j in judges if rows[j, scope]["status"] == "ok"]
    row.update({k: int(sum(r[k] for r in judge_rows)) for k in ("n_no_verdict", "n_no_reference")})
    if not ok:
        return {**row, **no_rate(), "status": "no_pairs",
                "note": join_notes(scope_note, f"no LLM judge has a pair in scope '{scope}' with a human majority "
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
               note=join_notes(f"unweighted mean over {len(ok)} of {len(judges)} LLM judges of each judge's "
                          "agreement with the human majority (paper §4.4); n_pairs, n_agree, n_no_verdict, "
                          f"n_no_reference summed over the judges (pooled rate {n_agree / n_pairs:.4f})",
                          scope_note))
    return row
