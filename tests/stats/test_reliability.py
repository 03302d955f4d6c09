"""heart.stats.reliability: Cohen's κ, Fleiss' κ and Krippendorff's α against published worked examples (also
through heart.stats.agreement.inter_human)."""

import math

import pandas as pd
import pytest

from heart.stats import reliability
from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.inter_human import inter_human
from support.tables import judgments_frame as table
from support.judgments import judgment, row


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
