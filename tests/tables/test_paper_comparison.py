"""The side-by-side table: the paper's headline numbers next to this run's (heart.tables.paper_comparison)."""

import math

import pandas as pd
import pytest

from support import REPO
from heart.tables import paper_comparison as pc

SPEC_PATH = REPO / "workflow/resources/paper/headline_numbers.yaml"
# the tables rule paper_comparison reads, by schema name
SCRIPT_TABLES = {"agreement_human_llm", "agreement_cross_judge", "agreement_inter_human", "preference_shares",
                 "rationale_concordance", "strategy_diversity", "external_correlations", "strategy_f1"}


def test_every_headline_number_of_the_issue_is_listed_once_and_reads_a_table_the_rule_gives():
    spec = pc.load(SPEC_PATH)
    ids = [e["id"] for e in spec["numbers"]]
    assert len(ids) == len(set(ids))
    assert {e["table"] for e in spec["numbers"]} <= SCRIPT_TABLES
    paper = sorted(e["paper"] for e in spec["numbers"])
    # Table 1's r, rho, 78.7 (twice: mean of judges and the §9.9 ensemble), 79.5, kappa, 85.9, 78.8, 61.3,
    # 76 / 78, 46.8 / 35.8 / 17.4, 53.3, 68 % (ours and the paper's definition), macro-F1 0.86
    assert paper == sorted([0.70, 0.53, 78.7, 78.7, 79.5, 0.673, 85.9, 78.8, 61.3, 76, 78, 46.8, 35.8, 17.4, 53.3,
                            68, 68, 0.86])
    assert set(spec["strategy_spread"]["sd"]) == {"human", "gpt", "llama", "gemini", "claude"}


def test_a_bad_entry_names_the_file_the_entry_and_the_key(tmp_path):
    bad = tmp_path / "numbers.yaml"
    bad.write_text("numbers:\n  - {id: x, quantity: q, paper: 1, table: t, where: {}, value: v, needs: money}\n")
    with pytest.raises(ValueError, match=r"numbers\.yaml: numbers\[0\] \(x\): needs 'money'"):
        pc.load(bad)
    bad.write_text("numbers:\n  - {id: x, quantity: q}\n")
    with pytest.raises(ValueError, match=r"numbers\[0\] \(x\): missing paper, table, where, value, needs"):
        pc.load(bad)


SPEC = {"numbers": [
    {"id": "mean", "quantity": "mean", "paper": 78.7, "unit": "%", "table": "agreement_human_llm",
     "where": {"judge": "mean-of-judges", "scope": "all"}, "value": "agreement", "scale": 100, "needs": "human"},
    {"id": "amb", "quantity": "amb", "paper": 61.3, "unit": "%", "table": "agreement_human_llm",
     "where": {"judge": "mean-of-judges", "scope": "ambiguous"}, "value": "agreement", "scale": 100,
     "needs": "human"},
    {"id": "cross", "quantity": "cross", "paper": 85.9, "unit": "%", "table": "agreement_cross_judge",
     "where": {"scope": "mean-pairwise"}, "value": "agreement", "scale": 100, "needs": "judges2"},
    {"id": "f1", "quantity": "f1", "paper": 0.86, "unit": "F1", "table": "strategy_f1",
     "where": {"strategy": "macro"}, "value": "f1", "needs": "spot_checks"}],
    "strategy_spread": {"sd": {"human": 16.33}, "range": {"human": 60.30}},
    "figure4": {"elo": {"original": 1343.1}}}


def test_values_intervals_and_reasons_side_by_side():
    tables = {
        "agreement_human_llm": pd.DataFrame([
            {"judge": "mean-of-judges", "scope": "all", "agreement": 0.8, "ci_low": 0.7, "ci_high": 0.9,
             "n_pairs": 40, "n_conversations": 12, "status": "ok", "note": ""},
            {"judge": "mean-of-judges", "scope": "ambiguous", "agreement": math.nan, "ci_low": math.nan,
             "ci_high": math.nan, "n_pairs": 0, "n_conversations": 0, "status": "absent",
             "note": "human judgments are absent"}]),
        "agreement_cross_judge": pd.DataFrame([{"scope": "pairwise", "agreement": math.nan, "status": "absent",
                                                 "note": "1 LLM judge: cross-judge agreement needs two"}]),
        "strategy_diversity": pd.DataFrame([{"level": "family", "group": "human", "rate_sd_pct": 12.5,
                                             "rate_range_pct": 40.0, "n_completions": 9, "status": "ok"}]),
    }
    models = pd.DataFrame({"system": ["gpt-5"], "elo_paper": [1611.8]})
    headline = pd.DataFrame({"system": ["gpt-5", "original"], "status": ["ok", "ok"], "elo": [1600.0, 1400.0],
                             "elo_lo_boot": [1580.0, 1380.0], "elo_hi_boot": [1620.0, 1420.0],
                             "n_comparisons": [30, 30]})
    out = pc.compare(SPEC, tables, models, headline, "llm").set_index("id")
    # 0.8 x 100 = 80.0, its interval [70, 90], 80.0 - 78.7 = 1.3
    assert out.loc["mean", ["this_run", "ci_low", "ci_high"]].tolist() == pytest.approx([80.0, 70.0, 90.0])
    assert out.loc["mean", "difference"] == pytest.approx(1.3)
    assert out.loc["mean", "status"] == "computed" and out.loc["mean", "scope"] == "n_pairs=40, n_conversations=12"
    # an absent row: the reason a reader can act on and the row's own note, never a number
    assert out.loc["amb", "status"] == "needs human judgments" and math.isnan(out.loc["amb", "this_run"])
    assert out.loc["amb", "note"] == "human judgments are absent"
    assert out.loc["cross", "status"] == "needs >= 2 LLM judges"  # only an "absent" row: its reason and note
    assert out.loc["cross", "note"].endswith("needs two")
    # no strategy_f1 table at all: not in this run
    assert out.loc["f1", "status"].startswith("not in this run")
    assert out.loc["strategy_sd_human", "this_run"] == 12.5
    assert out.loc["strategy_range_human", "difference"] == pytest.approx(40.0 - 60.30)
    # Figure 4's Elo column: the paper's per system (models.csv, then the resource), this run's beside it
    assert out.loc["elo_gpt-5", ["paper", "this_run", "difference"]].tolist() == pytest.approx([1611.8, 1600.0,
                                                                                                -11.8])
    assert out.loc["elo_original", "this_run"] == 1400.0 and "source: llm" in out.loc["elo_original", "definition"]
    text = pc.to_text(out.reset_index())
    assert text.set_index("quantity").loc["mean", "interval"] == "[70.0, 90.0]"
    assert text.set_index("quantity").loc["amb", "this_run"] == "—"


def test_what_a_run_has_decides_the_reason():
    judgments = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p1"], "judge": ["j1", "j2", "human:r1", "human:r2"],
        "judge_kind": ["llm", "llm", "human", "human"]})
    met = pc.available(judgments, completions_sources=["model", "dataset"], spot_checks=False, paper_models=3)
    # 2 LLM judges, humans (one rating per pair: p1 by r2, p2 by r1), no human completions, 3 paper models
    assert met == {"human": True, "human2": False, "human_completions": False, "judges2": True, "judges3": False,
                   "tags": True, "texts": True, "spot_checks": False, "external": False}
    both = pd.concat([judgments, pd.DataFrame({"pair_id": ["p2"], "judge": ["human:r3"], "judge_kind": ["human"]})])
    assert pc.available(both)["human2"]
    spec = {"numbers": [SPEC["numbers"][1]]}  # "amb": needs human judgments
    table = {"agreement_human_llm": pd.DataFrame([
        {"judge": "mean-of-judges", "scope": "ambiguous", "agreement": math.nan, "status": "no_pairs",
         "note": "no pair in scope 'ambiguous' with both a human majority winner and a verdict"}])}
    # humans judged, yet no pair is ambiguous: not "needs human judgments" but why not, from the row
    row = pc.compare(spec, table, met=met).iloc[0]
    assert row["status"] == "not computable in this run" and row["note"].startswith("no pair in scope")
    row = pc.compare(spec, table, met={**met, "human": False}).iloc[0]
    assert row["status"] == "needs human judgments"


def _producer_tables(llm_judges: int) -> tuple[dict, pd.DataFrame]:
    """The agreement and preference tables as their modules write them, from SIMULATED judgments."""
    from heart.stats.agreement.cross_judge import cross_judge_agreement
    from heart.stats.agreement.human_llm import human_llm_agreement
    from heart.stats.agreement.inter_human import inter_human
    from heart.stats import preferences
    from heart.simulation import simulate

    j, _ = simulate.judgments(n_systems=5, n_items=30, n_adversarial=6, pairs_per_item=6, human_pairs=170,
                              llm_judges=llm_judges, human_raters=5, seed=1)
    return {"agreement_human_llm": human_llm_agreement(j, n_boot=0),
            "agreement_cross_judge": cross_judge_agreement(j, n_boot=0),
            "agreement_inter_human": inter_human(j, n_boot=0),
            "preference_shares": preferences.preference_shares(j, n_boot=0)}, j


def test_every_filter_of_the_resource_picks_its_row_from_what_the_modules_write():
    tables, j = _producer_tables(llm_judges=3)
    spec = pc.load(SPEC_PATH)
    entries = [e for e in spec["numbers"] if e["table"] in tables]
    assert len(entries) == 13  # human-LLM agreement 5, inter-human 2, cross-judge 2, §4.5 shares 4
    met = pc.available(j, completions_sources=["model", "dataset", "human"])
    out = pc.compare({"numbers": entries}, tables, met=met).set_index("id")
    # SIMULATED data with everything these numbers need: each one computed, none "not in this run"
    assert out["status"].eq("computed").all(), out.loc[~out["status"].eq("computed"), ["status", "note"]]
    assert out["this_run"].between(0, 100).all()


def test_a_number_that_needs_three_judges_is_not_reported_over_two():
    tables, j = _producer_tables(llm_judges=2)
    # with two judges the cross-judge table still has an "all judges agree" row...
    assert tables["agreement_cross_judge"].set_index("scope").loc["all", "status"] == "ok"
    met = pc.available(j, completions_sources=["model", "human"])
    out = pc.compare(pc.load(SPEC_PATH), tables, met=met).set_index("id")
    # ... but it is not the paper's three-way agreement
    assert out.loc["cross_judge_three_way", "status"] == "needs >= 3 LLM judges"
    assert math.isnan(out.loc["cross_judge_three_way", "this_run"])
    assert out.loc["cross_judge_mean_pairwise", "status"] == "computed"
