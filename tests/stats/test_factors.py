"""Factor structure: per-response scores, Cronbach's alpha against published examples, EFA (simulated)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from heart.stats import factors
from heart.common.vocabulary import AXES



def judgment(item, sa, ca, sb, cb, judge, status, winner, marks, kind="llm"):
    row = {"pair_id": f"{item}:{sa}:{sb}", "item_id": item, "conversation_id": 1, "system_a": sa,
           "contributor_a": ca, "system_b": sb, "contributor_b": cb, "judge": judge, "judge_kind": kind,
           "status": status, "winner": winner, "strength": 1}
    row.update({f"axis_{a}": m for a, m in zip(AXES, marks)})
    return row


def hand_judgments() -> pd.DataFrame:
    """SYNTHETIC: three responses of item i1 (x, the human c1, z); an unparsed and a human row are ignored."""
    rows = [judgment("i1", "x", None, "human", "c1", "j1", "ok", "a", [2, 1, 0, -1, 3]),
            judgment("i1", "human", "c1", "z", None, "j1", "ok", "b", [-1, -2, 1, 0, -1]),
            judgment("i1", "x", None, "z", None, "j2", "inconsistent", None, [1, 0, 0, 1, 0]),
            judgment("i1", "x", None, "human", "c1", "j2", "unparsed", None, [0, 0, 0, 0, 0]),
            judgment("i1", "x", None, "z", None, "r1", "ok", "b", [pd.NA] * 5, kind="human")]
    table = pd.DataFrame(rows)
    for a in AXES:
        table[f"axis_{a}"] = table[f"axis_{a}"].astype("Int64")
    return table


def test_response_scores_hand_example():
    s = factors.response_scores(hand_judgments()).set_index(["system", "contributor_id"], drop=False)
    x, h, z = s.loc[("x", None)], s.loc[("human", "c1")], s.loc[("z", None)]
    # x: +(2,1,0,-1,3) as A in j1 and +(1,0,0,1,0) as A in j2 -> means (1.5, .5, 0, 0, 1.5)
    assert [x[f"mean_{a}"] for a in AXES] == [1.5, 0.5, 0.0, 0.0, 1.5]
    # the human is B in j1 (marks negated) and A in the second judgment
    assert [h[f"mean_{a}"] for a in AXES] == [-1.5, -1.5, 0.5, 0.5, -2.0]
    assert [z[f"mean_{a}"] for a in AXES] == [0.0, 1.0, -0.5, -0.5, 0.5]
    assert (x["n_judgments"], x["n_decided"], x["n_wins"], x["win_rate"]) == (2, 1, 1, 1.0)
    assert (h["n_decided"], h["win_rate"]) == (2, 0.0) and z["win_rate"] == 1.0
    # z_H: values 1.5, -1.5, 0 -> mean 0, sample SD 1.5
    assert [x["z_H"], h["z_H"], z["z_H"]] == pytest.approx([1.0, -1.0, 0.0])
    assert x["z_mean"] == pytest.approx(np.mean([x[f"z_{a}"] for a in AXES]))


def test_constant_axis_flagged_and_efa_degenerate():
    j = hand_judgments()
    j["axis_A"] = pd.array([0, 0, 0, 0, pd.NA], dtype="Int64")
    s = factors.response_scores(j)
    assert s.attrs["constant_axes"] == ["A"] and s["z_A"].isna().all()
    res = factors.efa(s)
    assert res.status == "degenerate" and "z_A" in res.note


# Real Statistics, "Cronbach's Alpha" worked example (15 subjects x 10 questions; also pingouin's
# ``cronbach_alpha`` dataset, checked there against R psych::alpha): alpha = 0.592, Feldt 95 % CI .195-.840.
REAL_STATISTICS = """3 5 7 2 6 1 4 2 6 5 4 4 5 6 4
2 4 3 4 5 2 3 4 5 4 3 2 5 5 3
4 6 5 3 6 3 5 4 5 6 5 3 6 5 5
1 3 5 3 5 4 3 3 5 4 2 2 2 4 5
4 5 6 2 4 2 5 7 1 3 5 5 3 2 3
5 1 4 2 4 5 2 2 6 5 3 3 3 2 1
1 2 3 2 4 2 1 2 5 3 2 4 2 1 3
4 5 3 6 6 3 2 4 2 1 3 2 4 4 2
3 5 6 6 7 5 4 6 3 7 4 3 4 6 3
2 5 5 3 5 2 3 5 2 2 1 4 5 5 4"""


def test_cronbach_alpha_published_example():
    items = pd.DataFrame({f"Q{i + 1}": [int(v) for v in line.split()]
                          for i, line in enumerate(REAL_STATISTICS.splitlines())})
    assert items.shape == (15, 10)
    out = factors.cronbach_alpha(items, columns=list(items.columns))
    assert out["status"] == "ok" and (out["n"], out["k"]) == (15, 10)
    assert round(out["alpha"], 3) == 0.592
    assert (round(out["ci_low"], 3), round(out["ci_high"], 3)) == (0.195, 0.840)


def test_cronbach_alpha_from_covariance_published_example():
    """StatsBase.jl ``cronbachalpha`` documentation example: alpha 0.8136."""
    cov = [[10, 6, 6, 6], [6, 11, 6, 6], [6, 6, 12, 6], [6, 6, 6, 13]]
    assert round(factors.cronbach_alpha_from_cov(cov), 4) == 0.8136


def test_cronbach_alpha_degenerate():
    one = pd.DataFrame({"z_H": [1.0, 2.0, 3.0]})
    assert factors.cronbach_alpha(one)["status"] == "insufficient"
    flat = pd.DataFrame({"z_H": [1.0] * 5, "z_E": [2.0] * 5})
    out = factors.cronbach_alpha(flat)
    assert out["status"] == "degenerate" and math.isnan(out["alpha"])


def simulated(n=600, loadings=(0.8, 0.7, 0.75, 0.6, 0.85), seed=3) -> pd.DataFrame:
    """SYNTHETIC: one latent factor f ~ N(0, 1); axis = loading * f + unique noise (unit variance)."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(n)
    lam = np.asarray(loadings)
    x = f[:, None] * lam + rng.standard_normal((n, len(lam))) * np.sqrt(1 - lam ** 2)
    table = pd.DataFrame(x, columns=[f"z_{a}" for a in AXES])
    table["z_mean"] = table[[f"z_{a}" for a in AXES]].mean(axis=1)
    table["win_rate"] = 1 / (1 + np.exp(-(2 * f + rng.standard_normal(n))))
    return table


def test_efa_recovers_planted_single_factor():
    res = factors.efa(simulated())
    assert res.status == "ok" and res.n_factors == 1 and res.rotation is None
    assert res.n_factors_rule.startswith("kaiser")
    load = res.loadings["F1"]
    assert (load > 0.5).all()
    assert load.to_numpy() == pytest.approx([0.8, 0.7, 0.75, 0.6, 0.85], abs=0.08)
    assert res.eigenvalues["eigenvalue"].iloc[0] > 2.5 and (res.eigenvalues["eigenvalue"].iloc[1:] < 1).all()
    assert res.kmo_total > 0.7 and res.bartlett_p < 1e-10
    assert 0.4 < res.variance["proportion"].iloc[0] < 0.7
    alpha = factors.cronbach_alpha(simulated())
    assert alpha["status"] == "ok" and alpha["alpha"] > 0.8


def test_efa_runs_on_the_pinned_scikit_learn():
    """factor_analyzer 0.5.1 fails ("failed", TypeError) on scikit-learn >= 1.8: the pin must hold."""
    assert factors.efa(simulated()).status == "ok"


def test_efa_sign_convention_positive():
    neg = simulated()
    for a in AXES:
        neg[f"z_{a}"] = -neg[f"z_{a}"]
    res = factors.efa(neg)
    assert (res.loadings["F1"] > 0.5).all()
    # the factor scores follow the flipped sign: they correlate negatively with the (unflipped) win rate
    corr = factors.correlation_with_wins(neg, res).set_index("measure")
    assert corr.loc["F1", "r"] < 0


def test_efa_two_factors_oblimin_runs():
    res = factors.efa(simulated(), n_factors=2)
    assert res.status == "ok" and res.rotation == "oblimin" and res.loadings.shape == (5, 2)
    assert res.factor_correlation.shape == (2, 2)
    assert factors.efa(simulated(), n_factors=3).status == "insufficient"  # 5 variables identify at most 2


def test_efa_degenerate_inputs():
    few = simulated().head(4)
    res = factors.efa(few)
    assert res.status == "insufficient" and res.loadings.empty and "4 complete" in res.note
    flat = simulated()
    flat["z_T"] = 0.5
    assert factors.efa(flat).status == "degenerate"
    dup = simulated()
    dup["z_T"] = dup["z_H"]
    assert factors.efa(dup).status == "degenerate"
    assert factors.efa(simulated(), columns=["z_H", "z_E"]).status == "insufficient"
    assert factors.efa(simulated().iloc[0:0]).status == "degenerate"  # empty table: no values


def test_correlation_with_wins_planted():
    data = simulated()
    res = factors.efa(data)
    out = factors.correlation_with_wins(data, res).set_index("measure")
    zm = out.loc["z_mean"]
    assert zm["status"] == "ok" and zm["n"] == 600 and zm["r"] > 0.5 and zm["ci_low"] > 0.4
    lo, hi = stats.pearsonr(data["z_mean"], data["win_rate"]).confidence_interval()  # scipy: Fisher z too
    assert (zm["ci_low"], zm["ci_high"]) == pytest.approx((lo, hi))
    assert out.loc["F1", "r"] > 0.5 and (out["family"] == factors.TEST_FAMILY).all()
    small = factors.correlation_with_wins(data.head(3)).set_index("measure")
    assert small.loc["z_mean", "status"] == "insufficient" and math.isnan(small.loc["z_mean", "r"])


def test_judgments_without_axis_marks_are_no_axis_marks_not_a_constant_axis():
    """Imported verdicts without marks were reported "degenerate: constant axis"."""
    table = hand_judgments()
    for a in AXES:
        table[f"axis_{a}"] = pd.array([pd.NA] * len(table), dtype="Int64")
    scores = factors.response_scores(table)
    assert scores.attrs["unmarked_axes"] == list(AXES) and scores.attrs["constant_axes"] == []
    result = factors.efa(scores)
    assert result.status == "absent" and result.note.startswith("no axis marks")
    some = hand_judgments()
    some["axis_H"] = pd.array([pd.NA] * len(some), dtype="Int64")  # one axis nobody marked
    result = factors.efa(factors.response_scores(some))
    assert result.status == "absent" and result.note == "no axis marks on z_H"
