"""heart.stats.agreement, heart.stats.reliability, heart.stats.bias and Benjamini-Hochberg (heart.stats.multiple_testing): published
worked examples, hand-made tables and synthetic bias checks."""

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from conftest import JUDGMENT_AXES as AXES, judgments_frame as table
from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.inter_human import inter_human
from heart.stats.agreement.majority import majority
from heart.stats.agreement.stability import subsampling_stability
from heart.stats.agreement.trivial import trivial_judges
from heart.stats import bias
from heart.stats import multiple_testing
from heart.stats import reliability



def judgment(pair, conv, judge, winner=None, status=None, preference=None, subset="regular",
             kind="model-model", system_a="m1", system_b="m2", contributor_a=None, contributor_b=None):
    """One row of a judgments table; judges named ``human:<id>`` are human raters."""
    human = judge.startswith("human:")
    if status is None:
        status = "ok" if winner else ("tie" if human else "inconsistent")
    if human and preference is None:
        preference = {"a": 1, "b": -1, None: 0}[winner]
    return {"pair_id": pair, "item_id": f"item-{pair}", "conversation_id": conv, "subset": subset,
            "system_a": system_a, "contributor_a": contributor_a, "system_b": system_b,
            "contributor_b": contributor_b, "kind": kind, "judge": judge,
            "judge_kind": "human" if human else "llm", "status": status, "winner": winner,
            "strength": 1 if winner else None, "preference": preference if human else None,
            "n_orders": None if human else 2, "flipped": None if human else False,
            **{a: None if human else 0 for a in AXES}}


def row(frame, **where):
    mask = np.ones(len(frame), bool)
    for k, v in where.items():
        mask &= (frame[k] == v).to_numpy()
    assert mask.sum() == 1, (where, frame)
    return frame[mask].iloc[0]


# --- published worked examples ------------------------------------------------------------------

def test_cohen_kappa_textbook_two_by_two():
    # Wikipedia "Cohen's kappa", worked example: 50 grant proposals, readers A and B.
    # Yes/Yes 20, A Yes & B No 5, A No & B Yes 10, No/No 15  ->  p_o = 0.70, p_e = 0.50, kappa = 0.40.
    pairs = [("a", "a")] * 20 + [("a", "b")] * 5 + [("b", "a")] * 10 + [("b", "b")] * 15
    res = reliability.cohen_kappa([p[0] for p in pairs], [p[1] for p in pairs], categories=["a", "b"])
    assert res["p_observed"] == pytest.approx(0.70)
    assert res["kappa"] == pytest.approx(0.40)
    assert res["kappa_ci_low"] < 0.40 < res["kappa_ci_high"]
    # the same data through cross_judge_agreement: two LLM judges on 50 pairs
    rows = []
    for i, (x, y) in enumerate(pairs):
        rows += [judgment(f"p{i}", i, "reader-A", x), judgment(f"p{i}", i, "reader-B", y)]
    out = cross_judge_agreement(table(rows), n_boot=200, seed=0)
    pw = row(out, scope="pairwise")
    assert (pw["judge_1"], pw["judge_2"], pw["n_pairs"], pw["n_agree"]) == ("reader-A", "reader-B", 50, 35)
    assert pw["agreement"] == pytest.approx(0.70)
    assert pw["kappa"] == pytest.approx(0.40)
    assert pw["ci_low"] < 0.70 < pw["ci_high"]


# Wikipedia "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories; kappa = 0.210
FLEISS_TABLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_kappa_wikipedia_worked_example():
    ratings = pd.DataFrame([{"unit": i, "label": c} for i, counts in enumerate(FLEISS_TABLE)
                            for c, n in enumerate(counts, start=1) for _ in range(n)])
    res = reliability.fleiss_kappa(ratings, categories=[1, 2, 3, 4, 5])
    assert round(res["kappa"], 3) == 0.210
    assert (res["n_units"], res["n_per_unit"], res["n_units_dropped"]) == (10, 14, 0)
    # the same data as human judgments: category c is the preference c - 3, rater k gives the k-th rating
    rows = []
    for i, counts in enumerate(FLEISS_TABLE):
        labels = [c for c, n in enumerate(counts, start=1) for _ in range(n)]
        for k, c in enumerate(labels):
            pref = c - 3
            rows.append(judgment(f"p{i}", i, f"human:r{k}", "a" if pref > 0 else "b" if pref < 0 else None,
                                 preference=pref))
    out = inter_human(table(rows), n_boot=100, seed=0)
    fk = row(out, measure="fleiss_kappa", labels="preference (-2..2)")
    assert round(fk["value"], 3) == 0.210
    assert fk["status"] == "ok" and fk["n_units"] == 10 and fk["n_ratings"] == 140
    assert fk["ci_low"] <= fk["value"] <= fk["ci_high"]


# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", section on nominal data with
# missing values: 4 observers, 12 units, values 1-5; published alpha (nominal) = 0.743, (ordinal) = 0.815.
KRIPP = {"A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
         "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
         "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
         "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]}


def test_krippendorff_alpha_published_example():
    ratings = pd.DataFrame([{"unit": u, "label": v} for vals in KRIPP.values() for u, v in enumerate(vals)
                            if v is not None])
    assert round(reliability.krippendorff_alpha(ratings, "nominal", [1, 2, 3, 4, 5])["alpha"], 3) == 0.743
    assert round(reliability.krippendorff_alpha(ratings, "ordinal", [1, 2, 3, 4, 5])["alpha"], 3) == 0.815
    # through inter_human: value v -> preference v - 3 (nominal and ordinal alpha are invariant to the shift)
    rows = [judgment(f"p{u}", u, f"human:{obs}", "a" if v > 3 else "b" if v < 3 else None, preference=v - 3)
            for obs, vals in KRIPP.items() for u, v in enumerate(vals) if v is not None]
    out = inter_human(table(rows), n_boot=50, seed=0)
    nominal = row(out, measure="krippendorff_alpha", labels="preference (-2..2)", level="nominal")
    ordinal = row(out, measure="krippendorff_alpha", labels="preference (-2..2)", level="ordinal")
    assert round(nominal["value"], 3) == 0.743 and round(ordinal["value"], 3) == 0.815
    assert nominal["n_units"] == 11  # unit 12 has a single value: not pairable
    fleiss = row(out, measure="fleiss_kappa", labels="preference (-2..2)")
    assert fleiss["n_units"] == 8 and "4 ratings" in fleiss["note"]  # units with 4 ratings only
    axis = row(out, labels="per-axis")
    assert axis["status"] == "unavailable" and math.isnan(axis["value"])


def test_inter_human_absent():
    rows = [judgment("p1", 1, "j1", "a"), judgment("p1", 1, "j2", "b")]
    out = inter_human(table(rows), n_boot=10)
    assert set(out["status"]) == {"absent", "unavailable"}
    assert out["value"].isna().all()
    assert out.loc[out["status"] == "absent", "note"].str.contains("human judgments are absent").all()


# --- Benjamini-Hochberg ---------------------------------------------------------------------------

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


# --- majorities and agreement on hand-made tables ------------------------------------------------

def humans(pair, conv, winners):
    return [judgment(pair, conv, f"human:r{k + 1}", w) for k, w in enumerate(winners)]


def hand_table():
    rows = [
        # p1: humans a, a, b -> a (2/3: clear); LLM: j1 a, j2 inconsistent, j3 unparsed -> a (1/2)
        *humans("p1", 1, ["a", "a", "b"]),
        judgment("p1", 1, "j1", "a"), judgment("p1", 1, "j2", None),
        judgment("p1", 1, "j3", None, status="unparsed"),
        # p2: humans a, b, about the same -> no winner (tie); LLM j1 b, j2 a -> tie
        *humans("p2", 1, ["a", "b", None]),
        judgment("p2", 1, "j1", "b"), judgment("p2", 1, "j2", "a"),
        # p3: humans a, tie, tie -> a with share 1/3 (ambiguous); LLM j1 b, j2 b -> b
        *humans("p3", 2, ["a", None, None]),
        judgment("p3", 2, "j1", "b"), judgment("p3", 2, "j2", "b"),
        # p4: no human; LLM j1 a, j2 a
        judgment("p4", 3, "j1", "a"), judgment("p4", 3, "j2", "a"),
        # p5: humans b, b, b -> b (clear); LLM j1 b, j2 a -> tie ; j3 b
        *humans("p5", 3, ["b", "b", "b"]),
        judgment("p5", 3, "j1", "b"), judgment("p5", 3, "j2", "a"), judgment("p5", 3, "j3", "b"),
    ]
    return table(rows)


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


def random_table(n_conv=30, pairs_per_conv=4, judges=("j1", "j2", "j3"), raters=3, p_agree=0.8, seed=0):
    """Synthetic judgments: each pair has a 'true' winner; judges and raters pick it with p_agree."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conv):
        for k in range(pairs_per_conv):
            pid, truth = f"c{c}p{k}", "ab"[rng.integers(2)]
            other = "b" if truth == "a" else "a"
            for j in [*judges, *(f"human:r{r}" for r in range(raters))]:
                rows.append(judgment(pid, c, j, truth if rng.random() < p_agree else other,
                                     subset="adversarial" if c % 5 == 0 else "regular"))
    return table(rows)


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


# --- bias audits (synthetic tables) --------------------------------------------------------------

def test_position_bias_detects_planted_bias_only():
    """Synthetic verdicts: 'biased' picks the response shown as A 65% of the time, 'fair' 50%."""
    rng = np.random.default_rng(0)
    rows = []
    for judge, p_a in (("biased", 0.65), ("fair", 0.5)):
        for i in range(600):
            rows.append({"pair_id": f"p{i}", "judge": judge, "order": "AB" if i % 2 else "BA",
                         "shown_a": "m1", "parse_ok": True,
                         "winner_shown": "A" if rng.random() < p_a else "B"})
    rows.append({"pair_id": "x", "judge": "fair", "order": "AB", "shown_a": "m1", "parse_ok": False,
                 "winner_shown": None})
    out = bias.position_bias(pd.DataFrame(rows)).set_index("judge")
    assert out.loc["biased", "reject"] and out.loc["biased", "p_value"] < 1e-6
    assert out.loc["biased", "ci_low"] > 0.5
    assert not out.loc["fair", "reject"] and out.loc["fair", "p_value"] > 0.05
    assert out.loc["fair", "n_verdicts"] == 600  # the unparsed verdict is left out
    assert out.loc["fair", "ci_low"] < 0.5 < out.loc["fair", "ci_high"]
    assert (out["family"] == "position_bias").all()


def test_length_bias_detects_planted_bias_only():
    """Synthetic pairs with random A/B lengths; 'verbose' picks the longer reply 75%, 'fair' at random."""
    rng = np.random.default_rng(1)
    texts, rows = [], []
    for i in range(400):
        la, lb = rng.choice(np.arange(1, 60), size=2, replace=False)
        texts += [{"item_id": f"item-p{i}", "system": s, "contributor_id": None, "text": " ".join(["w"] * n)}
                  for s, n in (("m1", la), ("m2", lb))]
        longer, shorter = ("a", "b") if la > lb else ("b", "a")
        rows.append(judgment(f"p{i}", i, "verbose", longer if rng.random() < 0.75 else shorter))
        rows.append(judgment(f"p{i}", i, "fair", "ab"[rng.integers(2)]))
    out = bias.length_bias(table(rows), pd.DataFrame(texts)).set_index("judge")
    assert out.loc["verbose", "reject"] and out.loc["verbose", "share_longer_wins"] > 0.65
    assert not out.loc["fair", "reject"] and out.loc["fair", "p_value"] > 0.05
    assert out.loc["fair", "n_pairs"] == 400
    assert out.loc["human-majority", "status"] == "absent"
    assert out.loc["human-majority", "note"] == "human judgments are absent"


def test_self_preference_planted_and_family_exclusion():
    """Synthetic: 'gpt-judge' always picks its family's system; 'claude-judge' picks at random."""
    rng = np.random.default_rng(2)
    rows = []
    for i in range(300):
        gpt_side = "a" if i % 2 else "b"
        sa, sb = ("gpt-x", "llama-y") if gpt_side == "a" else ("llama-y", "gpt-x")
        rows.append(judgment(f"p{i}", i // 3, "gpt-judge", gpt_side, system_a=sa, system_b=sb))
        rows.append(judgment(f"p{i}", i // 3, "claude-judge", "ab"[rng.integers(2)], system_a=sa,
                             system_b=sb))
    judge_fam = {"gpt-judge": "gpt", "claude-judge": "claude"}
    sys_fam = {"gpt-x": "gpt", "llama-y": "llama"}
    out = bias.self_preference(table(rows), judge_fam, sys_fam, n_boot=400, seed=0).set_index("judge")
    g = out.loc["gpt-judge"]
    assert g["win_rate_self"] == 1.0 and 0.4 < g["win_rate_others"] < 0.6
    assert g["ci_low"] > 0.3 and g["reject"]
    assert out.loc["claude-judge", "status"] == "absent"  # never saw a claude system
    # the unbiased case: a gpt judge that picks at random is not flagged
    fair = [dict(r, winner="ab"[rng.integers(2)]) if r["judge"] == "gpt-judge" else r for r in rows]
    out = bias.self_preference(table(fair), judge_fam, sys_fam, n_boot=400, seed=0).set_index("judge")
    assert out.loc["gpt-judge", "ci_low"] < 0 < out.loc["gpt-judge", "ci_high"]
    assert not out.loc["gpt-judge", "reject"]
