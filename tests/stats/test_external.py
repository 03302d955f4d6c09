"""External correlates: the model-metadata resource, r = 0.70 from Table 1, Spearman on a known example."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from heart.stats import external
from heart.common import tableio

TABLE_1 = {  # HEART paper Table 1, typed in again here to check the resource: system -> (Elo, Win %, AA)
    "gpt-5": (1611.8, 85.9, 66), "o3": (1587.5, 79.1, 65), "claude-4.5-haiku": (1561.8, 69.6, 55),
    "kimi-k2": (1552.7, 62.2, 48), "claude-4.5-sonnet": (1540.9, 62.9, 63),
    "gpt-4.1-mini": (1539.1, 62.8, 42), "claude-3.7-sonnet": (1531.8, 59.4, 41),
    "claude-4-opus": (1504.0, 49.2, 42), "gpt-4o": (1495.9, 48.5, 36),
    "gemini-2.5-pro": (1477.7, 39.5, 60), "gemini-3-pro-preview": (1471.0, 45.2, 65),
    "llama-4-maverick": (1441.2, 28.4, 36), "gemini-2.5-flash": (1427.9, 25.1, 40),
    "llama-3.1-405b": (1415.0, 24.2, 28), "llama-3.1-70b": (1384.6, 13.8, 23),
}
TTFT_S = {"gpt-5": 0.7, "o3": 13.8, "gemini-2.5-pro": 14.9, "claude-4.5-sonnet": 2.1, "polaris-4.0": 0.4,
          "claude-3.7-sonnet": 0.6, "claude-4-opus": 1.3}


@pytest.fixture(scope="module")
def models():
    return external.load_models()


def test_resource_matches_the_paper(models):
    t1 = models[models["in_table_1"]].set_index("system")
    assert len(t1) == 15 and len(models) == 16
    for system, (elo, win, aa) in TABLE_1.items():
        got = t1.loc[system, ["elo_paper", "win_pct_paper", "aa_index_v3"]].tolist()
        assert got == [elo, win, aa], system
    ttft = models.set_index("system")["ttft_median_s"].dropna().to_dict()
    assert ttft == TTFT_S
    polaris = models.set_index("system").loc["polaris-4.0"]
    assert math.isnan(polaris["aa_index_v3"]) and polaris["elo_paper"] == 1604.0
    assert models["source"].str.len().gt(20).all()


def test_pearson_elo_aa_reproduces_paper_r_070(models):
    out = external.correlate(external.paper_elo_table(models, table_1_only=False), models).set_index("test")
    row = out.loc["pearson_elo_aa"]
    assert row["status"] == "ok" and row["n"] == 15  # Polaris has no AA score and drops out
    assert round(row["estimate"], 2) == 0.70
    assert row["estimate"] == pytest.approx(0.7039, abs=1e-4)
    assert row["ci_low"] < row["estimate"] < row["ci_high"]
    # Fisher z CI, against scipy's own (also Fisher z)
    elo, aa = [v[0] for v in TABLE_1.values()], [v[2] for v in TABLE_1.values()]
    lo, hi = stats.pearsonr(elo, aa).confidence_interval()
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi))
    assert 0 < row["p_value"] < 0.01
    assert set(out["family"]) == {external.TEST_FAMILY}


def test_spearman_on_a_known_example():
    """Wikipedia's worked example (Spearman's rank correlation coefficient): IQ vs hours of TV per week,
    rho = -29/165 = -0.175757..., p = 0.627188. IQ is used as "Elo", hours as "TTFT" (the log keeps ranks)."""
    iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
    tv = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]
    systems = [f"s{i}" for i in range(10)]
    meta = pd.DataFrame({"system": systems, "family": systems, "aa_index_v3": np.nan, "ttft_median_s": tv})
    elo = pd.DataFrame({"system": systems, "elo": iq})
    row = external.correlate(elo, meta).set_index("test").loc["spearman_elo_log_ttft_paper"]
    assert row["status"] == "ok" and row["n"] == 10
    assert row["estimate"] == pytest.approx(-29 / 165)
    assert row["p_value"] == pytest.approx(0.627188, abs=1e-5)
    assert row["ci_low"] < row["estimate"] < row["ci_high"]


def test_measured_ttft_is_the_median_of_the_measured_calls():
    completions = pd.DataFrame({"system": ["gpt-5", "gpt-5", "gpt-5", "o3", "o3", "human"],
                                "ttft_s": [0.5, 0.7, None, 10.0, 12.0, None]})
    t = external.measured_ttft(completions).set_index("system")
    # gpt-5: median(0.5, 0.7) = 0.6 over 2 (the unstreamed call has none); o3: median(10, 12) = 11; human: none
    assert t.index.tolist() == ["gpt-5", "o3"]
    assert t["ttft_median_s"].tolist() == pytest.approx([0.6, 11.0]) and t["n_ttft"].tolist() == [2, 2]
    assert external.measured_ttft(None).empty and external.measured_ttft(completions.drop(columns="ttft_s")).empty
    paper = external.ttft_table("paper", external.load_models()).set_index("system")["ttft_median_s"].to_dict()
    assert paper == TTFT_S
    with pytest.raises(ValueError, match="ttft_source"):
        external.ttft_table("external")


def test_both_ttft_correlations_are_reported_and_labelled(models):
    completions = pd.DataFrame({"system": ["gpt-5"] * 3 + ["o3"] * 2 + ["claude-4-opus", "gemini-2.5-pro", "new"],
                                "ttft_s": [0.5, 0.7, None, 10.0, 12.0, 1.0, 8.0, 0.3]})
    elo = pd.DataFrame({"system": ["gpt-5", "o3", "claude-4-opus", "gemini-2.5-pro", "new", "human"],
                        "elo": [1600.0, 1580.0, 1500.0, 1470.0, 1450.0, 1400.0]})
    out = external.correlate(elo, models, measured=external.measured_ttft(completions), figure_ttft="measured")
    tableio.to_arrow(out.assign(data="this run"), "external_correlations")
    out = out.set_index("test")
    # published TTFT (models.csv): gpt-5 0.7, o3 13.8, claude-4-opus 1.3, gemini-2.5-pro 14.9 ("new", "human":
    # none). Elo ranks 4 3 2 1, TTFT ranks 1 3 2 4: d = 3 0 0 -3, rho = 1 - 6 * 18 / (4 * 15) = -0.8
    paper = out.loc["spearman_elo_log_ttft_paper"]
    assert (paper["status"], paper["n"], paper["ttft_source"]) == ("ok", 4, "paper")
    assert paper["estimate"] == pytest.approx(-0.8) and not paper["figure_5"]
    assert paper["systems"] == "gpt-5;o3;claude-4-opus;gemini-2.5-pro" and paper["y"] == "log_ttft_paper_s"
    # measured: gpt-5 0.6, o3 11, claude-4-opus 1.0, gemini-2.5-pro 8.0, new 0.3 (no metadata needed).
    # Elo ranks 5 4 3 2 1, TTFT ranks 2 5 3 4 1: d = 3 -1 0 -2 0, rho = 1 - 6 * 14 / (5 * 24) = 0.3
    measured = out.loc["spearman_elo_log_ttft_measured"]
    assert (measured["status"], measured["n"], measured["ttft_source"]) == ("ok", 5, "measured")
    assert measured["estimate"] == pytest.approx(0.3) and measured["figure_5"]
    # family means (measured): claude 1500 / log 1.0, gemini 1470 / log 8, gpt (1590, log sqrt(6.6)), new 1450 /
    # log 0.3; Elo ranks 3 2 4 1, TTFT ranks 2 4 3 1: d = 1 -2 1 0, rho = 1 - 6 * 6 / (4 * 15) = 0.4
    fam = out.loc["spearman_elo_log_ttft_measured_family_means"]
    assert fam["exploratory"] and fam["estimate"] == pytest.approx(0.4) and fam["n"] == 4
    assert pd.isna(out.loc["pearson_elo_aa", "ttft_source"]) and not out.loc["pearson_elo_aa", "figure_5"]
    # nothing measured: the measured rows are absent, never a zero; without `measured`, no measured rows
    none = external.correlate(elo, models, measured=external.measured_ttft(None), figure_ttft="paper")
    none = none.set_index("test")
    assert none.loc["spearman_elo_log_ttft_measured", "status"] == "absent"
    assert math.isnan(none.loc["spearman_elo_log_ttft_measured", "estimate"])
    assert none.loc["spearman_elo_log_ttft_paper", "figure_5"]
    assert not external.correlate(elo, models)["test"].str.contains("measured").any()


def test_few_models_are_insufficient_not_zero(models):
    elo = pd.DataFrame({"system": ["gpt-5", "o3", "human"], "elo": [1600.0, 1580.0, 1500.0]})
    out = external.correlate(elo, models).set_index("test")
    assert out.loc["pearson_elo_aa", "status"] == "insufficient" and out.loc["pearson_elo_aa", "n"] == 2
    assert math.isnan(out.loc["pearson_elo_aa", "estimate"])
    assert math.isnan(out.loc["pearson_elo_aa", "p_value"])


def test_bad_resource_names_row_and_field(tmp_path, models):
    bad = models.copy()
    bad["aa_index_v3"] = bad["aa_index_v3"].astype(object)
    bad.loc[3, "aa_index_v3"] = "high"
    path = tmp_path / "models.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"row 5: field 'aa_index_v3'"):
        external.load_models(path)
