"""The run loop: every request answered from the cache or by its model, bounded and retried.

:func:`run_requests`

* looks each request up in the :class:`~heart.llm.cache.ResponseCache` (and an optional read-only replay
  table) and only calls the model for misses; identical requests in one batch are sent once;
* calls the model through ``litellm.acompletion``, streamed only for requests that want the time to
  first token (completions: ``Request.stream``), bounded per model by ``max_concurrency`` and a
  requests- and tokens-per-minute limit, its starts spaced (:mod:`heart.llm.pacing`);
* retries 429 (honouring Retry-After), 5xx, timeouts, connection errors and empty answers with
  exponential backoff and jitter, a bounded number of times;
* stores only successes, atomically, one file per response;
* raises :class:`LLMStageError` listing every request that still failed, after the others have finished
  and been cached.

A local model (``local_gguf``) is served by :class:`~heart.llm.local_server.LocalServer` for the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import sys
import time

from heart.common.config import schema_defaults
from heart.common.redaction import RedactingStream, Redactor, redacted_logging
from heart.llm import load_litellm, load_openai_client
from heart.llm.answers import parse_structured, token_logprobs
from heart.llm.batch import Journal, run_batches
from heart.llm.cache import ResponseCache, cache_key, clean_hit
from heart.llm.decoding import resolved_params
from heart.llm.local_server import LocalServer
from heart.llm.models import ModelSpec, as_called, calling, cost_usd
from heart.llm.pacing import Pacer, RateLimiter, retry_after, token_estimate
from heart.llm.request import Request, prepare_all
from heart.llm.wire import RetryableResponse, by_batch, usage_of, wire_messages, wire_params  # noqa: F401


class LLMStageError(RuntimeError):
    """Some requests still failed after the last retry; every one is listed."""

    def __init__(self, failures: dict[str, str], note: str = ""):
        self.failures = failures
        lines = "\n".join(f"  {rid}: {err}" for rid, err in sorted(failures.items()))
        super().__init__(
            f"{len(failures)} LLM request(s) failed after retries (successes are cached; "
            f"rerun to retry only these):\n{lines}" + (f"\n{note}" if note else "")
        )


class MissingKeyError(RuntimeError):
    """A job would call a provider whose API key is not in the environment: raised before its first call,
    naming every missing variable (the names only, never a value)."""

    def __init__(self, missing: dict[str, list[str]], calls: int, cached: int):
        self.missing = missing
        lines = "\n".join(f"  {var} (models: {', '.join(models)})" for var, models in sorted(missing.items()))
        super().__init__(
            f"{calls} LLM call(s) need API keys that are not set ({cached} answer(s) came from the cache; "
            f"nothing was called):\n{lines}\nexport them and rerun (e.g. export {min(missing)}=...), or point "
            "llm.replay at a published cache. Dry runs and the call preview need no key.")


def missing_keys(specs: dict[str, ModelSpec], requests) -> dict[str, list[str]]:
    """Key variable -> the models that need it, for every hosted model with a request to make whose
    ``api_key_env`` is unset or empty (a model on an ``api_base`` server or a local GGUF needs none)."""
    missing: dict[str, set[str]] = {}
    for name in {r.model for r in requests}:
        spec = specs[name]
        if spec.api_key_env and not spec.api_base and not spec.local_gguf and not os.environ.get(spec.api_key_env):
            missing.setdefault(spec.api_key_env, set()).add(name)
    return {var: sorted(models) for var, models in missing.items()}


def _is_retryable(exc) -> bool:
    litellm = load_litellm()

    retryable = (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
                 litellm.APIConnectionError, litellm.Timeout, litellm.BadGatewayError,
                 RetryableResponse, asyncio.TimeoutError)
    if isinstance(exc, retryable):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _quiet_litellm() -> None:
    """Tell litellm once per batch, not per call (setting a logger's level clears every logger's cache): no
    provider-list banners on stdout per failed call, no per-call INFO lines in logs."""
    litellm = load_litellm()

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)


async def _call(spec: ModelSpec, req: Request, api_base: str | None, redactor: Redactor) -> dict:
    litellm = load_litellm()

    kwargs = wire_params(spec, req, api_base)
    api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if api_base and not api_key:
        api_key = "no-key-needed"  # OpenAI-compatible local servers accept any key
    start = time.monotonic()
    ttft, usage, finished, parts, logprobs, finish_reason = None, None, False, [], None, None
    common = dict(model=spec.model, messages=wire_messages(spec, req), api_base=api_base, api_key=api_key,
                  timeout=spec.timeout, num_retries=0, **kwargs)
    if spec.stream and req.stream and not kwargs.get("logprobs"):  # an answer read by its logprobs is not streamed
        stream = await litellm.acompletion(stream=True, stream_options={"include_usage": True}, **common)
        async for chunk in stream:
            if chunk.choices:
                choice = chunk.choices[0]
                piece = getattr(choice.delta, "content", None)
                if piece:
                    if ttft is None:
                        ttft = time.monotonic() - start
                    parts.append(piece)
                # litellm closes a cut-off stream with a finish_reason of its own; only a chunk
                # that came from the provider carries provider_response_model in _hidden_params
                # (tests/llm/test_engine.py injects a truncated stream to hold this to account)
                if choice.finish_reason is not None and "provider_response_model" in (
                        getattr(chunk, "_hidden_params", None) or {}):
                    finished, finish_reason = True, choice.finish_reason
            usage = getattr(chunk, "usage", None) or usage
        if not finished:
            raise RetryableResponse("stream ended without a finish_reason (truncated response)")
    else:
        response = await litellm.acompletion(**common)
        parts = [response.choices[0].message.content or ""] if response.choices else []
        finish_reason = getattr(response.choices[0], "finish_reason", None) if response.choices else None
        usage = getattr(response, "usage", None)
        if kwargs.get("logprobs") and response.choices:
            logprobs = token_logprobs(getattr(response.choices[0], "logprobs", None))
    latency = time.monotonic() - start
    # a key a provider echoes into the answer is masked before caching, also where JSON escapes hide it
    text = redactor.redact_json("".join(parts))
    if not text.strip() and not logprobs:
        raise RetryableResponse("empty content")
    usage = usage_of(usage)
    cost = cost_usd(litellm, spec.model, usage)
    parsed, parse_error = parse_structured(text, req.schema, redactor)
    entry = {
        "model": spec.model, "text": text, "parsed": parsed, "parse_error": parse_error,
        "usage": usage,
        "cost": cost, "ttft_s": ttft, "latency_s": latency, "created": time.time(),
        "template_version": req.template_version,
        # why the model stopped, as the provider says it ("stop"; "length": cut by max_tokens); None when it
        # says nothing (and in entries cached before it was kept)
        "finish_reason": finish_reason,
    }
    if logprobs is not None:
        entry["logprobs"] = redactor.redact_obj(logprobs)
    return entry


def error_text(exc: BaseException, redactor: Redactor, limit: int = 300) -> str:
    """One line about a failed call for logs and error tables: the key redacted first, then shortened.

    The order matters: shortening first could cut an echoed key into a piece the redactor no longer
    recognises as a whole key, and leave up to all but one of its characters in the text.
    """
    text = redactor.redact(str(exc))
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:limit]}"


async def _run(specs: dict[str, ModelSpec], requests: list[Request], cache: ResponseCache,
               keys: dict[str, str], hits: dict[str, dict], api_bases: dict[str, str | None],
               progress, backoff: float, redactor: Redactor, batch_cfg: dict | None = None) -> tuple[dict, dict]:
    sems = {n: asyncio.Semaphore(s.max_concurrency) for n, s in specs.items()}
    limiters = {n: RateLimiter(s.rpm, s.tpm) for n, s in specs.items()}
    pacer = Pacer()
    results, failures, retrying = {}, {}, set()
    # a hit is answered here, not in a task of its own: a fully cached paper-scale stage is 42,000 of them
    for req in requests:
        if (hit := hits.get(req.id)) is not None:
            results[req.id] = {**hit, "cache_key": keys[req.id], "from_cache": True}
    counts = {"done": 0, "cached": len(results), "retrying": 0, "failed": 0}
    progress.set_postfix(counts, refresh=False)
    progress.update(len(results))

    def tick(n=1):
        counts["retrying"] = len(retrying)
        progress.set_postfix(counts, refresh=False)
        progress.update(n)

    async def one(req: Request):
        spec, key = specs[req.model], keys[req.id]
        last = None
        for attempt in range(spec.max_retries + 1):
            try:
                async with sems[req.model]:
                    await limiters[req.model].wait(token_estimate(spec, req))
                    await pacer.wait()
                    try:
                        async with asyncio.timeout(spec.timeout + 5):  # (wait_for: _call in a task of its own)
                            entry = await _call(spec, req, api_bases.get(req.model), redactor)
                    finally:
                        pacer.finished_one()
                # off the event loop: the file write (mkstemp, write, chmod, rename) would stall every other call
                await asyncio.to_thread(cache.put, key, entry)
                results[req.id] = {**entry, "cache_key": key, "from_cache": False}
                counts["done"] += 1
                retrying.discard(req.id)
                return tick()
            except Exception as exc:  # noqa: BLE001 - classified below
                last = error_text(exc, redactor)
                if not _is_retryable(exc) or attempt == spec.max_retries:
                    break
                retrying.add(req.id)
                tick(0)
                delay = retry_after(exc)
                if delay is None:
                    delay = backoff * (2 ** attempt) * (1 + random.random())
                logging.getLogger("heart.llm").warning("%s (%s): attempt %d of %d failed: %s; retrying in %.1f s",
                                                       req.id, req.model, attempt + 1, spec.max_retries + 1, last,
                                                       min(delay, 60))
            # wait outside the handler: an interrupt during the wait would otherwise carry the provider's
            # exception (and any key it echoed) as its context into an unredacted traceback
            await asyncio.sleep(min(delay, 60))
        retrying.discard(req.id)
        failures[req.id] = last
        counts["failed"] += 1
        tick()

    batched: dict[str, list[Request]] = {}
    for r in requests:
        if r.id not in results and by_batch(specs[r.model], r):
            batched.setdefault(r.model, []).append(r)
    in_batches = {r.id for reqs in batched.values() for r in reqs}

    async def batch(name: str, reqs: list[Request]):
        got, failed = await run_batches(specs[name], reqs, keys, cache, Journal(cache.dir), redactor, progress,
                                        wire=(wire_params, wire_messages), **(batch_cfg or {}))
        schemas = {r.id: r.schema for r in reqs}
        for rid, entry in got.items():
            results[rid] = {**clean_hit(entry, schemas[rid], redactor),
                            "cache_key": keys[rid], "from_cache": False}
            counts["done"] += 1
        failures.update(failed)
        counts["failed"] += len(failed)

    await asyncio.gather(*(one(r) for r in requests if r.id not in results and r.id not in in_batches),
                         *(batch(name, reqs) for name, reqs in sorted(batched.items())))
    return results, failures


def prefix_order(specs: dict[str, ModelSpec], requests: list[Request]) -> list[Request]:
    """The order to send ``requests`` in: a local model's (``local_gguf``) sorted by their messages, so that
    requests sharing a prefix (the same instructions, the same dialogue) follow each other -- llama.cpp keeps
    the evaluated prompt of the previous request and evaluates only what differs, at ~130 tokens/s here --
    and everyone else's as given. The answers do not depend on the order (temperature 0, one slot)."""
    local = [r for r in requests if specs[r.model].local_gguf]
    if not local:
        return requests
    rest = [r for r in requests if not specs[r.model].local_gguf]
    return sorted(local, key=lambda r: (r.model, json.dumps(r.messages, ensure_ascii=False))) + rest


def run_requests(specs: dict[str, ModelSpec], requests: list[Request], cache: ResponseCache,
                 desc: str = "LLM calls", log=None, backoff: float = 1.0, batch: dict | None = None,
                 threads: int = 1) -> dict[str, dict]:
    """Answer every request (cache first, then the model); raise LLMStageError if any failed. A local model
    (``local_gguf``) is served for the call on ``threads`` CPU threads (the job's: Snakemake's ``threads``).

    Returns
    -------
    dict
        request id -> cache entry plus ``cache_key``, ``from_cache``, ``neutralised_tokens`` and
        ``sent_params`` (:func:`resolved_params`: the decoding params the answer was made with, a cached
        one too, since they are part of its key).
    """
    from tqdm import tqdm

    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise ValueError("request ids must be unique")
    needed = {r.model for r in requests}
    unknown = needed - set(specs)
    if unknown:
        raise ValueError(f"requests name unconfigured models: {sorted(unknown)}")
    redactor = Redactor.from_env(s.api_key_env for s in specs.values())
    requests, neutralised = prepare_all(specs, requests)
    keys = {r.id: cache_key(specs[r.model], r) for r in requests}
    hits = {rid: entry for rid, key in keys.items() if (entry := cache.get(key)) is not None}
    todo = [r for r in requests if r.id not in hits]
    if missing := missing_keys(specs, todo):
        raise MissingKeyError(missing, calls=len(todo), cached=len(hits))
    if len(hits) < len(requests) or "litellm" in sys.modules:
        _quiet_litellm()  # importing litellm costs a job ~3 s: not done when every answer is in the cache
    if any(specs[r.model].model.startswith("openai/") for r in todo):
        load_openai_client()  # what the first call would import, with the collector paused
    for r in requests:
        if r.id in hits:  # a cache written before redaction, or someone else's, may hold a key
            hits[r.id] = clean_hit(hits[r.id], r.schema, redactor)
    with contextlib.ExitStack() as stack:
        stack.enter_context(redacted_logging(redactor))
        api_bases, servers = {}, []
        for name in sorted(needed):
            spec = specs[name]
            todo = [r for r in requests if r.model == name and r.id not in hits]
            if spec.local_gguf and todo:
                alias = spec.model.partition("/")[2]  # "openai/<alias>" on the local server
                logits_all = any(resolved_params(spec, r).get("logprobs") for r in todo)
                server = stack.enter_context(LocalServer(spec.local_gguf, alias=alias, log=log,
                                                         logits_all=logits_all, threads=threads))
                servers.append(server)
                api_bases[name] = server.api_base
            else:
                api_bases[name] = spec.api_base
        # the bar goes to the terminal even when a rule's stderr is sent to its log (redacted like it)
        bar = RedactingStream(sys.__stderr__, redactor)
        stack.callback(bar.drain)
        with tqdm(total=len(requests), desc=desc, unit="call", file=bar, mininterval=1.0) as progress:
            # identical requests (same cache key) in one batch are sent once and share the answer
            leaders = prefix_order(specs, list({keys[r.id]: r for r in reversed(requests)}.values())[::-1])
            results, failures = asyncio.run(
                _run(specs, leaders, cache, keys, hits, api_bases, progress, backoff, redactor, batch))
            by_key = {keys[r.id]: r.id for r in leaders}
            for r in requests:
                lead = by_key[keys[r.id]]
                if lead != r.id:
                    if lead in results:
                        results[r.id] = {**results[lead], "from_cache": True}
                    else:
                        failures[r.id] = failures[lead]
                    progress.update(1)
        dead = [d for server in servers if (d := server.death())]
    sent = {r.id: resolved_params(specs[r.model], r) for r in requests}
    for rid, result in results.items():
        result["neutralised_tokens"] = neutralised[rid]
        result["sent_params"] = sent[rid]  # what the cache key covers: the params this answer was made with
    if any(neutralised.values()):
        logging.getLogger("heart.llm").warning(
            "%s: %d chat-template control token(s) in the material of %d request(s) were neutralised",
            desc, sum(neutralised.values()), sum(1 for n in neutralised.values() if n))
    cached = sum(r["from_cache"] for r in results.values())
    logging.getLogger("heart.llm").info(
        "%s: %d requests, %d from cache, %d called, %d failed",
        desc, len(requests), cached, len(results) - cached, len(failures))
    if failures:
        raise LLMStageError(failures, note="\n".join(dead))
    return results


class Engine:
    """The engine as a script uses it: model specs (from rule params), the cache, and ``run``."""

    def __init__(self, model_params, llm_cfg: dict, threads: int = 1):
        llm_cfg = {**schema_defaults("llm"), **llm_cfg}  # config ``llm`` over its schema's defaults
        self.threads = threads  # a local model's CPU threads: the job's (Snakemake's ``threads``)
        self.specs = {s.name: s for s in map(ModelSpec.from_params, model_params)}
        self.cache = ResponseCache(llm_cfg["cache_dir"], replay=llm_cfg["replay"])
        self.backoff = llm_cfg["backoff_s"]
        self.batch = {"poll_s": llm_cfg["batch_poll_s"], "max_requests": llm_cfg["batch_max_requests"]}

    @classmethod
    def of_job(cls, smk, model_params) -> "Engine":
        """The engine of a job: its rule's params (``model_params``, ``llm``: what the answers depend on) with
        how the models are called from the run's config (:data:`heart.llm.models.CALLING`: left out of params,
        so that changing them reruns nothing)."""
        return cls([as_called(params, smk.config) for params in model_params],
                   {**smk.params.llm, **calling(smk.config, "llm")}, threads=smk.threads)

    def run(self, requests: list[Request], desc: str) -> dict[str, dict]:
        return run_requests(self.specs, requests, self.cache, desc=desc, backoff=self.backoff, batch=self.batch,
                            threads=self.threads)
