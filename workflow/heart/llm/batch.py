"""A provider's batch interface: the same answers at half the price, within hours instead of seconds.

A model with ``batch: openai`` (config ``models.<name>.batch``) sends its judge, tagger and rewrite calls --
every request not timed to its first token (``Request.stream``: completions stay synchronous) -- through
OpenAI's Batch API, or a server that speaks it, by litellm's batch API (``acreate_file``, ``acreate_batch``,
``aretrieve_batch``, ``afile_content``, ``alist_batches``). The answers land in the same content-addressed
response cache as synchronous ones (custom id = cache key), so replay, export and every table are the same
in both modes; only ``cost`` (the batch price from the price map) and ``latency_s`` (the batch's turnaround)
differ.

Nothing submitted is paid for twice. Each batch is a journal record, ``<cache_dir>/batches/<token>.json``,
written atomically (:class:`Journal`):

1. ``prepared``: the token and every request's cache key are recorded *before* anything is sent;
2. ``submitted``: the provider's batch id, recorded as soon as it is known; the batch carries the token in
   its metadata, so a job killed between the provider's answer and the record (``kill -9`` at any moment)
   finds its batch again by listing the provider's batches: a rerun resumes polling it, never submits anew;
3. ``collected``: the answers are in the cache; requests the provider did not answer (an expired or partly
   failed batch) are listed and go into a new batch, and only those.

A job holds an exclusive lock (``flock``) on every record it works on, released when it ends or dies, so two
shard jobs of one model never manage the same batch; a job whose requests are in a batch another live job
holds waits for their answers in the cache.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import time
import uuid
from pathlib import Path

from heart.common.atomic import atomic_path
from heart.common.redaction import Redactor
from heart.llm import load_litellm
from heart.llm.answers import parse_structured
from heart.llm.batch_protocols import adapter
from heart.llm.models import ModelSpec, priced, prices
from heart.llm.request import Request

#: a provider's batch states after which nothing more will be answered
TERMINAL = {"completed", "expired", "failed", "cancelled"}
JOURNAL_FORMAT = 1
log = logging.getLogger("heart.llm")


class Journal:
    """Batch records of one cache directory: ``<cache_dir>/batches/<token>.json``, each written by rename."""

    def __init__(self, cache_dir):
        self.dir = Path(cache_dir) / "batches"
        self._locks: dict[str, int] = {}

    def path(self, token: str) -> Path:
        return self.dir / f"{token}.json"

    def write(self, record: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.path(record["token"])) as tmp:
            Path(tmp).write_text(json.dumps(record, sort_keys=True))

    def _all(self, model: str):
        """Every record of ``model`` (a litellm model string), collected or not."""
        for path in sorted(self.dir.glob("*.json")) if self.dir.is_dir() else ():
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"{path}: unreadable batch record ({exc}); it names a batch the provider may "
                                   "still be answering: repair it or move it away, then rerun") from exc
            if record.get("model") == model:
                yield record

    def records(self, model: str) -> list[dict]:
        """Every record of ``model`` not yet collected, oldest first."""
        return sorted((r for r in self._all(model) if r.get("state") != "collected"), key=lambda r: r["created"])

    def batch_ids(self, model: str) -> set[str]:
        """The provider batch ids every record of ``model`` names (collected ones too)."""
        return {r["batch_id"] for r in self._all(model) if r.get("batch_id")}

    def lock(self, token: str) -> bool:
        """Hold ``token``'s record for this process (until :meth:`release_all` or its end); False when
        another live process holds it."""
        if token in self._locks:
            return True
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / f"{token}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._locks[token] = fd
        return True

    def release_all(self) -> None:
        for fd in self._locks.values():
            os.close(fd)  # closing the descriptor releases the flock
        self._locks.clear()


def entry_from(spec: ModelSpec, req: Request, body: dict, turnaround: float, batch_id: str,
               redactor: Redactor) -> dict:
    """A batch answer as the cache keeps a synchronous one (:func:`heart.llm.engine._call`), priced at the
    batch price of the price map (None where it has none)."""
    litellm = load_litellm()

    from heart.llm.wire import RetryableResponse, usage_of

    choices = body.get("choices") or []
    text = redactor.redact_json((choices[0].get("message") or {}).get("content") or "") if choices else ""
    if not text.strip():
        raise RetryableResponse("empty content")
    usage = usage_of(body.get("usage"))
    cost = (priced(prices(litellm, spec.model, "batch"), usage["prompt_tokens"] or 0,
                   usage["completion_tokens"] or 0, usage.get("cached_tokens") or 0,
                   usage.get("cache_write_tokens") or 0) if usage["prompt_tokens"] is not None else None)
    parsed, parse_error = parse_structured(text, req.schema, redactor)
    return {"model": spec.model, "text": text, "parsed": parsed, "parse_error": parse_error, "usage": usage,
            "cost": cost, "ttft_s": None, "latency_s": turnaround, "created": time.time(),
            "template_version": req.template_version, "batch_id": batch_id, "mode": "batch",
            "finish_reason": choices[0].get("finish_reason")}


async def run_batches(spec: ModelSpec, todo: list[Request], keys: dict[str, str], cache, journal: Journal,
                      redactor: Redactor, progress, poll_s: float = 60.0, max_requests: int = 10_000,
                      wire=None) -> tuple[dict[str, dict], dict[str, str]]:
    """Answer ``todo`` (prepared requests of one model) through its batch interface.

    Resumes this model's journal records first (whatever asked for them), submits the requests no record
    holds, polls until every batch is terminal, stores each answer in ``cache`` under its key, and
    resubmits only unanswered requests, at most ``spec.max_retries`` times. Returns (request id -> entry,
    request id -> error) for ``todo``.
    """
    run = _BatchRun(spec, todo, keys, cache, journal, redactor, progress, wire)
    await run.start(max_requests)
    while run.open_records or run.elsewhere:
        await asyncio.sleep(poll_s)
        await run.poll()
        await run.take_over()
    journal.release_all()
    return run.outcome()


class _BatchRun:
    """One model's batches of one call of :func:`run_batches`: what it asked for, what is answered, the
    records it holds, and the keys another live job's batch holds (``elsewhere``)."""

    def __init__(self, spec: ModelSpec, todo: list[Request], keys: dict[str, str], cache, journal: Journal,
                 redactor: Redactor, progress, wire):
        self.spec, self.api, self.cache, self.journal = spec, adapter(spec), cache, journal
        self.redactor, self.progress, self.wire = redactor, progress, wire
        self.by_key: dict[str, list[Request]] = {}
        for r in todo:
            self.by_key.setdefault(keys[r.id], []).append(r)
        self.wanted = set(self.by_key)
        self.answered: dict[str, dict] = {}
        self.errors: dict[str, str] = {}
        self.elsewhere: set[str] = set()  # keys in a batch another live job holds
        self.open_records: list[dict] = []
        self.foreign: set[str] = set()  # tokens of records another live job holds

    async def start(self, max_requests: int) -> None:
        """Adopt this model's journal records, then submit what none of them holds, ``max_requests`` a batch."""
        for record in self.journal.records(self.spec.model):
            await self.adopt(record)
        held = {k for r in self.open_records for k in r["keys"]}
        fresh = [k for k in self.by_key if k not in held and k not in self.elsewhere]
        for i in range(0, len(fresh), max_requests):
            self.open_records.append(await self.submit(fresh[i:i + max_requests], 1))

    def store(self, record: dict, got: dict[str, dict], failed: dict[str, str], batch: dict) -> None:
        """A terminal batch's answers into the cache, its record collected, its unanswered keys' errors kept."""
        spec = self.spec
        turnaround = time.time() - record["created"]
        for key, body in got.items():
            reqs = self.by_key.get(key)
            if reqs is None:  # an answer this job did not ask for (an older run's): kept, as paid for
                meta = record["meta"].get(key)
                if meta is None:
                    continue
                reqs = [Request(id=key, model=spec.name, messages=(), template_version=meta[0],
                                schema=record["schemas"].get(meta[1]))]
            # an answer already stored (the job that asked for it, or another job of this model that adopted the
            # same batch) stays as stored: stored again, its turnaround would be this later job's, and a replay
            # would no longer give the table rows that read it first
            entry = self.cache.get(key)
            if entry is None:
                try:
                    entry = entry_from(spec, reqs[0], body, turnaround, record["batch_id"], self.redactor)
                except Exception as exc:  # noqa: BLE001 - an unusable answer is not stored, it is asked again
                    failed[key] = f"{type(exc).__name__}: {exc}"
                    continue
                self.cache.put(key, entry)
            if key in self.wanted:
                self.answered[key] = entry
                self.progress.update(len(reqs))
        unanswered = [k for k in record["keys"] if k not in got]
        record.update(state="collected", status=batch.get("status"), collected=time.time(),
                      unanswered=unanswered, errors={k: self.redactor.redact(v) for k, v in failed.items()})
        self.journal.write(record)
        for key in unanswered:
            self.errors[key] = self.redactor.redact(failed.get(key, f"not answered (batch {batch.get('status')})"))

    async def submit(self, keys: list[str], attempt: int) -> dict:
        """A new batch of ``keys``: recorded in the journal before the provider hears of it."""
        spec = self.spec
        token = uuid.uuid4().hex
        schemas, meta = {}, {}
        for k in keys:
            r = self.by_key[k][0]
            h = hashlib.sha256(json.dumps(r.schema, sort_keys=True).encode()).hexdigest()[:16] if r.schema else None
            if h:
                schemas[h] = r.schema
            meta[k] = [r.template_version, h]
        record = {"format": JOURNAL_FORMAT, "token": token, "model": spec.model, "name": spec.name,
                  "protocol": spec.batch, "api_base": spec.api_base, "state": "prepared", "created": time.time(),
                  "attempt": attempt, "keys": keys, "meta": meta, "schemas": schemas, "batch_id": None}
        self.journal.lock(token)
        self.journal.write(record)  # the requests are on disk before the provider hears of them
        batch = await self.api.submit(token, [(k, self.by_key[k][0]) for k in keys], self.wire)
        record.update(state="submitted", batch_id=batch["id"], submitted=time.time())
        self.journal.write(record)
        log.info("%s: batch %s submitted (%d requests, attempt %d)", spec.name, batch["id"], len(keys), attempt)
        return record

    async def resume(self, record: dict) -> dict | None:
        """A record found in the journal, its batch found again if a kill left it unrecorded; None when the
        provider never got it."""
        if record["state"] == "prepared":  # killed around the submission: did the provider get it?
            found = await self.api.find(record, self.journal.batch_ids(self.spec.model))
            if found is None:
                return None  # never created: its requests go into a new batch
            record.update(state="submitted", batch_id=found["id"], submitted=time.time())
            self.journal.write(record)
            log.info("%s: batch %s found again by its token after an interruption", self.spec.name, found["id"])
        return record

    def from_cache(self, key: str) -> bool:
        """Whether another job's answer to ``key`` is in the cache (then taken as answered)."""
        if (hit := self.cache.get(key)) is None:
            return False
        self.answered[key] = hit
        self.progress.update(len(self.by_key[key]))
        return True

    async def adopt(self, record: dict) -> None:
        """Take a journal record over, unless another live job holds it (its keys are then ``elsewhere``)."""
        if not self.journal.lock(record["token"]):
            self.foreign.add(record["token"])
            self.elsewhere.update(k for k in record["keys"] if k in self.wanted)
            return
        self.foreign.discard(record["token"])
        resumed = await self.resume(record)
        if resumed is None:
            record.update(state="collected", status="never submitted", unanswered=record["keys"], errors={})
            self.journal.write(record)
            return
        log.info("%s: resuming batch %s (%d requests)", self.spec.name, record["batch_id"], len(record["keys"]))
        self.open_records.append(resumed)

    async def poll(self) -> None:
        """One look at every open batch: a terminal one is collected, its unanswered requests resubmitted
        (at most ``spec.max_retries`` times)."""
        spec, still = self.spec, []
        for record in self.open_records:
            batch = await self.api.status(record["batch_id"])
            counts = batch.get("request_counts") or {}
            self.progress.set_postfix(
                {"batch": record["batch_id"], "status": batch.get("status"),
                 "done": f"{counts.get('completed', 0)}/{counts.get('total', len(record['keys']))}"}, refresh=False)
            if batch.get("status") not in TERMINAL:
                still.append(record)
                continue
            got, failed = await self.api.results(batch)
            self.store(record, got, failed, batch)
            retry = [k for k in record["unanswered"] if k in self.wanted and k not in self.answered]
            attempt = record.get("attempt", 1) + 1
            if retry and attempt <= spec.max_retries + 1:
                for k in retry:
                    self.errors.pop(k, None)
                log.warning("%s: batch %s ended %s with %d unanswered request(s): resubmitting those only",
                            spec.name, record["batch_id"], batch.get("status"), len(retry))
                still.append(await self.submit(retry, attempt))
        self.open_records = still

    async def take_over(self) -> None:
        """Another job's batches: their answers arrive in the cache; a job that held a batch and ended (or
        died) leaves it to this one, and what it left unanswered is asked for here."""
        for key in list(self.elsewhere):
            if key in self.answered or self.from_cache(key):
                self.elsewhere.discard(key)
        if not (self.foreign and self.elsewhere):
            return
        for record in self.journal.records(self.spec.model):
            if record["token"] in self.foreign:
                await self.adopt(record)
        pending = {k for r in self.journal.records(self.spec.model) for k in r["keys"]}
        mine = {k for r in self.open_records for k in r["keys"]}
        # the other job's record is collected: its answers are in the cache (stored before the record
        # said so, and read here after it); only what it left unanswered is asked for here
        done = [k for k in self.elsewhere if k not in pending and k not in self.answered]
        leftover = [k for k in done if not self.from_cache(k)]
        self.elsewhere.difference_update(mine | set(done))
        if leftover:
            self.open_records.append(await self.submit(leftover, 2))

    def outcome(self) -> tuple[dict[str, dict], dict[str, str]]:
        """(request id -> entry, request id -> error) of every request asked for."""
        results, failures = {}, {}
        for key, reqs in self.by_key.items():
            for r in reqs:
                if key in self.answered:
                    results[r.id] = self.answered[key]
                else:
                    failures[r.id] = self.errors.get(key, "not answered")
        return results, failures
