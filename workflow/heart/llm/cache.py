"""The content-addressed response cache: an answer that was paid for is never paid for again.

One JSON file per answer (``<dir>/<key[:2]>/<key>.json``), written by rename: safe for many writers on a
shared filesystem, no locks. Only successes are stored. A published export (``results/llm/cache.parquet``)
replays read-only after the local directory.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd

from heart.common import tableio
from heart.common.atomic import atomic_path
from heart.common.redaction import Redactor
from heart.llm.answers import parse_structured
from heart.llm.decoding import resolved_params
from heart.llm.models import ModelSpec
from heart.llm.request import Request


CACHE_FORMAT = 1


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
    return hashlib.sha256(_KEY_JSON.encode(payload).encode()).hexdigest()


_KEY_JSON = json.JSONEncoder(sort_keys=True,
                             ensure_ascii=False)  # = json.dumps(..., sort_keys=True, ensure_ascii=False)


class ResponseCache:
    """Append-only, content-addressed store: ``<dir>/<key[:2]>/<key>.json``, written by rename.

    ``replay`` is an optional Parquet export of another cache (see :meth:`export`),
    consulted read-only after the local directory.
    """

    def __init__(self, directory, replay=None):
        self.dir = Path(directory)
        self._root = os.fspath(self.dir)  # string paths: a hit is read 42,000 times in a paper-scale replay
        self.replay: dict[str, str] = {}  # key -> entry JSON, parsed when asked for (a job asks for few)
        if replay:
            table = pd.read_parquet(replay, columns=["key", "entry"])
            self.replay = dict(zip(table["key"], table["entry"]))

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def holds_nothing(self) -> bool:
        """True when no key can be found: no replayed entry and no answer in the directory (a preview of a run
        not started then computes no key: the paper's run has ~94,000, and its preview took 34 CPU-s, 17 without)."""
        return not self.replay and next(self.dir.glob("??/*.json"), None) is None

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(_read(f"{self._root}/{key[:2]}/{key}.json"))
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
        local = {path.stem: path for path in self.dir.glob("??/*.json")}  # over a replayed entry of the same key
        keys = sorted(set(self.replay) | set(local))  # a replay re-publishes what it replayed
        models, texts = [], []
        for k in keys:  # one entry parsed at a time: the paper's ~94,000 held parsed took ~0.9 GB
            entry = json.loads(local[k].read_bytes() if k in local else self.replay[k])
            clean = redacted_entry(entry, redactor)  # "parsed" is left out: a replay parses the text again
            models.append(clean.get("model"))
            texts.append(json.dumps(clean))
        tableio.write_table(pd.DataFrame({"key": keys, "model": models, "entry": texts}), dest, "llm_cache",
                            provenance)
        return len(keys)


def _read(path: str) -> bytes:
    """A file's bytes by plain ``os.read`` (half the cost of ``open``'s buffered reader for a small file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def redacted_entry(entry: dict, redactor: Redactor) -> dict:
    """A cache entry with every field redacted, its text JSON-aware, and without ``parsed`` (which is
    derived from the text, and re-derived by whoever reads the entry)."""
    body = {k: v for k, v in entry.items() if k not in ("text", "parsed")}
    text = entry.get("text")
    if not redactor.holds_secret(body, [text] if isinstance(text, str) else []):
        return {**body, "text": text} if "text" in entry else body  # nothing to mask: one probe, no copies
    clean = redactor.redact_obj(body)
    if "text" in entry:
        clean["text"] = redactor.redact_json(entry["text"])
    return clean


def clean_hit(entry: dict, schema: dict | None, redactor: Redactor) -> dict:
    """A cached entry as a fresh answer would be: redacted (:func:`redacted_entry`), and read with today's
    parser (a parser fix needs no new call)."""
    clean = redacted_entry(entry, redactor)
    clean["parsed"], parse_error = parse_structured(clean["text"], schema, redactor)
    if schema is not None:
        clean["parse_error"] = parse_error
    return clean
