"""Analysis only: a table of pairwise judgments made elsewhere -> the statistics and figures, nothing else."""

import pytest

from conftest import FIXTURES
from heart.common import tableio

VOTES = FIXTURES / "imported" / "example_votes.csv"  # a public-format example written for this project


def analysis_args(path=VOTES):
    return ["--configfile", "config/analysis.yaml", "--config", f"analysis_only={{judgments: {path}}}",
            "stats={n_boot: 200, seed: 1, ci: 0.95, bt_alpha: 0.01, consensus: 0.6667, subsample_reps: 20, "
            "fdr_alpha: 0.05, n_factors: null}"]


@pytest.mark.dag
def test_analysis_only_plans_no_data_items_completions_or_calls(workflow_copy):
    jobs = workflow_copy.jobs(*analysis_args())
    assert set(jobs) == {"import_judgments", "ratings", "agreement", "bias_audits", "factor_analysis", "preference_shares",
                         "figure_leaderboard", "figure_elo_forest", "figure_agreement", "figure_bias_factors", "all"}


@pytest.mark.e2e
def test_analysis_only_end_to_end(workflow_copy):
    workflow_copy.snakemake(*analysis_args())
    res = workflow_copy.root / "results"
    ratings = tableio.read_table(res / "stats/ratings.parquet")
    overall = ratings[ratings["axis"].eq("overall") & ratings["subset"].eq("all")]
    # both intervals for every rated system, from string conversation keys
    assert {"gpt-4o", "llama-3.1-8b", "original", "human"} <= set(overall["system"])
    ok = overall[overall["status"].eq("ok")]
    assert ok[["elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot"]].notna().all().all()
    judgments = tableio.read_table(res / "judging/judgments.parquet")
    assert judgments["conversation_id"].str.startswith("esconv-").all()
    assert set(judgments["judge_kind"]) == {"human", "llm"}
    inter = tableio.read_table(res / "stats/agreement_inter_human.parquet").set_index(["measure", "labels", "level"])
    assert inter["status"].eq("ok").any()
    human_llm = tableio.read_table(res / "stats/agreement_human_llm.parquet")
    assert human_llm.loc[human_llm["scope"].eq("all"), "status"].eq("ok").all()
    position = tableio.read_table(res / "stats/bias_position.parquet")
    assert set(position["judge"]) == {"gpt-4.1", "claude-3.7-sonnet"} and position["n_verdicts"].gt(0).all()
    for fig in ("fig4_leaderboard", "elo_forest", "agreement", "bias_factors"):
        assert (res / f"figures/{fig}.png").stat().st_size > 10_000
    assert not (res / "items").exists() and not (res / "completions").exists()


@pytest.mark.dag
def test_analysis_only_bad_table_names_record_and_field(workflow_copy, tmp_path):
    bad = tmp_path / "votes.csv"
    lines = VOTES.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("winner")] = "maybe"
    bad.write_text("\n".join([lines[0], ",".join(row)]) + "\n")
    proc = workflow_copy.snakemake("results/judging/judgments.parquet", *analysis_args(bad), check=False)
    assert proc.returncode != 0
    log = (workflow_copy.root / "logs/judging/import_judgments.log").read_text()
    assert f"{bad}, line 2" in log and "winner" in log and "maybe" in log


MT_BENCH = FIXTURES / "imported" / "mt_bench"  # MT-Bench's two splits in their published shape, written here


@pytest.mark.e2e
def test_mt_bench_shapes_run_through_the_recipe_and_analysis_only(workflow_copy, tmp_path):
    """Two splits, a repeated vote, consistent and inconsistent ties, both-order verdicts, no axis marks and
    no order: nothing spurious comes out, and agreement equals the values worked by hand
    (tests/fixtures/imported/README.md)."""
    from heart.judging import recipes

    votes = tmp_path / "mt_bench.csv"
    assert recipes.main(["mt-bench", "--human", str(MT_BENCH / "human.jsonl"),
                         "--gpt4-pair", str(MT_BENCH / "gpt4_pair.jsonl"), "-o", str(votes)]) == 0
    workflow_copy.snakemake(*analysis_args(votes))
    res = workflow_copy.root / "results"
    judgments = tableio.read_table(res / "judging/judgments.parquet")
    llm = judgments[judgments["judge_kind"] == "llm"]
    assert sorted(llm["status"]) == ["inconsistent", "ok", "ok", "tie"]
    assert judgments[[c for c in judgments.columns if c.startswith("axis_")]].isna().all().all()
    assert judgments["strength"].isna().all()  # no source gave a strength: none is invented
    h = tableio.read_table(res / "stats/agreement_human_llm.parquet").set_index(["reference", "judge", "scope"])
    per_vote = h.loc[("human-votes-with-ties", "gpt4-pair", "all")]
    assert (per_vote["n_pairs"], per_vote["n_agree"]) == (8, 3)  # 3/8 by hand
    per_vote = h.loc[("human-votes-without-ties", "gpt4-pair", "all")]
    assert (per_vote["n_pairs"], per_vote["n_agree"], per_vote["n_no_reference"]) == (3, 2, 5)  # 2/3
    majority = h.loc[("human-majority", "gpt4-pair", "all")]
    assert (majority["n_pairs"], majority["n_agree"], majority["n_no_verdict"], majority["n_no_reference"]) \
        == (2, 1, 1, 1)
    ambiguous = h.loc[("human-majority", "gpt4-pair", "ambiguous")]
    assert ambiguous["status"] == "absent" and "axis marks are absent" in ambiguous["note"]
    position = tableio.read_table(res / "stats/bias_position.parquet")
    assert position["status"].eq("absent").all() and not position["reject"].fillna(False).any()
    assert position["note"].str.contains("order unknown").all()
    summary = tableio.read_table(res / "stats/factor_summary.parquet").iloc[0]
    assert summary["status"] == "absent" and "no axis marks" in summary["note"]
    trivial = tableio.read_table(res / "stats/trivial_judges.parquet")
    longer = trivial[trivial["judge"] == "always-longer"]
    assert longer["status"].eq("absent").all() and longer["note"].str.contains("no completion texts").all()
