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
