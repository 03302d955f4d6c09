"""heart.llm.preview: what a config's run would call and cost, priced from litellm's local price map."""

from pathlib import Path

import pandas as pd
import pytest

from heart.llm.cache import ResponseCache, cache_key
from heart.llm.models import ModelSpec
from heart.llm.preview import common_prefix_length, preview, preview_summary, scenario_summary
from heart.llm.request import Request
from support.llm import LOCAL, req
from heart.common import tableio


ROOT = Path(__file__).resolve().parents[2]


def test_preview_marks_unknown_prices_null_never_zero(tmp_path):
    """Cost per row by what is known: priced from litellm's map, null where it has no price, 0 for a local
    model or when every call is cached."""
    specs = {"priced": ModelSpec(name="priced", model="openai/gpt-4o", params={"max_tokens": 50}),
             "unpriced": ModelSpec(name="unpriced", model="openai/no-such-model-for-heart", params={"max_tokens": 50}),
             "local": ModelSpec.from_config("local", {**LOCAL, "params": {"max_tokens": 50}})}
    cache = ResponseCache(tmp_path / "cache")
    cached = req("already asked", model="priced")
    cache.put(cache_key(specs["priced"], cached), {"text": "x"})
    stages = {"s1": [req("one", model="priced"), cached, req("two", model="unpriced"), req("three", model="unpriced"),
                     req("four", model="local")],
              "s2": [req("already asked", id="again", model="priced")]}
    table = preview(specs, stages, cache).set_index(["stage", "model"])
    assert table["to_call"].to_dict() == {("s1", "local"): 1, ("s1", "priced"): 1, ("s1", "unpriced"): 2,
                                          ("s2", "priced"): 0}
    assert table["cost_status"].to_dict() == {("s1", "local"): "local", ("s1", "priced"): "priced",
                                              ("s1", "unpriced"): "unpriced", ("s2", "priced"): "none to call"}
    # gpt-4o: $2.50 per 10^6 prompt tokens, $10 per 10^6 completion tokens; one call of at most 50 tokens
    row = table.loc[("s1", "priced")]
    assert row["max_completion_tokens"] == 50
    assert row["est_max_cost_usd"] == pytest.approx(row["est_prompt_tokens"] * 2.5e-6 + 50 * 1e-5)
    assert pd.isna(table.loc[("s1", "unpriced"), "est_max_cost_usd"])
    assert table.loc[("s1", "local"), "est_max_cost_usd"] == 0 and table.loc[("s2", "priced"), "est_max_cost_usd"] == 0
    tableio.write_table(table.reset_index(), tmp_path / "preview.parquet", "llm_preview")
    written = tableio.read_table(tmp_path / "preview.parquet")
    assert written["est_max_cost_usd"].isna().tolist() == [False, False, True, False]


def preview_rows(*rows):
    cols = ["stage", "model", "to_call", "cached", "est_max_cost_usd", "cost_status"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_preview_summary_counts_unpriced_calls_instead_of_pricing_them_at_zero():
    table = preview_rows(("a", "gpt-4o", 1000, 0, 12.5, "priced"), ("b", "gpt-4o", 500, 500, 2.25, "priced"),
                         ("a", "kimi", 300, 0, None, "unpriced"), ("b", "llama", 200, 0, None, "unpriced"),
                         ("a", "smollm2", 50, 10, 0.0, "local"), ("c", "kimi", 0, 40, 0.0, "none to call"))
    # by hand: 1000+500+300+200+50+0 = 2050 to call, 0+500+0+0+10+40 = 550 cached; priced 1000+500 = 1500
    # calls for 12.5+2.25 = $14.75; 300+200 = 500 unpriced calls of 2 models (kimi's cached row costs nothing)
    assert preview_summary(table) == (
        "2,050 calls to make (550 cached); at most $14.75 for the 1,500 priced calls; "
        "50 calls to local models (nothing to pay); 500 calls (2 models: kimi, llama) unpriced: cost unknown")
    # every call priced: the bound is the whole cost
    assert preview_summary(table.iloc[:2]) == "1,500 calls to make (500 cached); at most $14.75"
    # nothing priced: no dollar figure at all
    only_unknown = preview_summary(table.iloc[2:3])
    assert only_unknown == "300 calls to make (0 cached); 300 calls (1 model: kimi) unpriced: cost unknown"
    assert preview_summary(table.iloc[5:]) == "0 calls to make (40 cached); nothing to pay"


def test_compared_designs_are_shown_beside_the_run_never_summed_into_it():
    table = preview_rows(("judging j (adaptive, worst case: ...)", "gpt-4o", 1000, 0, 10.0, "priced"),
                         ("tagging t", "gpt-4o", 100, 0, 1.0, "priced"),
                         ("judging j (fixed design: ...)", "gpt-4o", 1000, 0, 10.0, "priced"),
                         ("judging j (adaptive, expected (SIMULATED): ...)", "gpt-4o", 700, 0, 7.0, "priced"))
    table["scenario"] = [None, None, "fixed design", "adaptive, expected (SIMULATED)"]
    assert preview_summary(table) == "1,100 calls to make (0 cached); at most $11.00"  # the run's rows only
    assert scenario_summary(table).splitlines() == [
        "judging, this run (adaptive, worst case): 1,000 calls to make, at most $10.00",
        "judging, fixed design: 1,000 calls to make, at most $10.00",
        "judging, adaptive, expected (SIMULATED): 700 calls to make, at most $7.00"]
    assert scenario_summary(table.assign(scenario=None)) == ""


def test_preview_prices_both_modes_from_the_price_map_and_counts_shared_prefixes(tmp_path):
    """A batch model's row is priced in batch mode (half, from the map's batch prices, not assumed), with the
    synchronous price beside it; a long shared system turn is counted as cacheable prefix for models the map
    says cache; a mode the map has no cached price for takes no cache discount."""
    rubric = "Judge the replies by the rubric. " * 300  # ~1,800 tokens: above Claude's 1,024 cacheable minimum
    specs = {"claude": ModelSpec(name="claude", model="anthropic/claude-sonnet-4-5", params={"max_tokens": 100},
                                 batch="anthropic"),
             "o3": ModelSpec(name="o3", model="openai/o3", params={"max_tokens": 100}, batch="openai")}
    reqs = {m: [Request(id=f"{m}{i}", model=m, template_version="t",
                        messages=({"role": "system", "content": rubric}, {"role": "user", "content": f"pair {i}"}))
                for i in range(3)] for m in specs}
    table = preview(specs, {"judging": reqs["claude"] + reqs["o3"]}, ResponseCache(tmp_path)).set_index("model")
    claude, o3 = table.loc["claude"], table.loc["o3"]
    assert claude["mode"] == "batch" and claude["cost_status"] == "priced"
    tokens = claude["est_prompt_tokens"]
    # claude-sonnet-4-5: $3 / $15 per 10^6 tokens synchronously, $1.50 / $7.50 in batch (litellm's map)
    assert claude["est_max_cost_sync_usd"] == pytest.approx(tokens * 3e-6 + 300 * 15e-6)
    assert claude["est_max_cost_batch_usd"] == pytest.approx(tokens * 1.5e-6 + 300 * 7.5e-6)
    assert claude["est_max_cost_usd"] == claude["est_max_cost_batch_usd"]
    # the second and third calls share the whole system turn with the one before them: read from the cache
    assert claude["est_cache_read_tokens"] > 2 * 1024 and claude["est_shared_prefix_tokens"] > 1024
    assert claude["est_cost_with_prompt_cache_usd"] < claude["est_max_cost_usd"]
    # o3's map has no batch price for cached reads: they are priced as fresh input, no discount assumed
    assert o3["mode"] == "batch" and o3["est_cache_read_tokens"] > 0
    assert o3["est_cost_with_prompt_cache_usd"] == pytest.approx(o3["est_max_cost_usd"])
    assert "through batch interfaces" in preview_summary(table.reset_index())


def test_common_prefix_length_is_os_path_commonprefix():
    import os
    import random

    rng = random.Random(7)
    cases = [("", ""), ("a", ""), ("abc", "abc"), ("abc", "abd"), ("abc", "abcdef"), ("x" * 5000, "x" * 4999 + "y")]
    for _ in range(500):  # long shared heads (a judge's rubric) with the difference anywhere
        head = "".join(rng.choice("ab\u00e9\x1e") for _ in range(rng.randrange(0, 300)))
        cases.append((head + "".join(rng.choice("ab") for _ in range(rng.randrange(0, 5))),
                      head + "".join(rng.choice("ab") for _ in range(rng.randrange(0, 5)))))
    for a, b in cases:
        assert common_prefix_length(a, b) == len(os.path.commonprefix([a, b])), (a, b)


def test_shared_prefixes_are_counted_in_characters_whatever_the_script():
    """The prompts are sorted and compared as UTF-8 bytes: the same order and the same shared characters as the
    texts themselves, with characters of 1 to 4 bytes (and a lone surrogate) cut anywhere."""
    import os
    import random
    from types import SimpleNamespace

    from heart.llm.preview import shared_prefix_chars

    rng = random.Random(11)
    alphabet = ["a", "b", "\u00e9", "\u2019", "\u4e2d", "\U0001f600", "\U0001f601", "\ud800", "\x1e"]
    for _ in range(40):
        head = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        reqs = [SimpleNamespace(messages=[
            {"role": "system", "content": head},
            {"role": "user", "content": head[:rng.randrange(0, 8)] + "".join(
                rng.choice(alphabet) for _ in range(rng.randrange(0, 6)))}]) for _ in range(rng.randrange(1, 12))]
        texts = ["\x1e".join(m["content"] for m in r.messages) for r in reqs]
        order = sorted(range(len(texts)), key=texts.__getitem__)
        expected = [0] * len(texts)
        for prev, cur in zip(order, order[1:]):
            expected[cur] = len(os.path.commonprefix([texts[prev], texts[cur]]))
        assert shared_prefix_chars(SimpleNamespace(model="openai/x"), reqs) == expected, texts


def test_a_cache_holding_nothing_is_not_asked_and_gives_the_same_preview(tmp_path, monkeypatch):
    """Before a run the cache holds nothing: the preview computes no key (the paper's run has ~94,000) and its
    rows are those of a cache asked request by request; one answer in the directory, or a replayed export,
    and every request is asked again."""
    import heart.llm.preview as preview_module

    specs = {"m": ModelSpec(name="m", model="openai/gpt-4o", params={"max_tokens": 50})}
    stages = {"s": [req(f"turn {i}", id=f"r{i}", model="m") for i in range(4)]}
    empty = ResponseCache(tmp_path / "empty")
    other = ResponseCache(tmp_path / "other")
    other.put("0" * 64, {"text": "an answer to another request"})
    assert empty.holds_nothing() and not other.holds_nothing()
    asked = preview(specs, stages, other)

    def no_key(*_):
        raise AssertionError("a key was computed for a cache holding nothing")

    monkeypatch.setattr(preview_module, "cache_key", no_key)
    pd.testing.assert_frame_equal(preview(specs, stages, empty), asked)
    assert asked["to_call"].tolist() == [4]
    with pytest.raises(AssertionError, match="a key was computed"):
        preview(specs, stages, other)
    export = tmp_path / "published.parquet"
    other.export(export)
    assert not ResponseCache(tmp_path / "fresh", replay=export).holds_nothing()
