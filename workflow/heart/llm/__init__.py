"""One way to call LLMs: litellm, a content-addressed response cache, bounded async concurrency.

Every LLM stage (completions, adversarial rewriting, judging, tagging) builds a list of
:class:`~heart.llm.request.Request` and calls :func:`~heart.llm.engine.run_requests` (a rule's script
through :class:`~heart.llm.stage.Stage`). The modules, from the model to the run:

* :mod:`.models` -- a configured model (:class:`ModelSpec`), a local model's file, the price of a call;
* :mod:`.decoding` -- the paper's decoding of completions (§9.4), and the params any request is sent with;
* :mod:`.request` -- one call's messages, its material neutralised (:mod:`.chat_tokens`), prompt templates;
* :mod:`.answers` -- a structured answer checked against its schema, per-token log-probabilities;
* :mod:`.cache` -- the content-addressed response cache and its published export (replay);
* :mod:`.local_server` -- the embedded local model served on 127.0.0.1 while a stage runs;
* :mod:`.pacing` -- rate limits, the spacing of a job's call starts, Retry-After;
* :mod:`.wire` -- a request as sent (params, messages with prompt-cache marks) and the usage that comes back;
* :mod:`.engine` -- the run loop: cache first, bounded concurrency, retries, failures listed;
* :mod:`.batch` (and :mod:`.batch_protocols`) -- a provider's batch interface, journaled: half the price, nothing
  submitted paid twice;
* :mod:`.likelihood` -- the log-likelihood of a given text under a local model, in-process (content judge);
* :mod:`.preview` -- calls and cost of every stage, both modes, before paying; :mod:`.stage` -- what a rule's
  script takes; :mod:`.spend` -- what the cached answers cost, per model and mode;
* :mod:`.shards` -- the LLM stages' shards and their merge (rules ``merge_*``).

The rules of ``rules/llm.smk`` (export_llm_cache, llm_spend, preview_llm_calls) use :mod:`.cache`,
:mod:`.spend` and :mod:`.preview`.
"""

import gc
import importlib
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map (before litellm loads)
# litellm's default mode ("DEV") loads a .env file into the environment when it is imported, found by walking up
# from its own folder (a venv inside the repository: the repository's .env) or, in a REPL, from the working
# directory: a key a user keeps there for something else would reach the provider although no rule declared it
# (envvars:) and a reviewer's keyless run would call. Keys come from the environment Snakemake was started in.
os.environ["LITELLM_MODE"] = "PRODUCTION"


def _import_paused(name: str):
    """Module ``name``, imported with the cyclic garbage collector paused (a module defining many classes: each
    pass of the collector during the import walks every object made so far)."""
    if name not in sys.modules:
        paused = gc.isenabled()
        gc.disable()
        try:
            importlib.import_module(name)
        finally:
            if paused:
                gc.enable()
    return sys.modules[name]


def load_litellm():
    """litellm, imported with the cyclic garbage collector paused (every module of heart imports it through
    here): its import builds some 1,900 pydantic classes, and the collector's passes over them were ~0.7 s of the
    import's ~2.8 s of CPU in every job that calls a model (docs/benchmarks.md)."""
    return _import_paused("litellm")


def load_openai_client():
    """litellm with the OpenAI SDK's API resources, imported with the collector paused: litellm sends every
    ``openai/`` model's call (an OpenAI-compatible server's, the local model's) through the SDK's client, whose
    first use imports them (~600 pydantic classes): 0.6 CPU-s of a job's first call with the collector running,
    0.25 paused (docs/benchmarks.md). For a job about to call such a model, not for one that only prices or
    replays."""
    litellm = load_litellm()
    _import_paused("openai.resources")
    return litellm
