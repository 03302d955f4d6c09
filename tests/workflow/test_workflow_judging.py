"""Judging, tagging, statistics, figures and the report through Snakemake, against a fake judge on 127.0.0.1.

Most tests read the session's judged workflow (conftest.judged_workflow: built once); a test that changes
it works on a copy and runs only the target it asserts on. The fake judge prefers the longer reply,
consistently, so every stored verdict can be checked. Human completions and human judgments here are
SYNTHETIC, written by the tests.
"""

import json
import shutil

import pandas as pd
import pytest

from support import KEY_ENV

from support.workflow import INJECTION, edit_config, fake
from heart.common import tableio

pytestmark = pytest.mark.e2e


def read(wf, path):
    return tableio.read_table(wf.root / path)


def completion_lengths(wf) -> dict:
    """(item, system, contributor) -> length of that completion, over every system of the run."""
    comp = pd.concat([read(wf, f"results/completions/{s}.parquet") for s in ("remote-a", "remote-b", "original",
                                                                              "human")])
    return {(c.item_id, c.system, None if pd.isna(c.contributor_id) else c.contributor_id): len(c.text)
            for c in comp.itertuples()}


def side_lengths(v, length) -> tuple[int, int]:
    la = length[(v.item_id, v.system_a, None if pd.isna(v.contributor_a) else v.contributor_a)]
    lb = length[(v.item_id, v.system_b, None if pd.isna(v.contributor_b) else v.contributor_b)]
    return la, lb


def test_every_pair_is_judged_in_both_orders_and_oriented(judged_workflow):
    wf = judged_workflow
    pairs = read(wf, "results/judging/pairs.parquet")
    assert (pairs.groupby("item_id").size() == 3 + 2 * 3).all()  # 3 among remote-a/b, original; 2 models x 3 humans

    # every verdict oriented to the pair: the fake judge's choice (the longer reply) in both orders
    verdicts = read(wf, "results/judging/llm/fake-judge.parquet")
    assert verdicts["parse_ok"].all() and len(verdicts) == 2 * len(pairs)
    length = completion_lengths(wf)
    merged = verdicts.merge(pairs, on="pair_id")
    for v in merged.itertuples():
        la, lb = side_lengths(v, length)
        if la != lb:
            assert v.signed == (3 if la > lb else -3), v
            assert v.winner_shown == ("A" if (la > lb) == (v.order == "AB") else "B")
    # replies of equal length: the fake judge says "A" in both orders -- a pure position effect, which
    # the documented rule leaves without a verdict ("inconsistent"), never a tie or a guess
    tied = {v.pair_id for v in merged.itertuples() if len(set(side_lengths(v, length))) == 1}
    judgments = read(wf, "results/judging/judgments.parquet")
    llm_rows = judgments[judgments["judge_kind"] == "llm"]
    same = llm_rows["pair_id"].isin(tied)
    assert len(llm_rows) == len(pairs)
    assert llm_rows.loc[~same, "status"].eq("ok").all() and llm_rows.loc[same, "status"].eq("inconsistent").all()
    assert not llm_rows.loc[~same, "flipped"].any() and llm_rows.loc[~same, "strength"].eq(3).all()
    assert llm_rows.loc[same, "flipped"].all() and llm_rows.loc[same, "winner"].isna().all()
    flips = read(wf, "results/judging/flip_rates.parquet").set_index("axis")
    assert flips.at["overall", "flip_rate"] == pytest.approx(len(tied) / len(pairs))
    assert set(flips.index) == {"overall", "H", "E", "A", "R", "T"}
    sources = read(wf, "results/judging/sources.parquet").set_index("judge")
    assert sources.loc["fake-judge", "n_pairs"] == len(pairs) - len(tied)
    assert sources.loc["fake-judge", "n_inconsistent"] == len(tied)


def test_the_judge_is_blinded_and_an_injection_stays_inside_the_data(judged_workflow):
    # the study's pairs and the judge's known-answer quality checks
    verdicts = pd.concat([read(judged_workflow, "results/judging/llm/fake-judge.parquet"),
                          read(judged_workflow, "results/judging/qc/fake-judge.parquet")])
    bodies = [b for b in judged_workflow.bodies if "winner" in (b.get("response_format") or {}).get("schema", {}).get(
        "properties", {})]
    # one call per distinct request: remote-a and remote-b give the same (fake) replies, so their pairs
    # with a human send identical messages, answered once (a retry under load may resend one)
    assert len({json.dumps(b["messages"]) for b in bodies}) == verdicts["cache_key"].nunique()
    assert len({b["messages"][0]["content"] for b in bodies}) == 1
    for b in bodies:
        sent = json.dumps(b["messages"])
        for name in ("remote-a", "remote-b", "original", "person-", "openai/remote-test"):
            assert name not in sent
    injected = {b["messages"][1]["content"] for b in bodies
                if INJECTION in json.loads(b["messages"][1]["content"]).values()}
    assert len(injected) == 2  # in 2 pairs with identical texts (remote-a = remote-b here), each in both orders


def test_human_raters_are_checked_and_oriented(judged_workflow):
    wf = judged_workflow
    raters = read(wf, "results/judging/human_raters.parquet").set_index("rater_id")
    assert raters.loc["rater-bad", "excluded"] and "quality checks" in raters.loc["rater-bad", "reason"]
    judgments = read(wf, "results/judging/judgments.parquet")
    hum = judgments[judgments["judge_kind"] == "human"]
    # rater-ok: remote-a shown as A, "slightly better" (+1 as shown), oriented to the pair's stored order;
    # and "about the same" (0) on human#person-2 vs remote-b
    ok = hum.set_index("status")
    stored_first = ok.loc["ok", "system_a"]
    assert ok.loc["ok", "preference"] == (1 if stored_first == "remote-a" else -1)
    assert {ok.loc["ok", "system_a"], ok.loc["ok", "system_b"]} == {"remote-a", "original"}
    assert ok.loc["tie", "preference"] == 0 and set(hum["status"]) == {"ok", "tie"} and len(hum) == 2
    assert read(wf, "results/judging/sources.parquet").set_index("judge").loc["human", "status"] == "present"


def test_tagging_covers_every_completion_and_f1_says_absent(judged_workflow):
    wf = judged_workflow
    tags = read(wf, "results/tagging/fake-tagger.parquet")
    assert len(tags) == 15 * len(completion_lengths(wf)) and tags["parse_ok"].all()
    assert set(tags.loc[tags["label"] == "present", "strategy"]) == {"reflective_statements"}
    f1 = read(wf, "results/tagging/fake-tagger_f1.parquet")
    assert f1["status"].eq("absent").all() and f1["f1"].isna().all()  # no spot checks: said so


FIGURES = ("fig4_leaderboard", "fig5_elo_ttft", "fig6_strategies", "elo_forest", "agreement", "bias_factors",
           "example_pair", "judge_board", "ablations")


def test_figures_tables_and_report(judged_workflow):
    wf = judged_workflow
    for name in FIGURES:
        png, pdf = wf.root / f"results/figures/{name}.png", wf.root / f"results/figures/{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000, name
        assert pdf.read_bytes()[:5] == b"%PDF-", name
    assert "<html" in (wf.root / "results/figures/example_pair.html").read_text().lower()

    systems = set(read(wf, "results/stats/leaderboard.parquet")["system"])
    board = pd.read_csv(wf.root / "results/tables/leaderboard.csv")
    assert systems == {"remote-a", "remote-b", "original", "human", "best-human"}
    # the config's display names (config.yaml figures.fig4.display_names), Best Human marked as derived
    assert set(board["System"]) == {"remote-a", "remote-b", "Original Dataset Completions", "Human (pooled)",
                                    "Best Human †"}
    # the paper's numbers beside this run's: what one judge and SYNTHETIC humans allow, and what they do not
    side = read(wf, "results/stats/paper_comparison.parquet").set_index("id")
    assert side.loc["cross_judge_mean_pairwise", "status"] == "needs >= 2 LLM judges"
    assert side.loc["cross_judge_three_way", "status"] == "needs >= 3 LLM judges"
    assert side.loc["human_model_agreement_mean", "status"] == "computed"
    assert side.loc["strategy_macro_f1", "status"] == "needs human strategy spot-check labels"
    # humans judged, but each pair once (after QC): rater-to-rater agreement needs two ratings of a pair
    assert side.loc["inter_human_agreement", "status"] == "needs >= 2 human ratings of a pair"
    assert side.loc["adversarial_agreement", "status"] == "not computable in this run"  # no adversarial item
    assert (side["status"] == "computed").sum() >= 5 and side.loc[side["status"] != "computed", "this_run"].isna().all()
    assert "needs &gt;= 2 LLM judges" in (wf.root / "results/tables/paper_comparison.tex").read_text() or \
        "needs >= 2 LLM judges" in (wf.root / "results/tables/paper_comparison.tex").read_text()
    table1 = pd.read_csv(wf.root / "results/tables/table1.csv")
    paper = table1[table1["data"] == "paper"]
    assert len(paper) == 15 and paper["Pearson r (Elo, AA)"].str.startswith("r = 0.70").all()
    assert "\\begin{tabular}" in (wf.root / "results/tables/tests.tex").read_text()

    # the report holds every figure, with its caption
    html = (wf.root / "results/report.html").read_text(errors="replace")
    for name in FIGURES:
        assert f"{name}.png" in html, name
    assert "paper Figure 4" in html and "remote-a, remote-b" in html and "regular_items" in html  # captions, config


def test_the_judge_leaderboard_reuses_the_runs_statistics_and_is_in_the_report(judged_workflow):
    """One fake judge (no price in litellm's map) and one SYNTHETIC rater who passed QC: every column of the
    judge leaderboard is the number the run's other tables hold, the cost says it has no price, and nothing is
    recommended as an ensemble without one."""
    wf = judged_workflow
    board = read(wf, "results/stats/judge_board.parquet").set_index("judge")
    assert list(board.index) == ["fake-judge", "ensemble"] and (board["human_status"] == "ok").all()
    agree = read(wf, "results/stats/agreement_human_llm.parquet")
    agree = agree[agree["scope"].eq("all") & agree["reference"].eq("human-majority")].set_index("judge")
    for judge, ref in (("fake-judge", "fake-judge"), ("ensemble", "llm-ensemble")):
        assert board.loc[judge, "agreement_majority"] == pytest.approx(agree.loc[ref, "agreement"])
        assert board.loc[judge, "n_majority_pairs"] == agree.loc[ref, "n_pairs"] == 1  # rater-ok's one decided pair
    sep = read(wf, "results/stats/separability.parquet")
    sep = sep[sep["axis"].eq("overall") & sep["subset"].eq("all")].set_index("source")
    assert board.loc["fake-judge", "separability"] == pytest.approx(sep.loc["judge:fake-judge", "separability_boot"])
    assert board.loc["ensemble", "separability"] == pytest.approx(sep.loc["llm", "separability_boot"])
    assert -1 <= board.loc["fake-judge", "rank_tau"] <= 1 and board.loc["fake-judge", "n_systems"] == 4
    position = read(wf, "results/stats/bias_position.parquet").set_index("judge")
    assert board.loc["fake-judge", "first_shown_rate"] == pytest.approx(position.loc["fake-judge", "share_shown_a"])
    length = read(wf, "results/stats/bias_length.parquet").set_index("judge")
    assert board.loc["fake-judge", "longer_rate"] == pytest.approx(length.loc["fake-judge", "share_longer_wins"])
    flips = read(wf, "results/judging/flip_rates.parquet").set_index(["judge", "axis"])
    assert board.loc["fake-judge", "flip_rate"] == pytest.approx(flips.loc[("fake-judge", "overall"), "flip_rate"])
    quality = read(wf, "results/judging/judge_quality.parquet").set_index(["judge", "kind"])
    assert board.loc["fake-judge", "qc_accuracy"] == pytest.approx(quality.loc[("fake-judge", "all"), "qc_accuracy"])
    # the judge's family made every model system and no other family judged: self-preference absent, said why
    assert pd.isna(board.loc["fake-judge", "self_preference"])
    assert "no other-family LLM judge" in board.loc["fake-judge", "note"]
    # the fake provider's model has no price: no made-up 0; its call time is known
    assert pd.isna(board.loc["fake-judge", "usd_per_1000"]) and "no price" in board.loc["fake-judge", "note"]
    assert board.loc["fake-judge", "seconds_per_1000"] > 0
    chosen = read(wf, "results/stats/judge_ensembles.parquet")
    assert list(chosen["ensemble"]) == ["fake-judge"] and not chosen["recommended"].any()
    assert "nothing recommended" in chosen["note"].iloc[0]
    assert chosen["agreement"].iloc[0] == pytest.approx(board.loc["ensemble", "agreement_majority"])
    csv = pd.read_csv(wf.root / "results/tables/judge_board.csv")
    assert list(csv["judge"]) == ["fake-judge", "ensemble"]
    html = (wf.root / "results/report.html").read_text(errors="replace")
    for name in ("judge_board.png", "judge_board.csv", "judge_ensembles.csv", "Judge leaderboard (beyond the paper"):
        assert name in html, name


def test_the_notebook_runs_in_a_kernel_on_the_runs_results(judged_workflow):
    from support import REPO
    from heart.figures.style import leaderboard_order
    from support.notebooks import execute_notebook, has_image, output_text, tagged

    wf = judged_workflow
    nb = execute_notebook(REPO / "notebooks/explore_results.ipynb", {"HEART_ROOT": str(wf.root),
                                                                     "HEART_RESULTS": str(wf.root / "results")})
    order = leaderboard_order(read(wf, "results/stats/leaderboard.parquet"))
    assert set(order) == {"remote-a", "remote-b", "original", "human", "best-human"}
    fig4 = tagged(nb, "figure4")
    assert f"Figure 4 rows, top to bottom: {', '.join(order)}" in output_text(fig4) and has_image(fig4)


def test_every_parquet_carries_its_provenance(judged_workflow):
    wf = judged_workflow
    prov = tableio.provenance_of(wf.root / "results/judging/llm/fake-judge.parquet")
    assert prov["rule"] == "merge_judgments" and prov["shard_rule"] == "judge_pairs" and prov["shards"] == ["1of1"]
    assert prov["workflow_version"] and len(prov["config_sha256"]) == 64
    assert prov["packages"]["pandas"] == pd.__version__ and len(prov["esconv_sha256"]) == 64
    assert set(prov["resources_sha256"]) == {"workflow/resources/rubric/heart.yaml",
                                             "workflow/resources/prompts/judge/heart_pairwise.md"}
    esconv = tableio.provenance_of(wf.root / "results/data/esconv_source.parquet")["esconv_sha256"]
    for path in sorted((wf.root / "results").rglob("*.parquet")):
        rel = path.relative_to(wf.root)
        assert tableio.provenance_of(path).get("esconv_sha256") == esconv, rel
    assert tableio.provenance_of(wf.root / "results/stats/ratings.parquet")["rule"] == "ratings"


def test_a_rerun_does_nothing(judged_workflow):
    assert judged_workflow.jobs(*judged_workflow.args, env=KEY_ENV) == {}


STATS_RULES = {"ratings", "ratings_alternative", "agreement", "bias_audits", "factor_analysis", "external_correlations",
               "rationale_codes", "multiple_testing", "preference_shares", "style_ratings", "judge_board",
               "ablations"}
JUDGE_FIGURES = {f"figure_{f}" for f in ("leaderboard", "elo_ttft", "elo_forest", "agreement", "bias_factors",
                                         "example_pair", "judge_board", "ablations")}


def test_editing_the_judge_prompt_rejudges_and_calls_the_judge_only(judged_copy, judge_server):
    state, _ = judge_server
    wf = judged_copy
    old_keys = set(read(wf, "results/judging/llm/fake-judge.parquet")["cache_key"])
    prompt = wf.root / "workflow/resources/prompts/judge/heart_pairwise.md"
    prompt.write_text(prompt.read_text() + "\nBe fair.\n")
    jobs = wf.jobs(*wf.args, env=KEY_ENV)
    assert jobs == {"judge_pairs": 1, "merge_judgments": 1, "combine_judgments": 1, "export_llm_cache": 1,
                    "llm_spend": 1, "all": 1,
                    **dict.fromkeys(STATS_RULES, 1), **dict.fromkeys(JUDGE_FIGURES, 1), "paper_tables": 1,
                    "paper_comparison": 1, "judge_qc": 1, "judge_quality": 1,
                    "figure_protocol": 1}  # Figure 7 counts the verdicts
    calls = sum(state.ok.values())
    wf.snakemake("results/judging/llm/fake-judge.parquet", *wf.args, env=KEY_ENV)
    verdicts = read(wf, "results/judging/llm/fake-judge.parquet")
    assert not set(verdicts["cache_key"]) & old_keys  # a new prompt, new requests
    assert sum(state.ok.values()) - calls == verdicts["cache_key"].nunique()  # every judge call again, nothing else


# every statistics setting, a new value for it, and the jobs that changing it must plan: the rules that
# read it and every rule downstream of their outputs (and the target rule "all")
RATINGS = {"ratings", "ratings_alternative", "external_correlations", "multiple_testing", "figure_leaderboard",
           "figure_elo_ttft", "figure_elo_forest", "paper_tables", "paper_comparison", "all"}
AGREEMENT = {"agreement", "figure_agreement", "paper_tables", "paper_comparison", "all"}
BIAS = {"bias_audits", "multiple_testing", "figure_bias_factors", "paper_tables", "all"}
STRATEGIES = {"strategy_stats", "multiple_testing", "figure_strategies", "paper_tables", "paper_comparison", "all"}
FACTORS = {"factor_analysis", "multiple_testing", "figure_bias_factors", "paper_tables", "all"}
JUDGE_BOARD = {"judge_board", "figure_judge_board", "all"}
ABLATIONS = {"ablations", "figure_ablations", "all"}
BOOTSTRAPPED = RATINGS | AGREEMENT | BIAS | STRATEGIES | JUDGE_BOARD | ABLATIONS | {"rationale_codes",
                                                                                  "preference_shares", "style_ratings"}
STATS_SETTINGS = {
    "n_boot": (100, BOOTSTRAPPED | {"figure_protocol"}),  # Figure 7 says how many replicates
    "seed": (1, BOOTSTRAPPED),
    "ci": (0.9, BOOTSTRAPPED | FACTORS),
    "bt_alpha": (0.02, RATINGS | JUDGE_BOARD | ABLATIONS | {"style_ratings"}),
    "consensus": (0.5, AGREEMENT),
    "subsample_reps": (50, AGREEMENT),
    "fdr_alpha": (0.1, BIAS),
    "n_factors": (2, FACTORS),
    "ablations": ("{elo_k: 8}", ABLATIONS),
}


@pytest.mark.parametrize("setting", sorted(STATS_SETTINGS))
def test_a_statistics_setting_reruns_exactly_its_consumers(judged_workflow, setting):
    wf = judged_workflow
    value, consumers = STATS_SETTINGS[setting]
    jobs = wf.jobs(*wf.args, "--config", f"stats={{{setting}: {value}}}", env=KEY_ENV)
    assert jobs == dict.fromkeys(consumers, 1), sorted(jobs)  # each consumer once, nothing else


# a judge's, a tagger's or a figure's setting (a config file over the test's), the rules that must rerun, and
# rules that must not: each rule takes only the settings it reads (a judge or tagger as one object, common.smk)
SETTINGS = {
    "judge context_turns": ({"judging": {"judges": {"fake-judge": {"model": "remote", "context_turns": 2}}}},
                            {"judge_pairs", "judge_qc", "combine_judgments"},
                            {"generate_completions", "design_pairs", "tag_strategies"}),
    "judge axes": ({"judging": {"judges": {"fake-judge": {"model": "remote", "axes": False}}}},
                   {"judge_pairs"}, {"judge_qc", "tag_strategies"}),  # the quality checks never ask the axes
    "rationale length": ({"judging": {"rationale_max_chars": 100}}, {"judge_pairs", "judge_qc"}, {"tag_strategies"}),
    "tagger evidence": ({"tagging": {"evidence_max_chars": 30}}, {"tag_strategies", "strategy_stats"},
                        {"judge_pairs", "judge_qc", "ratings"}),
    "rater QC": ({"human_judgments": {"max_qc_fail_share": 0.9}}, {"human_judgments", "combine_judgments", "ratings",
                                                                     "ratings_alternative"},
                 {"judge_pairs", "tag_strategies"}),
    "display names": ({"figures": {"fig4": {"display_names": {"remote-a": "Remote A"}}}},
                      {"figure_leaderboard", "figure_elo_ttft", "paper_tables"},
                      {"ratings", "external_correlations", "multiple_testing", "paper_comparison"}),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_judge_tagger_or_figure_setting_reruns_what_reads_it_only(judged_workflow, tmp_path, setting):
    import yaml

    def merged(base, over):
        return {**base, **{k: merged(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
                           for k, v in over.items()}}

    wf = judged_workflow
    change, must, must_not = SETTINGS[setting]
    changed = tmp_path / "changed.yaml"  # the test's config with the one setting changed
    changed.write_text(yaml.safe_dump(merged(yaml.safe_load((wf.root / "api.yaml").read_text()), change)))
    jobs = wf.jobs("--configfile", str(changed), env=KEY_ENV)
    assert must <= jobs.keys(), sorted(jobs)
    assert not must_not & jobs.keys(), sorted(jobs)


def test_how_the_models_are_called_reruns_nothing(judged_workflow, tmp_path):
    """Concurrency, rates, timeouts, retries, back-off and batch polling change how calls are made, not their
    answers (every one so far is in the response cache): a run with them changed has nothing to do
    (heart.llm.models.CALLING); what a model answers (its decoding params) reruns its jobs."""
    import yaml

    wf = judged_workflow
    cfg = yaml.safe_load((wf.root / "api.yaml").read_text())
    cfg["models"]["remote"].update(max_concurrency=1, rpm=30, tpm=9000, timeout=3, max_retries=0)
    cfg["llm"].update(backoff_s=2.5, batch_poll_s=5, batch_max_requests=100)
    changed = tmp_path / "calling.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    assert wf.jobs("--configfile", str(changed), env=KEY_ENV) == {}
    cfg["models"]["remote"]["params"]["max_tokens"] = 300
    changed.write_text(yaml.safe_dump(cfg))
    assert {"generate_completions", "judge_pairs", "tag_strategies"} <= wf.jobs("--configfile", str(changed),
                                                                               env=KEY_ENV).keys()


def test_a_figure_style_of_its_own_reruns_that_figure_only_and_the_house_style_every_figure(judged_copy):
    wf = judged_copy
    styles = wf.root / "workflow/resources/figures"
    (styles / "fig4_leaderboard.yaml").write_text("rc:\n  font.size: 11\n")  # what differs from style.yaml
    assert wf.jobs(*wf.args, env=KEY_ENV) == {"figure_leaderboard": 1, "all": 1}
    house = styles / "style.yaml"
    house.write_text(house.read_text().replace("font.size: 10", "font.size: 9"))
    rerun = set(wf.jobs(*wf.args, env=KEY_ENV)) - {"all"}
    assert rerun == {"figure_leaderboard", "figure_elo_ttft", "figure_strategies", "figure_elo_forest",
                     "figure_agreement", "figure_bias_factors", "figure_example_pair", "figure_rubric",
                     "figure_protocol", "figure_judge_board", "figure_ablations"}, rerun


def test_family_exclusion_leaves_a_judge_nothing_of_its_own(judged_copy):
    wf = judged_copy
    edit_config(wf, lambda cfg: cfg["judging"].update(exclude_own_family=True))
    wf.snakemake("results/judging/sources.parquet", *wf.args, env=KEY_ENV)
    verdicts = read(wf, "results/judging/llm/fake-judge.parquet")
    pairs = read(wf, "results/judging/pairs.parquet")
    # the judge's family ("test") made remote-a and remote-b, and every pair holds one of them
    assert len(verdicts) == 0 and len(pairs) == 3 * (3 + 2 * 3)
    sources = read(wf, "results/judging/sources.parquet").set_index("judge")
    assert sources.loc["fake-judge", "status"] == "absent"
    assert sources.loc["fake-judge", "n_excluded_family"] == len(pairs)


def test_one_models_decoding_params_rerun_its_completions_and_their_judgments_only(judged_copy, provider):
    """remote-b gets its own model entry; changing its temperature re-pays only remote-b's completions,
    the judge calls on pairs holding remote-b, and remote-b's tagging."""
    state, _ = provider
    wf = judged_copy

    def own_model(cfg):
        cfg["models"]["remote2"] = {**cfg["models"]["remote"], "family": "test2",
                                    "params": dict(cfg["models"]["remote"]["params"])}
        cfg["systems"]["remote-b"]["model"] = "remote2"

    edit_config(wf, own_model)
    targets = ["results/judging/llm/fake-judge.parquet", "results/tagging/fake-tagger.parquet"]
    wf.snakemake(*targets, *wf.args, env=KEY_ENV)
    before = sum(state.ok.values())
    a_mtime = (wf.root / "results/completions/remote-a.parquet").stat().st_mtime_ns

    # from here the fake supporter's answer shows the temperature it was asked with
    state.responder = lambda body: (fake(body) if (body.get("response_format") or {}).get("schema")
                                    else f"{fake(body)} (t={body.get('temperature')})")
    edit_config(wf, lambda cfg: cfg["models"]["remote2"]["params"].update(temperature=0.7))
    jobs = wf.jobs(*wf.args, env=KEY_ENV)
    assert jobs["generate_completions"] == 1 and "make_adversarial_items" not in jobs
    wf.snakemake(*targets, *wf.args, env=KEY_ENV)
    assert (wf.root / "results/completions/remote-a.parquet").stat().st_mtime_ns == a_mtime

    pairs = read(wf, "results/judging/pairs.parquet")
    verdicts = read(wf, targets[0]).merge(pairs, on="pair_id")
    with_b = verdicts[(verdicts["system_a"] == "remote-b") | (verdicts["system_b"] == "remote-b")]
    n_items = pairs["item_id"].nunique()
    expected = n_items + with_b["cache_key"].nunique() + n_items  # completions, judge calls, tagging
    assert sum(state.ok.values()) - before == expected


def test_shards_merge_to_the_same_tables_and_share_one_cache(judged_copy, judge_server):
    """Every LLM stage in 2 shards (run two at a time, all writing one empty cache), then in 1 shard: the
    second run pays for nothing and merges to the same completions, verdicts and tags."""
    state, _ = judge_server
    wf = judged_copy
    for stage in ("completions", "judging", "tagging"):
        shutil.rmtree(wf.root / "results" / stage / "shards")
    shutil.rmtree(wf.root / "resources/llm_cache")
    # without the SYNTHETIC humans, whose replies repeat across items: shards racing for one request may
    # each pay for it (by design: no locks on a shared filesystem; tests/llm/test_engine.py bounds that race)
    shutil.rmtree(wf.root / "resources/human")
    edit_config(wf, lambda cfg: cfg["llm"].update(shards=2))
    jobs = wf.jobs(*wf.args, env=KEY_ENV)
    assert (jobs["generate_completions"], jobs["judge_pairs"], jobs["tag_strategies"]) == (2 * 2, 2, 2)
    assert (jobs["merge_completions"], jobs["merge_judgments"], jobs["merge_tags"]) == (2, 1, 1)
    tables = ("results/completions/remote-a.parquet", "results/completions/remote-b.parquet",
              "results/judging/llm/fake-judge.parquet", "results/tagging/fake-tagger.parquet")
    before = sum(state.ok.values())
    wf.snakemake(*tables, *wf.args, env=KEY_ENV)
    sharded = {t: read(wf, t) for t in tables}
    # the shards split the items: each item's completion is in exactly one shard file
    items = read(wf, "results/items/items.parquet")["item_id"].tolist()
    split = [read(wf, f"results/completions/shards/remote-a/{k}of2.parquet")["item_id"].tolist() for k in (1, 2)]
    assert sorted(sum(split, [])) == sorted(items) and len(sharded[tables[0]]) == len(items)
    # nothing was paid twice although shards ran side by side: one cache file per paid call
    cache_files = list((wf.root / "resources/llm_cache").rglob("*.json"))
    assert sum(state.ok.values()) - before == len(cache_files) > 0
    assert len(sharded["results/judging/llm/fake-judge.parquet"]) == 2 * 3 * 3  # 3 items x 3 pairs x 2 orders

    paid = sum(state.ok.values())
    edit_config(wf, lambda cfg: cfg["llm"].update(shards=1))
    wf.snakemake(*tables, *wf.args, env=KEY_ENV)
    assert sum(state.ok.values()) == paid
    for t in tables:
        one = read(wf, t)
        assert one["from_cache"].all(), t
        pd.testing.assert_frame_equal(one.drop(columns="from_cache"), sharded[t].drop(columns="from_cache"), obj=t)
    assert tableio.provenance_of(wf.root / tables[2])["shards"] == ["1of1"]


def test_an_imported_system_and_imported_judgments_join_the_study(judged_copy, judge_server):
    """A system run elsewhere (completions from a JSONL file) is paired, judged and tagged like any system,
    paying only for what it is in; judgments made elsewhere (public format) enter judgments.parquet."""
    state, _ = judge_server
    wf = judged_copy
    items = read(wf, "results/items/items.parquet")
    elsewhere = wf.root / "resources/imported"
    elsewhere.mkdir(parents=True)
    (elsewhere / "polaris.jsonl").write_text("".join(
        json.dumps({"item_id": i, "system": "polaris-4.0", "text": f"I hear you; that sounds so heavy ({k}).",
                    "ttft_s": 0.3, "cost_usd": 0.0002}) + "\n" for k, i in enumerate(items["item_id"])))
    first = items["item_id"].iloc[0]
    (elsewhere / "judgments.csv").write_text(
        "item,system_a,system_b,judge,judge_kind,winner,strength,order\n"
        f"{first},polaris-4.0,remote-a,outside-judge,llm,a,3,AB\n"
        f"{first},polaris-4.0,remote-a,outside-judge,llm,a,2,BA\n"
        f"{first},polaris-4.0,original,rater-z,human,b,4,AB\n")
    edit_config(wf, lambda cfg: cfg.update(imported_systems={"polaris-4.0": {
        "path": "resources/imported/polaris.jsonl", "family": "polaris"}}))
    before = sum(state.ok.values())
    wf.snakemake("results/judging/judgments.parquet", "results/tagging/fake-tagger.parquet",
                 "results/completions/systems.parquet", *wf.args, env=KEY_ENV)
    pairs = read(wf, "results/judging/pairs.parquet")
    new_pairs = pairs[(pairs["system_a"] == "polaris-4.0") | (pairs["system_b"] == "polaris-4.0")]
    # the new system is in 2 model pairs + 1 with the original + 3 with the humans per item, in both orders,
    # and its 3 completions are tagged: nothing else is paid for
    assert len(new_pairs) == 3 * (2 + 1 + 3)
    verdicts = read(wf, "results/judging/llm/fake-judge.parquet")
    new_verdicts = verdicts[verdicts["pair_id"].isin(new_pairs["pair_id"])]
    assert len(new_verdicts) == 2 * len(new_pairs)
    # paid: the judge calls of its pairs and its 3 completions' tagging, nothing else (a request identical to
    # one made before is answered by the cache -- the SYNTHETIC humans' replies repeat -- unless two of them
    # were in flight at once)
    paid = sum(state.ok.values()) - before
    assert (~new_verdicts["from_cache"]).sum() + 3 <= paid <= len(new_verdicts) + 3
    systems = read(wf, "results/completions/systems.parquet").set_index("system")
    assert systems.loc["polaris-4.0", "note"] == "imported from resources/imported/polaris.jsonl"
    judgments = read(wf, "results/judging/judgments.parquet")
    outside = judgments[judgments["judge"].eq("outside-judge")]
    assert len(outside) == 1 and outside["n_orders"].iloc[0] == 2
    assert {outside["system_a"].iloc[0], outside["system_b"].iloc[0]} == {"polaris-4.0", "remote-a"}
    assert judgments["judge"].eq("human:rater-z").sum() == 1
    sources = read(wf, "results/judging/sources.parquet").set_index("judge")
    assert sources.loc["outside-judge", "note"] == "imported from resources/imported/judgments.csv"


def test_adding_a_system_to_a_one_order_budgeted_study_pays_only_for_its_pairs(judged_copy, judge_server):
    """The paper's design (each pair once, in one random order, a budget of pairs): a system added to a
    judged study keeps every existing pair in its A/B order, so only the new system's pairs are judged.
    (With one random stream over all pairs, as before, about half of the old pairs changed order and
    would all have been judged again.)"""
    state, _ = judge_server
    wf = judged_copy
    edit_config(wf, lambda cfg: cfg["judging"].update(both_orders=False, pair_sample={"human-model": 0.7}))
    wf.snakemake("results/judging/llm/fake-judge.parquet", *wf.args, env=KEY_ENV)
    pairs_before = read(wf, "results/judging/pairs.parquet")
    verdicts_before = read(wf, "results/judging/llm/fake-judge.parquet")
    assert len(verdicts_before) == len(pairs_before)  # one order: one verdict per pair
    assert 0 < (pairs_before["kind"] == "human-model").sum() < 3 * 2 * 3  # the budget dropped some

    items = read(wf, "results/items/items.parquet")
    (wf.root / "resources/imported").mkdir(parents=True)
    (wf.root / "resources/imported/newcomer.jsonl").write_text("".join(
        json.dumps({"item_id": i, "system": "newcomer", "text": f"That is a lot to carry, truly ({k})."}) + "\n"
        for k, i in enumerate(items["item_id"])))
    edit_config(wf, lambda cfg: cfg.update(imported_systems={"newcomer": {
        "path": "resources/imported/newcomer.jsonl", "family": "other"}}))
    before = sum(state.ok.values())
    wf.snakemake("results/judging/llm/fake-judge.parquet", *wf.args, env=KEY_ENV)
    paid = sum(state.ok.values()) - before

    pairs_after = read(wf, "results/judging/pairs.parquet")
    new = pairs_after[(pairs_after["system_a"] == "newcomer") | (pairs_after["system_b"] == "newcomer")]
    old = pairs_after[~pairs_after["pair_id"].isin(new["pair_id"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, pairs_before, check_dtype=False)  # every old pair, in its order
    verdicts = read(wf, "results/judging/llm/fake-judge.parquet")
    kept = verdicts[verdicts["pair_id"].isin(pairs_before["pair_id"])]
    assert kept["from_cache"].all() and set(kept["cache_key"]) == set(verdicts_before["cache_key"])
    new_verdicts = verdicts[verdicts["pair_id"].isin(new["pair_id"])]
    assert len(new_verdicts) == len(new) > 0
    # the new pairs' calls and nothing else (identical requests -- the SYNTHETIC humans' replies repeat --
    # are answered once)
    assert paid == new_verdicts["cache_key"].nunique()


def test_a_confirmed_flag_leaves_the_reply_out_of_the_rating_pages_and_the_bundle(judged_copy):
    """HEART §6 through the rules: a lexicon term that flags one of remote-a's replies (written here,
    SYNTHETIC), a reviewer's confirmation in the reviews file, and completions.confirmed_flags [rating_pages,
    bundle]: the flag is confirmed in safety_flags.parquet and the report's table, no rating task shows the reply,
    and the bundle leaves its text out (withheld.jsonl) and still checks."""
    import re

    import yaml

    from heart.bundle import check

    wf = judged_copy
    completions = tableio.read_table(wf.root / "results/completions/remote-a.parquet")
    target = completions.iloc[0]
    lexicon_path = wf.root / "workflow/resources/safety/lexicon.yaml"
    lexicon = yaml.safe_load(lexicon_path.read_text())
    lexicon["categories"]["violence"].setdefault("patterns", []).append(re.escape(target["text"]))
    lexicon_path.write_text(yaml.safe_dump(lexicon))
    (wf.root / "resources/human/safety_reviews.csv").write_text(
        "item_id,system,reviewer_id,decision,reason\n"
        f"{target['item_id']},remote-a,coordinator-1,confirm,\"Confirmed here to test the setting.\"\n")
    edit_config(wf, lambda cfg: cfg.setdefault("completions", {}).update(confirmed_flags=["rating_pages", "bundle"]))
    wf.snakemake("results/completions/safety_flags.parquet", "results/annotation/tasks.parquet", "results/bundle",
                 *wf.args, env=KEY_ENV)

    flags = tableio.read_table(wf.root / "results/completions/safety_flags.parquet")
    mine = flags[(flags["item_id"] == target["item_id"]) & (flags["system"] == "remote-a")]
    assert mine[["review", "left_out_of", "n_confirmed"]].values.tolist() == [
        ["confirmed", "rating pages, bundle", 1]]
    report = pd.read_csv(wf.root / "results/tables/safety.csv").set_index("system")
    assert report.loc["remote-a", "confirmed"] == 1 and "violence" in report.loc["remote-a", "categories"]

    tasks = tableio.read_table(wf.root / "results/annotation/tasks.parquet")
    rating = tasks[(tasks["kind"] == "rating") & (tasks["item_id"] == target["item_id"])]
    assert len(rating) and not rating[["ref_a", "ref_b"]].isin(["remote-a"]).any().any()
    reviews = tasks[tasks["kind"] == "safety_review"]
    assert (reviews["item_id"] + "/" + reviews["system"]).eq(f"{target['item_id']}/remote-a").any()

    bundle = wf.root / "results/bundle"
    public = pd.read_parquet(bundle / "completions.parquet")
    assert not ((public["item_id"] == target["item_id"]) & (public["system"] == "remote-a")).any()
    withheld = [json.loads(line) for line in (bundle / "withheld.jsonl").read_text().splitlines()]
    assert [(w["item_id"], w["system"]) for w in withheld] == [(target["item_id"], "remote-a")]
    # the fake provider gave remote-b the same words on that item: flagged too, not reviewed, so kept
    assert public.loc[public["text"] == target["text"], "system"].tolist() == ["remote-b"]
    twin = flags[(flags["item_id"] == target["item_id"]) & (flags["system"] == "remote-b")]
    assert twin[["review", "left_out_of"]].values.tolist() == [["unreviewed", ""]]
    verdicts = pd.read_parquet(bundle / "llm_verdicts.parquet").merge(pd.read_parquet(bundle / "pairs.parquet"),
                                                                       on="pair_id")
    withheld_pair = (verdicts["item_id_x" if "item_id_x" in verdicts else "item_id"] == target["item_id"]) & (
        verdicts[["system_a", "system_b"]].eq("remote-a").any(axis=1))
    assert withheld_pair.any() and verdicts.loc[withheld_pair, "rationale"].isna().all()
    assert verdicts.loc[~withheld_pair, "rationale"].notna().any()
    assert "The text of 1 completions is left out" in (bundle / "README.md").read_text()
    assert check.check(bundle)["pairs"] == len(tableio.read_table(wf.root / "results/judging/pairs.parquet"))


# --- the adaptive pair design (config judging.adaptive; issue 44) ----------------------------------------------

def test_a_model_added_adaptively_reuses_the_study_and_says_what_it_used(judged_copy, provider):
    state, _ = provider
    wf = judged_copy
    edit_config(wf, lambda cfg: cfg["judging"].update(adaptive={
        "enabled": True, "newcomer": "remote-b", "first": 0.4, "half_width": 100000.0, "n_boot": 50}))
    calls = sum(state.calls.values())
    wf.snakemake("results/judging/adaptive.parquet", "results/stats/ratings.parquet",
                 "results/llm/calls_preview.parquet", *wf.args, env=KEY_ENV)
    assert sum(state.calls.values()) == calls  # the study's verdicts (and these) were in the response cache
    pairs = read(wf, "results/judging/pairs.parquet")
    newcomer = (pairs["system_a"] == "remote-b") | (pairs["system_b"] == "remote-b")
    round0 = set(read(wf, "results/judging/adaptive/round0.parquet")["pair_id"])
    assert set(pairs.loc[~newcomer, "pair_id"]) <= round0  # every pair of the study, in round 0
    rounds = read(wf, "results/judging/adaptive.parquet")
    last = rounds.iloc[-1]
    assert last["done"] and last["reason"].startswith("target met: remote-b known to +/-")
    assert last["n_newcomer_fixed"] == newcomer.sum() and last["n_newcomer_chosen"] == round(0.4 * newcomer.sum())
    assert last["calls"] < last["calls_fixed"]
    # the fake provider's model has no price: the cost is unknown, never $0; the table is in the report
    assert pd.isna(last["cost_usd"]) and pd.isna(last["est_cost_fixed_usd"])
    assert pd.read_csv(wf.root / "results/tables/adaptive_design.csv")["reason"].iloc[-1] == last["reason"]
    log = (wf.root / "logs/judging/adaptive.log").read_text()
    assert f"remote-b: {last['n_newcomer_chosen']} of its {newcomer.sum()} pairs" in log
    assert "remote-b" in set(read(wf, "results/stats/ratings.parquet")["system"])
    # the preview: this run's judging at its worst case, beside the fixed design and the SIMULATED expectation
    preview = read(wf, "results/llm/calls_preview.parquet")
    judging = preview[preview["stage"].str.startswith("judging fake-judge")].set_index("scenario", drop=False)
    assert judging["scenario"].isna().sum() == 1 and "adaptive, worst case" in judging["stage"].iloc[0]
    fixed = judging.loc["fixed design", "calls"]
    assert fixed == last["calls_fixed"] and judging["calls"].iloc[0] == fixed  # budget 1.0: every pair at worst
    assert judging.loc["adaptive, expected (SIMULATED)", "calls"] < fixed
