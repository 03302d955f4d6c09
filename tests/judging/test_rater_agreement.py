"""Agreement with the other raters' majority and the outlier-rater test, on hand-worked examples."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from heart.judging import human_judgments, rater_agreement


def votes(rows):
    """rows: (rater, item, shown_a, shown_b, choice) -> a human judgments table (no quality checks)."""
    return pd.DataFrame([{"rater_id": r, "item_id": i, "shown_a": a, "shown_b": b, "choice": c,
                          "seconds_spent": 10.0, "qc_expected": None} for r, i, a, b, c in rows])


def test_majority_agreement_is_leave_one_out_and_orientation_aware():
    # pair i1 (m1 vs m2): r1 says m1 better (A), r2 too but saw it as B (m2, m1) and chose 4-5, r3 says m2.
    table = votes([("r1", "i1", "m1", "m2", 1), ("r2", "i1", "m2", "m1", 5), ("r3", "i1", "m1", "m2", 4),
                   # pair i2: r1 and r2 "about the same", r3 says A (m1)
                   ("r1", "i2", "m1", "m2", 3), ("r2", "i2", "m1", "m2", 3), ("r3", "i2", "m1", "m2", 2),
                   # a quality check is not a vote
                   ("r3", "i9", "original", "qc:x", 5)])
    table.loc[6, "qc_expected"] = "A"
    out = rater_agreement.majority_agreement(table).set_index("rater_id")
    # i1: others of r1 = {r2: m1, r3: m2} -> tie, skipped; r2 likewise; r3: others {m1, m1} -> disagrees.
    # i2: r1's others {same, m1} tie -> skipped; r2 likewise; r3's others {same, same} -> disagrees.
    assert out.loc["r1", "n_compared"] == 0 and out.loc["r2", "n_compared"] == 0
    assert out.loc["r3", "n_compared"] == 2 and out.loc["r3", "n_agreed"] == 0
    assert np.isnan(out.loc["r1", "agreement"])


def test_an_outlier_is_found_by_binomial_test_with_bh_and_excluded_only_when_asked():
    rows = []
    for k in range(30):  # 4 raters agree on every pair; r5 votes the other way on 24 of 30
        for r in ("r1", "r2", "r3", "r4"):
            rows.append((r, f"i{k}", "m1", "m2", 1))
        rows.append(("r5", f"i{k}", "m1", "m2", 5 if k < 24 else 1))
    table = votes(rows)
    out = rater_agreement.outliers(table, 0.05).set_index("rater_id")
    # each of r1..r4 agrees on all 30 (their others always hold a strict majority for m1)
    assert out.loc["r1", "n_agreed"] == 30 and out.loc["r5", "n_agreed"] == 6
    pool = (4 * 30 + 6) / (5 * 30)
    assert out["pool_agreement"].iloc[0] == pytest.approx(pool)
    p5 = binomtest(6, 30, pool, alternative="less").pvalue
    assert out.loc["r5", "outlier_p"] == pytest.approx(p5)
    p = [binomtest(30, 30, pool, alternative="less").pvalue] * 4 + [p5]
    # Benjamini-Hochberg by hand: the smallest p (r5) times m/rank = 5/1
    assert out.loc["r5", "outlier_q"] == pytest.approx(min(1.0, p5 * 5))
    assert out["outlier"].tolist() == [False, False, False, False, True] and max(p[:4]) == 1.0
    judged = table.assign(qc_expected=np.nan)
    report = human_judgments.quality_control(judged, 0.5, 0, 900).set_index("rater_id")
    assert not report["excluded"].any() and report.loc["r5", "majority_agreement"] == pytest.approx(0.2)
    applied = human_judgments.quality_control(judged, 0.5, 0, 900, outlier_alpha=0.05).set_index("rater_id")
    assert applied["excluded"].tolist() == [False, False, False, False, True]
    assert "agrees with the other raters' majority on 6 of 30 pairs (20%)" in applied.loc["r5", "reason"]
