"""heart.llm.engine against a real OpenAI-compatible server on 127.0.0.1 that injects faults: retries, failures
listed, results, pacing of a batch, what is paid for once, keys, and jobs sharing one cache."""

import json
from pathlib import Path

import pytest

from support import llm_server as srv
from heart import WORKFLOW_DIR
from heart.llm.cache import ResponseCache
from heart.llm.engine import LLMStageError, MissingKeyError, missing_keys, prefix_order, run_requests
from heart.llm.models import ModelSpec
from heart.llm.pacing import Pacer
from heart.llm.request import Request
from support.llm import req, spec


ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("stream", [True, False])
def test_the_finish_reason_is_kept_as_the_provider_gave_it(server, tmp_path, stream):
    """A reply the token limit cut says so (finish reason "length"), streamed or not, and from the cache too; an
    entry cached before the reason was kept gives None (not known), never "stop"."""
    state, base = server
    state.plans["cut"] = ["length"]
    cache = ResponseCache(tmp_path / "cache")
    out = run_requests(spec(base, stream=stream), [req("cut", stream=stream), req("whole", stream=stream)], cache)
    assert out["cut"]["finish_reason"] == "length" and out["whole"]["finish_reason"] == "stop"
    again = run_requests(spec(base, stream=stream), [req("cut", stream=stream)], cache)
    assert again["cut"]["from_cache"] and again["cut"]["finish_reason"] == "length"
    for old in (tmp_path / "cache").rglob("*.json"):  # entries as cached before the reason was kept
        entry = json.loads(old.read_text())
        del entry["finish_reason"]
        old.write_text(json.dumps(entry))
    hits = run_requests(spec(base, stream=stream), [req("cut", stream=stream), req("whole", stream=stream)], cache)
    assert all(h["from_cache"] and h.get("finish_reason") is None for h in hits.values())


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
