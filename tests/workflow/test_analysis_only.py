"""Analysis only: a table of pairwise judgments made elsewhere -> the statistics and figures, nothing else."""

import pandas as pd
import pytest

from support import FIXTURES
from support.workflow import WorkflowCopy
from heart.common import tableio

VOTES = FIXTURES / "imported" / "example_votes.csv"  # a public-format example written for this project


def analysis_args(path=VOTES):
    return ["--configfile", "config/analysis.yaml", "--config", f"analysis_only={{judgments: {path}}}",
            "stats={n_boot: 200, seed: 1, ci: 0.95, bt_alpha: 0.01, consensus: 0.6667, subsample_reps: 20, "
            "fdr_alpha: 0.05, n_factors: null}"]


@pytest.mark.dag
def test_analysis_only_plans_no_data_items_completions_or_calls(workflow_copy):
    jobs = workflow_copy.jobs(*analysis_args())
    assert set(jobs) == {"import_judgments", "ratings", "ratings_alternative", "agreement", "bias_audits",
                         "factor_analysis", "preference_shares",
                         "figure_leaderboard", "figure_elo_forest", "figure_agreement", "figure_bias_factors",
                         "external_correlations", "rationale_codes", "multiple_testing", "paper_tables",
                         "figure_rubric", "rubric_table", "judge_board", "figure_judge_board", "ablations",
                         "figure_ablations", "all"}
    # another study's votes get the HEART paper's numbers beside theirs only when they ask (config paper_reference)
    args = analysis_args()
    args[args.index("--config") + 1:args.index("--config") + 1] = ["paper_reference=true"]
    assert "paper_comparison" in workflow_copy.jobs(*args)


FORMULA = "=cmd|' /C calc'!A0"
HOSTILE = {"gpt-4o": FORMULA, "llama-3.1-8b": r"\input{/etc/passwd}"}
MATHTEXT_JUDGE = r"gpt $\foo{$ 4o"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """The whole analysis of the example votes, two systems named like a spreadsheet formula and a LaTeX command
    and a judge like broken mathtext (HOSTILE, MATHTEXT_JUDGE): one run, read by the end-to-end test and the
    hostile-names test (each run of the whole analysis costs ~25 s of the suite)."""
    votes = pd.read_csv(VOTES, dtype=str, keep_default_na=False)
    for col in ("system_a", "system_b"):
        votes[col] = votes[col].replace(HOSTILE)
    votes["judge"] = votes["judge"].replace({"gpt-4.1": MATHTEXT_JUDGE})
    path = tmp_path_factory.mktemp("hostile") / "votes.csv"
    votes.to_csv(path, index=False)
    wf = WorkflowCopy(tmp_path_factory.mktemp("analysis") / "wf")
    wf.snakemake(*analysis_args(path))
    return wf


@pytest.mark.e2e
def test_analysis_only_end_to_end(hostile_run):
    res = hostile_run.root / "results"
    ratings = tableio.read_table(res / "stats/ratings.parquet")
    overall = ratings[ratings["axis"].eq("overall") & ratings["subset"].eq("all")]
    # both intervals for every rated system, from string conversation keys
    assert {*HOSTILE.values(), "original", "human"} <= set(overall["system"])
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
    assert set(position["judge"]) == {MATHTEXT_JUDGE, "claude-3.7-sonnet"} and position["n_verdicts"].gt(0).all()
    for fig in ("fig4_leaderboard", "elo_forest", "agreement", "bias_factors", "ablations"):
        assert (res / f"figures/{fig}.png").stat().st_size > 10_000
    assert not (res / "items").exists() and not (res / "completions").exists()
    # the exploratory ablations of section 9.12, labelled so, on the LLM judges' comparisons (Figure 4's source)
    ablations = tableio.read_table(res / "stats/ablations.parquet")
    assert ablations["label"].str.contains("exploratory").all() and ablations["status"].eq("ok").all()
    assert set(ablations["ranker"]) == {"bradley_terry", "davidson_ties", "thurstone", "win_rate", "online_elo",
                                        "release_soft"} and ablations["tau"].between(-1, 1).all()
    assert pd.read_csv(res / "tables/ablations.csv").columns[0].startswith("exploratory")


@pytest.mark.e2e  # its import job runs (and fails)
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
    from heart.tools import vote_recipes as recipes

    votes = tmp_path / "mt_bench.csv"
    assert recipes.main(["mt-bench", "--human", str(MT_BENCH / "human.jsonl"),
                         "--gpt4-pair", str(MT_BENCH / "gpt4_pair.jsonl"), "-o", str(votes)]) == 0
    families = "families: {systems: {gpt-4: gpt, vicuna-13b-v1.2: llama, alpaca-13b: llama}, judges: {gpt4-pair: gpt}}"
    args = analysis_args(votes)
    args[args.index("--config") + 1] = (f"analysis_only={{judgments: {votes}, models: {MT_BENCH / 'models.csv'}, "
                                        f"{families}}}")
    # what it reads: the statistics, every table of the paper and the judge board (every figure of an analysis of
    # imported votes is drawn in test_analysis_only_end_to_end)
    names = ("table1", "leaderboard", "agreement", "judge_quality", "strategy_diversity", "factors", "tests")
    tables = [f"results/tables/{name}.{ext}" for name in names for ext in ("csv", "tex")]
    workflow_copy.snakemake(*tables, "results/figures/judge_board.png", "results/stats/bias_self_preference.parquet",
                            *args)
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
    # the tables are written, and where a number cannot be computed they say the true reason
    for name in ("table1", "leaderboard", "agreement", "judge_quality", "strategy_diversity", "factors", "tests"):
        assert (res / f"tables/{name}.csv").stat().st_size and (res / f"tables/{name}.tex").stat().st_size
    table1 = pd.read_csv(res / "tables/table1.csv")
    assert set(table1["model"]) == {"gpt-4", "vicuna-13b-v1.2", "alpaca-13b"} and table1["AA"].notna().all()
    assert set(table1["data"]) == {"this run"}  # not the HEART paper's rows
    assert "no strategy tags" in (res / "tables/strategy_diversity.csv").read_text()
    assert "no quality checks" in (res / "tables/judge_quality.csv").read_text()
    # nothing of the HEART paper: no comparison with it, none of its tests in this study's BH families
    assert not list(res.rglob("paper_comparison*")) and "paper_comparison" not in workflow_copy.jobs(*args)
    external = tableio.read_table(res / "stats/external_correlations.parquet")
    assert set(external["data"]) == {"this run"}
    tests = tableio.read_table(res / "stats/tests.parquet")
    assert not tests["test"].str.startswith("paper Table 1").any() and len(tests)
    from statsmodels.stats.multitest import multipletests

    for family, rows in tests[tests["p_value"].notna()].groupby("family"):  # BH over the study's own tests only
        expected = multipletests(rows["p_value"], alpha=0.05, method="fdr_bh")[1]
        assert rows["p_adj"].to_numpy() == pytest.approx(expected), family
    # the judge leaderboard (the one place Cohen's kappa against people appears) comes out of analysis-only
    board = tableio.read_table(res / "stats/judge_board.parquet")
    assert "gpt4-pair" in set(board["judge"]) and (res / "figures/judge_board.png").stat().st_size > 10_000
    self_pref = tableio.read_table(res / "stats/bias_self_preference.parquet")
    assert list(self_pref["judge"]) == ["gpt4-pair"]  # the families reached the audit (one judge: no contrast)
    assert self_pref["note"].iloc[0] == "no other-family LLM judge decided the same pairs"


@pytest.mark.e2e
def test_arena_hard_pandalm_and_alpaca_eval_shapes_run_through_their_recipes_and_analysis_only(workflow_copy,
                                                                                              tmp_path):
    """Three more published shapes, one run (their items and judges are apart): arena-hard's graded games in both
    known orders with an unparsed one, PandaLM's three annotators in columns with a label missing, AlpacaEval's
    annotations with an annotator who voted twice. Values worked by hand in tests/fixtures/imported/README.md."""
    from heart.tools import vote_recipes as recipes

    judged = FIXTURES / "imported" / "arena_hard" / "gpt-4-1106-preview"
    assert recipes.main(["arena-hard", str(judged / "model-x.jsonl"), str(judged / "model-y.jsonl"),
                         "--baseline", "gpt-4-0314", "-o", str(tmp_path / "ah.csv")]) == 0
    assert recipes.main(["pandalm", str(FIXTURES / "imported" / "pandalm" / "testset.json"),
                         "-o", str(tmp_path / "pl.csv")]) == 0
    assert recipes.main(["alpaca-eval", str(FIXTURES / "imported" / "alpaca_eval" / "annotations.json"),
                         "-o", str(tmp_path / "ae.csv")]) == 0
    both = pd.concat([pd.read_csv(tmp_path / name, dtype=str, keep_default_na=False)
                      for name in ("ah.csv", "pl.csv", "ae.csv")])
    both.to_csv(tmp_path / "votes.csv", index=False)
    # the tables it checks (the whole analysis on imported votes: test_analysis_only_end_to_end)
    checked = ["results/judging/sources.parquet", "results/stats/bias_position.parquet",
               "results/stats/agreement_inter_human.parquet"]
    workflow_copy.snakemake(*checked, *analysis_args(tmp_path / "votes.csv"))
    res = workflow_copy.root / "results"
    sources = tableio.read_table(res / "judging/sources.parquet").set_index("judge")
    assert sources.loc["gpt-4-1106-preview", "n_unparsed"] == 1  # the game nobody could read, counted
    position = tableio.read_table(res / "stats/bias_position.parquet").set_index("judge")
    assert (position.loc["gpt-4-1106-preview", "n_verdicts"], position.loc["gpt-4-1106-preview", "n_shown_a_wins"]) \
        == (8, 3)  # the shown orders are known: 8 decided games, 3 won by the reply shown first
    inter = tableio.read_table(res / "stats/agreement_inter_human.parquet").set_index(["measure", "labels"])
    # the people of both human sources pooled: PandaLM 5 of 9 rater pairs agree, AlpacaEval 1 of 6
    assert inter.loc[("percent_agreement", "winner (a/tie/b)"), "value"] == pytest.approx(6 / 15)
    assert inter.loc[("krippendorff_alpha", "preference (-2..2)"), "status"].eq("absent").all()


@pytest.mark.e2e
def test_hostile_names_are_text_in_every_table_and_figure(hostile_run):
    """A system named like a spreadsheet formula or a LaTeX command, a judge named like broken mathtext:
    every CSV is safe to open in a spreadsheet, every .tex safe to \\input, and the figures are drawn."""
    import csv

    res = hostile_run.root / "results"
    assert FORMULA in set(tableio.read_table(res / "stats/ratings.parquet")["system"])  # the name is kept
    seen_formula = False
    for table in sorted((res / "tables").glob("*.csv")):
        with open(table, newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                for cell in row:
                    seen_formula |= cell == "'" + FORMULA
                    assert not cell.startswith(("=", "@", "\t", "\r")), (table.name, cell)
                    assert not cell.startswith(("+", "-")) or cell.lstrip("+-")[:1].isdigit(), (table.name, cell)
    assert seen_formula
    for tex in sorted((res / "tables").glob("*.tex")):
        text = tex.read_text(encoding="utf-8")
        assert r"\input" not in text and r"$\foo" not in text, tex.name
        assert r"\textbackslash{}input\{/etc/passwd\}" in text or "passwd" not in text
    for fig in ("fig4_leaderboard", "elo_forest", "agreement", "bias_factors"):
        assert (res / f"figures/{fig}.png").stat().st_size > 10_000
