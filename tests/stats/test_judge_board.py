"""heart.stats.judge_board on a hand-worked example: every column of the judge leaderboard and the ensemble
chooser computed by hand in the comments (SYNTHETIC tables, made by the tests)."""

import math

import numpy as np
import pandas as pd
import pytest

from support.tables import judgments_frame as table
from heart.stats import bootstrap, judge_board as jb
from support.judgments import judgment
from support.judge_board_example import (FLIPS, JUDGE_FAMILIES, QUALITY, SYSTEM_FAMILIES, board, choice_tables,
                                         judgments, texts, verdicts)


def test_every_column_by_hand():
    b = board()
    assert list(b.index) == ["j1", "j2", "j3", "ensemble"] and b.loc["ensemble", "kind"] == "ensemble"
    assert list(b["status"]) == ["ok", "ok", "absent", "ok"] and "no judgment of this judge" in b.loc["j3", "note"]
    # pairs with a winner: j1 p1-p4 = 4, j2 all 5, the ensemble p1, p4, p5 = 3
    assert list(b["n_pairs"]) == [4, 5, 0, 3]

    # 1. agreement with the human majority (pairs where both have a winner; p4 has no human winner):
    #    j1 p1 ok, p2 wrong, p3 ok (p5 no verdict) = 2/3; j2 p1 ok, p2 ok, p3 wrong, p5 ok = 3/4;
    #    ensemble p1 ok, p5 ok = 2/2. One conversation: the interval is the point.
    assert b.loc["j1", "agreement_majority"] == pytest.approx(2 / 3) and b.loc["j1", "n_majority_pairs"] == 3
    assert b.loc["j2", "agreement_majority"] == pytest.approx(3 / 4) and b.loc["j2", "n_majority_pairs"] == 4
    assert b.loc["ensemble", "agreement_majority"] == 1.0 and b.loc["ensemble", "n_majority_pairs"] == 2
    assert b.loc["j2", "agreement_ci_low"] == pytest.approx(0.75) == b.loc["j2", "agreement_ci_high"]
    #    per human vote, ties on either side left out (j1's p5 and the ensemble's p2-p3 are ties):
    #    j1 p1 2/3, p2 0/3, p3 2/2, p4 1/2 -> 5/10; j2 p1 2/3, p2 3/3, p3 0/2, p4 1/2, p5 2/3 -> 8/13;
    #    ensemble p1 2/3, p4 1/2, p5 2/3 -> 5/8
    assert (b.loc["j1", "agreement_per_vote"], b.loc["j1", "n_votes"]) == (0.5, 10)
    assert b.loc["j2", "agreement_per_vote"] == pytest.approx(8 / 13) and b.loc["j2", "n_votes"] == 13
    assert (b.loc["ensemble", "agreement_per_vote"], b.loc["ensemble", "n_votes"]) == (0.625, 8)

    # 2. Cohen's kappa vs the human majority, on the pairs of (1):
    #    j1 (a, a, a) vs (a, b, a): p_o = 2/3, p_e = (3*2 + 0*1)/9 = 2/3 -> 0 (agreeing 67 % by always saying a)
    #    j2 (a, b, b, b) vs (a, b, a, b): p_o = 3/4, p_e = (1*2 + 3*2)/16 = 1/2 -> (3/4 - 1/2)/(1/2) = 0.5
    #    ensemble (a, b) vs (a, b): 1
    assert b.loc["j1", "kappa"] == pytest.approx(0.0, abs=1e-12)
    assert b.loc["j2", "kappa"] == pytest.approx(0.5)
    assert b.loc["ensemble", "kappa"] == pytest.approx(1.0)
    assert (b["human_status"] == "ok").all()

    # 3. first shown: j1 wins with the first-shown reply on p1-p4 in order AB and on p5 in both: 6 of 10;
    #    j2 on p1 AB, p2 BA, p3 BA, p4 AB: 4 of 9 parsed; the ensemble pools them: 10 of 19
    assert (b.loc["j1", "first_shown_rate"], b.loc["j1", "n_order_verdicts"]) == (0.6, 10)
    assert b.loc["j2", "first_shown_rate"] == pytest.approx(4 / 9) and b.loc["j2", "n_order_verdicts"] == 9
    assert b.loc["ensemble", "first_shown_rate"] == pytest.approx(10 / 19)
    #    longer (p2 equal, left out): j1 p1 yes, p3 no, p4 no -> 1/3; j2 p1 yes, p3 yes, p4 no, p5 no -> 2/4;
    #    ensemble p1 yes, p4 no, p5 no -> 1/3
    assert b.loc["j1", "longer_rate"] == pytest.approx(1 / 3) and b.loc["j1", "n_length_pairs"] == 3
    assert (b.loc["j2", "longer_rate"], b.loc["j2", "n_length_pairs"]) == (0.5, 4)
    assert b.loc["ensemble", "longer_rate"] == pytest.approx(1 / 3)

    # 4. self-preference of j1 (fx): pairs with exactly one fx system are p2, p3, p5 (own side a); j1 decided
    #    p2, p3 and picked a both times (1.0); j2 (fq) picked b on both (0.0): 1.0 - 0.0 = +1.0 on 2 pairs.
    #    j2's family fq is in no pair; the ensemble has no one family.
    assert (b.loc["j1", "self_preference"], b.loc["j1", "n_self_pairs"]) == (1.0, 2)
    assert math.isnan(b.loc["j2", "self_preference"])
    assert "no system of the judge's family (fq) is in any pair" in b.loc["j2", "note"]
    assert math.isnan(b.loc["ensemble", "self_preference"]) and "per judge only" in b.loc["ensemble", "note"]

    # 5. flip rate from flip_rates (overall): j1 0.2, j2 0.0; ensemble pooled (1 + 0) / (5 + 4) = 1/9
    assert (b.loc["j1", "flip_rate"], b.loc["j1", "n_flip_pairs"]) == (0.2, 5)
    assert (b.loc["j2", "flip_rate"], b.loc["j2", "n_flip_pairs"]) == (0.0, 4)
    assert b.loc["ensemble", "flip_rate"] == pytest.approx(1 / 9) and b.loc["ensemble", "n_flip_pairs"] == 9
    # 6. QC accuracy from judge_quality (kind all): j1 0.5 (below target), j2 5/6; pooled (2 + 5) / 10 = 0.7
    assert (b.loc["j1", "qc_accuracy"], b.loc["j1", "meets_targets"]) == (0.5, False)
    assert b.loc["j2", "qc_accuracy"] == pytest.approx(5 / 6) and b.loc["j2", "meets_targets"]
    assert b.loc["ensemble", "qc_accuracy"] == pytest.approx(0.7) and pd.isna(b.loc["ensemble", "meets_targets"])
    assert pd.isna(b.loc["j3", "qc_accuracy"]) and "QC accuracy: no quality checks" in b.loc["j3", "note"]

    # 7./8. one conversation: every replicate is the data, so each interval is a point. j1's comparisons
    #    x>y, x>z, y>z, x>y give x > y > z, three distinct ratings: all 3 system pairs separate, every
    #    replicate ranks as the point does (tau 1). j2: x>y, z>x, z>y, x>y, z>y: z > x > y, the same.
    for judge in ("j1", "j2", "ensemble"):
        assert (b.loc[judge, "separability"], b.loc[judge, "rank_tau"], b.loc[judge, "n_systems"]) == (1.0, 1.0, 3)
    assert pd.isna(b.loc["j3", "separability"]) and "fewer than two systems" in b.loc["j3", "note"]

    # 9. cost per 1,000 judgments (a judgment = a pair, both orders): j1 is local, no price; 10 calls of 0.5 s
    #    over 5 pairs -> 1000 * 5 / 5 = 1000 s. j2: 10 calls of $0.001 and 2 s -> $2 and 4000 s per 1,000.
    #    The ensemble: no price (j1 has none); (5 + 20) s over 5 pairs -> 5000 s.
    assert math.isnan(b.loc["j1", "usd_per_1000"]) and "cost: no price (a local model)" in b.loc["j1", "note"]
    assert b.loc["j1", "seconds_per_1000"] == pytest.approx(1000.0) and b.loc["j1", "n_cost_pairs"] == 5
    assert b.loc["j2", "usd_per_1000"] == pytest.approx(2.0) and b.loc["j2", "seconds_per_1000"] == pytest.approx(4000)
    assert (math.isnan(b.loc["ensemble", "usd_per_1000"])
            and "cost: no price for j1 (a local model each)" in b.loc["ensemble", "note"])
    assert b.loc["ensemble", "seconds_per_1000"] == pytest.approx(5000.0)


def test_without_human_judgments_every_human_column_is_absent_and_says_so():
    b = board(humans=False)
    for col in ("agreement_majority", "agreement_ci_low", "agreement_ci_high", "agreement_per_vote", "kappa",
                "n_majority_pairs", "n_votes"):
        assert b[col].isna().all(), col
    assert (b["human_status"] == jb.NO_HUMANS).all()
    # the rest does not need people: the same as with them
    assert b.loc["j1", "first_shown_rate"] == 0.6 and b.loc["j1", "self_preference"] == 1.0
    assert b.loc["j2", "usd_per_1000"] == pytest.approx(2.0)


def test_a_priced_cost_is_never_made_up_for_a_partly_priced_judge():
    v = verdicts()
    v.loc[(v["judge"] == "j2") & (v["pair_id"] == "p1"), "cost_usd"] = None
    out = jb.costs(v[v["judge"] == "j2"])
    assert math.isnan(out["usd_per_1000"]) and out["notes"] == ["cost: 2 of 10 verdict rows without it"]
    assert out["seconds_per_1000"] == pytest.approx(4000.0)
    # not local, no cost at all: said so without blaming a local model
    assert "price map" in jb.costs(v[v["judge"] == "j1"])["notes"][0]


def test_a_judge_without_a_position_sits_at_one_half():
    """A judge that scores each reply alone (no A/B position: the same reply wins in both orders) has a
    first-shown rate of exactly 1/2 and no flips; nothing assumes a position bias."""
    v = verdicts()
    same = v[v["judge"] == "j2"].copy()
    same["judge"] = "content"
    same["winner_shown"] = np.where(same["order"] == "AB", "A", "B")  # side a wins in both orders
    same["parse_ok"] = True
    j = judgments()
    extra = j[j["judge"] == "j2"].assign(judge="content", winner="a", status="ok")
    b = jb.judge_board(pd.concat([j, extra], ignore_index=True), pd.concat([v, same], ignore_index=True), texts(),
                       FLIPS, QUALITY, judges=["j1", "j2"], judge_families={**JUDGE_FAMILIES, "content": "fc"},
                       system_families=SYSTEM_FAMILIES, n_boot=20, seed=1).set_index("judge")
    assert b.loc["content", "first_shown_rate"] == 0.5 and b.loc["content", "n_order_verdicts"] == 10
    assert "flip rate: no pair judged in both orders" in b.loc["content", "note"]  # not in flip_rates: absent


def test_rank_stability_by_hand():
    point = [1600.0, 1500.0, 1400.0]
    reps = [[1610, 1490, 1400],   # same order: tau 1
            [1500, 1600, 1400],   # x and y swapped: 2 concordant, 1 discordant of 3 -> 1/3
            [1400, 1500, 1600],   # reversed: -1
            [1500, 1500, 1500]]   # all alike: undefined, left out
    tau, n = jb.rank_stability(point, reps)
    assert n == 3 and tau == pytest.approx((1 + 1 / 3 - 1) / 3)


def test_rank_stability_is_scipys_tau_b_averaged():
    """All replicates at once give scipy's τ-b per replicate, ties in the point and the replicates included;
    a replicate with a missing rating, or one rating all systems alike, is left out."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(4)
    point = np.array([1500.0, 1520.0, 1480.0, 1520.0, 1400.0, 1610.0])  # one tie
    reps = np.round(point + rng.normal(0, 40, (300, 6)), -1)  # rounded to tens: ties within replicates too
    reps[7] = 1500.0
    reps[11, 2] = np.nan
    expected = [kendalltau(r, point).statistic for k, r in enumerate(reps) if k not in (7, 11)]
    tau, n = jb.rank_stability(point, reps)
    assert n == 298 and tau == pytest.approx(np.mean(expected), abs=1e-12)
    assert jb.rank_stability(np.full(3, 1500.0), reps[:, :3]) == (pytest.approx(math.nan, nan_ok=True), 0)


def test_separability_and_tau_of_a_two_conversation_bootstrap():
    """Two systems; conversation c1 holds two wins of x over y, c2 one win of y over x. A replicate draws two
    conversations: (c1, c1) and (c1, c2) rank x first (tau +1 against the point, x first), (c2, c2) ranks y
    first (tau -1). So the mean tau is 1 - 2 * (share of replicates drawing c2 twice), and both intervals
    span the (c2, c2) and (c1, c1) ratings: they overlap, separability 0."""
    rows = [judgment("q1", "c1", "k", "a", system_a="x", system_b="y"),
            judgment("q2", "c1", "k", "a", system_a="x", system_b="y"),
            judgment("q3", "c2", "k", "b", system_a="x", system_b="y")]
    n_boot, seed = 400, 7
    sep = jb.separation(table(rows), "judge:k", n_boot=n_boot, seed=seed, alpha=0.01, ci=0.95)
    twice_c2 = (bootstrap.counts(2, n_boot, seed)[:, 1] == 2).mean()
    assert 0.15 < twice_c2 < 0.35
    assert sep["rank_tau"] == pytest.approx(1 - 2 * twice_c2)
    assert sep["separability"] == 0.0 and sep["n_systems"] == 2


# --- choosing an ensemble ------------------------------------------------------------------------------------
#
# Three judges, one human rater per pair (the majority is that vote), six pairs, one call each:
#
#   pair  human  A  B  C   | A+B   A+C   B+C   A+B+C
#   q1    a      a  a  b   | a     -     -     a
#   q2    b      b  b  b   | b     b     b     b
#   q3    a      a  b  a   | -     a     -     a
#   q4    b      b  b  a   | b     -     -     b
#   q5    a      a  a  a   | a     a     a     a
#   q6    b      a  b  b   | -     -     b     b
#
# agreement (pairs where the subset's majority has a winner):
#   A 5/6, B 5/6, C 4/6, A+B 4/4, A+C 3/3, B+C 3/3, A+B+C 6/6
# $ per 1,000 (A $0.001, B $0.004, C $0.0005 a call, one call a pair): A 1, B 4, C 0.5, A+B 5, A+C 1.5,
#   B+C 4.5, A+B+C 5.5; agreement per dollar: A .833, B .208, C 1.333, A+B .2, A+C .667, B+C .222, A+B+C .182
# best agreement 1.0; within 2 points: A+B, A+C, B+C, A+B+C -> best per dollar A+C (0.667). (C alone has the
# best agreement per dollar of all, 1.333, but agrees on only 4 of 6: the tolerance keeps it out.)


def test_the_ensemble_chooser_by_hand():
    out = jb.ensembles(*choice_tables()).set_index("ensemble")
    assert list(out.index) == ["A", "B", "C", "A+B", "A+C", "B+C", "A+B+C"]
    expected = {"A": (5, 6, 1.0), "B": (5, 6, 4.0), "C": (4, 6, 0.5), "A+B": (4, 4, 5.0), "A+C": (3, 3, 1.5),
                "B+C": (3, 3, 4.5), "A+B+C": (6, 6, 5.5)}
    for name, (agree, n, usd) in expected.items():
        assert (out.loc[name, "n_agree"], out.loc[name, "n_pairs"]) == (agree, n), name
        assert out.loc[name, "agreement"] == pytest.approx(agree / n), name
        assert out.loc[name, "usd_per_1000"] == pytest.approx(usd), name
        assert out.loc[name, "agreement_per_usd"] == pytest.approx(agree / n / usd), name
    assert out.loc["A+B", "n_no_verdict"] == 2 and out.loc["A+B+C", "n_no_verdict"] == 0
    assert list(out.index[out["within_tolerance"]]) == ["A+B", "A+C", "B+C", "A+B+C"]
    assert list(out.index[out["recommended"]]) == ["A+C"] and "recommended" in out.loc["A+C", "note"]
    assert out.loc["A+C", "judges"] == ["A", "C"] and out.loc["A+B+C", "n_judges"] == 3
    # a wider tolerance lets C (0.667, 4 of 6) in, and it is the cheapest agreement
    wide = jb.ensembles(*choice_tables(), tolerance=0.4).set_index("ensemble")
    assert list(wide.index[wide["recommended"]]) == ["C"]


def test_the_chooser_recommends_nothing_without_humans_or_prices():
    out = jb.ensembles(*choice_tables(humans=False))
    assert (out["status"] == jb.NO_HUMANS).all() and out["agreement"].isna().all() and not out["recommended"].any()
    assert out["usd_per_1000"].notna().all()  # the cost is still known
    # the best subsets (within tolerance) have no price: nothing recommended, and said so
    out = jb.ensembles(*choice_tables(price={"A": None, "B": 0.004, "C": None}), local_judges=["A", "C"])
    out = out.set_index("ensemble")
    assert not out["recommended"].any()
    assert "nothing recommended" in out.loc["A+C", "note"] and "no price" in out.loc["A+C", "note"]
    # B alone is priced but 0.83 is not within 2 points of 1.0: it is not chosen instead
    assert out.loc["B", "usd_per_1000"] == pytest.approx(4.0) and not out.loc["B", "within_tolerance"]


def test_the_subsets_beyond_eight_judges():
    names = [f"j{k}" for k in range(9)]
    got = jb.subsets(names)
    assert len(got) == 9 + 9 + 1 and got[-1] == tuple(names) and len(jb.subsets(names[:8])) == 2 ** 8 - 1
