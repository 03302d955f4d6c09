"""The Snakemake workflow as a whole: lint and dry runs (tier dag); data-stage runs, reruns and failures (e2e)."""

import functools
import hashlib
import http.server
import json
import threading

import pytest
import yaml

from support import PAPER_KEYS, FIXTURES, SHARED_ESCONV_DIR, TINY, needs_shared
from heart.common import tableio




def tiny_config(n=4, adversarial=2):
    return ["--config", f"esconv={{local_copy: {TINY}}}", f"regular_items={{n: {n}, seed: 1}}",
            f"adversarial_items={{n: {adversarial}}}"]


@pytest.mark.dag
def test_lint_is_clean(workflow_copy):
    proc = workflow_copy.snakemake("--lint")
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


ONCE = {"ingest_esconv": 1, "collect_items": 1,
        "original_completions": 1, "human_completions": 1, "summarize_systems": 1, "screen_completions": 1,
        "export_llm_cache": 1,
        "llm_spend": 1, "all": 1,
        "design_pairs": 1, "human_judgments": 1, "combine_judgments": 1, "ratings": 1, "ratings_alternative": 1,
        "agreement": 1,
        "bias_audits": 1, "strategy_stats": 1, "factor_analysis": 1, "external_correlations": 1,
        "rationale_codes": 1, "multiple_testing": 1, "paper_tables": 1, "preference_shares": 1,
        "style_ratings": 1, "paper_comparison": 1, "judge_quality": 1, "rubric_table": 1, "judge_board": 1,
        "ablations": 1,
        **{f"figure_{f}": 1 for f in ("leaderboard", "elo_ttft", "strategies", "elo_forest", "agreement",
                                      "bias_factors",
                                      "example_pair", "rubric", "protocol", "judge_board", "ablations")}}


@pytest.mark.dag
@pytest.mark.parametrize("configfile, model_systems, judges, shards",
                         [("config/config.yaml", 2, 2, 1), ("config/paper.yaml", 15, 3, 2)])
def test_dry_run_whole_dag(workflow_copy, configfile, model_systems, judges, shards):
    # without a local copy the DAG starts with the download; paper.yaml replaces the
    # default config (its 15 model systems are not mixed with the local model's 2) and
    # splits each LLM stage into 2 shards per model, each merged by one cheap job
    jobs = workflow_copy.jobs("--configfile", configfile, env=PAPER_KEYS)
    # the default screens a new study's items; the paper's are its released ones (downloaded, mapped)
    items = ({"screen_items": 1, "make_adversarial_items": 1} if configfile == "config/config.yaml"
             else {"download_release": 2, "map_release": 1, "release_items": 1})
    assert jobs == {"download_esconv": 1, **ONCE, **items, "generate_completions": model_systems * shards,
                    "merge_completions": model_systems, "judge_pairs": judges * shards, "merge_judgments": judges,
                    "judge_qc": judges,
                    "tag_strategies": shards, "merge_tags": 1, "strategy_f1": 1}
    # every key the config needs is set: start-up says nothing of keys
    assert "API keys not set" not in workflow_copy.last_plan.stdout + workflow_copy.last_plan.stderr
    # a local copy replaces the download; the shard count is a setting (3 shards of each model's stages)
    jobs = workflow_copy.jobs("--configfile", configfile, "--config", f"esconv={{local_copy: {TINY}}}",
                              "llm={shards: 3}", env=PAPER_KEYS)
    assert "download_esconv" not in jobs
    assert jobs["generate_completions"] == 3 * model_systems and jobs["judge_pairs"] == 3 * judges


def planned_threads(wf, *args, env=None) -> dict[str, set[int]]:
    """Rule -> the threads its jobs would take, from a dry run's job blocks (a block names them when over 1)."""
    out = wf.snakemake("-n", *args, env=env).stdout
    threads: dict[str, set[int]] = {}
    for block in out.split("\nrule ")[1:]:
        rule, _, body = block.partition(":")
        n = [int(line.split(":")[1]) for line in body.splitlines() if line.strip().startswith("threads:")]
        threads.setdefault(rule.strip(), set()).add(n[0] if n else 1)
    return threads


@pytest.mark.dag
def test_a_job_on_the_local_model_takes_its_threads_of_the_cores(workflow_copy):
    """A job on a local model takes llm.local_threads of --cores (its llama.cpp runs on as many, so nothing runs
    on those cores beside it), capped at --cores; a job calling a provider takes one."""
    llm_rules = {"make_adversarial_items", "generate_completions", "judge_pairs", "judge_qc", "tag_strategies"}
    local = planned_threads(workflow_copy, "--config", f"esconv={{local_copy: {TINY}}}", "llm={local_threads: 3}",
                            "--cores", "4")
    assert {rule: local[rule] for rule in llm_rules} == {rule: {3} for rule in llm_rules}
    assert local["ratings"] == {1}
    capped = planned_threads(workflow_copy, "--config", f"esconv={{local_copy: {TINY}}}", "--cores", "1")
    assert {rule: capped[rule] for rule in llm_rules} == {rule: {1} for rule in llm_rules}
    remote = planned_threads(workflow_copy, "--configfile", "config/paper.yaml", "--config",
                             f"esconv={{local_copy: {TINY}}}", env=PAPER_KEYS)
    assert remote["generate_completions"] == remote["judge_pairs"] == remote["tag_strategies"] == {1}


@pytest.mark.dag
def test_paper_config_without_keys_looks_and_names_them(workflow_copy):
    """Looking before paying needs no key: a dry run of the paper's config and the call preview run with none
    set, and say at start-up which are missing (a job that would call a provider stops before its first call:
    tests/llm/test_engine.py)."""
    no_keys = {k: None for k in PAPER_KEYS}
    # the whole DAG and the call preview (with every key set nothing is said: test_dry_run_whole_dag)
    proc = workflow_copy.snakemake("-n", "all", "results/llm/calls_preview.parquet", "--configfile",
                                   "config/paper.yaml", check=False, env=no_keys)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "API keys not set: " + ", ".join(sorted(PAPER_KEYS)) in out
    assert "generate_completions" in out  # the whole DAG, not a stop at start-up
    assert "preview_llm_calls" in out
    # replaying a published cache needs no keys and says nothing of them
    proc = workflow_copy.snakemake("-n", "--configfile", "config/paper.yaml", "--config",
                                   "llm={replay: results/llm/cache.parquet}", check=False, env=no_keys)
    assert "API keys not set" not in proc.stdout + proc.stderr


DATA_TARGETS = ["results/items/regular.parquet", "results/data/esconv_source.parquet"]


@pytest.mark.e2e
def test_run_rerun_and_incremental_rebuild(workflow_copy):
    wf = workflow_copy
    wf.snakemake(*DATA_TARGETS, *tiny_config())
    items = tableio.read_table(wf.root / "results/items/regular.parquet")
    audit = tableio.read_table(wf.root / "results/items/screening_audit.parquet")
    source = tableio.read_table(wf.root / "results/data/esconv_source.parquet")
    assert len(items) == 4 and set(items["subset"]) == {"regular"}
    assert (audit["decision"] == "kept").sum() == 4
    assert source.loc[0, "sha256"] == hashlib.sha256(TINY.read_bytes()).hexdigest()
    assert tableio.provenance_of(wf.root / "results/items/regular.parquet")["lexicon_version"] == 2
    assert "24 regular items" not in (wf.root / "logs/items/screen_items.log").read_text()

    # a no-op rerun schedules nothing
    assert wf.jobs(*DATA_TARGETS, *tiny_config()) == {}

    # editing the screening lexicon reruns screening, not ingest
    lex = wf.root / "workflow/resources/screening/lexicon.yaml"
    lex.write_text(lex.read_text().replace("version: 2", "version: 3"))
    assert wf.jobs(*DATA_TARGETS, *tiny_config()) == {"screen_items": 1}

    # a different item count reruns screening only, and the rerun picks other ids
    wf.snakemake(*DATA_TARGETS, *tiny_config(n=5))
    assert len(tableio.read_table(wf.root / "results/items/regular.parquet")) == 5
    assert wf.jobs(*DATA_TARGETS, *tiny_config(n=5)) == {}


@pytest.mark.e2e
def test_bad_input_stops_with_named_error_and_no_output(workflow_copy, tmp_path):
    data = json.loads(TINY.read_text())
    del data[3]["dialog"][2]["content"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    proc = workflow_copy.snakemake(*DATA_TARGETS, "--config", f"esconv={{local_copy: {bad}}}", check=False)
    assert proc.returncode != 0
    assert f"{bad}: conversation 3, dialog[2].content: missing" in proc.stderr
    assert not list((workflow_copy.root / "results").rglob("*.parquet"))


@pytest.mark.dag
def test_bad_config_key_is_named(workflow_copy):
    proc = workflow_copy.snakemake("-n", "--config", "regular_items={n: lots, seed: 1}", check=False)
    assert proc.returncode != 0
    assert "regular_items.n: 'lots' is not of type 'integer'" in proc.stdout + proc.stderr


@pytest.mark.dag
def test_missing_local_copy_is_named(workflow_copy, tmp_path):
    proc = workflow_copy.snakemake("-n", "--config", f"esconv={{local_copy: {tmp_path}/none.json}}", check=False)
    assert proc.returncode != 0
    assert "esconv.local_copy points to" in proc.stdout + proc.stderr


@pytest.fixture
def http_server():
    """Serve tests/fixtures on 127.0.0.1 (the download rule's stand-in for upstream)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(FIXTURES))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.e2e
def test_download_rule_checks_sha256(workflow_copy, http_server):
    url = f"{http_server}/esconv_tiny.json"
    good = hashlib.sha256(TINY.read_bytes()).hexdigest()
    proc = workflow_copy.snakemake(
        "results/data/esconv_source.parquet", "--config", f"esconv={{url: '{url}', sha256: '{'0' * 64}'}}",
        check=False)
    assert proc.returncode != 0 and f"has sha256 {good}, expected {'0' * 64}" in proc.stderr
    assert not (workflow_copy.root / "resources/esconv/ESConv.json").exists()
    workflow_copy.snakemake("results/data/esconv_source.parquet",
                            "--config", f"esconv={{url: '{url}', sha256: '{good}'}}")
    source = tableio.read_table(workflow_copy.root / "results/data/esconv_source.parquet")
    assert source.loc[0, "path"] == "resources/esconv/ESConv.json" and bool(source.loc[0, "matches_upstream"])


@pytest.mark.e2e
def test_offline_download_says_how_to_provide_a_copy(workflow_copy):
    # port 9 on loopback: nothing listens, the connection is refused at once
    proc = workflow_copy.snakemake(*DATA_TARGETS, "--config", "esconv={url: 'http://127.0.0.1:9/ESConv.json'}",
                                   check=False)
    assert proc.returncode != 0
    assert "could not download ESConv from http://127.0.0.1:9/ESConv.json" in proc.stderr
    assert "local_copy" in proc.stderr


@pytest.mark.e2e
@needs_shared
def test_default_config_on_real_esconv(workflow_copy):
    wf = workflow_copy
    cfg = ["--config", f"esconv={{local_copy: {SHARED_ESCONV_DIR / 'ESConv.json'}}}"]
    wf.snakemake(*DATA_TARGETS, *cfg)
    items = tableio.read_table(wf.root / "results/items/regular.parquet")
    conversations = tableio.read_table(wf.root / "results/data/conversations.parquet")
    assert len(conversations) == 1300
    n = yaml.safe_load((wf.root / "config/config.yaml").read_text())["regular_items"]["n"]
    assert len(items) == n and items["item_id"].is_unique
    assert wf.jobs(*DATA_TARGETS, *cfg) == {}
