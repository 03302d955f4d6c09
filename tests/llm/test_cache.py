"""heart.llm.cache: the content-addressed response cache, its export and replay (against the fault-injecting
server of tests/support/llm_server.py)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from support import llm_server as srv
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.engine import LLMStageError, run_requests
from heart.llm.models import ModelSpec
from support.llm import req, spec


ROOT = Path(__file__).resolve().parents[2]


def test_cache_key_covers_what_matters():
    s = ModelSpec(name="m", model="openai/x", params={"temperature": 0})
    base = cache_key(s, req("hi"))
    assert base == cache_key(ModelSpec(name="other", model="openai/x", params={"temperature": 0}), req("hi"))
    assert base != cache_key(ModelSpec(name="m", model="openai/x", params={"temperature": 1}), req("hi"))
    assert base != cache_key(s, req("hi", template_version="t2"))
    assert base != cache_key(s, req("hi", schema={"type": "object"}))
    assert base != cache_key(s, req("hello"))
    # the api_base (a random local port) is not part of the key
    assert base == cache_key(ModelSpec(name="m", model="openai/x", params={"temperature": 0},
                                               api_base="http://127.0.0.1:1/v1"), req("hi"))


def test_export_and_replay_without_the_server(server, tmp_path):
    state, base = server
    cache = ResponseCache(tmp_path / "cache")
    run_requests(spec(base), [req("one"), req("two")], cache)
    n = cache.export(tmp_path / "published.parquet")
    assert n == 2 and len(pd.read_parquet(tmp_path / "published.parquet")) == 2
    # another checkout: empty local cache, the published file, and no reachable server
    replay = ResponseCache(tmp_path / "other", replay=tmp_path / "published.parquet")
    out = run_requests(spec("http://127.0.0.1:9/v1"), [req("one"), req("two")], replay)
    assert out["one"]["from_cache"] and out["two"]["text"] == srv.reply_text("two")


def test_a_replaying_checkout_re_exports_what_it_replayed_and_what_it_called(server, tmp_path):
    state, base = server
    first = ResponseCache(tmp_path / "cache")
    run_requests(spec(base), [req("one"), req("two")], first)
    first.export(tmp_path / "published.parquet")
    replay = ResponseCache(tmp_path / "other", replay=tmp_path / "published.parquet")
    run_requests(spec(base), [req("one"), req("three")], replay)  # "three" is not in the file
    assert state.ok == {"one": 1, "two": 1, "three": 1}
    assert replay.export(tmp_path / "again.parquet") == 3
    published, again = (pd.read_parquet(tmp_path / f) for f in ("published.parquet", "again.parquet"))
    pd.testing.assert_frame_equal(again[again.key.isin(published.key)].reset_index(drop=True), published)


def test_cache_files_are_json_and_never_hold_failures(server, tmp_path):
    state, base = server
    state.plans["bad"] = ["500"] * 10
    cache = ResponseCache(tmp_path / "cache")
    with pytest.raises(LLMStageError):
        run_requests(spec(base, max_retries=1), [req("good"), req("bad")], cache, backoff=0.01)
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["text"] == srv.reply_text("good")
    assert not list((tmp_path / "cache").rglob("*.tmp"))
