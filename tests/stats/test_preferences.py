"""heart.stats.preferences (§4.5 preference shares): hand-built judgments tables, shares worked out by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from support.tables import JUDGMENT_AXES as AXES, judgments_frame as table
from heart.stats import bootstrap
from heart.stats import preferences
from heart.common import tableio

MODEL_A = {"system_a": "m1", "contributor_a": None, "system_b": "human", "contributor_b": "w1"}
HUMAN_A = {"system_a": "human", "contributor_a": "w2", "system_b": "m1", "contributor_b": None}


def judgment(pair, conv, judge, winner=None, status=None, axes=None, subset="regular", kind="human-model",
             sides=MODEL_A):
    """One row of a judgments table; judges named ``human:<id>`` are human raters (no axis marks)."""
    human = judge.startswith("human:")
    if status is None:
        status = "ok" if winner else ("tie" if human else "inconsistent")
    marks = [None] * 5 if human or axes is None else list(axes)
    return {"pair_id": pair, "item_id": f"item-{pair}", "conversation_id": conv, "subset": subset, **sides,
            "kind": kind, "judge": judge, "judge_kind": "human" if human else "llm", "status": status,
            "winner": winner, "strength": 1 if winner else None,
            "preference": ({"a": 1, "b": -1, None: 0}[winner] if human else None),
            "n_orders": None if human else 2, "flipped": None if human else False,
            **dict(zip(AXES, marks)), "rationale": None}


def shares(out, source, measure, subset):
    """outcome -> (count, n, share) of one (source, measure, subset)."""
    s = out[(out["source"] == source) & (out["measure"] == measure) & (out["subset"] == subset)]
    assert len(s) == 3, s
    return {r.outcome: (r.count, r.n, r.share) for r in s.itertuples()}


def one(out, **where):
    mask = np.ones(len(out), bool)
    for k, v in where.items():
        mask &= (out[k] == v).to_numpy()
    assert mask.sum() == 1, where
    return out[mask].iloc[0]


H, L = preferences.HUMAN_RATERS, preferences.LLM_JUDGES
PER_RATING, MAJORITY = "per rating", "per pair, raters' majority"
ALL_AXES, OVERALL = "per verdict", "overall winner per verdict"
ENSEMBLE = "per pair, ensemble majority per axis"


def human_rows():
    # P1 (c1, regular): model is a. r1 a -> model, r2 b -> human, r3 about the same -> tie,
    #     r4 status "unparsed" without a choice -> left out (n_excluded 1)
    # P2 (c2, regular): the human is a. r1 a -> human, r2 b -> model, r3 b -> model
    # P3 (c3, adversarial): model is a. r1 a -> model, r2 tie
    # P4: a model-model pair, ignored
    return [
        judgment("P1", "c1", "human:r1", "a"), judgment("P1", "c1", "human:r2", "b"),
        judgment("P1", "c1", "human:r3", None), judgment("P1", "c1", "human:r4", None, status="unparsed"),
        judgment("P2", "c2", "human:r1", "a", sides=HUMAN_A),
        judgment("P2", "c2", "human:r2", "b", sides=HUMAN_A),
        judgment("P2", "c2", "human:r3", "b", sides=HUMAN_A),
        judgment("P3", "c3", "human:r1", "a", subset="adversarial"),
        judgment("P3", "c3", "human:r2", None, subset="adversarial"),
        judgment("P4", "c4", "human:r1", "a", kind="model-model",
                 sides={"system_a": "m1", "contributor_a": None, "system_b": "m2", "contributor_b": None}),
    ]


def llm_rows():
    # Q1 (c1, regular): model is a.
    #   g1: a, marks (1,2,1,1,3) all favour the model -> model wins all axes; overall model
    #   g2: a, marks (1,1,1,1,0): T has no clear advantage -> neither wins all; overall model
    # Q2 (c2, regular): the human is a (model is b: a negative mark favours the model).
    #   g1: b, marks (-1,-1,-2,-1,-1) -> model wins all; overall model
    #   g2: a, marks (1,1,1,1,0) -> neither wins all (T unmarked); overall human
    #   g3: unparsed -> left out (n_excluded 1)
    # Q3 (c3, adversarial): model is a.
    #   g1: inconsistent (no winner), marks (1,1,1,1,missing) -> neither wins all; overall no verdict
    #   g2: a, marks (1,1,1,1,1) -> model wins all; overall model
    # Q4 (c4, regular): the human is a. g1: a, marks (2,1,1,1,1) all favour the human -> human wins all;
    #   overall human
    return [
        judgment("Q1", "c1", "g1", "a", axes=(1, 2, 1, 1, 3)),
        judgment("Q1", "c1", "g2", "a", axes=(1, 1, 1, 1, 0)),
        judgment("Q2", "c2", "g1", "b", axes=(-1, -1, -2, -1, -1), sides=HUMAN_A),
        judgment("Q2", "c2", "g2", "a", axes=(1, 1, 1, 1, 0), sides=HUMAN_A),
        judgment("Q2", "c2", "g3", None, status="unparsed", axes=(None,) * 5, sides=HUMAN_A),
        judgment("Q3", "c3", "g1", None, axes=(1, 1, 1, 1, None), subset="adversarial"),
        judgment("Q3", "c3", "g2", "a", axes=(1, 1, 1, 1, 1), subset="adversarial"),
        judgment("Q4", "c4", "g1", "a", axes=(2, 1, 1, 1, 1), sides=HUMAN_A),
    ]


def test_human_side_from_each_rows_own_systems():
    t = table([judgment("P", "c", "g", "a", sides=MODEL_A), judgment("P", "c", "g", "a", sides=HUMAN_A),
               judgment("P", "c", "g", "a", sides={"system_a": "m1", "contributor_a": None, "system_b": "m2",
                                                   "contributor_b": None}),
               judgment("P", "c", "g", "a", sides={"system_a": "original", "contributor_a": None,
                                                   "system_b": "human", "contributor_b": "w1"})])
    # model vs human#w1 -> b; human#w2 vs model -> a; two models, and the dataset vs a human: neither
    assert preferences.human_side(t).tolist() == ["b", "a", None, None]
    # a source override: system "peer" is a human's though it has no contributor
    peer = table([judgment("P", "c", "g", "a", sides={"system_a": "m1", "contributor_a": None,
                                                      "system_b": "peer", "contributor_b": None})])
    assert preferences.human_side(peer).tolist() == [None]
    assert preferences.human_side(peer, sources={"peer": "human", "m1": "model"}).tolist() == ["b"]


def test_human_raters_per_judgment_and_per_pair_both_orders_ties_subsets():
    out = preferences.preference_shares(table(human_rows() + llm_rows()), n_boot=0)
    # per judgment, all items: 8 counted ratings; model P1r1 P2r2 P2r3 P3r1 = 4, human P1r2 P2r1 = 2,
    # tie P1r3 P3r2 = 2  ->  1/2, 1/4, 1/4
    assert shares(out, H, PER_RATING, "all") == {"model": (4, 8, 0.5), "human": (2, 8, 0.25),
                                                    "tie": (2, 8, 0.25)}
    # regular (P1, P2): 6 ratings, model 3, human 2, tie 1
    got = shares(out, H, PER_RATING, "regular")
    assert {k: v[:2] for k, v in got.items()} == {"model": (3, 6), "human": (2, 6), "tie": (1, 6)}
    assert got["human"][2] == pytest.approx(1 / 3) and got["tie"][2] == pytest.approx(1 / 6)
    # adversarial (P3): 2 ratings, model 1, tie 1
    assert shares(out, H, PER_RATING, "adversarial") == {"model": (1, 2, 0.5), "human": (0, 2, 0.0),
                                                            "tie": (1, 2, 0.5)}
    # per pair: P1 model 1 vs human 1 -> tie; P2 model 2 vs human 1 -> model; P3 model 1 -> model
    got = shares(out, H, MAJORITY, "all")
    assert {k: v[:2] for k, v in got.items()} == {"model": (2, 3), "human": (0, 3), "tie": (1, 3)}
    assert got["model"][2] == pytest.approx(2 / 3)
    assert shares(out, H, MAJORITY, "regular") == {"model": (1, 2, 0.5), "human": (0, 2, 0.0),
                                                    "tie": (1, 2, 0.5)}
    r = one(out, source=H, measure=PER_RATING, outcome="model", subset="all")
    assert (r["status"], r["n_excluded"], r["n_conversations"], r["reading"], r["unit"]) == (
        "ok", 1, 3, "literal", "rating")
    assert "1 without a choice left out" in r["note"] and "n_boot 0" in r["note"]
    assert math.isnan(r["ci_low"]) and math.isnan(r["ci_high"])  # no replicates, no interval
    # P1's r4 (left out) is a regular item's: counted there, not on the adversarial ones
    assert one(out, source=H, measure=MAJORITY, outcome="tie", subset="regular")["n_excluded"] == 1
    r = one(out, source=H, measure=PER_RATING, outcome="tie", subset="adversarial")
    assert r["n_excluded"] == 0 and "left out" not in r["note"]


def test_rows_whose_sides_are_not_human_and_model_are_left_out_and_counted():
    # a human-model row whose systems say otherwise (the dataset's reply vs a human's) is left out, per
    # subset:
    # per judgment, regular: only P's r1 (model) counts -> 1 of 1; adversarial: nothing left -> absent
    odd = {"system_a": "original", "contributor_a": None, "system_b": "human", "contributor_b": "w1"}
    t = table([judgment("P", "c1", "human:r1", "a"), judgment("S", "c2", "human:r1", "a", sides=odd),
               judgment("S", "c2", "human:r2", "b", sides=odd, subset="adversarial")])
    out = preferences.preference_shares(t, n_boot=0)
    r = one(out, source=H, measure=PER_RATING, outcome="model", subset="regular")
    assert (r["n"], r["count"], r["n_excluded"]) == (1, 1, 1)
    assert "1 with sides not one human and one model left out" in r["note"]
    assert one(out, source=H, measure=PER_RATING, outcome="model", subset="all")["n_excluded"] == 2
    r = one(out, source=H, measure=PER_RATING, outcome="model", subset="adversarial")
    assert (r["status"], r["n_excluded"]) == ("absent", 1) and math.isnan(r["share"])


def test_votes_in_either_order_of_one_pair_count_for_the_right_side():
    # one pair whose two ratings were stored in opposite A/B orders: r1 sees the model as a and picks a,
    # r2 sees the human as a and picks b -- both chose the model: 2 of 2. Taking the sides from the first
    # row of the pair would count r2 for the human (1 of 2).
    t = table([judgment("P", "c1", "human:r1", "a", sides=MODEL_A),
               judgment("P", "c1", "human:r2", "b", sides=HUMAN_A)])
    out = preferences.preference_shares(t, n_boot=0)
    assert shares(out, H, PER_RATING, "all") == {"model": (2, 2, 1.0), "human": (0, 2, 0.0),
                                                    "tie": (0, 2, 0.0)}
    assert shares(out, H, MAJORITY, "all") == {"model": (1, 1, 1.0), "human": (0, 1, 0.0), "tie": (0, 1, 0.0)}


def test_llm_all_axes_overall_and_ensemble_majority():
    out = preferences.preference_shares(table(human_rows() + llm_rows()), n_boot=0)
    # 7 parsed verdicts: model wins all Q1g1 Q2g1 Q3g2 = 3; human wins all Q4g1 = 1; neither Q1g2 (zero T),
    # Q2g2 (zero T), Q3g1 (missing T) = 3
    got = shares(out, L, ALL_AXES, "all")
    assert {k: v[:2] for k, v in got.items()} == {"model wins all axes": (3, 7),
                                                  "human wins all axes": (1, 7),
                                                  "neither wins all axes": (3, 7)}
    assert got["model wins all axes"][2] == pytest.approx(3 / 7)
    # regular: Q1, Q2, Q4 -> 5 verdicts, model all 2 (Q1g1 Q2g1), human all 1 (Q4g1), neither 2 (Q1g2 Q2g2)
    assert shares(out, L, ALL_AXES, "regular") == {"model wins all axes": (2, 5, 0.4),
                                                   "human wins all axes": (1, 5, 0.2),
                                                   "neither wins all axes": (2, 5, 0.4)}
    # adversarial: Q3 -> model all 1 (g2), neither 1 (g1)
    assert shares(out, L, ALL_AXES, "adversarial") == {"model wins all axes": (1, 2, 0.5),
                                                       "human wins all axes": (0, 2, 0.0),
                                                       "neither wins all axes": (1, 2, 0.5)}
    # overall winners: model Q1g1 Q1g2 Q2g1 Q3g2 = 4, human Q2g2 Q4g1 = 2, no verdict Q3g1 = 1 (of 7)
    got = shares(out, L, OVERALL, "all")
    assert {k: v[:2] for k, v in got.items()} == {"model": (4, 7), "human": (2, 7), "no verdict": (1, 7)}
    # ensemble majority per axis, marks turned toward the model and reduced to signs:
    # Q1: (1,1,1,1,1) + (1,1,1,1,0) = (2,2,2,2,1) -> model wins all
    # Q2: (1,1,1,1,1) + (-1,-1,-1,-1,0) = (0,0,0,0,1) -> neither (g3 unparsed, left out)
    # Q3: (1,1,1,1,0) + (1,1,1,1,1) = (2,2,2,2,1) -> model wins all
    # Q4: (-1,-1,-1,-1,-1) -> human wins all
    assert shares(out, L, ENSEMBLE, "all") == {"model wins all axes": (2, 4, 0.5),
                                               "human wins all axes": (1, 4, 0.25),
                                               "neither wins all axes": (1, 4, 0.25)}
    assert shares(out, L, ENSEMBLE, "adversarial")["model wins all axes"] == (1, 1, 1.0)
    r = one(out, source=L, measure=ALL_AXES, outcome="model wins all axes", subset="all")
    assert (r["status"], r["n_excluded"], r["n_conversations"], r["unit"]) == ("ok", 1, 4, "verdict")
    assert "1 unparsed left out" in r["note"]
    assert one(out, source=L, measure=OVERALL, outcome="model", subset="adversarial")["n_excluded"] == 0


def test_ensemble_majority_counts_judges_not_strengths():
    # one pair, model is a; on H g1 marks +3 (model), g2 and g3 mark -1 (human); every other axis +1.
    # Per axis the judges' votes: H model 1 vs human 2 -> the human wins H -> neither wins all axes
    # (summing the strengths, 3 - 1 - 1 = +1, would give the model all five). Per verdict: g1, 1 of 3.
    t = table([judgment("R", "c1", "g1", "a", axes=(3, 1, 1, 1, 1)),
               judgment("R", "c1", "g2", "a", axes=(-1, 1, 1, 1, 1)),
               judgment("R", "c1", "g3", "a", axes=(-1, 1, 1, 1, 1))])
    out = preferences.preference_shares(t, n_boot=0)
    assert shares(out, L, ENSEMBLE, "all")["neither wins all axes"] == (1, 1, 1.0)
    assert shares(out, L, ALL_AXES, "all")["model wins all axes"][:2] == (1, 3)


def test_missing_axis_column_is_no_win():
    # an LLM verdict whose table lacks axis_T entirely: the model wins H..R but T is missing -> not all axes
    t = table([judgment("Q", "c1", "g1", "a", axes=(1, 1, 1, 1, 1))]).drop(columns="axis_T")
    out = preferences.preference_shares(t, n_boot=0)
    assert shares(out, L, ALL_AXES, "all")["neither wins all axes"] == (1, 1, 1.0)


def test_absent_humans_give_nan_never_zero():
    out = preferences.preference_shares(table(llm_rows()), n_boot=50)
    h = out[out["source"] == H]
    assert len(h) == 2 * 3 * 3  # two measures x three outcomes x three subsets
    assert (h["status"] == "absent").all() and h["share"].isna().all() and h["ci_low"].isna().all()
    assert h["note"].str.contains("human judgments are absent").all()
    assert (out.loc[out["source"] == L, "status"] == "ok").all()
    # human raters present, but only on model-model pairs
    only_mm = table(llm_rows() + [human_rows()[-1]])
    h = preferences.preference_shares(only_mm, n_boot=0).query("source == @H")
    assert (h["status"] == "absent").all()
    assert h["note"].str.contains("no human judgment of a human-model pair").all()


def test_absent_llm_judges_and_all_unparsed():
    out = preferences.preference_shares(table(human_rows()), n_boot=0)
    llm = out[out["source"] == L]
    assert (llm["status"] == "absent").all() and llm["share"].isna().all()
    assert llm["note"].str.contains("LLM judgments are absent").all()
    unparsed = table([judgment("Q", "c1", "g1", None, status="unparsed", axes=(None,) * 5)])
    llm = preferences.preference_shares(unparsed, n_boot=0).query("source == @L")
    assert (llm["status"] == "absent").all()
    assert llm["note"].str.contains(r"every LLM verdict on a human-model pair is unparsed \(1\)").all()
    # the unparsed verdict is a regular item's
    assert llm.groupby("subset")["n_excluded"].max().to_dict() == {"adversarial": 0, "all": 1, "regular": 1}


def test_absent_subset():
    # only regular items: the adversarial rows are absent, the regular ones repeat "all"
    rows = [r for r in human_rows() + llm_rows() if r["subset"] == "regular"]
    out = preferences.preference_shares(table(rows), n_boot=0)
    adv = out[out["subset"] == "adversarial"]
    assert (adv["status"] == "absent").all() and adv["share"].isna().all() and (adv["n"] == 0).all()
    assert one(adv, source=H, measure=PER_RATING, outcome="tie")["note"].startswith(
        "absent: no rating of a human-model pair on adversarial items")
    assert one(adv, source=L, measure=ALL_AXES, outcome="model wins all axes")["note"].startswith(
        "absent: no verdict of a human-model pair on adversarial items")
    reg, alls = out[out["subset"] == "regular"], out[out["subset"] == "all"]
    assert reg["share"].tolist() == alls["share"].tolist()


def test_cluster_bootstrap_interval():
    # conversation c1 holds three ratings for the model, c2 one for the human (shares 3/4, 1/4).
    # A replicate draws 2 conversations; with k draws of c1 the model's share is 3k / (3k + (2 - k)):
    # k = 0 -> 0, 1 -> 3/4, 2 -> 1 (a row-level bootstrap would give other values, e.g. 1/2 or 2/3).
    t = table([judgment("P1", "c1", f"human:r{i}", "a") for i in range(3)]
              + [judgment("P2", "c2", "human:r9", "b")])
    n_boot, seed, ci = 400, 7, 0.8
    out = preferences.preference_shares(t, n_boot=n_boot, seed=seed, ci=ci)
    k = bootstrap.counts(2, n_boot, seed)[:, 0]  # clusters sorted: c1 first
    reps = np.array([{0: 0.0, 1: 0.75, 2: 1.0}[int(x)] for x in k])
    lo, hi = np.quantile(reps, [0.1, 0.9])
    r = one(out, source=H, measure=PER_RATING, outcome="model", subset="all")
    assert r["share"] == 0.75 and r["n_conversations"] == 2
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo, hi))
    # by hand: P(k = 0) = P(k = 2) = 1/4 > (1 - 0.8) / 2, so the 10 % and 90 % quantiles are 0 and 1 (a
    # row-level bootstrap of the 4 ratings would put the lower bound at 1/2)
    assert (lo, hi) == (0.0, 1.0)
    # the human's share is the complement in every replicate
    r = one(out, source=H, measure=PER_RATING, outcome="human", subset="all")
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((1 - hi, 1 - lo))
    # every unit the same outcome: the interval is the point
    same = table([judgment(f"P{i}", f"c{i}", "human:r1", "a") for i in range(4)])
    r = one(preferences.preference_shares(same, n_boot=100, seed=1), source=H, measure=PER_RATING,
            outcome="model", subset="all")
    assert (r["share"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0)
    # the same seed gives the same table
    again = preferences.preference_shares(t, n_boot=n_boot, seed=seed, ci=ci)
    pd.testing.assert_frame_equal(out, again)


def test_written_through_the_schema(tmp_path):
    for t in (table(human_rows() + llm_rows()), table(llm_rows())):
        out = preferences.preference_shares(t, n_boot=20)
        path = tmp_path / "preference_shares.parquet"
        tableio.write_table(out, path, "preference_shares", {"test": True})
        back = tableio.read_table(path)
        assert list(back.columns) == preferences.COLUMNS and len(back) == len(out) == 45
        assert back["share"].isna().tolist() == out["share"].isna().tolist()
