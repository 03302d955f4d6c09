"""Stability of the ensemble's agreement under judge subsampling (§9.9).

(:mod:`heart.stats.agreement`: stability under judge subsampling.)
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from heart.stats.agreement.majority import HUMAN_MAJORITY, LLM_MAJORITY, as_vote, frame, majority_oriented, winners
from heart.stats.agreement.orientation import orient


STABILITY_COLUMNS = ["reference", "k", "n_judges", "n_subsets", "sampling", "mean_agreement", "sd_agreement",
                     "q_low", "q_high", "min_agreement", "max_agreement", "mean_n_pairs", "mean_coverage",
                     "status", "note"]


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
    wide = winners(judgments, "llm")
    judges = list(wide.columns)
    if not judges:
        return frame([{"reference": None, "k": 0, "n_judges": 0, "n_subsets": 0, "sampling": None,
                        "mean_agreement": math.nan, "sd_agreement": math.nan, "q_low": math.nan,
                        "q_high": math.nan, "min_agreement": math.nan, "max_agreement": math.nan,
                        "mean_n_pairs": math.nan, "mean_coverage": math.nan, "status": "absent",
                        "note": "LLM judgments are absent"}], STABILITY_COLUMNS)
    human = majority_oriented(judgments, "human").set_index("pair_id")["winner"].reindex(wide.index)
    if human.notna().any():
        reference, ref = HUMAN_MAJORITY, as_vote(human.to_frame())[:, 0]
        ref_note = "reference: human majority"
    else:
        reference = LLM_MAJORITY
        ref = as_vote(majority_oriented(judgments, "llm").set_index("pair_id")["winner"]
                       .reindex(wide.index).to_frame())[:, 0]
        ref_note = "human judgments are absent: reference is the majority of all LLM judges"
    votes = as_vote(wide)
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
    return frame(rows, STABILITY_COLUMNS)
