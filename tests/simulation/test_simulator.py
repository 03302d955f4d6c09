"""heart.simulation.simulator: the simulated OpenAI-compatible provider, over real HTTP on 127.0.0.1."""

import concurrent.futures
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request

import jsonschema
import pytest
from support import REPO
from heart.judging import material
from heart.judging.kinds import verdict
from heart.llm.cache import ResponseCache
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.pacing import parse_retry_after
from heart.llm.request import Request
from heart.tagging import tagger
from heart.simulation import answers, simulator
from heart.simulation.handle import Simulator
from heart.tagging.taxonomy import load_taxonomy

#: the provider simulator runs beside these tests, a server process of its own (tier e2e)
pytestmark = pytest.mark.e2e

JUDGE_SCHEMA = verdict.response_schema(material.load_rubric(REPO / "workflow/resources/rubric/heart.yaml"), 240)
TAG_SCHEMA = tagger.response_schema(load_taxonomy(REPO / "workflow/resources/taxonomy/strategies.yaml"), 60)
HISTORY = [{"role": "seeker", "text": "I lost my job last week and I can't sleep."},
           {"role": "supporter", "text": "That sounds very stressful. What has been hardest?"},
           {"role": "seeker", "text": "Telling my family."}]


@pytest.fixture(scope="module")
def sim():
    # median latency 10 ms; "limited" has 5 requests per (scaled) minute of 0.6 s
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, rpm_model={"limited": 5}) as s:
        yield s


@pytest.fixture(scope="module")
def faulty():
    # every attempt but the third and later fails half the time; "solo*" takes one request at a time
    with Simulator(time_scale=0.02, fixed_latency=True, error_rate=0.5, rpm=None, seed=7,
                             max_concurrent_model={"solo*": 1}) as s:
        yield s


def post(base: str, body: dict) -> tuple[int, dict, dict]:
    """status, headers (lower-case names), JSON body."""
    req = urllib.request.Request(f"{base}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, json.loads(e.read())


def chat(text: str, model: str = "sim-model", **extra) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


def judge_body(a: str, b: str, model: str = "sim-judge") -> dict:
    messages = material.messages("You are a careful judge.", HISTORY, a, b)
    return {"model": model, "messages": list(messages),
            "response_format": {"type": "json_object", "schema": JUDGE_SCHEMA}}


def content(answer: dict) -> str:
    return answer["choices"][0]["message"]["content"]


def test_options_round_trip_through_the_cli():
    options = simulator.Options(port=0, median_latency=2.5, fixed_latency=True, ttft_median=0.4, rpm=None,
                                rpm_model={"claude*": 50, "gpt-4o": 0}, max_concurrent_model={"x": 3},
                                error_statuses=(500, 429), time_scale=0.1, seed=3)
    assert simulator.parse_args(options.args()) == options
    assert options.limit(options.rpm_model, 500, "claude-sonnet-4") == 50
    assert options.limit(options.rpm_model, 500, "gpt-4o") is None  # 0: unlimited
    assert options.limit(options.rpm_model, 500, "other") == 500


def test_plain_answers_are_deterministic_per_request_and_model(sim):
    status, _, first = post(sim.api_base, chat("I feel alone"))
    assert status == 200
    _, _, again = post(sim.api_base, chat("I feel alone"))
    assert content(first) == content(again) and 20 <= len(content(first).split()) <= 60
    assert content(post(sim.api_base, chat("I feel alone", model="other-model"))[2]) != content(first)
    assert content(post(sim.api_base, chat("I feel tired"))[2]) != content(first)
    usage = first["usage"]
    assert usage["prompt_tokens"] == 3 and usage["total_tokens"] == 3 + usage["completion_tokens"] > 3
    assert first["choices"][0]["finish_reason"] == "stop"
    # max_tokens cuts the reply at a word, and says so
    _, _, cut = post(sim.api_base, chat("I feel alone", max_tokens=8))
    assert cut["choices"][0]["finish_reason"] == "length" and cut["usage"]["completion_tokens"] <= 8
    assert content(first).startswith(content(cut)) and len(content(cut)) < len(content(first))


def test_judge_verdicts_validate_and_follow_the_replies_not_their_order(sim):
    rng = random.Random(1)
    words = ["I", "hear", "you", "that", "sounds", "hard", "maybe", "try", "rest", "talk", "to", "a", "friend",
             "it", "is", "okay", "to", "feel", "this", "way", "what", "happened", "next"]
    replies = [" ".join(rng.choices(words, k=rng.randint(5, 60))) for _ in range(100)]
    flips, a_wins, agree, marked, judges_agree = 0, 0, 0, 0, 0
    for a, b in zip(replies[::2], replies[1::2]):
        ab = json.loads(content(post(sim.api_base, judge_body(a, b))[2]))
        other = json.loads(content(post(sim.api_base, judge_body(a, b, model="sim-judge-2"))[2]))
        judges_agree += other["winner"] == ab["winner"]
        ba = json.loads(content(post(sim.api_base, judge_body(b, a))[2]))
        for answer in (ab, ba):
            jsonschema.validate(answer, JUDGE_SCHEMA)
            assert answer["rationale"].startswith(f"Response {answer['winner']} ")
            marks = [m for m in answer["axes"].values() if m != "none"]
            marked += len(marks)
            agree += sum(m[0] == answer["winner"] for m in marks)
        flips += ab["winner"] != ba["winner"]
        a_wins += ab["winner"] == "A"
    assert flips >= 45  # swapping the replies swaps the verdict (>= 90 % of 50 pairs) ...
    assert flips < 50  # ... but near-ties go to the first position in both orders, as with real judges
    assert 10 <= a_wins <= 40  # the content decides, not a constant
    assert agree >= 0.7 * marked  # the axes mostly side with the winner
    assert 30 <= judges_agree < 50  # another judge mostly agrees, not always
    # the same request is answered byte for byte the same
    again = content(post(sim.api_base, judge_body(replies[0], replies[1]))[2])
    assert again == content(post(sim.api_base, judge_body(replies[0], replies[1]))[2])


def test_tagging_and_other_schemas_get_valid_instances(sim):
    for i in range(10):
        body = chat(f"Tag this reply {i}", model="sim-tagger",
                    response_format={"type": "json_schema", "json_schema": {"name": "response", "schema": TAG_SCHEMA}})
        status, _, answer = post(sim.api_base, body)
        tags = json.loads(content(answer))
        jsonschema.validate(tags, TAG_SCHEMA)
        assert status == 200 and set(tags) == set(TAG_SCHEMA["required"])
    labels = {t["label"] for t in tags.values()}
    assert len(labels) > 1  # enums are drawn, not always the first value


SCHEMAS = [
    {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 9},
                                             "minItems": 2, "maxItems": 4},
                                      "ok": {"type": "boolean"}, "note": {"type": ["string", "null"], "maxLength": 5},
                                      "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
     "required": ["xs", "ok", "score", "note"], "additionalProperties": False},
    {"$defs": {"item": {"type": "object", "properties": {"k": {"const": "v"}, "n": {"type": "integer",
                                                                                    "multipleOf": 5}},
                        "required": ["k", "n"], "additionalProperties": False}},
     "type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
    {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 3}, {"type": "integer", "minimum": 100}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"enum": [1, 2]}}, "required": ["b"]}]},
    {"type": "string", "minLength": 70, "maxLength": 75},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_instances_are_valid_for_many_seeds(schema):
    values = [answers.instance(schema, random.Random(seed)) for seed in range(200)]
    for value in values:
        jsonschema.validate(value, schema)
    assert len({json.dumps(v, sort_keys=True) for v in values}) > 1


def test_logprobs_cover_the_answer(sim):
    status, _, answer = post(sim.api_base, chat("I feel alone", logprobs=True, top_logprobs=3))
    assert status == 200
    lp = answer["choices"][0]["logprobs"]["content"]
    assert "".join(t["token"] for t in lp) == content(answer)
    assert all(len(t["top_logprobs"]) == 3 and t["logprob"] <= 0 and t["top_logprobs"][0]["token"] == t["token"]
               for t in lp)
    assert post(sim.api_base, chat("I feel alone", logprobs=True, top_logprobs=3))[2]["choices"][0]["logprobs"] == \
        answer["choices"][0]["logprobs"]
    assert post(sim.api_base, chat("I feel alone"))[2]["choices"][0]["logprobs"] is None


def test_streaming_is_openai_sse_with_first_content_before_the_end(sim):
    body = chat("Stream me a reply", stream=True, stream_options={"include_usage": True})
    req = urllib.request.Request(f"{sim.api_base}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start, events, first_content = time.monotonic(), [], None
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r:
            line = line.decode().strip()
            if not line:
                continue
            assert line.startswith("data: ")
            events.append(line[6:])
            if first_content is None and '"content": "' in line and '"content": ""' not in line:
                first_content = time.monotonic() - start
    total = time.monotonic() - start
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == content(post(sim.api_base, chat("Stream me a reply"))[2])  # same content, streamed or not
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finals] == ["stop"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == len(answers.tokens(text))
    assert len(chunks) >= 5 and first_content is not None and first_content < total


def test_rate_limit_answers_429_with_retry_after(sim):
    sim.reset()
    statuses = [post(sim.api_base, chat(f"limited {i}", model="limited"))[0] for i in range(5)]
    status, headers, error = post(sim.api_base, chat("limited 5", model="limited"))
    assert statuses == [200] * 5 and status == 429
    assert error["error"]["code"] == "rate_limit_exceeded" and "5 requests per minute" in error["error"]["message"]
    wait = parse_retry_after(headers["retry-after"])
    assert 0 < wait <= 0.6  # within the scaled minute (60 s x 0.01)
    assert post(sim.api_base, chat("not limited"))[0] == 200  # limits are per model name
    time.sleep(wait + 0.02)
    assert post(sim.api_base, chat("limited 5", model="limited"))[0] == 200
    stats = sim.stats()
    assert stats["errors"] == {"429": 1} and stats["per_model"]["limited"] == {"requests": 7, "successes": 6, "429": 1}


def test_transient_errors_are_reproducible_and_end_by_the_third_attempt(faulty):
    def attempts(n: int) -> list[list[int]]:
        out = []
        for i in range(n):
            seq = []
            while not seq or seq[-1] != 200:
                seq.append(post(faulty.api_base, chat(f"flaky {i}"))[0])
            out.append(seq)
        return out

    faulty.reset()
    first = attempts(40)
    assert all(len(seq) <= 3 and set(seq[:-1]) <= {500, 503} for seq in first)
    assert sum(len(seq) > 1 for seq in first) >= 10 and any(len(seq) == 3 for seq in first)
    assert sum(len(seq) == 1 for seq in first) >= 10
    stats = faulty.stats()
    assert stats["successes"] == 40 and sum(stats["errors"].values()) == sum(len(s) - 1 for s in first)
    faulty.reset()  # the attempt counts start again: the same requests fail the same way
    assert attempts(40) == first


def test_concurrency_limit_answers_429(faulty):
    faulty.reset()
    start = threading.Barrier(8)

    def one(i: int) -> int:
        start.wait()
        return post(faulty.api_base, chat(f"solo {i}", model="solo-1"))[0]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(one, range(8)))
    assert 429 in statuses and faulty.stats()["max_in_flight"] == 1


def test_stats_count_repeated_successes(sim):
    sim.reset()
    for text in ("x", "y", "x"):
        assert post(sim.api_base, chat(text, model="counted"))[0] == 200
    post(sim.api_base, {"model": "counted"})  # no messages: 400
    stats = sim.stats()
    assert stats["requests"] == 4 and stats["successes"] == 3 and stats["errors"] == {"400": 1}
    assert stats["unique_successes"] == 2 and stats["repeated_successes"] == 1
    assert stats["per_model"]["counted"]["repeated_successes"] == 1 and stats["cpu_s"] > 0
    assert post(sim.api_base, chat("x", model="counted", temperature=1))[0] == 200  # another request
    assert sim.stats()["repeated_successes"] == 1


@pytest.mark.parametrize("stream", [False, True])
def test_run_requests_end_to_end_and_a_rerun_calls_nothing(sim, faulty, tmp_path, stream):
    rng = random.Random(2)
    pool = ["I'm here for you.", "That must be so painful. What happened next?", "Try to sleep more.",
            "It sounds like you feel let down by people close to you; that hurts.", "Have you tried yoga?"]
    reqs = []
    for i in range(12):
        a, b = rng.sample(pool, 2)
        reqs.append(Request(id=f"pair{i}", model="judge", template_version="t1", schema=JUDGE_SCHEMA,
                                messages=material.messages(f"Judge pair {i}.", HISTORY, a, b), stream=stream))
    for server, retries in ((sim, 0), (faulty, 2)):  # the faulty server needs two retries, no more
        spec = ModelSpec(name="judge", model="openai/sim-judge", api_base=server.api_base, stream=stream,
                             params={"temperature": 0, "max_tokens": 300}, max_concurrency=8, timeout=10,
                             max_retries=retries)
        cache = ResponseCache(tmp_path / f"cache{retries}")
        server.reset()
        out = run_requests({"judge": spec}, reqs, cache, backoff=0.01)
        for r in out.values():
            assert r["parse_error"] is None and not r["from_cache"]
            jsonschema.validate(r["parsed"], JUDGE_SCHEMA)
            assert r["usage"]["completion_tokens"] > 0
            assert (r["ttft_s"] is not None and 0 < r["ttft_s"] < r["latency_s"]) if stream else r["ttft_s"] is None
        stats = server.stats()
        assert stats["successes"] == stats["unique_successes"] == len(reqs) and stats["repeated_successes"] == 0
        assert stats["requests"] == len(reqs) + sum(stats["errors"].values())
        if retries:
            assert sum(stats["errors"].values()) > 0
        again = run_requests({"judge": spec}, reqs, cache)
        assert all(r["from_cache"] for r in again.values())
        assert {k: r["text"] for k, r in again.items()} == {k: r["text"] for k, r in out.items()}
        assert server.stats()["requests"] == stats["requests"]  # the rerun made no call at all


def test_the_process_never_outlives_its_owner(tmp_path):
    with Simulator(time_scale=0.01) as s:
        proc, base = s.proc, s.api_base
        assert urllib.request.urlopen(base.removesuffix("/v1") + "/health", timeout=5).status == 200
        assert json.loads(urllib.request.urlopen(base + "/models", timeout=5).read())["object"] == "list"
    assert proc.poll() is not None and s.api_base is None
    with pytest.raises(OSError):
        urllib.request.urlopen(base.removesuffix("/v1") + "/health", timeout=2)
    # an owner that dies without cleaning up (no atexit, no __exit__): the server notices and stops
    script = textwrap.dedent("""
        import os, sys
        from heart.simulation.handle import Simulator
        sim = Simulator(time_scale=0.01).__enter__()
        print(sim.proc.pid, flush=True)
        os._exit(0)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    owner = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, env=env,
                           check=True)
    pid = int(owner.stdout.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
