"""heart.stats.multiple_testing: Benjamini-Hochberg against statsmodels, by hand, and within families."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from heart.stats import multiple_testing


def test_bh_matches_statsmodels_on_random_pvalues():
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 0.005, size=10), rng.uniform(0, 1, size=30)])
    adj, rej = multiple_testing.bh(p, alpha=0.05)
    ref_rej, ref_adj, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose(adj, ref_adj)
    np.testing.assert_array_equal(rej, ref_rej)
    assert 0 < rej.sum() < len(p)


def test_bh_hand_checked():
    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): p*m/rank = 0.04, 0.04, 0.04, 0.5
    adj, rej = multiple_testing.bh([0.03, 0.5, 0.01, 0.02])
    np.testing.assert_allclose(adj, [0.04, 0.5, 0.04, 0.04])
    assert rej.tolist() == [True, False, True, True]
    # step-up monotonicity: 0.005*4/1 = 0.02, 0.01*4/2 = 0.02, 0.03*4/3 = 0.04, 0.04*4/4 = 0.04
    adj, _ = multiple_testing.bh([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adj, [0.02, 0.04, 0.04, 0.02])
    adj, rej = multiple_testing.bh([0.01, np.nan])  # NaN stays out of the correction
    assert adj[0] == pytest.approx(0.01) and np.isnan(adj[1]) and rej.tolist() == [True, False]


def test_bh_within_families():
    t = pd.DataFrame({"family": ["x", "x", "y", "y"], "p_value": [0.01, 0.04, 0.04, 0.5]})
    out = multiple_testing.adjust_within_families(t)
    np.testing.assert_allclose(out["p_adj"], [0.02, 0.04, 0.08, 0.5])  # not [0.04, 0.0533, 0.0533, 0.5]
    assert out["reject"].tolist() == [True, True, False, False]
