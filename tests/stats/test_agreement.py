"""heart.stats.agreement on hand-made and random tables: majorities, agreement with the human majority,
cross-judge and inter-human agreement, judge subsampling, trivial judges (reliability, bias audits and
Benjamini-Hochberg have their own test files)."""


import numpy as np
import pandas as pd
import pytest

from support.tables import judgments_frame as table
from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.inter_human import inter_human
from heart.stats.agreement.majority import majority
from heart.stats.agreement.stability import subsampling_stability
from heart.stats.agreement.trivial import trivial_judges
from support.judgments import hand_table, judgment, random_table, row


def test_inter_human_absent():
    rows = [judgment("p1", 1, "j1", "a"), judgment("p1", 1, "j2", "b")]
    out = inter_human(table(rows), n_boot=10)
    assert set(out["status"]) == {"absent", "unavailable"}
    assert out["value"].isna().all()
    assert out.loc[out["status"] == "absent", "note"].str.contains("human judgments are absent").all()


# --- majorities and agreement on hand-made tables ------------------------------------------------


def test_majority_counts_ties_and_absent_pairs():
    t = hand_table()
    hum = majority(t, "human").set_index("pair_id")
    assert hum.loc["p1", ["winner", "votes_a", "votes_b", "votes_neither"]].tolist() == ["a", 2, 1, 0]
    assert hum.loc["p1", "share"] == pytest.approx(2 / 3) and not hum.loc["p1", "ambiguous"]
    assert hum.loc["p2", "winner"] is None and hum.loc["p2", "status"] == "tie" and hum.loc["p2", "ambiguous"]
    assert hum.loc["p3", "winner"] == "a" and hum.loc["p3", "share"] == pytest.approx(1 / 3)
    assert hum.loc["p3", "ambiguous"]
    assert hum.loc["p4", "status"] == "absent" and hum.loc["p4", "n_judgments"] == 0
    assert hum.loc["p4", "winner"] is None
    llm = majority(t, "llm").set_index("pair_id")
    assert llm.loc["p1", ["winner", "votes_a", "votes_neither", "n_unparsed"]].tolist() == ["a", 1, 1, 1]
    assert llm.loc["p1", "share"] == pytest.approx(1 / 2)
    assert llm.loc["p2", "winner"] is None and llm.loc["p2", "status"] == "tie"
    assert llm.loc["p5", "winner"] == "b"
    # a stricter consensus makes p1 (2 of 3) ambiguous
    assert majority(t, "human", consensus=0.7).set_index("pair_id").loc["p1", "ambiguous"]


def test_human_llm_agreement_hand_table():
    out = human_llm_agreement(hand_table(), n_boot=300, seed=0)
    ens = row(out, judge="llm-ensemble", scope="all")
    # human winners: p1 a, p3 a, p5 b; ensemble: p1 a, p3 b, p5 b  -> 2 of 3
    assert (ens["n_pairs"], ens["n_agree"], ens["status"]) == (3, 2, "ok")
    assert ens["agreement"] == pytest.approx(2 / 3)
    assert ens["n_no_reference"] == 2  # p2: humans tied; p4: no human rating
    amb = row(out, judge="llm-ensemble", scope="ambiguous")
    assert (amb["n_pairs"], amb["n_agree"]) == (1, 0)  # p3 only
    assert row(out, judge="llm-ensemble", scope="clear")["agreement"] == pytest.approx(1.0)
    j1 = row(out, judge="j1", scope="all")  # j1: p1 a (=), p3 b (!=), p5 b (=)
    assert (j1["n_pairs"], j1["n_agree"]) == (3, 2)
    j2 = row(out, judge="j2", scope="all")  # j2: p1 none, p3 b (!=), p5 a (!=)
    assert (j2["n_pairs"], j2["n_agree"], j2["n_no_verdict"]) == (2, 0, 1)
    assert j2["agreement"] == 0.0
    j3 = row(out, judge="j3", scope="all")  # j3: p1 unparsed, p5 b (=)
    assert (j3["n_pairs"], j3["n_agree"]) == (1, 1)
    assert ens["ci_low"] <= ens["agreement"] <= ens["ci_high"]


def test_human_llm_agreement_absent_humans_gives_status_rows_not_zeros():
    t = hand_table()
    t = t[t["judge_kind"] == "llm"]
    out = human_llm_agreement(t, n_boot=50)
    assert (out["status"] == "absent").all()
    assert out["agreement"].isna().all()
    assert out["note"].str.contains("human judgments are absent").all()
    assert {"llm-ensemble", "mean-of-judges", "j1", "j2", "j3"} == set(out["judge"])
    assert {"all", "ambiguous"} == set(out["scope"])


def test_bootstrap_is_reproducible_with_seed():
    t = random_table()
    a = human_llm_agreement(t, n_boot=200, seed=7)
    b = human_llm_agreement(t, n_boot=200, seed=7)
    pd.testing.assert_frame_equal(a, b)
    c = human_llm_agreement(t, n_boot=200, seed=8)
    np.testing.assert_array_equal(a["agreement"], c["agreement"])  # only the intervals depend on the seed
    assert not np.allclose(a["ci_low"], c["ci_low"], equal_nan=True)
    ens = row(a, judge="llm-ensemble", scope="all")
    assert ens["ci_low"] < ens["agreement"] < ens["ci_high"] and ens["ci_high"] - ens["ci_low"] < 0.3
    assert row(a, judge="llm-ensemble", scope="subset=adversarial")["n_conversations"] == 6


def test_cluster_bootstrap_resamples_conversations_not_pairs():
    # every conversation holds 10 identical pairs: a pair-level bootstrap would be far too narrow
    rows = []
    for c in range(20):
        w = "a" if c % 2 else "b"
        for k in range(10):
            rows += [judgment(f"c{c}p{k}", c, "human:r1", "a"), judgment(f"c{c}p{k}", c, "j1", w)]
    out = human_llm_agreement(table(rows), n_boot=2000, seed=1)
    ens = row(out, judge="j1", scope="all")
    assert ens["agreement"] == pytest.approx(0.5)
    # cluster SE ~ sqrt(.25/20) = 0.11 -> 95% CI about +/- 0.22; pair-level would be +/- 0.07
    assert ens["ci_high"] - ens["ci_low"] > 0.3


def test_cross_judge_agreement_three_way_and_absent():
    rows = []
    for i, (w1, w2, w3) in enumerate(["aaa", "aab", "bbb", "abb", "bba"]):
        rows += [judgment(f"p{i}", i, j, w) for j, w in zip(("j1", "j2", "j3"), (w1, w2, w3))]
    rows.append(judgment("p9", 9, "j1", "a"))  # judged by j1 only
    out = cross_judge_agreement(table(rows), n_boot=100, seed=0)
    assert row(out, judge_1="j1", judge_2="j2")["agreement"] == pytest.approx(4 / 5)  # aa, aa, bb, ab, bb
    assert row(out, judge_1="j1", judge_2="j3")["agreement"] == pytest.approx(2 / 5)
    assert row(out, judge_1="j2", judge_2="j3")["agreement"] == pytest.approx(3 / 5)
    assert row(out, scope="mean-pairwise")["agreement"] == pytest.approx(3 / 5)
    three = row(out, scope="all")
    assert (three["n_pairs"], three["n_agree"]) == (5, 2)
    # families: j1 and j2 form group g1 (majority), j3 alone
    grouped = cross_judge_agreement(table(rows), n_boot=50, judge_groups={"j1": "g1", "j2": "g1",
                                                                                   "j3": "g2"})
    g = row(grouped, scope="pairwise")
    # g1 majority: p0 a, p1 a, p2 b, p3 tie, p4 b, p9 a; g2: a b b b a -> common p0 p1 p2 p4: agree p0 p2
    assert (g["n_pairs"], g["n_agree"]) == (4, 2)
    single = cross_judge_agreement(table([judgment("p1", 1, "j1", "a")]), n_boot=10)
    assert single["status"].tolist() == ["absent"] and single["agreement"].isna().all()


# --- subsampling, trivial judges ----------------------------------------------------------------

def test_subsampling_stability_matches_direct_agreement():
    t = random_table(judges=("j1", "j2", "j3", "j4", "j5"), seed=2)
    out = subsampling_stability(t, n_rep=50, seed=0).set_index("k")
    direct = human_llm_agreement(t, n_boot=0)
    singles = direct[(direct["scope"] == "all") & direct["judge"].str.match(r"j\d")]["agreement"]
    assert out.loc[1, "sampling"] == "exhaustive" and out.loc[1, "n_subsets"] == 5
    assert out.loc[1, "mean_agreement"] == pytest.approx(singles.mean())
    ensemble = row(direct, judge="llm-ensemble", scope="all")["agreement"]
    assert out.loc[5, "mean_agreement"] == pytest.approx(ensemble)
    assert (out["reference"] == "human-majority").all()
    assert out.loc[5, "mean_agreement"] > out.loc[1, "mean_agreement"]  # majorities of more judges agree more
    no_humans = subsampling_stability(t[t["judge_kind"] == "llm"], n_rep=5, seed=0).set_index("k")
    assert (no_humans["reference"] == "llm-ensemble-majority").all()
    assert no_humans.loc[5, "mean_agreement"] == 1.0
    assert no_humans["note"].str.contains("human judgments are absent").all()
    again = subsampling_stability(t, n_rep=3, seed=4)
    pd.testing.assert_frame_equal(again, subsampling_stability(t, n_rep=3, seed=4))
    assert again["sampling"].tolist() == ["random"] * 4 + ["exhaustive"]  # C(5, k) > 3 except k = 5


def test_trivial_judges_and_human_ceiling():
    # synthetic: humans prefer the longer text; the longer one is system_a in p1, p2 and system_b in p3
    texts = pd.DataFrame([
        {"item_id": "item-p1", "system": "m1", "contributor_id": None, "text": "one two three four"},
        {"item_id": "item-p1", "system": "m2", "contributor_id": None, "text": "one"},
        {"item_id": "item-p2", "system": "m1", "contributor_id": None, "text": "one two three"},
        {"item_id": "item-p2", "system": "human", "contributor_id": "c7", "text": "one two"},
        {"item_id": "item-p3", "system": "m1", "contributor_id": None, "text": "one"},
        {"item_id": "item-p3", "system": "m2", "contributor_id": None, "text": "one two"},
    ])
    rows = [judgment("p1", 1, f"human:r{r}", "a") for r in range(3)]  # a, a, a
    rows += [judgment("p2", 2, "human:r0", "a", system_b="human", contributor_b="c7", kind="human-model"),
             judgment("p2", 2, "human:r1", "a", system_b="human", contributor_b="c7", kind="human-model"),
             judgment("p2", 2, "human:r2", "b", system_b="human", contributor_b="c7", kind="human-model")]
    rows += [judgment("p3", 3, f"human:r{r}", "b") for r in range(3)]
    rows += [judgment("p1", 1, "j1", "a"), judgment("p3", 3, "j1", "a"),
             judgment("p2", 2, "j1", "a", system_b="human", contributor_b="c7", kind="human-model")]
    out = trivial_judges(table(rows), texts, n_boot=100, seed=0)
    hum = out[out["reference"] == "human-majority"].set_index("judge")
    assert hum.loc["always-longer", "agreement"] == 1.0 and hum.loc["always-longer", "n_pairs"] == 3
    assert hum.loc["always-position-A", "agreement"] == pytest.approx(2 / 3)
    assert hum.loc["j1", "agreement"] == pytest.approx(2 / 3)
    # ceiling: p1 3 of 3; p2 raters r0, r1 vs (a, b) tie -> no verdict, r2 (b) vs (a, a) -> miss; p3 3 of 3
    ceil = hum.loc["human-loo-ceiling"]
    assert (ceil["n_pairs"], ceil["n_agree"], ceil["n_no_verdict"]) == (7, 6, 2)
    llm = out[out["reference"] == "llm-ensemble-majority"].set_index("judge")
    assert llm.loc["always-position-A", "agreement"] == 1.0  # j1 always says a
    assert llm.loc["j1", "status"] == "no_pairs"  # no other LLM judge to compare with
    llm_only = table([r for r in rows if not r["judge"].startswith("human")])
    no_humans = trivial_judges(llm_only, texts, n_boot=10)
    absent = no_humans[no_humans["reference"] == "human-majority"]
    assert (absent["status"] == "absent").all() and absent["agreement"].isna().all()
    assert absent["note"].str.contains("human judgments are absent").all()
