"""heart.stats.agreement as the paper defines it (§4.2, §4.4, §4.9, §9.6, §9.9): exact consensus, orientation of
the rows, one definition of "no verdict", inter-human percent agreement, the mean of the judges, the paper's
ambiguous subset, and the regular/adversarial scopes. Expected values are worked out by hand in comments."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.inter_human import inter_human
from heart.stats.agreement.majority import CONSENSUS, ambiguity, consensus_fraction, majority
from heart.stats.agreement.orientation import orient
from heart.stats.agreement.stability import subsampling_stability
from heart.stats.agreement.trivial import pair_lengths, trivial_judges
from heart.stats import bootstrap
from heart.common import tableio
from support.tables import JUDGMENT_AXES as AXES, judgments_frame as table
from support.judgments import judgment, random_table, row


def humans(pair, conv, winners, **kw):
    return [judgment(pair, conv, f"human:r{k + 1}", w, **kw) for k, w in enumerate(winners)]


def llm(pair, conv, judge, winner, marks=None, **kw):
    """An LLM row with signed axis marks ``marks`` (H, E, A, R, T; None = not marked)."""
    r = judgment(pair, conv, judge, winner, **kw)
    if marks is not None:
        r.update(dict(zip(AXES, marks)))
    return r


# --- 1. consensus is an exact fraction ------------------------------------------------------------

def test_consensus_fraction_parsing():
    assert consensus_fraction("2/3") == Fraction(2, 3)
    assert consensus_fraction(" 2 / 3 ") == Fraction(2, 3)
    assert consensus_fraction(0.6667) == Fraction(2, 3)  # limit_denominator(100)
    assert consensus_fraction("0.6667") == Fraction(2, 3)
    assert consensus_fraction(0.75) == Fraction(3, 4)
    assert consensus_fraction("667/1000") == Fraction(667, 1000)  # p/q is exact
    assert consensus_fraction(Fraction(3, 5)) == Fraction(3, 5)
    assert consensus_fraction(1) == 1
    assert CONSENSUS == Fraction(2, 3)
    assert consensus_fraction("1/2") == Fraction(1, 2)
    for bad in ("two thirds", "2/0", "3/2", "1/3", "0.3", 0, 1.5, -0.5, float("nan")):
        with pytest.raises(ValueError):
            consensus_fraction(bad)
    for bad in (True, None, [2, 3]):
        with pytest.raises(TypeError):
            consensus_fraction(bad)


def consensus_table():
    return table([
        *humans("q1", 1, ["a", "a", "b"]),                 # 2 of 3 = 2/3 -> clear at 2/3
        *humans("q2", 2, ["a", "a", "a", "a", "b", "b"]),  # 4 of 6 = 2/3 -> clear
        *humans("q3", 3, ["a", "a", "a", "b", "b"]),       # 3 of 5 = 0.6 < 2/3 -> ambiguous
        *humans("q4", 4, ["a", "a", "a", "a", "b", None]),  # 4 of 6 (a tie counts in the total) -> clear
        *humans("q5", 5, ["b", "b", None]),                # 2 of 3 -> clear
        *humans("q6", 6, ["a", "a", "b", "b", None]),      # no winner -> ambiguous
    ])


def test_majority_consensus_is_exact():
    t = consensus_table()
    expected = {"q1": False, "q2": False, "q3": True, "q4": False, "q5": False, "q6": True}
    for consensus in ("2/3", 0.6667, 2 / 3, Fraction(2, 3), "0.6667"):
        amb = majority(t, "human", consensus=consensus).set_index("pair_id")["ambiguous"]
        assert amb.to_dict() == expected, consensus
    # the float comparison this replaces flagged a share of exactly 2/3 (0.666...) as below 0.6667
    assert 2 / 3 < 0.6667
    # stricter: 3/4 -> 2*4 = 8 < 3*3 = 9 (q1 ambiguous); 4*4 = 16 < 3*6 = 18 (q2, q4 ambiguous)
    amb = majority(t, "human", consensus="3/4").set_index("pair_id")["ambiguous"]
    assert amb.to_dict() == {"q1": True, "q2": True, "q3": True, "q4": True, "q5": True, "q6": True}
    # exact p/q: 667/1000 -> 2*1000 = 2000 < 667*3 = 2001 (q1 ambiguous)
    assert majority(t, "human", consensus="667/1000").set_index("pair_id").loc["q1", "ambiguous"]
    # 3/5 at consensus 3/5 is clear: 3*5 = 15 >= 3*5
    assert not majority(t, "human", consensus="3/5").set_index("pair_id").loc["q3", "ambiguous"]


def test_stability_and_trivial_judges_take_no_consensus():
    t = consensus_table()
    texts = pd.DataFrame(columns=["item_id", "system", "contributor_id", "text"])
    with pytest.raises(TypeError):
        subsampling_stability(t, consensus="2/3")
    with pytest.raises(TypeError):
        trivial_judges(t, texts, consensus="2/3")


# --- 2. one definition of "no verdict" ------------------------------------------------------------

def no_verdict_table():
    # humans say a on p1..p4 (3 of 3: clear). jA is shown every pair: p1 a, p2 b, p3 inconsistent,
    # p4 unparsed.
    # jX (family-excluded) is shown p1 (a) and p2 (inconsistent) only.
    rows = []
    for i in range(1, 5):
        rows += humans(f"p{i}", i, ["a", "a", "a"])
    rows += [llm("p1", 1, "jA", "a"), llm("p2", 2, "jA", "b"), llm("p3", 3, "jA", None),
             llm("p4", 4, "jA", None, status="unparsed"),
             llm("p1", 1, "jX", "a"), llm("p2", 2, "jX", None)]
    return table(rows)


def test_no_verdict_is_the_same_in_human_llm_and_trivial_tables():
    t = no_verdict_table()
    texts = pd.DataFrame([{"item_id": f"item-p{i}", "system": s, "contributor_id": None, "text": "w " * n}
                          for i in range(1, 5) for s, n in (("m1", 2), ("m2", 1))])
    hl = human_llm_agreement(t, n_boot=0)
    tj = trivial_judges(t, texts, n_boot=0)
    hum = tj[tj["reference"] == "human-majority"].set_index("judge")
    # jA: verdicts p1 (= a), p2 (b != a): 2 pairs, 1 agrees; shown p3, p4 without a winner: 2 no verdict
    # jX: p1 (= a): 1 pair; shown p2 without a winner: 1 no verdict; p3, p4 never shown: in neither count
    # ensemble: p1 a (jA a, jX a) agrees; p2 b (jA b; jX neither) disagrees; p3 tie, p4 only unparsed: 2
    expected = {"jA": (2, 1, 2), "jX": (1, 1, 1), "llm-ensemble": (2, 1, 2)}
    for judge, (n_pairs, n_agree, n_no) in expected.items():
        h = row(hl, judge=judge, scope="all")
        assert (h["n_pairs"], h["n_agree"], h["n_no_verdict"]) == (n_pairs, n_agree, n_no), judge
        assert (hum.loc[judge, "n_pairs"], hum.loc[judge, "n_agree"], hum.loc[judge, "n_no_verdict"]) == \
            (n_pairs, n_agree, n_no), judge
    # against the other LLM judges (leave-one-out): jX vs jA's verdict: p1 a = a; p2 jA says b, jX none -> 1
    # no verdict; p3, p4 never shown to jX -> out. jA vs jX: p1 agrees; p2 (jX inconsistent), p3, p4: no
    # reference
    loo = tj[tj["reference"] == "llm-ensemble-majority"].set_index("judge")
    assert (loo.loc["jX", "n_pairs"], loo.loc["jX", "n_agree"], loo.loc["jX", "n_no_verdict"]) == (1, 1, 1)
    assert (loo.loc["jA", "n_pairs"], loo.loc["jA", "n_no_verdict"]) == (1, 0)
    # the human majority against the ensemble: p1 a = a, p2 a != b; humans judged every pair, no gap
    hm = loo.loc["human-majority"]
    assert (hm["n_pairs"], hm["n_agree"], hm["n_no_verdict"]) == (2, 1, 0)


# --- 3. inter_human with nullable-integer preferences --------------------------------------------

def nullable_table(all_missing=False):
    rows = [
        # u1: prefs 2, NA (winner a), -1 -> winners a, a, b
        judgment("u1", 1, "human:r1", "a", preference=2), judgment("u1", 1, "human:r2", "a"),
        judgment("u1", 1, "human:r3", "b", preference=-1),
        # u2: prefs 1, 1, 0 -> a, a, about the same
        judgment("u2", 2, "human:r1", "a", preference=1), judgment("u2", 2, "human:r2", "a", preference=1),
        judgment("u2", 2, "human:r3", None, preference=0),
        # u3: NA (about the same), 0 -> about the same twice
        judgment("u3", 3, "human:r1", None), judgment("u3", 3, "human:r2", None, preference=0),
    ]
    t = table(rows)
    assert t["preference"].dtype == "Int64"
    missing = [1, 6] if not all_missing else list(range(len(t)))
    t.loc[missing, "preference"] = pd.NA
    return t


def test_inter_human_nullable_preference():
    t = nullable_table()
    out = inter_human(t, n_boot=50, seed=0)
    # winner labels: u1 a a b (3 rater pairs, 1 agrees), u2 a a tie (3, 1), u3 tie tie (1, 1) -> 3 / 7
    pw = row(out, measure="percent_agreement", labels="winner (a/tie/b)")
    assert pw["value"] == pytest.approx(3 / 7) and pw["status"] == "ok"
    assert (pw["n_units"], pw["n_ratings"]) == (3, 8)
    assert len(out[out["measure"] == "percent_agreement"]) == 1  # one row: the paper's reading, on the winner
    # preferences: u1 2, -1; u2 1, 1, 0; u3 a single 0 (not pairable) -> 2 units, 5 ratings
    pp = row(out, measure="krippendorff_alpha", labels="preference (-2..2)", level="nominal")
    assert (pp["n_units"], pp["n_ratings"], pp["status"]) == (2, 5, "ok")
    assert "2 human ratings without a preference left out" in pp["note"]
    fk = row(out, measure="fleiss_kappa", labels="winner (a/tie/b)")
    assert fk["status"] == "ok" and fk["n_units"] == 2  # u1, u2: 3 ratings each
    # no preference at all: the preference measures say so; the winner measures still work
    none = inter_human(nullable_table(all_missing=True), n_boot=10)
    pref_rows = none[none["labels"] == "preference (-2..2)"]
    assert (pref_rows["status"] == "absent").all()
    assert pref_rows["note"].str.contains("no human rating carries a 5-point preference").all()
    assert not pref_rows["note"].str.contains("no pair has two or more").any()
    assert row(none, measure="percent_agreement", labels="winner (a/tie/b)")["value"] == pytest.approx(3 / 7)
    # a source that gave no strength: its ties alone sit at 0 on the preference scale; absent, never "undefined"
    t = nullable_table()
    t.loc[t["winner"].isin(["a", "b"]), "preference"] = pd.NA
    ties_only = inter_human(t, n_boot=10)
    pref_rows = ties_only[ties_only["labels"] == "preference (-2..2)"]
    assert (pref_rows["status"] == "absent").all() and pref_rows["value"].isna().all()
    assert pref_rows["note"].str.startswith("no strengths given").all()


# --- 4. orientation -------------------------------------------------------------------------------

def swap(r):
    """The same judgment given in the other A/B order."""
    r = dict(r)
    r["system_a"], r["system_b"] = r["system_b"], r["system_a"]
    r["contributor_a"], r["contributor_b"] = r["contributor_b"], r["contributor_a"]
    r["winner"] = {"a": "b", "b": "a"}.get(r["winner"], r["winner"])
    if r["preference"] is not None:
        r["preference"] = -r["preference"]
    for a in AXES:
        if r[a] is not None:
            r[a] = -r[a]
    return r


def test_orient_hand_built():
    rows = [
        judgment("p1", 1, "human:r1", "a", preference=2),                                 # canonical m1 | m2
        judgment("p1", 1, "human:r2", "a", preference=1, system_a="m2", system_b="m1"),   # m2 won
        llm("p1", 1, "j1", "b", marks=[2, -1, 0, None, 1], system_a="m2", system_b="m1"),  # m1 won
        llm("p1", 1, "j2", None),                                                         # inconsistent
        judgment("p2", 2, "human:r1", "b", system_a="human", contributor_a="c7", system_b="m1"),
        judgment("p2", 2, "human:r2", "b", system_a="m1", system_b="human", contributor_b="c7"),
    ]
    t = table(rows)
    out = orient(t)
    assert out.index.equals(t.index) and t.loc[1, "winner"] == "a"  # a copy: the input is unchanged
    assert out["system_a"].tolist() == ["m1", "m1", "m1", "m1", "human", "human"]
    assert out["contributor_a"].tolist()[4:] == ["c7", "c7"]
    assert out["contributor_b"].isna().tolist()[4:] == [True, True]
    assert out["winner"].tolist() == ["a", "b", "a", None, "b", "a"]
    assert out["preference"].tolist()[:2] == [2, -1]
    assert out["preference"].dtype == "Int64"
    assert out.loc[5, "preference"] == 1  # human:r2 on p2: b (-1) in the other order -> +1
    # j1's marks H +2, E -1, A 0, R unmarked, T +1 in the order m2 | m1 -> -2, +1, 0, NA, -1
    j1 = out.loc[2, AXES]
    assert [None if pd.isna(v) else int(v) for v in j1] == [-2, 1, 0, None, -1]
    assert out.loc[3, "status"] == "inconsistent" and out.loc[3, "winner"] is None
    # the canonical order from a pairs table instead: p1 is m2 | m1, so the first row flips
    pairs = pd.DataFrame([{"pair_id": "p1", "system_a": "m2", "contributor_a": None, "system_b": "m1",
                           "contributor_b": None},
                          {"pair_id": "p2", "system_a": "m1", "contributor_a": None, "system_b": "human",
                           "contributor_b": "c7"}])
    by_pairs = orient(t, pairs)
    assert by_pairs["winner"].tolist() == ["b", "a", "b", None, "a", "b"]
    assert by_pairs["system_a"].tolist() == ["m2", "m2", "m2", "m2", "m1", "m1"]
    with pytest.raises(ValueError, match=r"pair_id 'p2'.*not in the pairs table"):
        orient(t, pairs.iloc[:1])
    # a row whose sides are neither order: the error names the pair and the row index
    bad = table([*rows, judgment("p1", 1, "human:r3", "a", system_b="m3")])
    with pytest.raises(ValueError, match=r"pair_id 'p1', row 6: sides m1 vs m3"):
        orient(bad)
    with pytest.raises(ValueError, match=r"pair_id 'p1', row 6"):
        human_llm_agreement(bad, n_boot=0)


def test_every_agreement_function_orients_first():
    """Giving half of the rows in the other order changes nothing in any table."""
    base = random_table(n_conv=12, seed=5)
    rng = np.random.default_rng(0)
    rows = base.astype(object).where(base.notna(), None).to_dict("records")
    first = ~base["pair_id"].duplicated().to_numpy()
    mixed = [swap(r) if (not first[i] and rng.random() < 0.5) else r for i, r in enumerate(rows)]
    t_mixed = table(mixed)
    assert (t_mixed["system_a"] != base["system_a"]).sum() > 50
    texts = pd.DataFrame([{"item_id": f"item-{p}", "system": s, "contributor_id": None, "text": "w " * n}
                          for p in base["pair_id"].unique() for s, n in (("m1", 3), ("m2", 5))])
    calls = [lambda t: majority(t, "human"), lambda t: majority(t, "llm"),
             lambda t: human_llm_agreement(t, n_boot=20, seed=1),
             lambda t: cross_judge_agreement(t, n_boot=20, seed=1),
             lambda t: inter_human(t, n_boot=20, seed=1),
             lambda t: subsampling_stability(t, n_rep=5, seed=1),
             lambda t: trivial_judges(t, texts, n_boot=20, seed=1),
             lambda t: pair_lengths(t, texts),
             lambda t: ambiguity(t)]
    for call in calls:
        pd.testing.assert_frame_equal(call(t_mixed), call(base))


# --- 5. inter-human percent agreement -------------------------------------------------------------

def test_percent_agreement_hand_table():
    t = table([
        *humans("p1", 1, ["a", "a", "b"]),          # rater pairs 3, agreeing 1 (a-a)
        *humans("p2", 2, ["a", None, None, "b"]),   # rater pairs 6, agreeing 1 (about the same twice)
        *humans("p3", 3, ["b"]),                    # a single rating: out
        *humans("p4", 4, ["b", "b"]),               # 1 of 1
    ])
    out = inter_human(t, n_boot=200, seed=0)
    pa = row(out, measure="percent_agreement", labels="winner (a/tie/b)")
    assert pa["value"] == pytest.approx(3 / 10)  # (1 + 1 + 1) / (3 + 6 + 1)
    assert (pa["n_units"], pa["n_ratings"], pa["status"]) == (3, 9, "ok")
    assert "'about the same' agrees only with 'about the same'" in pa["note"]
    assert "10 rater pairs" in pa["note"]
    assert pa["ci_low"] <= pa["value"] <= pa["ci_high"]
    # the interval is the ratio of the resampled sums over the same conversation resamples
    boot = bootstrap.ClusterBootstrap(t["conversation_id"], 200, 0)
    with np.errstate(invalid="ignore", divide="ignore"):  # a replicate without these conversations
        reps = boot.totals([1, 2, 4], [1, 1, 1]) / boot.totals([1, 2, 4], [3, 6, 1])
    assert (pa["ci_low"], pa["ci_high"]) == pytest.approx(bootstrap.interval(reps, 0.95))
    # the leave-one-out ceiling is labelled as such
    texts = pd.DataFrame(columns=["item_id", "system", "contributor_id", "text"])
    ceiling = row(trivial_judges(t, texts, n_boot=0), judge="human-loo-ceiling")
    assert ceiling["note"].startswith("leave-one-out human ceiling")


# --- 6. mean of the judges ----------------------------------------------------------------------

def test_mean_of_judges_hand_table():
    from support.judgments import hand_table
    t = hand_table()
    out = human_llm_agreement(t, n_boot=300, seed=0)
    m = row(out, judge="mean-of-judges", scope="all")
    # j1 2/3 (p1 =, p3 !=, p5 =), j2 0/2 (p3, p5), j3 1/1 (p5): mean (2/3 + 0 + 1) / 3 = 5/9
    assert m["agreement"] == pytest.approx(5 / 9) and m["status"] == "ok"
    assert (m["n_pairs"], m["n_agree"]) == (6, 3)  # comparisons summed over judges
    # no verdict: j1 0, j2 1 (p1), j3 1 (p1 unparsed); no reference: j1 2 (p2, p4), j2 2, j3 0
    assert (m["n_no_verdict"], m["n_no_reference"]) == (2, 4)
    assert m["n_conversations"] == 3
    # the interval: the mean of the judges' replicates over the shared resamples
    boot = bootstrap.ClusterBootstrap(t["conversation_id"], 300, 0)
    reps = np.nanmean(np.vstack([boot.rate([1, 2, 3], [1, 0, 1])[1], boot.rate([2, 3], [0, 0])[1],
                                 boot.rate([3], [1])[1]]), axis=0)
    assert (m["ci_low"], m["ci_high"]) == pytest.approx(bootstrap.interval(reps, 0.95))
    # every scope has it, next to the ensemble
    scopes = out.groupby("judge")["scope"].apply(list)
    assert scopes["mean-of-judges"] == scopes["llm-ensemble"] == scopes["j1"]


# --- 7. the ambiguous subset: no clear human consensus AND mixed LLM axis rankings -------------------

def ambiguous_table(marks=True):
    def judges(pair, conv, winner, m1, m2, subset):
        return [llm(pair, conv, "j1", winner, m1 if marks else [None] * 5, subset=subset),
                llm(pair, conv, "j2", winner, m2 if marks else [None] * 5, subset=subset)]
    z = [0, 0, 0]
    rows = [
        # pA: humans 2 of 5 for a (ambiguous); axes H: a a -> a, E: b b -> b: mixed. Ensemble a = a.
        *humans("pA", 1, ["a", "a", "b", None, None], subset="adversarial"),
        *judges("pA", 1, "a", [1, -1, *z], [1, -2, *z], "adversarial"),
        # pB: humans 3 of 5 (ambiguous); axes H: b b, E: b and 0 -> b: all b, clear. Ensemble b != a.
        *humans("pB", 2, ["a", "a", "a", "b", "b"], subset="adversarial"),
        *judges("pB", 2, "b", [-1, -1, *z], [-2, 0, *z], "adversarial"),
        # pC: humans 4 of 5 (clear); axes mixed. Ensemble a = a.
        *humans("pC", 3, ["a", "a", "a", "a", "b"]),
        *judges("pC", 3, "a", [1, -1, *z], [1, -1, *z], "regular"),
        # pD: humans 3 of 5 (ambiguous); H: a and b -> tie, nothing else: no axis winner -> mixed. b != a.
        *humans("pD", 4, ["a", "a", "a", "b", "b"]),
        *judges("pD", 4, "b", [1, 0, *z], [-1, 0, *z], "regular"),
        # pE: humans b 2 of 5 (ambiguous); no axis mark at all -> unknown, left out. Ensemble b = b.
        *humans("pE", 5, ["b", "b", "a", None, None]),
        *judges("pE", 5, "b", [None] * 5, [None] * 5, "regular"),
    ]
    return table(rows)


def test_ambiguity_hand_table():
    amb = ambiguity(ambiguous_table()).set_index("pair_id")
    assert amb["human_ambiguous"].tolist() == [True, True, False, True, True]
    assert [None if pd.isna(v) else bool(v) for v in amb["axes_mixed"]] == [True, False, True, True, None]
    assert amb["ambiguous"].tolist() == [True, False, False, True, False]
    assert amb.loc["pA", ["axes_a", "axes_b"]].tolist() == [1, 1]
    assert amb.loc["pB", ["axes_a", "axes_b"]].tolist() == [0, 2]
    assert amb.loc["pD", ["axes_a", "axes_b"]].tolist() == [0, 0]


def test_ambiguous_scopes_hand_table():
    out = human_llm_agreement(ambiguous_table(), n_boot=100, seed=0)
    paper = row(out, judge="llm-ensemble", scope="ambiguous")
    assert (paper["n_pairs"], paper["n_agree"]) == (2, 1)  # pA agrees, pD does not
    assert "2 of 4 pairs without a clear human consensus" in paper["note"]
    assert "1 of those without any LLM axis mark left out" in paper["note"]  # pE
    human_only = row(out, judge="llm-ensemble", scope="ambiguous-human-only")
    assert (human_only["n_pairs"], human_only["n_agree"]) == (4, 2)  # pA, pE agree; pB, pD do not
    clear = row(out, judge="llm-ensemble", scope="clear")
    assert (clear["n_pairs"], clear["n_agree"]) == (1, 1)  # pC
    # j1 and j2 name the ensemble's winners: the mean of the judges is the same
    assert row(out, judge="mean-of-judges", scope="ambiguous")["agreement"] == pytest.approx(0.5)
    assert row(out, judge="mean-of-judges", scope="ambiguous")["n_pairs"] == 4  # 2 pairs x 2 judges
    # §4.9: regular vs adversarial, ensemble and mean of judges
    for judge in ("llm-ensemble", "mean-of-judges"):
        adv = row(out, judge=judge, scope="subset=adversarial")
        reg = row(out, judge=judge, scope="subset=regular")
        assert adv["agreement"] == pytest.approx(1 / 2)  # pA =, pB !=
        assert reg["agreement"] == pytest.approx(2 / 3)  # pC =, pD !=, pE =
    # no axis marks anywhere: the paper's subset cannot be formed, and the rows say so
    for t in (ambiguous_table(marks=False), ambiguous_table().drop(columns=AXES)):
        out = human_llm_agreement(t, n_boot=0)
        paper = out[out["scope"] == "ambiguous"]
        assert len(paper) == 4 and (paper["status"] == "absent").all() and paper["agreement"].isna().all()
        assert paper["note"].str.contains("LLM axis marks are absent").all()
        assert row(out, judge="llm-ensemble", scope="ambiguous-human-only")["n_pairs"] == 4


# --- 8. regular and adversarial scopes always exist ---------------------------------------------

def test_subset_scopes_always_present():
    from support.judgments import hand_table
    out = human_llm_agreement(hand_table(), n_boot=0)  # every pair is regular
    for judge in ("llm-ensemble", "mean-of-judges"):
        assert row(out, judge=judge, scope="subset=regular")["status"] == "ok"
        adv = row(out, judge=judge, scope="subset=adversarial")
        assert adv["status"] == "no_pairs" and math.isnan(adv["agreement"]) and adv["n_pairs"] == 0
    t = random_table(seed=3)
    out = human_llm_agreement(t, n_boot=50, seed=0)
    for scope in ("subset=regular", "subset=adversarial"):
        judges = out[(out["scope"] == scope) & out["judge"].isin(["j1", "j2", "j3"])]
        m = row(out, judge="mean-of-judges", scope=scope)
        assert m["agreement"] == pytest.approx(judges["agreement"].mean())
        assert m["n_pairs"] == judges["n_pairs"].sum()
        assert m["ci_low"] <= m["agreement"] <= m["ci_high"]


# --- 9. the tables match their schemas -----------------------------------------------------------

def test_tables_match_schemas():
    texts = pd.DataFrame(columns=["item_id", "system", "contributor_id", "text"])
    for t in (ambiguous_table(), random_table(n_conv=6, seed=1), table(humans("p1", 1, ["a", "b"]))):
        tables = {"agreement_human_llm": human_llm_agreement(t, n_boot=10),
                  "agreement_cross_judge": cross_judge_agreement(t, n_boot=10),
                  "agreement_inter_human": inter_human(t, n_boot=10),
                  "judge_stability": subsampling_stability(t, n_rep=3),
                  "trivial_judges": trivial_judges(t, texts, n_boot=10)}
        for name, frame in tables.items():
            tableio.to_arrow(frame, name)
