"""heart.stats.bootstrap: the one conversation-level cluster bootstrap, and its use by every statistic."""

import math

import numpy as np
import pandas as pd
import pytest

from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.inter_human import inter_human
from heart.stats.agreement.majority import majority
from heart.stats.agreement.stability import subsampling_stability
from heart.stats.agreement.trivial import trivial_judges
from heart.stats import bias
from heart.stats import bootstrap
from heart.stats import rationales
from heart.stats import bradley_terry as bt
from heart.stats import strategy_stats as ss
from support.tables import judgments_frame as table
from support.judgments import judgment, random_table
from support.synthetic import CODEBOOK, synthetic
from support.synthetic import planted

# a known example: 6 conversations of 1-4 units, a 0/1 hit per unit
CONV = np.array([10, 10, 10, 11, 12, 12, 13, 13, 13, 13, 14, 15, 15])
HITS = np.array([1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0], dtype=float)


def explicit_rates(boot: bootstrap.ClusterBootstrap, conv, hits) -> np.ndarray:
    """Every replicate built by hand: each drawn conversation's units, as often as it was drawn."""
    reps = []
    for row in boot.counts:
        drawn = np.concatenate([hits[conv == c] for c, k in zip(boot.ids, row) for _ in range(k)])
        reps.append(drawn.mean())
    return np.array(reps)


def test_counts_draw_conversations_with_replacement():
    c = bootstrap.counts(6, 400, seed=3)
    assert c.shape == (400, 6) and c.dtype.kind == "i"
    assert (c.sum(axis=1) == 6).all() and (c >= 0).all()
    expected = np.bincount(np.random.default_rng(3).integers(0, 6, size=6), minlength=6)
    np.testing.assert_array_equal(c[0], expected)  # replicate 0: six draws of the generator, counted
    assert c.mean() == pytest.approx(1.0, abs=0.1)  # each conversation drawn once per replicate on average
    assert bootstrap.counts(0, 10).shape == (0, 0) and bootstrap.counts(4, 0).shape == (0, 4)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap.counts(3, -1)


def test_determinism_by_seed():
    a = bootstrap.ClusterBootstrap(CONV, 200, seed=5)
    b = bootstrap.ClusterBootstrap(list(reversed(CONV)), 200, seed=5)  # order of the units does not matter
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.rate(CONV, HITS)[1], b.rate(CONV, HITS)[1])
    c = bootstrap.ClusterBootstrap(CONV, 200, seed=6)
    assert not np.array_equal(a.counts, c.counts)
    assert a.rate(CONV, HITS)[0] == c.rate(CONV, HITS)[0]  # only the replicates depend on the seed


def test_resampling_moves_all_rows_of_a_conversation_together():
    boot = bootstrap.ClusterBootstrap(CONV, 300, seed=1)
    np.testing.assert_array_equal(boot.ids, np.unique(CONV))
    est, reps = boot.rate(CONV, HITS)
    assert est == pytest.approx(HITS.mean())
    np.testing.assert_allclose(reps, explicit_rates(boot, CONV, HITS))
    # apply() repeats every unit as often as its conversation was drawn: within a replicate, all units of
    # one conversation appear equally often, namely that conversation's count
    seen = []

    def record(rows):
        seen.append(np.bincount(rows, minlength=len(CONV)))
        return 0.0

    boot.apply(CONV, np.arange(len(CONV)), record)
    np.testing.assert_array_equal(np.array(seen), boot.counts[:, np.searchsorted(boot.ids, CONV)])
    # conversations whose units all agree: every replicate is a mix of whole conversations, so with two
    # conversations of 5 hits and 5 misses a replicate's rate is a multiple of 1/2, never in between
    conv2, hits2 = np.repeat([1, 2], 5), np.repeat([1.0, 0.0], 5)
    _, reps2 = bootstrap.ClusterBootstrap(conv2, 500, seed=0).rate(conv2, hits2)
    assert set(np.round(reps2, 12)) <= {0.0, 0.5, 1.0}


def test_a_ratio_of_totals_resamples_both_sums_with_the_same_draws():
    # two conversations: A has 3 of 4 rater pairs agreeing, B 0 of 2; a replicate draws (A, A), (A, B) or
    # (B, B): 6/8, 3/6 or 0/4, never the mean of the per-conversation ratios (0.375 for (A, B))
    conv, agree, pairs = np.array(["A", "B"]), np.array([3.0, 0.0]), np.array([4.0, 2.0])
    boot = bootstrap.ClusterBootstrap(conv, 400, seed=0)
    reps = boot.ratio(conv, agree, pairs)
    assert set(np.round(reps, 12)) == {0.75, 0.5, 0.0}
    np.testing.assert_allclose(reps, (boot.counts @ agree) / (boot.counts @ pairs))
    # a replicate with nothing in it (only B, which has no rater pair) is NaN, not an error
    empty = boot.counts[:, 0] == 0
    assert empty.any() and np.isnan(boot.ratio(conv, agree, np.array([4.0, 0.0]))[empty]).all()


def test_interval_is_the_percentile_interval_of_the_replicates():
    boot = bootstrap.ClusterBootstrap(CONV, 1000, seed=2)
    _, reps = boot.rate(CONV, HITS)
    lo, hi = bootstrap.interval(reps, 0.95)
    assert (lo, hi) == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])), rel=1e-12)
    lo90, hi90 = bootstrap.interval(reps, 0.9)
    assert (lo90, hi90) == pytest.approx(tuple(np.quantile(reps, [0.05, 0.95])), rel=1e-12)
    assert lo <= lo90 < hi90 <= hi and hi90 - lo90 < hi - lo  # a lower level gives a narrower interval
    # columns, undefined replicates left out, no replicate at all
    two = np.column_stack([reps, np.where(np.arange(1000) < 10, np.nan, reps)])
    lo2, hi2 = bootstrap.interval(two, 0.9)
    assert lo2[0] == lo90 and hi2[0] == hi90
    assert (lo2[1], hi2[1]) == pytest.approx(tuple(np.quantile(reps[10:], [0.05, 0.95])))
    assert all(math.isnan(v) for v in bootstrap.interval(np.array([]), 0.95))
    assert all(math.isnan(v) for v in bootstrap.interval(np.array([np.nan, np.inf]), 0.95))
    with pytest.raises(ValueError, match="ci"):
        bootstrap.interval(reps, 95)


def test_p_value_from_the_bootstrap_standard_error():
    reps = np.array([0.1, 0.3, 0.2, 0.4, np.nan])
    se = np.std([0.1, 0.3, 0.2, 0.4], ddof=1)
    assert bootstrap.standard_error(reps) == pytest.approx(se)
    normal_sf = 0.5 * math.erfc(0.25 / se / math.sqrt(2))
    assert bootstrap.p_value(0.25, reps) == pytest.approx(2 * normal_sf)
    assert bootstrap.p_value(0.0, [0.0, 0.0, 0.0]) == 1.0
    assert math.isnan(bootstrap.p_value(0.2, [0.2, 0.2])) and math.isnan(bootstrap.p_value(0.2, [0.2]))


def test_unknown_conversations_are_an_error():
    boot = bootstrap.ClusterBootstrap([1, 2, 3], 5)
    with pytest.raises(ValueError, match=r"\[4\]"):
        boot.rate([1, 4], [1.0, 0.0])


# --- every statistic uses it and honours ci -------------------------------------------------------

def nested(wide: tuple, narrow: tuple) -> bool:
    """The (low, high) columns at ci 0.9 lie within those at 0.95 (from the same replicates) and are narrower
    somewhere."""
    lo95, hi95, lo90, hi90 = (np.asarray(v, dtype=float) for v in (*wide, *narrow))
    ok = ~np.isnan(lo95)
    return bool(ok.any() and (lo95[ok] <= lo90[ok]).all() and (hi90[ok] <= hi95[ok]).all()
                and ((hi90 - lo90)[ok] < (hi95 - lo95)[ok]).any())


def test_agreement_and_bias_intervals_follow_ci():
    t = random_table(seed=4)
    runs = {ci: human_llm_agreement(t, n_boot=300, seed=1, ci=ci) for ci in (0.95, 0.9)}
    np.testing.assert_array_equal(runs[0.95]["agreement"], runs[0.9]["agreement"])
    assert nested(*[(runs[ci]["ci_low"], runs[ci]["ci_high"]) for ci in (0.95, 0.9)])
    # the interval is that of the shared bootstrap on the pairs' conversations
    ens = runs[0.9].set_index(["judge", "scope"]).loc[("llm-ensemble", "all")]
    human, llm = majority(t, "human"), majority(t, "llm")
    use = (human["winner"].notna() & llm["winner"].notna()).to_numpy()
    hit = (human["winner"] == llm["winner"]).to_numpy(float)[use]
    boot = bootstrap.ClusterBootstrap(t["conversation_id"], 300, seed=1)
    _, reps = boot.rate(human["conversation_id"][use], hit)
    assert (ens["ci_low"], ens["ci_high"]) == pytest.approx(bootstrap.interval(reps, 0.9))
    texts = pd.DataFrame([{"item_id": f"item-{p}", "system": s, "contributor_id": None, "text": "w " * n}
                          for p in t["pair_id"].unique() for s, n in (("m1", 3), ("m2", 5))])
    for out in ([cross_judge_agreement(t, n_boot=200, seed=2, ci=ci) for ci in (0.95, 0.9)],
                [trivial_judges(t, texts, n_boot=200, seed=2, ci=ci) for ci in (0.95, 0.9)]):
        assert nested(*[(o["ci_low"], o["ci_high"]) for o in out])
    cross = [cross_judge_agreement(t, n_boot=10, ci=ci) for ci in (0.95, 0.9)]
    assert nested(*[(c["kappa_ci_low"], c["kappa_ci_high"]) for c in cross])  # Cohen's kappa: asymptotic
    human_rel = [inter_human(t, n_boot=100, seed=0, ci=ci) for ci in (0.95, 0.9)]
    assert nested(*[(h["ci_low"], h["ci_high"]) for h in human_rel])
    stab = [subsampling_stability(t, n_rep=30, seed=0, ci=ci) for ci in (0.95, 0.9)]
    assert nested(*[(s["q_low"], s["q_high"]) for s in stab])
    verdicts = pd.DataFrame({"judge": "j", "parse_ok": True, "winner_shown": ["A"] * 60 + ["B"] * 40})
    pos = [bias.position_bias(verdicts, ci=ci) for ci in (0.95, 0.9)]
    assert nested(*[(p["ci_low"], p["ci_high"]) for p in pos])


def test_self_preference_interval_follows_ci():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(120):
        sa, sb = ("gpt-x", "llama-y") if i % 2 else ("llama-y", "gpt-x")
        rows += [judgment(f"p{i}", i // 3, j, "ab"[rng.integers(2)], system_a=sa, system_b=sb)
                 for j in ("gpt-judge", "claude-judge")]
    out = [bias.self_preference(table(rows), {"gpt-judge": "gpt", "claude-judge": "claude"},
                                {"gpt-x": "gpt", "llama-y": "llama"}, n_boot=300, seed=0, ci=ci)
           for ci in (0.95, 0.9)]
    assert nested(*[(o["ci_low"], o["ci_high"]) for o in out])
    assert out[0]["p_value"].equals(out[1]["p_value"])  # the p-value does not depend on the level


def test_bradley_terry_rationales_and_strategies_follow_ci():
    rng = np.random.default_rng(1)
    n = 240
    winner = np.where(rng.random(n) < 0.7, "s0", "s1")
    comp = pd.DataFrame({"winner": winner, "loser": np.where(winner == "s0", "s1", "s0"), "weight": 1.0,
                         "conversation_id": rng.integers(0, 40, n)})
    r = {ci: bt.ratings(comp, n_boot=300, seed=2, ci=ci) for ci in (0.95, 0.9)}
    assert nested(*[(r[ci]["elo_lo_boot"], r[ci]["elo_hi_boot"]) for ci in (0.95, 0.9)])
    reps = bt.bootstrap(comp, ["s0", "s1"], n_boot=300, seed=2)
    lo, hi = bootstrap.interval(reps, 0.9)
    np.testing.assert_allclose(r[0.9].set_index("system").loc[["s0", "s1"], "elo_lo_boot"], lo)
    np.testing.assert_allclose(r[0.9].set_index("system").loc[["s0", "s1"], "elo_hi_boot"], hi)

    codes = rationales.load_codebook(CODEBOOK)
    j, t = synthetic(linked=False, seed=3)
    summaries = [rationales.comention(j, t, codes, n_boot=300, seed=1, ci=ci)[0] for ci in (0.95, 0.9)]
    assert nested(*[(s["ci_low"], s["ci_high"]) for s in summaries])

    tags, conv = planted(n_conv=30)
    diffs = [ss.human_vs_model(tags, clusters=conv, n_boot=300, seed=7, ci=ci) for ci in (0.95, 0.9)]
    assert nested(*[(d["ci_low_pct"], d["ci_high_pct"]) for d in diffs])
    assert nested(*[(d["h_ci_low"], d["h_ci_high"]) for d in diffs])
