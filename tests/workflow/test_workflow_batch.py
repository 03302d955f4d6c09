"""The judged workflow's judge and tagger through a batch interface: the same tables as synchronously.

Both runs are answered by heart.simulation.simulator (deterministic per request, over real HTTP on
127.0.0.1), each into an empty response cache: the synchronous run calls its chat endpoint, the batch run
its OpenAI files-and-batches endpoints (with failed requests to resubmit). The judge's verdicts and quality
checks, the tagger's tags and the judgments combined from them must be frame-equal but for the columns that
say how a row was obtained (every statistic downstream is computed from these tables alone).
"""

import shutil

import pandas as pd
import pytest

from support import KEY_ENV

from support.workflow import edit_config
from heart.common import tableio
from heart.simulation.handle import Simulator

pytestmark = pytest.mark.e2e

#: how a row was obtained, not what it says: the call's turnaround and price (and the judge leaderboard's
#: time and dollars per 1,000 judgments made of them), and whether it came from the cache
RUN_COLUMNS = ["latency_s", "cost_usd", "from_cache", "seconds_per_1000", "usd_per_1000"]


#: the judge's and the tagger's tables and what is combined from them
TARGETS = ["results/judging/llm/fake-judge.parquet", "results/judging/qc/fake-judge.parquet",
           "results/judging/judge_quality.parquet", "results/judging/judgments.parquet",
           "results/tagging/fake-tagger.parquet", "results/tagging/fake-tagger_f1.parquet"]


def tables(root):
    out = {}
    for rel in TARGETS:
        frame = tableio.read_table(root / rel)
        frame.attrs = {}
        out[rel] = frame.drop(columns=[c for c in RUN_COLUMNS if c in frame.columns])
    return out


def test_judging_and_tagging_in_batch_mode_give_the_synchronous_tables(judged_copy):
    wf = judged_copy
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=30, batch_error_rate=0.1) as sim:
        def use(batch, cache):
            # the completions stay the run's own (cached, with their timings); the judge and tagger start empty
            shutil.copytree(wf.root / "resources/llm_cache", wf.root / cache)

            def change(cfg):
                cfg["models"]["sim"] = {"model": "openai/sim-judge", "family": "sim", "api_base": sim.api_base,
                                        "batch": batch, "params": {"max_tokens": 400}}
                cfg["judging"]["judges"]["fake-judge"]["model"] = "sim"
                cfg["tagging"]["taggers"]["fake-tagger"]["model"] = "sim"
                cfg["llm"].update(cache_dir=cache, batch_poll_s=0.1)
            edit_config(wf, change)

        use(None, "resources/cache_sync")
        wf.snakemake(*TARGETS, *wf.args, env=KEY_ENV)
        sync = tables(wf.root)
        assert sim.stats()["requests"] > 0 and sim.stats()["batch_requests"] == 0
        calls = sim.stats()["requests"]

        use("openai", "resources/cache_batch")
        wf.snakemake(*TARGETS, "results/llm/spend.parquet", *wf.args, env=KEY_ENV)
        batched = tables(wf.root)
        stats = sim.stats()
        assert stats["requests"] == calls  # not one synchronous call: the judge and the tagger went in batches
        assert stats["batch_requests"] >= calls and stats["batch_retried"] > 0 and stats["batch_resubmitted"] == 0
        for cache in ("resources/cache_sync", "resources/cache_batch"):
            shutil.rmtree(wf.root / cache)

    verdicts = batched["results/judging/llm/fake-judge.parquet"]
    assert len(verdicts) and verdicts["parse_ok"].all()
    for rel in sync:
        pd.testing.assert_frame_equal(sync[rel], batched[rel], obj=rel)
    spend = tableio.read_table(wf.root / "results/llm/spend.parquet")
    assert set(spend.loc[spend["model"] == "openai/sim-judge", "mode"]) == {"batch"}


def test_an_adaptive_study_sends_one_batch_per_judge_and_round_and_resumes_its_round_after_kill_9(judged_copy):
    """The adaptive design (config judging.adaptive): killed while round 1's batch is at the provider, the rerun
    resumes that round (round 0 not redone, the batch found again, not resubmitted); a rerun sends nothing."""
    import os
    import signal
    import subprocess
    import time

    from support import SNAKEMAKE

    wf = judged_copy
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=300, batch_error_rate=0.0) as sim:
        def change(cfg):
            cfg["models"]["sim"] = {"model": "openai/sim-judge", "family": "sim", "api_base": sim.api_base,
                                    "batch": "openai", "params": {"max_tokens": 400}}
            cfg["judging"]["judges"]["fake-judge"]["model"] = "sim"
            cfg["judging"]["adaptive"] = {"enabled": True, "first": 0.5, "step": 0.5, "max_rank_width": 0,
                                          "n_boot": 50}
            cfg["llm"].update(batch_poll_s=0.1)
        edit_config(wf, change)
        target = "results/judging/adaptive.parquet"
        proc = subprocess.Popen([SNAKEMAKE, "--cores", "2", target, *wf.args], cwd=wf.root, env=wf._env(KEY_ENV),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while sim.stats()["batches"] < 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGKILL)  # round 1's batch is at the provider, not yet done
        finally:
            proc.wait()
        shards = wf.root / "results/judging/shards/fake-judge"
        assert (shards / "round0.parquet").exists() and not (shards / "round1.parquet").exists()
        round0 = (shards / "round0.parquet").stat().st_mtime_ns
        wf.snakemake("--unlock", *wf.args, env=KEY_ENV)
        wf.snakemake(target, "--rerun-incomplete", *wf.args, env=KEY_ENV)
        assert (shards / "round0.parquet").stat().st_mtime_ns == round0  # resumed at its round
        stats = sim.stats()
        rounds = tableio.read_table(wf.root / target)
        judged_rounds = int((rounds["n_round"] > 0).sum())
        assert judged_rounds == 2 and rounds["done"].iloc[-1]
        # one batch per judge and round; the rerun found round 1's batch again instead of sending it anew
        assert stats["batches"] == judged_rounds and stats["batch_resubmitted"] == 0 and stats["requests"] == 0
        verdicts = tableio.read_table(wf.root / "results/judging/llm/fake-judge.parquet")
        assert len(verdicts) == rounds["calls"].iloc[-1] and verdicts["parse_ok"].all()
        assert stats["batch_requests"] == verdicts["cache_key"].nunique()  # each distinct request sent once
        chosen = [set(tableio.read_table(wf.root / f"results/judging/adaptive/round{k}.parquet")["pair_id"])
                  for k in (0, 1)]
        assert not chosen[0] & chosen[1] and set(verdicts["pair_id"]) == chosen[0] | chosen[1]
        assert rounds["n_chosen"].iloc[-1] == len(chosen[0] | chosen[1])
        assert rounds["n_fixed"].iloc[-1] == len(tableio.read_table(wf.root / "results/judging/pairs.parquet"))
        # a rerun plans nothing and sends nothing
        assert wf.jobs(target, *wf.args, env=KEY_ENV) == {} and sim.stats()["batches"] == judged_rounds
