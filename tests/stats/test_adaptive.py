"""The adaptive pair design's pieces (heart.stats.adaptive) on hand-worked cases, and the SIMULATED world that
measures it (heart.simulation.adaptive)."""

import numpy as np
import pytest

from heart.stats import adaptive
from heart.simulation import adaptive as sim


def test_ranks_are_one_for_the_best():
    assert adaptive.ranks(np.array([1500.0, 1600.0, 1400.0])).tolist() == [2, 1, 3]
    assert adaptive.ranks(np.array([[1.0, 3.0, 2.0], [3.0, 2.0, 1.0]])).tolist() == [[3, 1, 2], [1, 2, 3]]


def test_swap_probability_and_rank_stability_by_hand():
    point = np.array([1.0, 2.0, 3.0])
    boot = np.array([[1, 2, 3], [2, 1, 3], [1, 2, 3], [1.5, 1.5, 3]], dtype=float)
    q = adaptive.swap_probability(boot, point)
    # systems 0 and 1: swapped in one replicate of four, tied in one (half): 1.5 / 4
    assert q[0, 1] == q[1, 0] == pytest.approx(0.375) and q[0, 2] == q[1, 2] == 0 and np.diag(q).tolist() == [0] * 3
    stab = adaptive.rank_stability(boot[:3], point)
    # tau-b with the point ranking: 1, 1/3 (one of three pairs discordant), 1
    assert stab["tau"] == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert stab["widths"].tolist() == [1, 1, 0]


def test_allocate_is_proportional_capped_and_gives_nothing_to_a_zero_weight():
    out = adaptive.allocate([0.5, 0.3, 0.2, 0.0], [100, 10, 100, 100], 50)
    assert out.sum() == 50 and out[1] == 10 and out[3] == 0 and out[0] > out[2]
    assert adaptive.allocate([1, 1, 1], [5, 5, 5], 2).tolist() == [1, 1, 0]  # fewer units than candidates
    assert adaptive.allocate([1, 1], [2, 3], 100).tolist() == [2, 3]  # no more than there is
    assert adaptive.allocate([0, 0], [2, 3], 10).tolist() == [0, 0]
    with pytest.raises(ValueError, match="weights and capacity"):
        adaptive.allocate([1, -1], [1, 1], 1)


def test_the_next_round_goes_to_the_unsettled_systems_and_best_against_each_other():
    point = np.array([1600.0, 1500.0, 1499.0, 1300.0])
    rng = np.random.default_rng(0)
    boot = point + rng.normal(0, [1, 20, 20, 1], size=(400, 4))  # 1 and 2 swap often; 0 and 3 never
    i, j = np.triu_indices(4, 1)
    w = dict(zip(zip(i, j), adaptive.round_weights(boot, point, i, j)))
    assert w[(1, 2)] == max(w.values()) and w[(0, 3)] == 0
    assert w[(0, 1)] < w[(1, 2)] and w[(0, 1)] == pytest.approx(0, abs=1e-9)  # 0 never mis-ordered: u_0 = 0
    assert adaptive.round_weights(boot, point, i, j, floor=0.1).min() == pytest.approx(0.1)


def test_a_newcomer_is_best_placed_against_opponents_of_its_own_strength():
    boot = np.tile([1500.0, 1200.0, 1490.0, 1800.0], (10, 1))
    w = adaptive.newcomer_weights(boot, boot[0], new=0, opponents=[1, 2, 3])
    assert np.argmax(w) == 1 and w[1] == pytest.approx(0.25, abs=1e-3)  # the opponent 10 Elo away


def test_the_simulated_world_is_seeded_keeps_families_apart_and_is_read_the_same_by_both_designs():
    elo, fam = [1600.0, 1550.0, 1500.0, 1400.0], ["gpt", "claude", "x", "gemini"]
    a, b = sim.World(elo, fam, n_items=30, n_convs=20, seed=3), sim.World(elo, fam, n_items=30, n_convs=20, seed=3)
    assert (a.w_i == b.w_i).all() and (a.fixed == b.fixed).all()
    # a gpt-claude pair: only the gemini judge, both orders; gpt-x: claude and gemini
    n = dict(zip(map(tuple, a.pairs), a.n[:len(a.pairs)]))
    assert n[(0, 1)] == 2 and n[(0, 2)] == 4 and n[(2, 3)] == 4 and (a.w_i <= a.n).all()
    T = sim.tensor(a, np.arange(a.item.size))
    assert T.sum() == a.n.sum()  # every verdict in the conversations' win matrices, once


def test_the_adaptive_study_stops_at_the_fixed_designs_stability_and_says_so():
    elo, fam = [1650.0, 1500.0, 1490.0, 1300.0], ["a", "b", "c", "d"]
    world = sim.World(elo, fam, n_items=120, n_convs=60, seed=1)
    r = sim.new_study(world, n_boot=100, seed=1)
    a, f = r["adaptive"], r["fixed"]
    assert a["met"] and a["tau"] >= f["tau"] and a["width_sum"] <= f["width_sum"]
    assert a["verdicts"] == a["history"][-1]["verdicts"] and len(a["history"]) == a["rounds"]
    placed = sim.add_model(world, 1, n_boot=100, seed=1, half_width=40)
    assert 0 < placed["own_used"] < placed["own_fixed"] and placed["stop_width"] <= 40
    by_interval = sim.add_model(world, 1, n_boot=100, seed=1, half_width=40, stop="bootstrap")
    assert (by_interval["hi"] - by_interval["lo"]) / 2 <= 40
