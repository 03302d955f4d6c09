"""How a paper-style completion is decoded (§9.4), and the params every request is sent with.

Completions are decoded as the paper made them (§9.4: "temperature = 0, top-p = 1.0 ... tool use and
chain-of-thought are disabled"): :func:`decoding` turns a model's litellm id and configured params into
the params to send -- temperature 0 and top_p 1 where the provider accepts them, and the provider's
least reasoning setting -- and says what it decided and why. Our reading where the paper is silent:
a model whose reasoning cannot be turned off (gpt-5, o3, Gemini 2.5 Pro, Gemini 3) gets its least
setting, and a model that accepts only its default temperature while it reasons (gpt-5, o3) gets
that default, so its completions are not deterministic; each such case is written into the decision.
Judges and taggers keep their configured params (the paper's judges write chain-of-thought rationales).
:func:`resolved_params` is what any request is sent with (and what its cache key covers).
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass

from heart.llm import load_litellm
from heart.llm.models import ModelSpec
from heart.llm.request import Request


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
    load_litellm()
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
    tests/llm/test_decoding.py): OpenAI o-series take reasoning_effort low/medium/high and only temperature 1;
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
        litellm = load_litellm()

        if litellm.supports_reasoning(model=model):
            return _Controls({}, False, True, True, f"litellm lists {model} as a reasoning model, but heart "
                             "knows no param that turns its reasoning down: the provider's default")
    return _Controls({}, True, True, True, f"{model} is not a reasoning model (litellm)")


def _supported(model: str) -> list | None:
    """The OpenAI-style params litellm maps for ``model`` (None: it cannot tell)."""
    litellm = load_litellm()

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
