"""heart.llm.batch: a provider's batch interface, against the simulator's batch desk over real HTTP.

Nothing submitted is paid for twice: the journal records each batch before submission, a job killed at any
moment resumes its batches, and only unanswered requests are ever resubmitted (the simulator counts
``batch_resubmitted``: requests submitted again after a batch had answered them).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from support import REPO
from heart.judging import material
from heart.judging.kinds import verdict
from heart.llm.batch import Journal
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.request import Request, prepare_all
from heart.simulation.handle import Simulator

#: the provider simulator runs beside these tests, a server process of its own (tier e2e)
pytestmark = pytest.mark.e2e

SCHEMA = verdict.response_schema(material.load_rubric(REPO / "workflow/resources/rubric/heart.yaml"), 240)
FAST = {"poll_s": 0.1, "max_requests": 20}


def judge_requests(n, tag="p", stream=False):
    return [Request(id=f"{tag}{i}", model="j", template_version="judge:t", schema=SCHEMA, stream=stream,
                    messages=material.messages("Judge the two replies.", [{"role": "seeker", "text": f"worry {i}"}],
                                                f"reply one {i}", f"reply two {i}\nwith a line break"))
            for i in range(n)]


def spec(sim, batch="openai", **kw):
    return ModelSpec(name="j", model="openai/sim-judge", api_base=sim.api_base, batch=batch, **{"max_retries": 3, **kw})


def batch_stats(sim):
    s = sim.stats()
    assert s["batch_resubmitted_examples"] == [] or s["batch_resubmitted"]
    return {k: s[k] for k in ("batch_requests", "batch_resubmitted", "batch_retried", "batches")}


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_batch_answers_are_the_synchronous_answers_and_a_rerun_sends_nothing(tmp_path, protocol):
    reqs = judge_requests(45)
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=50, batch_error_rate=0.2) as sim:
        cache = ResponseCache(tmp_path / "batch")
        out = run_requests({"j": spec(sim, batch=protocol)}, reqs, cache, batch=FAST)
        first = batch_stats(sim)
        assert first["batches"] >= 3 and first["batch_retried"] > 0  # 20 a batch; failed requests asked again
        assert first["batch_resubmitted"] == 0 and sim.stats()["requests"] == 0  # no synchronous call at all
        sync = run_requests({"j": spec(sim, batch=None)}, reqs, ResponseCache(tmp_path / "sync"))
        for r in reqs:
            assert out[r.id]["text"] == sync[r.id]["text"] and out[r.id]["parsed"] == sync[r.id]["parsed"]
            assert out[r.id]["mode"] == "batch" and "batch_sim" in out[r.id]["batch_id"]
        again = run_requests({"j": spec(sim, batch=protocol)}, reqs, cache, batch=FAST)
        assert all(a["from_cache"] for a in again.values()) and batch_stats(sim) == first
        records = [json.loads(p.read_text()) for p in (tmp_path / "batch" / "batches").glob("*.json")]
        assert {r["state"] for r in records} == {"collected"} and len(records) == first["batches"]
        keys = {cache_key(spec(sim), r) for r in prepare_all({"j": spec(sim)}, reqs)[0]}
        assert set().union(*(r["keys"] for r in records)) == keys


def test_completions_stay_synchronous(tmp_path):
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None) as sim:
        out = run_requests({"j": spec(sim)}, judge_requests(3, stream=True), ResponseCache(tmp_path), batch=FAST)
        assert sim.stats()["requests"] == 3 and batch_stats(sim)["batch_requests"] == 0
        assert all("mode" not in r for r in out.values())


def test_an_expired_batch_is_resubmitted_for_its_unanswered_requests_only(tmp_path):
    reqs = judge_requests(40)
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=20, batch_expire_rate=1.0) as sim:
        out = run_requests({"j": spec(sim, max_retries=8)}, reqs, ResponseCache(tmp_path), batch=FAST)
        s = batch_stats(sim)
        assert len(out) == 40 and s["batch_retried"] > 0 and s["batch_resubmitted"] == 0
        assert s["batch_requests"] == 40 + s["batch_retried"]
        records = [json.loads(p.read_text()) for p in (tmp_path / "batches").glob("*.json")]
        assert any(r["status"] == "expired" and r["unanswered"] for r in records)


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_a_job_killed_between_submitting_and_recording_finds_its_batch_again(tmp_path, protocol):
    """The record is written before the provider hears of the batch; the batch carries the token (OpenAI's
    metadata, Gemini's display name) or is found by its request count since the record (Anthropic). Here
    the batch was created and the job died before writing its id: the rerun adopts it."""
    import asyncio

    from heart.llm.batch_protocols import adapter
    from heart.llm.engine import wire_messages, wire_params

    reqs = judge_requests(5)
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=50) as sim:
        s = spec(sim, batch=protocol)
        prepared, _ = prepare_all({"j": s}, reqs)
        keys = [cache_key(s, r) for r in prepared]
        record = {"format": 1, "token": "deadbeef" * 4, "model": s.model, "name": "j", "protocol": "openai",
                  "api_base": s.api_base, "state": "prepared", "created": time.time(), "attempt": 1, "keys": keys,
                  "meta": {k: [r.template_version, None] for k, r in zip(keys, prepared)}, "schemas": {},
                  "batch_id": None}
        Journal(tmp_path).write(record)
        record["protocol"] = protocol
        Journal(tmp_path).write(record)
        asyncio.run(adapter(s).submit(record["token"], list(zip(keys, prepared)),
                                      (wire_params, wire_messages)))  # ... and then the job died
        assert batch_stats(sim)["batch_requests"] == 5
        out = run_requests({"j": s}, reqs, ResponseCache(tmp_path), batch=FAST)
        assert len(out) == 5 and batch_stats(sim) == {"batch_requests": 5, "batch_resubmitted": 0,
                                                       "batch_retried": 0, "batches": 1}
        kept = json.loads((tmp_path / "batches" / f"{record['token']}.json").read_text())
        assert kept["state"] == "collected" and "batch_sim" in kept["batch_id"]


def test_a_record_never_submitted_is_submitted_once(tmp_path):
    reqs = judge_requests(4)
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=20) as sim:
        s = spec(sim)
        prepared, _ = prepare_all({"j": s}, reqs)
        keys = [cache_key(s, r) for r in prepared]
        Journal(tmp_path).write({"format": 1, "token": "cafe" * 8, "model": s.model, "name": "j",
                                 "protocol": "openai", "api_base": s.api_base, "state": "prepared",
                                 "created": time.time(), "attempt": 1, "keys": keys, "meta": {}, "schemas": {},
                                 "batch_id": None})
        out = run_requests({"j": s}, reqs, ResponseCache(tmp_path), batch=FAST)
        assert len(out) == 4 and batch_stats(sim)["batch_requests"] == 4 and batch_stats(sim)["batches"] == 1


KILLED = """
import sys
from heart.llm.cache import ResponseCache
from heart.llm.engine import run_requests
sys.path.insert(0, sys.argv[3])
from test_batch import judge_requests, SCHEMA
from heart.llm.models import ModelSpec
spec = ModelSpec(name="j", model="openai/sim-judge", api_base=sys.argv[1], batch="openai", max_retries=3)
print("started", flush=True)
run_requests({"j": spec}, judge_requests(30), ResponseCache(sys.argv[2]), batch={"poll_s": 0.1, "max_requests": 10})
print("finished", flush=True)
"""


def test_kill_9_while_batches_run_then_a_rerun_submits_nothing_again(tmp_path):
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=300) as sim:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "workflow"), str(REPO / "tests")])}
        job = subprocess.Popen([sys.executable, "-c", KILLED, sim.api_base, str(tmp_path / "c"),
                                str(REPO / "tests" / "llm")], env=env, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while batch_stats(sim)["batches"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=10)
        submitted = batch_stats(sim)
        assert submitted["batch_requests"] == 30  # all three batches were out when it died
        out = run_requests({"j": spec(sim)}, judge_requests(30), ResponseCache(tmp_path / "c"), batch=FAST)
        assert len(out) == 30 and batch_stats(sim) == submitted  # resumed, not one request sent again


def test_a_batch_another_live_job_holds_is_waited_for_then_adopted(tmp_path):
    reqs = judge_requests(6)
    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=50) as sim:
        s = spec(sim)
        cache = ResponseCache(tmp_path)
        done = {}
        first = threading.Thread(target=lambda: done.update(a=run_requests({"j": s}, reqs, cache, batch=FAST)))
        first.start()
        deadline = time.monotonic() + 30
        while not list((tmp_path / "batches").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.01)
        # a second job while the first holds the batch: it submits nothing and gets the same answers
        second = run_requests({"j": s}, reqs, cache, batch=FAST)
        first.join(timeout=60)
        assert batch_stats(sim)["batch_requests"] == 6
        assert {k: v["text"] for k, v in second.items()} == {k: v["text"] for k, v in done["a"].items()}


def test_an_unknown_batch_protocol_is_refused_at_start_up():
    import yaml

    from heart.common.config import ConfigError, validate_config
    from heart.llm import batch_protocols

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["models"]["smollm2"]["batch"] = "carrier-pigeon"
    with pytest.raises(ConfigError, match=r"models\.smollm2\.batch: 'carrier-pigeon' is not a batch protocol "
                                          r"\(protocols: openai, anthropic, gemini\)"):
        validate_config(cfg, checks=[batch_protocols.config_problems])


def test_anthropic_cache_marks_split_the_shared_dialogue_from_the_replies_without_changing_the_text():
    from heart.llm.engine import wire_messages

    claude = ModelSpec(name="c", model="anthropic/claude-sonnet-4-5")
    req = judge_requests(1)[0]
    system, user = wire_messages(claude, req)
    assert system["content"] == [{"type": "text", "text": req.messages[0]["content"],
                                  "cache_control": {"type": "ephemeral"}}]
    first, rest = user["content"]
    assert first["cache_control"] == {"type": "ephemeral"} and "cache_control" not in rest
    assert first["text"] + rest["text"] == req.messages[1]["content"]
    assert '"dialogue"' in first["text"] and "reply one" not in first["text"] and "reply one" in rest["text"]
    tag = Request(id="t", model="c", template_version="t", messages=(
        {"role": "system", "content": "Tag it."}, {"role": "user", "content": '{"response": "hi"}'}))
    assert wire_messages(claude, tag)[1] == tag.messages[1]  # nothing shared to mark
    openai = ModelSpec(name="o", model="openai/gpt-4o")
    assert wire_messages(openai, req) == list(req.messages)  # OpenAI caches prefixes without marks


def test_spend_sums_tokens_and_prices_per_model_and_mode_and_leaves_the_unreported_missing(tmp_path):
    """A hand-worked cache: two synchronous and one batch answer of claude (one with cached tokens), an
    answer without a price, and one whose provider reported no token counts."""
    import litellm
    import pandas as pd

    from heart.llm.spend import spend

    def row(model, cost, mode=None, **usage):
        entry = {"model": model, "text": "x", "cost": cost, "usage": usage, **({"mode": mode} if mode else {})}
        return {"key": str(len(rows)), "model": model, "entry": json.dumps(entry)}

    claude = "anthropic/claude-sonnet-4-5"
    rows = []
    rows.append(row(claude, 0.01, prompt_tokens=1000, completion_tokens=100, cached_tokens=None))
    rows.append(row(claude, 0.005, prompt_tokens=2000, completion_tokens=50, cached_tokens=1500,
                    cache_write_tokens=0))
    rows.append(row(claude, 0.002, "batch", prompt_tokens=500, completion_tokens=20))
    rows.append(row("openai/smollm2-135m-instruct", None, prompt_tokens=30, completion_tokens=5))
    rows.append(row("openai/silent", 0.001))
    table = spend(pd.DataFrame(rows), litellm).set_index(["model", "mode"])
    sync = table.loc[(claude, "sync")]
    assert (sync["answers"], sync["priced_answers"], sync["prompt_tokens"],
            sync["completion_tokens"]) == (2, 2, 3000, 150)
    assert sync["cached_prompt_tokens"] == 1500 and sync["cache_write_tokens"] == 0
    assert sync["cost_usd"] == pytest.approx(0.015)
    # claude-sonnet-4-5: $3 per 10^6 input tokens, $0.30 per 10^6 read from the cache
    assert sync["prompt_cache_saving_usd"] == pytest.approx(1500 * (3e-6 - 0.3e-6))
    batch = table.loc[(claude, "batch")]
    assert (batch["answers"] == 1 and pd.isna(batch["cached_prompt_tokens"])
            and pd.isna(batch["prompt_cache_saving_usd"]))
    local = table.loc[("openai/smollm2-135m-instruct", "sync")]
    assert local["unpriced_answers"] == 1 and pd.isna(local["cost_usd"])
    silent = table.loc[("openai/silent", "sync")]
    assert pd.isna(silent["prompt_tokens"]) and pd.isna(silent["completion_tokens"]) and silent["cost_usd"] == 0.001
    from heart.common import tableio

    tableio.write_table(table.reset_index(), tmp_path / "spend.parquet", "llm_spend")
    back = tableio.read_table(tmp_path / "spend.parquet").set_index(["model", "mode"])
    assert pd.isna(back.loc[("openai/silent", "sync"), "prompt_tokens"])  # missing stays missing on disk


def test_an_openai_batch_line_is_the_body_litellm_sends_synchronously():
    """o-series models get their system turn as a user turn and max_completion_tokens from litellm; the
    batch line does the same, so both modes ask the provider the same thing (the rehearsal found o3's
    verdicts differ between modes before)."""
    from heart.llm.batch_protocols.openai import OpenAIBatches
    from heart.llm.wire import wire_messages, wire_params

    req = judge_requests(1)[0]
    for model, roles, tokens in (("openai/o3", ["user", "user"], "max_completion_tokens"),
                                 ("openai/gpt-4o", ["system", "user"], "max_tokens")):
        spec = ModelSpec(name="j", model=model, params={"max_tokens": 4000}, batch="openai")
        body = OpenAIBatches(spec).line("k", req, (wire_params, wire_messages))["body"]
        assert [m["role"] for m in body["messages"]] == roles and body[tokens] == 4000, model
        assert [m["content"] for m in body["messages"]] == [m["content"] for m in req.messages]
        assert body["model"] == model.partition("/")[2] and body["response_format"]["type"] == "json_schema"


def test_anthropic_batches_of_one_size_are_told_apart_by_when_they_were_made_and_what_is_taken():
    """Anthropic keeps nothing of the caller's: a record finds the first batch of its size made after it
    was written that no other record names (the rehearsal's kill left several of 2,000 at once)."""
    import asyncio

    from heart.llm.batch_protocols import adapter
    from heart.llm.wire import wire_messages, wire_params

    with Simulator(time_scale=0.01, error_rate=0.0, rpm=None, batch_delay=500) as sim:
        s = spec(sim, batch="anthropic")
        api = adapter(s)
        prepared, _ = prepare_all({"j": s}, judge_requests(3))

        async def go():
            records, ids = [], []
            for tag in "abc":
                record = {"token": tag, "created": time.time(), "keys": [tag + str(i) for i in range(3)]}
                made = await api.submit(tag, [(k, r) for k, r in zip(record["keys"], prepared)],
                                        (wire_params, wire_messages))
                records.append(record)
                ids.append(made["id"])
            assert (await api.find(records[0], {ids[0]}))["id"] == ids[1]  # a's own is named by a record
            assert (await api.find(records[1]))["id"] == ids[1]
            assert (await api.find(records[2], set(ids[:2])))["id"] == ids[2]
            assert await api.find(records[2], set(ids)) is None

        asyncio.run(go())


class ToyBatches:
    """A batch protocol written as a newcomer would, from heart.llm.batch_protocols' docstring alone: an
    in-memory desk that answers every request at once with a verdict for response A."""

    desk: dict = {}

    def __init__(self, spec):
        self.spec = spec

    def _batch(self, batch_id):
        n = len(self.desk[batch_id][1])
        return {"id": batch_id, "status": "completed", "request_counts": {"total": n, "completed": n, "failed": 0}}

    async def submit(self, token, requests, wire):
        batch_id = f"toy-{len(self.desk)}"
        self.desk[batch_id] = (token, [key for key, _ in requests])
        return self._batch(batch_id)

    async def find(self, record, taken=frozenset()):
        return next((self._batch(b) for b, (token, _) in self.desk.items() if token == record["token"]), None)

    async def status(self, batch_id):
        return self._batch(batch_id)

    async def results(self, batch):
        from heart.llm.batch_protocols.base import chat_body

        text = json.dumps({"rationale": "toy", "winner": "A", "strength": 2, "axes": {k: "none" for k in "HEART"}})
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return {key: chat_body(text, usage, "toy") for key in self.desk[batch["id"]][1]}, {}


def test_a_toy_batch_protocol_registered_by_one_entry_answers_through_the_journal(tmp_path, monkeypatch):
    """A protocol is one module and one entry of PROTOCOLS: registered, a model's batch: toy is accepted at
    start-up and its requests go through the journal and the cache like every protocol's."""
    import yaml

    from heart.common.config import validate_config
    from heart.llm import batch_protocols

    monkeypatch.setitem(batch_protocols.PROTOCOLS, "toy", ToyBatches)
    monkeypatch.setattr(ToyBatches, "desk", {})
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["models"]["smollm2"]["batch"] = "toy"
    validate_config(cfg, checks=[batch_protocols.config_problems])
    toy = ModelSpec(name="j", model="openai/toy-judge", batch="toy")
    reqs = judge_requests(7)
    out = run_requests({"j": toy}, reqs, ResponseCache(tmp_path), batch=FAST)
    assert len(ToyBatches.desk) == 1 and {r["mode"] for r in out.values()} == {"batch"}
    assert all(r["parsed"]["winner"] == "A" and r["batch_id"] == "toy-0" for r in out.values())
    records = [json.loads(p.read_text()) for p in (tmp_path / "batches").glob("*.json")]
    assert [(r["protocol"], r["state"]) for r in records] == [("toy", "collected")]
    again = run_requests({"j": toy}, reqs, ResponseCache(tmp_path), batch=FAST)
    assert all(a["from_cache"] for a in again.values()) and len(ToyBatches.desk) == 1  # nothing sent again


def test_an_answer_already_stored_is_not_stored_again_by_a_job_adopting_its_batch(tmp_path):
    """The rehearsal's replay found judge_qc's rows with another latency than the cache's: a judging job of the same
    model adopted the quality checks' batch later and stored its answers again, with its own (later) turnaround.
    The first stored answer stays: the table rows that read it and a replay of the cache agree."""
    from heart.common.redaction import Redactor
    from heart.llm.batch import _BatchRun

    cache = ResponseCache(tmp_path)
    req = judge_requests(1)[0]
    body = {"choices": [{"message": {"content": json.dumps({"winner": "A"})}}], "usage": {}}
    stored = {"model": "openai/sim-judge", "text": "first", "latency_s": 37.2, "mode": "batch", "batch_id": "b1"}
    cache.put("k1", stored)
    s = ModelSpec(name="j", model="openai/sim-judge", api_base="http://127.0.0.1:9/v1", batch="openai")
    run = _BatchRun(s, [req], {req.id: "k1"}, cache, Journal(tmp_path), Redactor(),
                    progress=type("P", (), {"update": lambda self, n: None})(), wire=None)
    record = {"token": "t1", "keys": ["k1"], "created": time.time() - 108.4, "batch_id": "b1", "meta": {},
              "schemas": {}}
    run.store(record, {"k1": body}, {}, {"status": "completed"})
    assert cache.get("k1") == stored and run.answered["k1"]["latency_s"] == 37.2
