"""heart.llm.models: a model's limits shared by the jobs of a stage."""

import types
from pathlib import Path

from snakemake.iocontainers import Namedlist  # what a script's snakemake.input is

from heart.llm.models import ModelSpec
from heart.llm.stage import Stage


ROOT = Path(__file__).resolve().parents[2]


def test_a_models_limits_are_split_over_the_jobs_of_a_stage(tmp_path):
    base = ModelSpec(name="m", model="openai/m", max_concurrency=32, rpm=50, tpm=None)
    assert base.share(1) is base
    eighth = base.share(8)
    assert (eighth.max_concurrency, eighth.rpm, eighth.tpm) == (4, 6, None)  # 8 x 6 = 48 <= 50 rpm
    assert base.share(64).max_concurrency == 1 and base.share(64).rpm == 1  # a job needs one at least
    # a stage's script gets the share of its shard: k of n
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Be kind.")
    smk = types.SimpleNamespace(
        params=types.SimpleNamespace(model={"name": "m", "model": "openai/m", "max_concurrency": 32, "rpm": 50},
                                     llm={"cache_dir": str(tmp_path / "cache")}, shard="3of8"),
        input=Namedlist(fromdict={"prompt": str(prompt)}), scriptdir=str(ROOT / "workflow/scripts"),
        rule="judge_pairs", config={})
    stage = Stage.of(smk)
    assert stage.spec.max_concurrency == 4 and stage.engine.specs["m"] is stage.spec and stage.shard == "3of8"
