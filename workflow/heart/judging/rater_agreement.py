"""Does a rater vote with the others? Agreement with the majority, and an outlier-rater test (HEART §9.6).

A vote is a judgment's side -- shown A better (choices 1-2), about the same (3), shown B better (4-5) --
turned to the pair's own orientation (the two shown completions sorted by their refs), so raters who saw
a pair in opposite A/B orders are compared correctly. A rater's vote on a pair is compared with the
majority of the *other* raters of that pair (leave-one-out): a pair counts when at least two others voted
and their majority is strict. Quality-check rows (``qc_expected`` set) are not votes.

The outlier test asks whether a rater agrees with the others less than the pool does: a one-sided binomial
test of the rater's agreements against the pooled agreement rate of all raters, with Benjamini-Hochberg over
the raters (statsmodels). A rater whose adjusted p is below ``alpha`` is an outlier; rule ``human_judgments``
excludes them when ``human_judgments.outlier_alpha`` is set, with the figures in the raters table's reason.
It is the vote-level counterpart of FastChat's arena vote cleaning: it needs no gold labels, and it flags
raters who vote at random or against everyone, not raters who merely disagree now and then.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

COLUMNS = ["rater_id", "n_compared", "n_agreed", "agreement", "pool_agreement", "outlier_p", "outlier_q",
           "outlier"]


def votes(table: pd.DataFrame) -> pd.DataFrame:
    """rater_id, pair (item, ref, ref: the refs sorted), vote in {+1, 0, -1} of the pair's first ref; one
    row per rater and pair (a rater's repeated vote on a pair counts once: the first)."""
    real = table
    if "qc_expected" in table.columns:
        qc = table["qc_expected"]
        real = table[qc.isna() | qc.eq("")]
    rows = []
    for r in real.itertuples():
        first, second = sorted((str(r.shown_a), str(r.shown_b)))
        side = 1 if r.choice <= 2 else (-1 if r.choice >= 4 else 0)
        rows.append((r.rater_id, (str(r.item_id), first, second), side if str(r.shown_a) == first else -side))
    out = pd.DataFrame(rows, columns=["rater_id", "pair", "vote"])
    return out.drop_duplicates(["rater_id", "pair"], keep="first").reset_index(drop=True)


def majority_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """Per rater: pairs compared with the others' strict majority (``n_compared``), agreements and their share."""
    v = votes(table)
    by_pair = {pair: list(zip(g["rater_id"], g["vote"])) for pair, g in v.groupby("pair", sort=False)}
    agreed, compared = Counter(), Counter()
    for pair_votes in by_pair.values():
        for rater, vote in pair_votes:
            others = Counter(x for r, x in pair_votes if r != rater)
            if sum(others.values()) < 2:
                continue
            (top, n_top), *rest = others.most_common() or [(None, 0)]
            if rest and rest[0][1] == n_top:
                continue  # no strict majority among the others
            compared[rater] += 1
            agreed[rater] += vote == top
    raters = sorted(set(v["rater_id"]))
    return pd.DataFrame({"rater_id": raters, "n_compared": [compared[r] for r in raters],
                         "n_agreed": [agreed[r] for r in raters],
                         "agreement": [agreed[r] / compared[r] if compared[r] else np.nan for r in raters]})


def outliers(table: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """:func:`majority_agreement` with the outlier test (:data:`COLUMNS`); raters with nothing compared get
    no test (NaN p and q, not an outlier)."""
    # scipy and statsmodels here, not at the top: every job that reads human judgments imports this module
    # and only rule human_judgments tests raters (~1.4 s of imports a job)
    from scipy.stats import binomtest
    from statsmodels.stats.multitest import multipletests

    out = majority_agreement(table)
    total = out["n_compared"].sum()
    pool = out["n_agreed"].sum() / total if total else np.nan
    out["pool_agreement"] = pool
    tested = out["n_compared"] > 0
    p = [binomtest(int(k), int(n), float(pool), alternative="less").pvalue if n and 0 < pool < 1 else np.nan
         for k, n in zip(out["n_agreed"], out["n_compared"])]
    out["outlier_p"] = p
    out["outlier_q"] = np.nan
    valid = tested & out["outlier_p"].notna()
    if valid.any():
        out.loc[valid, "outlier_q"] = multipletests(out.loc[valid, "outlier_p"], method="fdr_bh")[1]
    out["outlier"] = out["outlier_q"].lt(alpha).fillna(False).astype(bool)
    return out[COLUMNS]


def reason(row) -> str:
    """Why a rater is an outlier, with the figures (for the raters table)."""
    return (f"agrees with the other raters' majority on {int(row.n_agreed)} of {int(row.n_compared)} pairs "
            f"({row.agreement:.0%}) against {row.pool_agreement:.0%} for all raters: outlier "
            f"(binomial p = {row.outlier_p:.2g}, Benjamini-Hochberg q = {row.outlier_q:.2g})")
