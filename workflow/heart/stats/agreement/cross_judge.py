"""Agreement between LLM judges (or families of judges), with Cohen's κ (§9.9).

(:mod:`heart.stats.agreement`: cross-judge agreement.)
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd

from heart.stats import bootstrap, reliability
from heart.stats.agreement.majority import frame, majority_oriented, rate_row, winners
from heart.stats.agreement.orientation import orient, pair_meta


CROSS_COLUMNS = ["scope", "judge_1", "judge_2", "n_judges", "n_pairs", "n_agree", "agreement", "ci_low",
                 "ci_high", "kappa", "kappa_ci_low", "kappa_ci_high", "n_conversations", "status", "note"]


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
        wide = pd.DataFrame({g: majority_oriented(judgments, "llm", judges=members[g]).set_index("pair_id")["winner"]
                             for g in units})
    else:
        units = sorted(llm["judge"].unique())
        wide = winners(judgments, "llm")[units] if units else pd.DataFrame()
    if len(units) < 2:
        return frame([{"scope": "pairwise", "judge_1": units[0] if units else None, "judge_2": None,
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
        all_row.update(rate_row(boot, conv[every], hits, ci), status="ok",
                       note=f"pairs judged by all of {', '.join(units)}")
    else:
        all_row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       n_conversations=0, status="no_pairs", note="no pair was judged by every judge")
    rows.append(all_row)
    return frame(rows, CROSS_COLUMNS)
