"""heart.stats.bradley_terry: strength-weighted Bradley–Terry fit, Elo, intervals, cluster bootstrap, ranks."""

from __future__ import annotations

import math

import choix
import numpy as np
import pandas as pd
import pytest

from heart.stats import bootstrap as cluster_bootstrap
from heart.stats import bradley_terry as bt


# --- helpers ----------------------------------------------------------------------------------

def random_comparisons(rng, theta, m, max_weight=5):
    """m comparisons between random distinct systems, outcomes drawn from BT(theta), weights 1..max_weight."""
    K = len(theta)
    i = rng.integers(0, K, m)
    j = (i + rng.integers(1, K, m)) % K
    a_won = rng.random(m) < 1 / (1 + np.exp(-(theta[i] - theta[j])))
    return np.where(a_won, i, j), np.where(a_won, j, i), rng.integers(1, max_weight + 1, m).astype(float)


def as_frame(winners, losers, weights, conversation_id, names=None):
    if names is None:
        names = np.array([f"s{k}" for k in range(max(winners.max(), losers.max()) + 1)])
    return pd.DataFrame({"winner": names[winners], "loser": names[losers], "weight": weights,
                         "conversation_id": conversation_id})


def clustered(rng, theta, n_conv, judges=4, rho=0.8):
    """Simulation: every conversation compares all system pairs; each pair is judged by ``judges`` judges
    who copy a shared per-(conversation, pair) outcome with probability ``rho`` and otherwise draw their
    own. Every single judgment is still Bernoulli(sigmoid(theta_i - theta_j)) -- so the weighted
    Bradley–Terry estimate is consistent for theta -- but judgments within a conversation are strongly
    correlated. Weights 1..5, independent of the outcome."""
    K = len(theta)
    i, j = np.triu_indices(K, k=1)
    P = len(i)
    p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
    shared = rng.random((n_conv, P)) < p
    own = rng.random((n_conv, P, judges)) < p[None, :, None]
    y = np.where(rng.random((n_conv, P, judges)) < rho, shared[:, :, None], own)
    ii = np.broadcast_to(i[None, :, None], y.shape).ravel()
    jj = np.broadcast_to(j[None, :, None], y.shape).ravel()
    y = y.ravel()
    conv = np.broadcast_to(np.arange(n_conv)[:, None, None], (n_conv, P, judges)).ravel()
    w = rng.integers(1, 6, y.size).astype(float)
    return as_frame(np.where(y, ii, jj), np.where(y, jj, ii), w, conv)


def replicate(winners, losers, weights):
    """choix's data format: one (winner, loser) row per unit of integer weight."""
    reps = weights.astype(int)
    return list(zip(np.repeat(winners, reps).tolist(), np.repeat(losers, reps).tolist()))


# --- fit against choix and against known parameters -------------------------------------------

@pytest.fixture
def connected_data():
    rng = np.random.default_rng(7)
    theta = rng.normal(0, 1, 8)
    w, los, x = random_comparisons(rng, theta, 400)
    assert bt._strongly_connected(bt.win_matrix(w, los, x, 8)[None])[0]  # the ML estimate exists
    return w, los, x


def test_fit_equals_choix_maximum_likelihood(connected_data):
    w, los, x = connected_data
    ours = bt.fit(w, los, x, 8, alpha=0)
    ref = choix.ilsr_pairwise(8, replicate(w, los, x), alpha=0.0, tol=1e-13, max_iter=100_000)
    assert abs(ours.mean()) < 1e-12
    np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)
    # the weights matter: the unweighted fit is a different estimate
    assert np.abs(bt.fit(w, los, x, 8, alpha=0) - bt.fit(w, los, np.ones_like(x), 8, alpha=0)).max() > 0.05


@pytest.mark.parametrize("alpha", [bt.DEFAULT_ALPHA, 1.0, 20.0])
def test_ridge_fit_equals_choix_map(connected_data, alpha):
    """choix.opt_pairwise minimises penalty*||theta||^2 + NLL, ours alpha/2*||theta||^2 + NLL:
    penalty = alpha/2 (choix's source, opt.PairwiseFcts.objective)."""
    w, los, x = connected_data
    ours = bt.fit(w, los, x, 8, alpha=alpha)
    ref = choix.opt_pairwise(8, replicate(w, los, x), alpha=alpha / 2, method="Newton-CG", tol=1e-13)
    np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)
    assert abs(ref.mean()) < 1e-6  # the ridge optimum is centred by itself


def test_fit_recovers_known_parameters():
    """Simulation: 40,000 weighted comparisons drawn from BT with known theta."""
    rng = np.random.default_rng(11)
    theta = np.linspace(-1.5, 1.5, 8)
    w, los, x = random_comparisons(rng, theta, 40_000)
    est = bt.fit(w, los, x, 8)
    np.testing.assert_allclose(est, theta - theta.mean(), atol=0.08)
    assert np.array_equal(np.argsort(est), np.arange(8))


def test_fit_edge_cases():
    w, los, x = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1.0, 2.0, 3.0])  # system 0 won everything
    with pytest.raises(ValueError, match="does not exist.*strongly connected"):
        bt.fit(w, los, x, 3, alpha=0)
    theta = bt.fit(w, los, x, 3)
    assert np.isfinite(theta).all() and theta.argmax() == 0 and abs(theta.mean()) < 1e-12
    assert bt.fit(w, los, x, 4)[3] == pytest.approx(0, abs=1e-12)  # no comparisons: the prior's 0
    with pytest.raises(ValueError, match="no comparisons"):
        bt.fit([], [], [], 3)
    with pytest.raises(ValueError, match="NaN"):
        bt.fit(w, los, [1.0, np.nan, 1.0], 3)
    with pytest.raises(ValueError, match="itself"):
        bt.fit([0, 1], [0, 2], [1, 1], 3)
    with pytest.raises(ValueError, match="0..2"):
        bt.fit([0, 3], [1, 2], [1, 1], 3)
    with pytest.raises(ValueError, match="alpha"):
        bt.fit(w, los, x, 3, alpha=-1)


def test_fit_matrix_is_batched():
    rng = np.random.default_rng(3)
    W = rng.integers(0, 6, (5, 4, 4)).astype(float) * (1 - np.eye(4))
    batched = bt.fit_matrix(W)
    for b in range(5):
        np.testing.assert_allclose(batched[b], bt.fit_matrix(W[b]), atol=1e-10)


def test_fit_matrix_on_its_pairs_equals_the_full_objective_minimised_by_scipy():
    """The fit works on the pairs i < j (one exp per pair); the objective it minimises is still the full
    K x K one: scipy's minimiser of sum W log(1 + exp(-(theta_i - theta_j))) + alpha/2 |theta|^2 gives the same
    strengths, for ordinary matrices and for one where a system won 5,000 to 0 (differences in the tens)."""
    from scipy.optimize import minimize

    def full(W, alpha):
        K = W.shape[0]

        def f(t):
            d = t[:, None] - t[None, :]
            return np.sum(W * np.logaddexp(0.0, -d)) + 0.5 * alpha * t @ t

        def grad(t):
            M = W / (1.0 + np.exp(t[:, None] - t[None, :]))  # W_ij (1 - P(i beats j))
            return M.sum(axis=0) - M.sum(axis=1) + alpha * t

        t = minimize(f, np.zeros(K), jac=grad, method="BFGS", options={"gtol": 1e-9}).x
        return t - t.mean()

    rng = np.random.default_rng(5)
    lopsided = np.zeros((4, 4))
    lopsided[0, 1:] = 5000.0
    lopsided[1, 2], lopsided[2, 3], lopsided[3, 1] = 3.0, 4.0, 2.0
    for W, alpha in [(rng.integers(0, 9, (6, 6)) * (1 - np.eye(6)), 0.01), (lopsided, 1e-3),
                     (rng.integers(0, 3, (9, 9)) * (1 - np.eye(9)), 0.5)]:
        W = np.asarray(W, float)
        np.testing.assert_allclose(bt.fit_matrix(W, alpha=alpha), full(W, alpha), atol=1e-5)


# --- Elo, asymptotic interval, ranks ----------------------------------------------------------

def test_elo_formula():
    np.testing.assert_allclose(bt.elo([0.0, math.log(10)]), [1300.0, 1700.0])
    np.testing.assert_allclose(bt.elo([5.0, 5.0 + math.log(10)]), [1300.0, 1700.0])  # shift-invariant
    np.testing.assert_allclose(bt.elo([[0.0, 0.0, 3 * math.log(10)]]), [[1100.0, 1100.0, 2300.0]])


def test_asymptotic_ci_formula():
    lo, hi = bt.asymptotic_ci([0.0, 0.0], [100, 400])
    half = 1.96 * 400 / math.log(10) * np.array([0.1, 0.05])
    np.testing.assert_allclose(lo, 1500 - half)
    np.testing.assert_allclose(hi, 1500 + half)
    lo, hi = bt.asymptotic_ci([0.0, 0.0], [100, 400], z=1.0)
    np.testing.assert_allclose(hi - 1500, half / 1.96)
    with pytest.raises(ValueError, match="> 0"):
        bt.asymptotic_ci([0.0, 0.0], [100, 0])


def test_rank_by_overlap_and_separability():
    #               A   B   C   D
    lo = np.array([10, 15, 0, 30.0])
    hi = np.array([20, 25, 5, 40.0])
    point = (lo + hi) / 2
    assert bt.rank_by_overlap(point, lo, hi).tolist() == [2, 2, 4, 1]
    assert bt.separability(lo, hi) == pytest.approx(5 / 6)  # only A-B overlap
    # touching intervals overlap
    assert bt.rank_by_overlap([1, 2], [0, 1], [1, 2]).tolist() == [1, 1]
    assert bt.separability([0, 1], [1, 2]) == 0.0
    assert bt.separability([0, 1.5], [1, 2]) == 1.0
    with pytest.raises(ValueError, match="two systems"):
        bt.separability([0], [1])


# --- judgments -> comparisons -----------------------------------------------------------------

def judgments_frame():
    rows = [  # system_a, system_b, status, winner, strength, axis_H, axis_E
        ("x", "y", "ok", "a", 3, 2, -4),
        ("x", "y", "ok", "b", 5, 0, pd.NA),
        ("y", "z", "inconsistent", None, pd.NA, 1, 1),
        ("y", "z", "unparsed", None, pd.NA, pd.NA, pd.NA),
        ("z", "x", "tie", None, pd.NA, pd.NA, pd.NA),
        ("z", "x", "ok", "a", 1, -5, 3),
    ]
    df = pd.DataFrame(rows, columns=["system_a", "system_b", "status", "winner", "strength",
                                     "axis_H", "axis_E"])
    for c in ("strength", "axis_H", "axis_E"):
        df[c] = df[c].astype("Int64")
    df["conversation_id"] = [1, 1, 2, 2, 3, 3]
    for k in "ART":
        df[f"axis_{k}"] = pd.array([pd.NA] * len(df), dtype="Int64")
    return df


def test_comparisons_overall_orientation_and_weights():
    comp = bt.comparisons(judgments_frame())
    assert list(comp.columns) == bt.COMPARISON_COLUMNS
    assert comp.to_dict("records") == [
        {"winner": "x", "loser": "y", "weight": 3.0, "conversation_id": 1},
        {"winner": "y", "loser": "x", "weight": 5.0, "conversation_id": 1},  # winner "b" -> system_b won
        {"winner": "z", "loser": "x", "weight": 1.0, "conversation_id": 3},
    ]
    assert bt.comparisons(judgments_frame(), weighted=False)["weight"].tolist() == [1.0, 1.0, 1.0]


def test_comparisons_axis_sign_and_magnitude():
    comp = bt.comparisons(judgments_frame(), axis="H")  # 0 and NA left out; inconsistent rows keep axis marks
    assert comp[["winner", "loser", "weight"]].values.tolist() == [
        ["x", "y", 2.0], ["y", "z", 1.0], ["x", "z", 5.0]]
    comp = bt.comparisons(judgments_frame(), axis="E")
    assert comp[["winner", "loser", "weight"]].values.tolist() == [
        ["y", "x", 4.0], ["y", "z", 1.0], ["z", "x", 3.0]]
    assert bt.comparisons(judgments_frame(), axis="T").empty


def test_comparisons_keep_string_conversation_ids_and_the_row_labels():
    j = judgments_frame().assign(conversation_id=["c-1", "c-1", "c-2", "c-2", "c-3", "c-3"])
    j.index = [10, 11, 12, 13, 14, 15]
    comp = bt.comparisons(j)
    assert comp["conversation_id"].tolist() == ["c-1", "c-1", "c-3"]
    assert comp.index.tolist() == [10, 11, 15]  # the judgment rows kept, so their columns can be joined back
    text = bt.comparisons(j.assign(conversation_id=j["conversation_id"].astype("string")))
    assert text["conversation_id"].tolist() == ["c-1", "c-1", "c-3"]
    with pytest.raises(ValueError, match="all strings or all integers"):
        bt.comparisons(j.assign(conversation_id=pd.Series(["c-1", 1, "c-2", 2, "c-3", 3], index=j.index,
                                                            dtype=object)))


def test_string_conversation_ids_give_the_integer_ids_ratings():
    rng = np.random.default_rng(12)
    comp = clustered(rng, np.array([0.6, 0.1, -0.2, -0.5]), n_conv=30, judges=3, rho=0.5)
    as_int = bt.ratings(comp, n_boot=100, seed=2)
    # text ids that sort like the integers: the very same ratings, bootstrap included
    padded = comp.assign(conversation_id=[f"conv-{c:03d}" for c in comp["conversation_id"]])
    pd.testing.assert_frame_equal(bt.ratings(padded, n_boot=100, seed=2), as_int)
    assert bt.ratings(padded, n_boot=0).attrs["n_conversations"] == 30
    # text ids in another order ("10" < "9"): the same fit; the bootstrap is the integer one with the
    # clusters taken in the text order (heart.stats.bootstrap sorts the ids)
    text = comp.assign(conversation_id=comp["conversation_id"].astype(str))
    r = bt.ratings(text, n_boot=100, seed=2)
    same = ["system", "theta", "elo", "n_comparisons", "wins", "win_rate", "elo_lo_asym", "elo_hi_asym",
            "rank_asym"]
    pd.testing.assert_frame_equal(r[same], as_int[same])
    rank = {c: k for k, c in enumerate(sorted(text["conversation_id"].unique()))}
    relabelled = comp.assign(conversation_id=text["conversation_id"].map(rank))
    pd.testing.assert_frame_equal(r, bt.ratings(relabelled, n_boot=100, seed=2))


def test_a_win_without_a_strength_weighs_one_whoever_gave_it():
    """The rule for votes whose source gives no strength: weight 1, a human's as an LLM judge's, so the
    combined fit of strength-less votes is the unweighted fit (it was 2 for a human win, 1 for an LLM's)."""
    j = judgments_frame()
    j["strength"] = pd.array([pd.NA] * len(j), dtype="Int64")
    j["judge_kind"] = ["human", "llm"] * (len(j) // 2) + ["human"] * (len(j) % 2)
    got = bt.comparisons(j)
    assert len(got) == 3 and got["weight"].tolist() == [1.0] * len(got)
    pd.testing.assert_frame_equal(got, bt.comparisons(j, weighted=False))
    mixed = judgments_frame()
    mixed.loc[0, "strength"] = pd.NA
    assert bt.comparisons(mixed)["weight"].iloc[0] == 1.0
    assert (bt.comparisons(mixed)["weight"].iloc[1:].tolist()
            == bt.comparisons(judgments_frame())["weight"].iloc[1:].tolist())


def test_comparisons_errors():
    bad = judgments_frame()
    bad["strength"] = bad["strength"].astype("Int64")
    bad.loc[0, "strength"] = 7
    with pytest.raises(ValueError, match="strength must be 1-5"):
        bt.comparisons(bad)
    assert len(bt.comparisons(bad, weighted=False)) == 3
    with pytest.raises(ValueError, match="axis must be"):
        bt.comparisons(judgments_frame(), axis="Q")
    with pytest.raises(ValueError, match=r"missing columns \['axis_H'\]"):
        bt.comparisons(judgments_frame().drop(columns="axis_H"), axis="H")


# --- bootstrap --------------------------------------------------------------------------------

@pytest.fixture
def small_comp():
    rng = np.random.default_rng(5)
    return clustered(rng, np.array([0.6, 0.2, 0.0, -0.3, -0.5]), n_conv=25, judges=3, rho=0.5)


def test_bootstrap_reproducible_with_seed(small_comp):
    systems = sorted(set(small_comp["winner"]) | set(small_comp["loser"]))
    a = bt.bootstrap(small_comp, systems, n_boot=50, seed=1)
    assert a.shape == (50, 5)
    np.testing.assert_array_equal(a, bt.bootstrap(small_comp, systems, n_boot=50, seed=1))
    assert not np.allclose(a, bt.bootstrap(small_comp, systems, n_boot=50, seed=2))
    np.testing.assert_allclose(a.mean(axis=1), 1500)


def test_bootstrap_replicate_equals_explicit_resample_and_fit(small_comp):
    systems = sorted(set(small_comp["winner"]) | set(small_comp["loser"]))
    boot = bt.bootstrap(small_comp, systems, n_boot=20, seed=9)
    conv_ids = np.sort(small_comp["conversation_id"].unique())
    counts = cluster_bootstrap.counts(len(conv_ids), 20, seed=9)
    assert counts.shape == (20, len(conv_ids)) and (counts.sum(axis=1) == len(conv_ids)).all()
    index = pd.Index(systems)
    for b in (0, 7, 19):
        res = pd.concat([small_comp[small_comp["conversation_id"] == c]
                         for c, k in zip(conv_ids, counts[b]) for _ in range(k)])
        theta = bt.fit(index.get_indexer(res["winner"]), index.get_indexer(res["loser"]),
                       res["weight"].to_numpy(), len(systems))
        np.testing.assert_allclose(boot[b], bt.elo(theta), atol=1e-6)


def coverage(datasets, theta, per_comparison=False, n_boot=200):
    hits = []
    for s, comp in enumerate(datasets):
        if per_comparison:  # every comparison its own "conversation": the naive, comparison-level bootstrap
            comp = comp.assign(conversation_id=np.arange(len(comp)))
        systems = [f"s{k}" for k in range(len(theta))]
        boot = bt.bootstrap(comp, systems, n_boot=n_boot, seed=s)
        lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
        truth = bt.elo(theta)
        hits.append((lo <= truth) & (truth <= hi))
    return np.mean(hits)


def test_cluster_bootstrap_covers_at_nominal_rate():
    """Simulation: 200 datasets of 60 conversations with strongly correlated judgments within a
    conversation; the 95 % conversation-level percentile interval covers the true Elo at close to the
    nominal rate, while resampling single comparisons (ignoring the clustering) undercovers."""
    rng = np.random.default_rng(2024)
    theta = np.array([0.5, 0.25, 0.0, -0.1, -0.3, -0.35])
    datasets = [clustered(rng, theta, n_conv=60, judges=5, rho=0.9) for _ in range(200)]
    cover = coverage(datasets, theta)
    assert 0.88 <= cover <= 0.99, cover  # 0.92-0.94 over several simulation seeds
    naive = coverage(datasets[:50], theta, per_comparison=True)
    assert naive < 0.8, naive  # ~0.65


# --- the leaderboard --------------------------------------------------------------------------

def test_ratings_table():
    rng = np.random.default_rng(8)
    comp = clustered(rng, np.array([1.0, 0.0, -1.0]), n_conv=40, judges=2, rho=0.3)
    r = bt.ratings(comp, n_boot=200, seed=3)
    assert list(r.columns) == bt.RATING_COLUMNS
    assert r["system"].tolist() == ["s0", "s1", "s2"] and r["elo"].is_monotonic_decreasing
    for row in r.itertuples():
        mine = comp[(comp["winner"] == row.system) | (comp["loser"] == row.system)]
        assert row.n_comparisons == len(mine)
        assert row.wins == (mine["winner"] == row.system).sum()
        assert row.win_rate == pytest.approx(row.wins / row.n_comparisons)
        assert row.elo_lo_asym < row.elo < row.elo_hi_asym and row.elo_lo_boot < row.elo < row.elo_hi_boot
    assert r["elo"].mean() == pytest.approx(1500)
    np.testing.assert_allclose(r["elo"], bt.elo(r["theta"]))
    assert bt.summary(r) == {"n_systems": 3, "separability_asym": 1.0, "separability_boot": 1.0}
    assert r.attrs["separability_boot"] == 1.0 and r.attrs["n_conversations"] == 40
    assert r["rank_asym"].tolist() == [1, 2, 3] and r["rank_boot"].tolist() == [1, 2, 3]
    boot = bt.bootstrap(comp, ["s0", "s1", "s2"], n_boot=200, seed=3)
    np.testing.assert_allclose(r["elo_se_boot"], boot.std(axis=0, ddof=1))
    given = bt.ratings(comp, n_boot=200, seed=3, replicates=boot)  # replicates the caller has: not fitted again
    pd.testing.assert_frame_equal(given, r, check_exact=False, rtol=1e-9)
    with pytest.raises(ValueError, match=r"replicates must have shape \(n_boot, K\) = \(200, 3\)"):
        bt.ratings(comp, n_boot=200, seed=3, replicates=boot[:, :2])
    skipped = bt.ratings(comp, n_boot=0)
    assert skipped["elo_lo_boot"].isna().all() and skipped["rank_boot"].isna().all()
    assert math.isnan(bt.summary(skipped)["separability_boot"])


def test_ratings_errors():
    comp = as_frame(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1.0, 2.0, 3.0]), [1, 1, 2])
    with pytest.raises(ValueError, match="no comparisons"):
        bt.ratings(comp.iloc[:0])
    with pytest.raises(ValueError, match=r"no comparisons for \['ghost'\]"):
        bt.ratings(comp, systems=["s0", "s1", "s2", "ghost"], n_boot=10)
    with pytest.raises(ValueError, match=r"not in `systems`: \['s2'\]"):
        bt.ratings(comp, systems=["s0", "s1"], n_boot=10)
    with pytest.raises(ValueError, match="NaN"):
        bt.ratings(comp.assign(weight=[1.0, np.nan, 1.0]), n_boot=10)
    with pytest.raises(ValueError, match="NaN"):
        bt.ratings(comp.assign(conversation_id=[1, None, 2]), n_boot=10)
    apart = pd.concat([comp, comp.replace({"s0": "t0", "s1": "t1", "s2": "t2"})], ignore_index=True)
    with pytest.raises(ValueError, match="never compared"):
        bt.ratings(apart, n_boot=10)
    with pytest.raises(ValueError, match="strongly connected"):
        bt.ratings(comp.iloc[:2], alpha=0, n_boot=10)  # s0 won all its comparisons
