"""The exploratory ablations' rankers (heart.stats.rankers), each held to hand-worked values or to an
independent implementation (scipy's minimiser of the per-comparison likelihood, statsmodels' probit GLM,
scipy's Kendall tau)."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from heart.stats import bradley_terry as bt
from heart.stats import rankers


def test_tau_b_is_scipys_kendalltau_row_by_row_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(50, 7)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(50, 7)).astype(float)
    got = rankers.tau_b(x, y)
    for k in range(50):
        want = stats.kendalltau(x[k], y[k]).statistic
        assert (math.isnan(want) and math.isnan(got[k])) or got[k] == pytest.approx(want, abs=1e-12)
    assert np.isnan(rankers.tau_b([1, 1, 1], [1, 2, 3]))  # every system alike: undefined
    assert rankers.tau_b(np.arange(5.0), np.arange(5.0)[None, :].repeat(3, 0)).tolist() == [1.0, 1.0, 1.0]


def test_davidson_two_systems_by_hand():
    """Two systems: the model is saturated, so the MLE reproduces the shares: 6 wins, 3 losses, 2 ties give
    exp(theta_1 - theta_2) = 6/3 and nu = 2 / sqrt(6 * 3)."""
    W = np.array([[0, 6], [3, 0]])
    T = np.array([[0, 2], [0, 0]])
    theta, nu = rankers.davidson(W, T, alpha=0.0)
    assert theta[0] - theta[1] == pytest.approx(math.log(2), abs=1e-9)
    assert nu == pytest.approx(2 / math.sqrt(18), abs=1e-9)


def _davidson_by_observation(outcomes, K, alpha):
    """The per-comparison negative log-likelihood (plus ridge), minimised by scipy (independent of the
    batched Newton fit): outcomes are (i, j, 'win'|'loss'|'tie') of i against j."""
    def nll(x):
        theta, nu = x[:K], math.exp(x[K])
        total = 0.5 * alpha * float(theta @ theta)
        for i, j, what in outcomes:
            pi, pj = math.exp(theta[i]), math.exp(theta[j])
            tie = nu * math.sqrt(pi * pj)
            p = {"win": pi, "loss": pj, "tie": tie}[what] / (pi + pj + tie)
            total -= math.log(p)
        return total

    res = optimize.minimize(nll, np.zeros(K + 1), method="BFGS", options={"gtol": 1e-9})
    return res.x[:K] - res.x[:K].mean(), math.exp(res.x[K])


def test_davidson_matches_scipys_minimiser_of_the_per_comparison_likelihood():
    rng = np.random.default_rng(7)
    K, truth = 4, np.array([0.6, 0.1, -0.2, -0.5])
    outcomes = []
    for _ in range(150):
        i, j = rng.choice(K, 2, replace=False)
        pi, pj, tie = math.exp(truth[i]), math.exp(truth[j]), 0.8 * math.exp((truth[i] + truth[j]) / 2)
        u = rng.random() * (pi + pj + tie)
        outcomes.append((i, j, "win" if u < pi else "loss" if u < pi + pj else "tie"))
    W, T = np.zeros((K, K)), np.zeros((K, K))
    for i, j, what in outcomes:
        if what == "win":
            W[i, j] += 1
        elif what == "loss":
            W[j, i] += 1
        else:
            T[i, j] += 1
    for alpha in (0.0, 0.5):
        theta, nu = rankers.davidson(W, T, alpha=alpha)
        want_theta, want_nu = _davidson_by_observation(outcomes, K, alpha)
        assert theta == pytest.approx(want_theta, abs=1e-5)
        assert nu == pytest.approx(want_nu, rel=1e-5)
    # batched: a stack of matrices gives each one's fit
    stack_theta, stack_nu = rankers.davidson(np.stack([W, 2 * W]), np.stack([T, 2 * T]), alpha=0.0)
    assert stack_theta[0] == pytest.approx(rankers.davidson(W, T, alpha=0.0)[0], abs=1e-9)
    assert stack_theta[1] == pytest.approx(stack_theta[0], abs=1e-7)  # doubled counts: the same MLE


def test_davidson_without_ties_is_bradley_terry():
    W = np.array([[0, 5, 2], [3, 0, 4], [1, 2, 0]], dtype=float)
    theta, nu = rankers.davidson(W, np.zeros_like(W))
    assert nu == 0
    assert theta == pytest.approx(bt.fit_matrix(W), abs=1e-8)


def test_thurstone_is_statsmodels_probit_glm():
    sm = pytest.importorskip("statsmodels.api")
    W = np.array([[0, 7, 5, 9], [4, 0, 6, 5], [3, 5, 0, 6], [2, 4, 3, 0]], dtype=float)
    K = W.shape[0]
    rows, y, freq = [], [], []
    for i in range(K):
        for j in range(K):
            if i != j and W[i, j]:
                x = np.zeros(K)
                x[i], x[j] = 1.0, -1.0
                rows.append(x[1:])  # system 0 the reference
                y.append(1.0)
                freq.append(W[i, j])
    glm = sm.GLM(np.array(y + [0.0] * len(y)), np.vstack(rows + [-r for r in rows]),
                 family=sm.families.Binomial(link=sm.families.links.Probit()),
                 freq_weights=np.array(freq + freq)).fit(tol=1e-12)
    want = np.concatenate([[0.0], glm.params])
    got = rankers.thurstone(W, alpha=0.0)
    assert got == pytest.approx(want - want.mean(), abs=1e-6)


def test_win_rate_by_hand():
    W = np.array([[0, 3, 1], [1, 0, 0], [0, 2, 0]])  # system 0 won 4 of 5, 1 won 1 of 6, 2 won 2 of 3
    assert rankers.win_rate(W).tolist() == pytest.approx([4 / 5, 1 / 6, 2 / 3])
    assert np.isnan(rankers.win_rate(np.zeros((2, 2)))).all()


def test_online_elo_by_hand_and_repeats():
    # K 32 from 1000 each: A beats B (expected 0.5: +16), then B beats A (B expected 1/(1+10^(32/400)))
    r = rankers.online_elo([0, 1], [1, 0], K=2, k_factor=32)
    gain = 32 * (1 - 1 / (1 + 10 ** ((1016 - 984) / 400)))
    assert r.tolist() == pytest.approx([1016 - gain, 984 + gain])
    # a replicate plays a comparison as often as its conversation was drawn, where it stands
    reps = rankers.online_elo([0, 1], [1, 0], K=2, k_factor=32, repeats=[[1, 1], [2, 0], [0, 1]])
    assert reps[0].tolist() == pytest.approx(r.tolist())
    assert reps[1].tolist() == pytest.approx(rankers.online_elo([0, 0], [1, 1], K=2, k_factor=32).tolist())
    assert reps[2].tolist() == pytest.approx([984, 1016])
    # the order matters (the reason Chatbot Arena left online Elo for Bradley-Terry)
    assert rankers.online_elo([1, 0], [0, 1], K=2, k_factor=32).tolist() != pytest.approx(r.tolist())
