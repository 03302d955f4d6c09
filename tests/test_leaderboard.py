"""heart.leaderboard and heart.multiple_testing on SIMULATED judgments (heart.simulate), labelled as such."""

import numpy as np
import pandas as pd
import pytest

from heart import leaderboard, multiple_testing, simulate, tableio


@pytest.fixture(scope="module")
def sim():
    return simulate.judgments(n_items=60, n_adversarial=6, pairs_per_item=12, human_pairs=80, seed=3)


def test_simulated_tables_say_so(sim):
    j, _ = sim
    assert j.attrs["simulated"] and j["judge"].str.contains("sim-").all()
    tableio.to_arrow(j, "judgments")  # the simulation has the real table's schema


def test_every_scope_lists_every_system_and_recovers_the_truth(sim):
    j, theta = sim
    ratings, sep = leaderboard.leaderboard(j, n_boot=50, seed=0)
    tableio.to_arrow(ratings, "ratings")
    tableio.to_arrow(sep, "separability")
    n_sources = 3 + j.loc[j["judge_kind"] == "llm", "judge"].nunique()
    assert len(sep) == 6 * 3 * n_sources
    assert ratings.groupby(["axis", "subset", "source"]).size().eq(theta.size).all()
    overall = ratings[(ratings.axis == "overall") & (ratings.subset == "all") & (ratings.source == "llm")]
    est = overall.set_index("system")["theta"]
    assert np.corrcoef(est[theta.index], theta)[0, 1] > 0.9  # SIMULATED truth is recovered
    ok = ratings[ratings.status == "ok"]
    assert (ok.elo_lo_boot <= ok.elo).all() and (ok.elo <= ok.elo_hi_boot).all()


def test_judge_sources_are_kept_apart(sim):
    j, _ = sim
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    n = ratings.set_index(["source", "system"])["n_comparisons"]
    human = j[(j.judge_kind == "human") & (j.status == "ok")]
    assert n[("human", "human")] == ((human.system_a == "human") | (human.system_b == "human")).sum()
    one = j[(j.judge == "sim-judge-1") & (j.status == "ok")]
    assert n[("judge:sim-judge-1", "original")] == ((one.system_a == "original") | (one.system_b == "original")).sum()


def test_absent_humans_are_absent_not_zero(sim):
    j, _ = sim
    ratings, sep = leaderboard.leaderboard(j[j.judge_kind == "llm"], n_boot=0, axes=("overall",))
    human = ratings[ratings.source == "human"]
    assert (human.status == "absent").all() and human.elo.isna().all()
    assert human.note.str.contains("no human judgments").all()
    assert (sep.loc[sep.source == "human", "status"] == "absent").all()


def test_a_scope_that_cannot_be_put_on_one_scale_says_why():
    j = pd.DataFrame({"pair_id": ["p1", "p2"], "item_id": ["i1", "i2"], "conversation_id": [1, 2],
                      "subset": "regular", "system_a": ["m1", "m3"], "system_b": ["m2", "m4"], "judge": "j",
                      "judge_kind": "llm", "status": "ok", "winner": ["a", "a"],
                      "strength": pd.array([2, 3], dtype="Int64"),
                      **{f"axis_{a}": pd.array([0, 0], dtype="Int64") for a in "HEART"}})
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    llm = ratings[ratings.source == "llm"]
    assert (llm.status == "not_estimable").all() and llm.note.str.contains("never compared").all()


def test_headline_has_figure_4s_columns(sim):
    j, _ = sim
    ratings, _ = leaderboard.leaderboard(j, n_boot=20)
    head = leaderboard.headline(ratings)
    tableio.to_arrow(head, "leaderboard")
    assert list(head["elo"]) == sorted(head["elo"], reverse=True)
    assert head[[f"{a}_pct" for a in "HEART"]].stack().between(0, 100).all()


def test_multiple_testing_adjusts_within_families_only():
    a = pd.DataFrame({"judge": ["x", "y", "z"], "share_shown_a": [0.6, 0.5, 0.7], "ci_low": 0.4, "ci_high": 0.8,
                      "p_value": [0.01, 0.04, 0.03], "family": "position_bias", "status": "ok"})
    b = pd.DataFrame({"measure": ["z_mean"], "r": [0.3], "ci_low": 0.1, "ci_high": 0.5, "p_value": [0.04],
                      "family": "factor_win_correlation", "status": "ok"})
    out = multiple_testing.collect({"bias_position": a, "factor_correlations": b})
    tableio.to_arrow(out, "tests")
    pos = out[out.family == "position_bias"].set_index("test")["p_adj"]
    expected, _ = multiple_testing.bh([0.01, 0.04, 0.03])
    assert np.allclose(pos[["x", "y", "z"]], expected)
    assert out.loc[out.family == "factor_win_correlation", "p_adj"].item() == pytest.approx(0.04)
    with pytest.raises(ValueError, match="no test specification"):
        multiple_testing.collect({"mystery": a})
