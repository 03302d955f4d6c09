"""A bundle's files in the public formats (docs/bundle-format.md): what someone who did not run this workflow
writes, read into the workflow's own tables.

* ``items.jsonl`` -- one context per line: ``subset``, ``history`` (role/text turns) and optionally ``key`` (how
  the other files name it, e.g. the release's ``regular:17``), the dataset's reply and what the items table
  holds besides; the item's id (a hash of its history) is made here, never asked of the author;
* ``llm_verdicts.jsonl`` -- the public judgment format (``resources/imported/README.md``), one record per LLM
  judge, pair and shown order, with its strength: the verdict tables and, with the human ratings, the pairs
  (and their ids) are derived from it;
* ``strategy_tags.jsonl`` -- one line per (completion, strategy, tagger): the label and optionally its
  probability and evidence.

The workflow's own Parquet tables (``items.parquet``, ``pairs.parquet``, ``llm_verdicts.parquet``,
``strategy_tags.parquet``) are read where a bundle has them instead (an exported bundle does: they carry the
exact answers); what they hold then wins. Errors name the file, the line and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from heart.common import records
from heart.items import item_table as items_mod
from heart.items.screening import item_id as history_id


class PublicFormatError(ValueError):
    """A bundle file that is not in its public format; the message names the file, the line and the field."""


# --- items -----------------------------------------------------------------------------------------

ITEM_REQUIRED = ("subset", "history")
#: optional fields of an items.jsonl line: the items table's (items.schema.yaml), key for its release_key
ITEM_OPTIONAL = ("key", "item_id", "conversation_id", "profile", "original_reply", "original_status",
                 "original_strategies", "emotion_type", "problem_type", "situation", "flags")
ROLES = ("seeker", "supporter")


def _jsonl(path: Path):
    """(line number, object) of every non-blank line of a JSON Lines file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise PublicFormatError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise PublicFormatError(f"{path}, line {n}: not a JSON object ({exc}); one object per line") from None
        if not isinstance(obj, dict):
            raise PublicFormatError(f"{path}, line {n}: a JSON {type(obj).__name__}, not an object")
        yield n, obj


def _history(path, n, value) -> list[dict]:
    where = f"{path}, line {n}: field 'history'"
    if not isinstance(value, list) or not value:
        raise PublicFormatError(f"{where}: expected a non-empty list of {{\"role\", \"text\"}} turns")
    turns = []
    for k, turn in enumerate(value):
        if not isinstance(turn, dict) or set(turn) != {"role", "text"}:
            raise PublicFormatError(f"{where}, turn {k + 1}: expected an object with exactly 'role' and 'text'")
        if turn["role"] not in ROLES:
            raise PublicFormatError(f"{where}, turn {k + 1}: role {turn['role']!r}; expected one of {', '.join(ROLES)}")
        if not isinstance(turn["text"], str) or records.is_blank(turn["text"]):
            raise PublicFormatError(f"{where}, turn {k + 1}: 'text' is empty or not a string")
        turns.append({"role": turn["role"], "text": turn["text"]})
    if turns[-1]["role"] != "seeker":
        raise PublicFormatError(f"{where}: the last turn is the supporter's; an item ends on the seeker's turn "
                                "(the reply to it is what systems write)")
    return turns


def read_items(path) -> pd.DataFrame:
    """``items.jsonl`` as the items table (items.schema.yaml): the id made from the history, a field not given
    left empty (null), never guessed. ``items.parquet`` is read as it is."""
    path = Path(path)
    if path.suffix == ".parquet":
        from heart.common import tableio

        return tableio.read_table(path)
    rows, seen = [], {}
    for n, obj in _jsonl(path):
        unknown = sorted(set(obj) - set(ITEM_REQUIRED) - set(ITEM_OPTIONAL))
        missing = [f for f in ITEM_REQUIRED if f not in obj or obj[f] is None]
        if unknown or missing:
            raise PublicFormatError(f"{path}, line {n}: " + "; ".join(
                [f"field {f!r} missing" for f in missing] + [f"unknown field {f!r}" for f in unknown])
                + f" (fields: {', '.join(ITEM_REQUIRED)}, optional {', '.join(ITEM_OPTIONAL)})")
        if obj["subset"] not in ("regular", "adversarial"):
            raise PublicFormatError(f"{path}, line {n}: field 'subset' is {obj['subset']!r}; expected regular or "
                                    "adversarial")
        history = _history(path, n, obj["history"])
        made = history_id(history)
        if obj.get("item_id") not in (None, made):
            raise PublicFormatError(f"{path}, line {n}: field 'item_id' is {obj['item_id']!r} but the history's "
                                    f"id is {made!r}; leave item_id out (it is made from the history)")
        if made in seen:
            raise PublicFormatError(f"{path}, lines {seen[made]} and {n}: the same history twice; keep one")
        seen[made] = n
        conv = obj.get("conversation_id")
        if conv is not None and not (isinstance(conv, int) and not isinstance(conv, bool)):
            raise PublicFormatError(f"{path}, line {n}: field 'conversation_id' is {conv!r}; expected an integer "
                                    "(the dataset's conversation) or nothing")
        for field in ("key", "profile", "original_reply", "original_status", "emotion_type", "problem_type",
                      "situation"):
            if obj.get(field) is not None and not isinstance(obj[field], str):
                raise PublicFormatError(f"{path}, line {n}: field {field!r} is {obj[field]!r}; expected text")
        reply = obj.get("original_reply")
        rows.append({"item_id": made, "release_key": obj.get("key"), "conversation_id": conv,
                     "subset": obj["subset"], "profile": obj.get("profile"), "seeker_turn_index": None,
                     "history": history, "original_reply": None if records.is_blank(reply or "") else reply,
                     "original_status": obj.get("original_status"),
                     "original_strategies": list(obj.get("original_strategies") or []),
                     "emotion_type": obj.get("emotion_type"), "problem_type": obj.get("problem_type"),
                     "situation": obj.get("situation"), "flags": list(obj.get("flags") or []),
                     "response_potential": None, "distress": None, "conflict": None, "help_request": None,
                     "n_strategy_families": None})
    items = pd.DataFrame(rows, columns=[c for c in items_mod.COLUMNS if c != "cluster"])
    items = items_mod.complete(items)
    try:
        items_mod.lookup(items)
    except ValueError as exc:
        raise PublicFormatError(f"{path}: {exc}") from None
    return items


# --- verdicts and pairs ----------------------------------------------------------------------------

def read_verdicts(path, items: pd.DataFrame) -> pd.DataFrame:
    """``llm_verdicts.jsonl`` (the public judgment format) read and held to what a bundle's verdicts are: every
    record an LLM judge's, with its shown order and its strength (the HEART judges' 1-5), on the bundle's items."""
    from heart.judging import judgment_import as ji

    try:
        table = ji.resolve_items(ji.read(path), items)
    except ValueError as exc:
        raise PublicFormatError(str(exc)) from None
    for field, bad, why in (("judge_kind", table["judge_kind"].ne("llm"), "a bundle's LLM verdicts are 'llm' (human "
                                                                         "ratings go to human_judgments.jsonl)"),
                            ("order", table["order"].isna(), "each record is one shown order (AB or BA): "
                                                             "verdicts combined over both orders cannot be split"),
                            ("strength", table["strength"].isna() & table["winner"].ne(ji.UNPARSED),
                             "the judge's strength 1-5 is part of the HEART verdict")):
        if bad.any():
            r = table[bad].iloc[0]
            value = "not given" if pd.isna(r[field]) else f"{r[field]!r}"
            raise PublicFormatError(f"{r['file']}, {r['record']}: field {field!r} is {value}: {why} "
                                    f"({int(bad.sum())} such records)")
    return table


def rating_records(path, items: pd.DataFrame) -> pd.DataFrame:
    """The human ratings file's judged pairs (quality checks aside): item_id, the two shown completions as
    system and contributor, and the line."""
    from heart.judging import human_judgments as hj

    table = hj.resolve_items(hj.read(path), items, path)
    rated = table[table["qc_expected"].isna() | table["qc_expected"].eq("")]
    rows = []
    for r in rated.itertuples():
        (sa, ca), (sb, cb) = hj._split_ref(r.shown_a), hj._split_ref(r.shown_b)
        rows.append({"item_id": r.item_id, "system_a": sa, "contributor_a": ca, "system_b": sb, "contributor_b": cb,
                     "line": r.line})
    return pd.DataFrame(rows, columns=[*PAIR_FIELDS, "line"])


PAIR_FIELDS = ["item_id", "system_a", "contributor_a", "system_b", "contributor_b"]


def derive_pairs(items: pd.DataFrame, *judged: pd.DataFrame) -> pd.DataFrame:
    """The pairs (pairs.schema.yaml) of what was judged: every pair the tables ``judged`` name (LLM verdicts,
    :func:`read_verdicts`; human ratings, :func:`rating_records`), oriented as the first record naming it gives
    its two completions, ids by :func:`heart.judging.pairs.pair_id` (the author computes no hash)."""
    from heart.judging import pairs as pairs_mod
    from heart.judging.judgment_import import _ref

    parts = [frame[PAIR_FIELDS] for frame in judged]
    named = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PAIR_FIELDS)
    named = named.astype(object).where(named.notna(), None)
    cluster = items_mod.clusters(items)
    subset = dict(zip(items["item_id"], items["subset"]))
    rows = []
    for r in named.itertuples():
        ref_a, ref_b = _ref(r.system_a, r.contributor_a), _ref(r.system_b, r.contributor_b)
        rows.append({"pair_id": pairs_mod.pair_id(r.item_id, ref_a, ref_b), "item_id": r.item_id,
                     "conversation_id": cluster[r.item_id], "subset": subset[r.item_id],
                     "system_a": r.system_a, "contributor_a": r.contributor_a,
                     "system_b": r.system_b, "contributor_b": r.contributor_b,
                     "kind": "-".join(sorted((pairs_mod.source_of(r.system_a, r.contributor_a),
                                              pairs_mod.source_of(r.system_b, r.contributor_b))))})
    out = pd.DataFrame(rows, columns=pairs_mod.COLUMNS).drop_duplicates("pair_id", keep="first")
    return out.sort_values("pair_id", ignore_index=True)


def verdict_table(verdicts: pd.DataFrame, items: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """:func:`read_verdicts`' records as the judge verdict table (judge_verdicts.schema.yaml), signed to the
    pairs' orientation; the judge's answer text and cache key are not in the public format (empty)."""
    from heart.judging import judgment_import as ji

    keep = [c for c in ji.TABLE_COLUMNS if c in verdicts.columns]
    return ji.convert(verdicts[keep], items=items, pairs=pairs).verdicts


# --- tags ------------------------------------------------------------------------------------------

TAG_REQUIRED = ["item_id", "system", "tagger", "strategy", "label"]
TAG_OPTIONAL = ["contributor_id", "probability", "evidence"]
LABELS = ("present", "absent", "uncertain")


def read_tags(path, items: pd.DataFrame) -> pd.DataFrame:
    """``strategy_tags.jsonl`` as the strategy tag table (strategy_tags.schema.yaml); ``item_id`` may be an
    item's key. ``strategy_tags.parquet`` is read as it is."""
    from heart.common import tableio

    path = Path(path)
    if path.suffix == ".parquet":
        return tableio.read_table(path)
    try:
        df = records.read_records(path, TAG_REQUIRED, TAG_OPTIONAL, ids=("item_id", "system", "contributor_id",
                                                                         "tagger", "strategy"))
    except records.RecordError as exc:
        raise PublicFormatError(str(exc)) from None
    keys = items_mod.lookup(items)
    rows = []
    for r in df.itertuples():
        where = f"{path}, {records.record_label(path, r.line)}"
        if r.item_id not in keys:
            raise PublicFormatError(f"{where}: field 'item_id' is {r.item_id!r}, neither an item's id nor its key "
                                    f"(expected {items_mod.key_hint(items)})")
        if r.label not in LABELS:
            raise PublicFormatError(f"{where}: field 'label' is {r.label!r}; expected one of {', '.join(LABELS)}")
        prob = None
        if getattr(r, "probability", "").strip():
            try:
                prob = float(r.probability)
            except ValueError:
                prob = math.nan
            if not 0 <= prob <= 1:
                raise PublicFormatError(f"{where}: field 'probability' is {r.probability!r}; expected 0..1 or empty")
        rows.append({"item_id": keys[r.item_id], "system": r.system,
                     "contributor_id": getattr(r, "contributor_id", "") or None, "tagger": r.tagger,
                     "strategy": r.strategy, "label": r.label, "probability": prob,
                     "evidence": getattr(r, "evidence", "") or None, "parse_ok": True, "parse_error": None,
                     "cache_key": "", "from_cache": False, "neutralised_tokens": 0})
    tags = pd.DataFrame(rows, columns=tableio.table_schema("strategy_tags").names)
    twice = tags.duplicated(["item_id", "system", "contributor_id", "tagger", "strategy"])
    if twice.any():
        line = records.record_label(path, int(df["line"].iloc[int(twice.to_numpy().nonzero()[0][0])]))
        raise PublicFormatError(f"{path}, {line}: a second label of the same completion, strategy and tagger")
    return tags
