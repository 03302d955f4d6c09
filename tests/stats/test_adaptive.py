"""The adaptive pair design's pieces (heart.stats.adaptive) on hand-worked cases, and the SIMULATED world that
measures it (heart.simulation.adaptive)."""

import numpy as np
import pandas as pd
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


# --- a study's rounds (rule adaptive_round): heart.stats.adaptive.next_round on hand-built tables --------------

SETTINGS = {"newcomer": None, "first": 0.1, "step": 0.1, "max_rank_width": 0, "half_width": 15.0, "budget": 1.0,
            "max_rounds": 60, "n_boot": 100}


def candidate_pairs(systems=("s1", "s2", "s3", "s4"), n_items=30):
    """Every pair of systems on every item, one conversation per item, as results/judging/pairs.parquet has them."""
    rows = [{"pair_id": f"p{k}-{a}-{b}", "item_id": f"i{k}", "conversation_id": f"c{k}", "subset": "regular",
             "system_a": a, "contributor_a": None, "system_b": b, "contributor_b": None, "kind": "model-model"}
            for k in range(n_items) for x, a in enumerate(systems) for b in systems[x + 1:]]
    return pd.DataFrame(rows)


def judged(pairs, elo, seed=0):
    """Combined verdicts of ``pairs`` drawn from the Bradley–Terry model at ``elo`` (system -> Elo)."""
    rng = np.random.default_rng(seed)
    gap = (pairs["system_a"].map(elo) - pairs["system_b"].map(elo)).to_numpy() * np.log(10) / 400
    a_won = rng.random(len(pairs)) < 1 / (1 + np.exp(-gap))
    return pairs.assign(judge="j", status="ok", winner=np.where(a_won, "a", "b"), strength=3)


def test_round_0_spreads_its_share_evenly_over_the_pairs_of_systems_in_a_seeded_order():
    cand = candidate_pairs()
    picked, status = adaptive.next_round(cand, set(), None, 0, SETTINGS, n_fixed=len(cand), seed=7)
    assert len(picked) == status["n_round"] == 18 and status["reason"] == "first round" and not status["done"]
    assert adaptive.system_pair(picked).tolist().count("s1 | s2") == 3  # 18 over 6 pairs of systems
    again, _ = adaptive.next_round(cand, set(), None, 0, SETTINGS, n_fixed=len(cand), seed=7)
    assert again["pair_id"].tolist() == picked["pair_id"].tolist()
    other, _ = adaptive.next_round(cand, set(), None, 0, SETTINGS, n_fixed=len(cand), seed=8)
    assert set(other["pair_id"]) != set(picked["pair_id"])
    # a pair's place in the order is its own: the same with half the other pairs gone
    order = adaptive.draw_order(cand["pair_id"], 7)
    half = cand.iloc[::2]
    sub = adaptive.draw_order(half["pair_id"], 7)
    assert (np.argsort(sub) == np.argsort(order[::2])).all()


def test_later_rounds_go_to_the_systems_still_close_and_never_repeat_a_pair():
    cand = candidate_pairs(n_items=60)
    elo = {"s1": 1800.0, "s2": 1505.0, "s3": 1495.0, "s4": 1200.0}  # s2 and s3 close, the others far apart
    first, _ = adaptive.next_round(cand, set(), None, 0, {**SETTINGS, "first": 0.5}, len(cand), seed=1)
    picked, status = adaptive.next_round(cand, set(first["pair_id"]), judged(first, elo), 1, SETTINGS, len(cand),
                                         seed=1)
    assert status["reason"] == "continuing" and status["max_rank_width"] >= 1 and status["n_comparisons"] == 180
    assert not set(picked["pair_id"]) & set(first["pair_id"])
    share = adaptive.system_pair(picked).tolist().count("s2 | s3") / len(picked)
    assert share > 0.5  # the close pair gets most of the round (1/6 of it evenly)
    assert status["n_chosen"] == 180 + len(picked) == 180 + 36


def test_a_study_ends_at_its_target_its_budget_its_rounds_or_its_candidates_and_says_which():
    cand = candidate_pairs(n_items=40)
    elo = {"s1": 2400.0, "s2": 1800.0, "s3": 1200.0, "s4": 600.0}  # 600 Elo apart: settled from the start
    first, _ = adaptive.next_round(cand, set(), None, 0, {**SETTINGS, "first": 0.5}, len(cand), seed=1)
    chosen, verdicts = set(first["pair_id"]), judged(first, elo)
    none, status = adaptive.next_round(cand, chosen, verdicts, 1, SETTINGS, len(cand), seed=1)
    assert none.empty and status["done"] and status["reason"].startswith("target met") and status["max_rank_width"] == 0
    close = {"s1": 1510.0, "s2": 1500.0, "s3": 1490.0, "s4": 1480.0}
    verdicts = judged(first, close)
    _, status = adaptive.next_round(cand, chosen, verdicts, 1, {**SETTINGS, "budget": 0.5}, len(cand), seed=1)
    assert status["done"] and status["reason"].startswith("budget reached (120 of 240 pairs")
    _, status = adaptive.next_round(cand, chosen, verdicts, 1, {**SETTINGS, "max_rounds": 1}, len(cand), seed=1)
    assert status["done"] and status["reason"] == "max_rounds (1) reached"
    everything = set(cand["pair_id"])
    _, status = adaptive.next_round(cand, everything, judged(cand, close), 1, SETTINGS, len(cand), seed=1)
    assert status["done"] and status["reason"] == "every candidate chosen" and status["n_chosen"] == 240
    # the budget never cuts the last round short of what it allows, nor over it
    picked, status = adaptive.next_round(cand, chosen, verdicts, 1, {**SETTINGS, "budget": 0.55}, len(cand), seed=1)
    assert len(picked) == 12 and status["n_chosen"] == 132 and not status["done"]


def test_a_newcomer_gets_the_study_in_round_0_and_its_own_pairs_until_its_rating_is_known():
    cand = candidate_pairs(n_items=60)
    elo = {"s1": 1700.0, "s2": 1500.0, "s3": 1300.0, "s4": 1520.0}
    settings = {**SETTINGS, "newcomer": "s4", "first": 0.2, "half_width": 80.0}
    first, status = adaptive.next_round(cand, set(), None, 0, settings, len(cand), seed=2)
    own = adaptive.system_pair(first).astype(str)
    mine = np.char.find(own, "s4") >= 0
    assert (~mine).sum() == 180 and mine.sum() == 36  # every pair of the study, a fifth of its 180
    assert status["n_newcomer_fixed"] == 180 and status["n_newcomer_chosen"] == 36
    chosen, verdicts = set(first["pair_id"]), judged(first, elo, seed=3)
    k = 1
    while True:
        picked, status = adaptive.next_round(cand, chosen, verdicts, k, settings, len(cand), seed=2)
        if status["done"]:
            break
        assert (np.char.find(adaptive.system_pair(picked).astype(str), "s4") >= 0).all()  # only its own pairs
        chosen |= set(picked["pair_id"])
        verdicts = pd.concat([verdicts, judged(picked, elo, seed=k + 3)])
        k += 1
    assert status["reason"].startswith("target met: s4 known to +/-")
    assert status["newcomer_half_width"] <= 80 and status["n_newcomer_chosen"] < 180
    with pytest.raises(ValueError, match="newcomer: 's9' is in no pair"):
        adaptive.next_round(cand, set(), None, 0, {**settings, "newcomer": "s9"}, len(cand), seed=2)


def test_the_preview_prices_the_budget_as_the_worst_case_and_the_simulated_share_as_expected():
    cand = candidate_pairs(n_items=50)  # 300 pairs, 150 with s4
    expected = {"new_study_share": 0.7, "newcomer_share": 0.2, "newcomer_half_width": 15.0}
    study = adaptive.cost_scenarios(cand, SETTINGS, expected, seed=1)
    assert len(study["worst case"]) == 300 and len(study["expected"]) == 210
    budget = adaptive.cost_scenarios(cand, {**SETTINGS, "budget": 0.5}, expected, seed=1)
    assert len(budget["worst case"]) == 150 and len(budget["expected"]) == 150  # never above the budget
    add = {**SETTINGS, "newcomer": "s4", "half_width": 30.0}
    placed = adaptive.cost_scenarios(cand, add, expected, seed=1)
    mine = lambda t: int(((t["system_a"] == "s4") | (t["system_b"] == "s4")).sum())  # noqa: E731
    # every pair of the study; of its own 150: all at worst, 20 % x (15 / 30)^2 = 5 % as expected, at least round 0's
    assert len(placed["worst case"]) == 300 and mine(placed["expected"]) == 15 == round(0.1 * 150)
    assert len(placed["expected"]) - mine(placed["expected"]) == 150
    tight = adaptive.cost_scenarios(cand, {**add, "half_width": 10.0}, expected, seed=1)
    assert mine(tight["expected"]) == 68  # 0.2 x 2.25 = 45 % of 150
