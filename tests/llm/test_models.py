"""heart.llm.models: a model's limits shared by the jobs of a stage."""

import types
from pathlib import Path

import pytest
from snakemake.iocontainers import Namedlist  # what a script's snakemake.input is

from heart.llm.models import CALLING, ModelSpec, answering, calling
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
    # the limits are how the model is called: not in the rule's params (a change reruns nothing), read from the
    # run's config by the job
    config = {"models": {"m": {"model": "openai/m", "max_concurrency": 32, "rpm": 50, "timeout": 7}},
              "llm": {"cache_dir": str(tmp_path / "cache"), "replay": None, "shards": 8}}
    smk = types.SimpleNamespace(
        params=types.SimpleNamespace(model={"name": "m", **answering(config["models"]["m"], "models")},
                                     llm=answering(config["llm"], "llm"), shard="3of8"),
        input=Namedlist(fromdict={"prompt": str(prompt)}), scriptdir=str(ROOT / "workflow/scripts"),
        rule="judge_pairs", config=config, threads=3)
    assert smk.params.model == {"name": "m", "model": "openai/m"} and "cache_dir" not in smk.params.llm
    stage = Stage.of(smk)
    assert stage.spec.max_concurrency == 4 and stage.engine.specs["m"] is stage.spec and stage.shard == "3of8"
    assert stage.spec.timeout == 7 and stage.engine.cache.dir == tmp_path / "cache"
    assert stage.engine.threads == 3  # the job's threads: what a local model's server runs on


def test_how_a_model_is_called_is_split_from_what_it_answers():
    entry = {"model": "openai/m", "family": "f", "params": {"temperature": 0}, "api_base": None, "stream": True,
             "batch": "openai", "max_concurrency": 4, "rpm": 60, "tpm": None, "timeout": 30, "max_retries": 2,
             "api_key_env": "M_KEY"}
    kept = answering(entry, "models")
    # what the answers (and their price and timing) depend on stays a param: changing it reruns the model's jobs
    assert kept == {"model": "openai/m", "family": "f", "params": {"temperature": 0}, "api_base": None,
                    "stream": True, "batch": "openai"}
    assert {**kept, **calling({"models": {"m": entry}}, "models", "m")} == entry
    llm = {"cache_dir": "c", "replay": "r.parquet", "backoff_s": 1, "shards": 2, "batch_poll_s": 5,
           "batch_max_requests": 9, "local_threads": 2}
    assert answering(llm, "llm") == {"replay": "r.parquet", "shards": 2}
    assert set(calling({"llm": llm}, "llm")) == set(CALLING["llm"])


def test_litellm_never_loads_a_dotenv_file(tmp_path):
    """litellm's default mode reads a .env into the environment on import (from its folder up, or the working
    directory of a REPL); heart's import of it must not: keys come only from the environment it was started in."""
    import os
    import subprocess
    import sys

    from heart import WORKFLOW_DIR

    (tmp_path / ".env").write_text("HEART_DOTENV_PROBE=loaded\n")
    code = ("import os; from heart.llm import load_litellm; load_litellm(); "
            "print(os.environ.get('HEART_DOTENV_PROBE'))")
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_MODE"}
    env["PYTHONPATH"] = str(WORKFLOW_DIR)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "None"


def test_a_module_of_many_classes_is_imported_with_the_collector_paused(tmp_path, monkeypatch):
    """litellm and the OpenAI SDK's resources (load_litellm, load_openai_client) are imported with the cyclic
    garbage collector paused, and its state is put back, also when the import fails."""
    import gc
    import sys

    from heart.llm import _import_paused

    (tmp_path / "heart_probe_gc.py").write_text("import gc\nCOLLECTING = gc.isenabled()\n")
    (tmp_path / "heart_probe_broken.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert gc.isenabled() and _import_paused("heart_probe_gc").COLLECTING is False and gc.isenabled()
        with pytest.raises(ImportError, match="broken on purpose"):
            _import_paused("heart_probe_broken")
        assert gc.isenabled()
        gc.disable()  # a caller that paused it keeps it paused
        _import_paused("heart_probe_gc")
        assert not gc.isenabled()
    finally:
        gc.enable()
        sys.modules.pop("heart_probe_gc", None)
