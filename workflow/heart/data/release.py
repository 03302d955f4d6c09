"""The paper's own dialogue contexts as released: read, checked and mapped onto ESConv (their items are
:mod:`heart.items.released`).

The HEART authors released the paper's 300 dialogue contexts (280 regular, 20 adversarial) as two JSON
files (``data/dialogues_regular.json``, ``data/dialogues_adversarial.json`` of the GitHub repository
Hippocratic-AI-Research/HEART; format in ``workflow/schemas/release.schema.yaml``). With
``items.source: release`` they are the study's items (:mod:`heart.items.released`), kept exactly as
released:

* A record's **release key** is its subset and 0-based position in its file (``regular:17``,
  ``adversarial:3``); the item id stays the content hash of the history, so files keyed either way join.
* Every **regular** context is mapped to its ESConv conversation (:func:`map_regular`): the one whose
  situation, emotion and problem type equal the record's (whitespace-normalised) and whose merged turns
  (:mod:`heart.data.esconv`) begin with the record's history. The match quality is ``exact`` (every entry
  and speaker equal after whitespace normalisation), ``damaged`` (same speakers, but some entries differ
  slightly from ESConv: truncated, or a few characters lost, as four records are from a CSV round trip
  upstream), or ``unmatched``. A damaged record is kept as released and flagged, never repaired.
* ``original`` is the release's ``vanilla_completion``; its ``original_status`` says whether it is the
  real next supporter turn (``next_turn``), the next turn after *another* released context of the same
  conversation (``sibling_context``), another supporter turn of it (``other_turn``) or none
  (``not_found``); every status but ``next_turn`` is also a flag.
* The **adversarial** contexts are the authors' LLM rewrites; the release gives neither their
  escalation profile (``profile`` null, flag ``profile_unknown``) nor their source conversation nor a
  reply. A rewrite that keeps two or more entries of exactly one ESConv conversation (and shares its
  emotion and problem type) is attributed to it, so both share a bootstrap cluster.
"""

from __future__ import annotations

import difflib
from collections import Counter
from functools import lru_cache
from pathlib import Path

import jsonschema
import pandas as pd
import yaml

from heart.common.atomic import sha256_file
from heart.common import strict_json
from heart.common.records import is_blank
from heart.common.strict_json import format_path
from heart import WORKFLOW_DIR
from heart.common.vocabulary import SUBSETS

SCHEMA_PATH = WORKFLOW_DIR / "schemas" / "release.schema.yaml"
#: an entry that differs from ESConv counts as damaged (not another text) above this similarity
NEAR = 0.9
#: shared entries needed to attribute a rewritten (adversarial) context to an ESConv conversation
MIN_SHARED = 2

MAPPING_COLUMNS = ["release_key", "record", "conversation_id", "quality", "n_entries", "end_turn_index",
                   "ends_on", "differing_entries", "detail", "original_status", "original_turn_index"]


class ReleaseFormatError(ValueError):
    """A release file cannot be read; the message names the file, the record and the field."""


def key(subset: str, record: int) -> str:
    """Release key of record ``record`` (0-based) of file ``dialogues_<subset>.json``."""
    return f"{subset}:{record}"


def normalise(text: str) -> str:
    """Whitespace-normalised text: runs of white space (newlines too) become one space, ends trimmed."""
    return " ".join(str(text).split())


@lru_cache(maxsize=1)
def _validators():
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    regular = {**schema["$defs"]["regular"], "$schema": schema["$schema"]}
    return cls(schema), cls(regular)


def read(path, subset: str) -> list[dict]:
    """Read and check one release file; return its records unmodified.

    Raises
    ------
    ReleaseFormatError
        The file is missing, not UTF-8 JSON, not a list of objects, or a record breaks the format; the
        message names the file, the record index and the field.
    """
    path = Path(path)
    if subset not in SUBSETS:
        raise ValueError(f"unknown release subset {subset!r} (expected one of {SUBSETS})")
    if not path.is_file():
        raise ReleaseFormatError(
            f"{path}: file not found. Point the workflow at a copy of the release with "
            "'release: {local_copy: /path/to/folder}' (the folder holding dialogues_regular.json and "
            "dialogues_adversarial.json), or set release.local_copy to null to download it.")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReleaseFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:  # duplicate keys, huge numbers, NaN, deep nesting, lone surrogates, control characters: located
        data = strict_json.loads(text)
    except strict_json.StrictJSONError as exc:
        raise ReleaseFormatError(f"{path}: {_located(exc.where)}{exc.problem}") from None
    if not isinstance(data, list):
        raise ReleaseFormatError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    base, regular = _validators()
    for i, rec in enumerate(data):
        where = f"{path}: record {i}"
        if not isinstance(rec, dict):
            raise ReleaseFormatError(f"{where}: expected an object, got {type(rec).__name__}")
        for validator in (base, regular) if subset == "regular" else (base,):
            error = jsonschema.exceptions.best_match(validator.iter_errors(rec))
            if error is not None:
                field = format_path(error.absolute_path) or "(record)"
                if error.validator == "required":
                    field = next(m for m in error.validator_value if m not in error.instance)
                    raise ReleaseFormatError(f"{where}, {field}: missing")
                if error.validator == "pattern":
                    raise ReleaseFormatError(f"{where}, {field}: is empty or blank")
                raise ReleaseFormatError(f"{where}, {field}: {error.message:.200}")
        blank = next((p for p, v in strict_json.walk(rec, keys=False) if isinstance(v, str) and is_blank(v)), None)
        if blank is not None:
            raise ReleaseFormatError(f"{where}, {format_path(blank)}: is empty or blank (white space or invisible "
                                     "characters only)")
        speakers = rec.get("prev_speakers")
        if speakers is not None and len(speakers) != len(rec["dialogue_history"]):
            raise ReleaseFormatError(f"{where}, prev_speakers: {len(speakers)} speakers for "
                                     f"{len(rec['dialogue_history'])} dialogue_history entries")
    return data


def _located(where) -> str:
    """"record 3, field: " for a JSON path into the file's list of records ("" where it has none)."""
    if not where:
        return ""
    if isinstance(where[0], int):
        return f"record {where[0]}" + (f", {format_path(where[1:])}" if len(where) > 1 else "") + ": "
    return f"{format_path(where)}: "


def roles(record: dict, subset: str) -> list[str]:
    """The speaker of every history entry: as released, or (adversarial) alternating from the supporter."""
    if record.get("prev_speakers") is not None:
        return list(record["prev_speakers"])
    if subset == "adversarial":
        return ["supporter" if k % 2 == 0 else "seeker" for k in range(len(record["dialogue_history"]))]
    raise ValueError("a regular record needs prev_speakers")


def source_table(paths: dict, records: dict, upstream: dict) -> pd.DataFrame:
    """Which release files were read (``records``: each subset's, as :func:`read` returned them): one row
    per subset with path, sha256, size, records, and the pin."""
    rows = []
    for subset in SUBSETS:
        path = Path(paths[subset])
        digest = sha256_file(path)
        pin = upstream[subset]
        rows.append({"subset": subset, "path": str(path), "sha256": digest, "bytes": path.stat().st_size,
                     "n_records": len(records[subset]), "url": pin["url"],
                     "upstream_sha256": pin["sha256"],
                     "matches_upstream": None if not pin["sha256"] else digest == pin["sha256"]})
    return pd.DataFrame(rows)


def conversation_texts(turns: pd.DataFrame) -> dict:
    """conversation id -> (its whitespace-normalised turn texts, their roles, their strategy labels), in turn order."""
    out = {}
    for cid, g in turns.sort_values(["conversation_id", "turn_index"]).groupby("conversation_id", sort=True):
        out[int(cid)] = ([normalise(t) for t in g["text"]], list(g["role"]), list(g["strategies"]))
    return out


def _difference(released: str, esconv: str) -> str:
    if esconv.startswith(released):
        return "truncated"
    if difflib.SequenceMatcher(None, released, esconv, autojunk=False).ratio() >= NEAR:
        return "characters lost or changed"
    return ""


def map_regular(records: list[dict], conversations: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """The ESConv conversation and end position of every regular record, with the match quality.

    Returns the mapping table (``release_mapping.schema.yaml``): per record the conversation, the turn
    index of the history's last entry, the quality (exact / damaged / unmatched), which entries differ
    and how, and what the vanilla completion is (see the module docstring).
    """
    labels = {}
    for r in conversations.itertuples():
        labels.setdefault((normalise(r.situation), r.emotion_type, r.problem_type), []).append(int(r.conversation_id))
    texts = conversation_texts(turns)
    rows = []
    for i, rec in enumerate(records):
        history = [normalise(t) for t in rec["dialogue_history"]]
        speakers = roles(rec, "regular")
        candidates = labels.get((normalise(rec["situation"]), rec["emotion_type"], rec["problem_type"]), [])
        best = None
        for cid in candidates:
            conv, conv_roles, _ = texts[cid]
            if len(conv) < len(history) or conv_roles[: len(history)] != speakers:
                continue
            diffs = [k for k, (a, b) in enumerate(zip(history, conv)) if a != b]
            kinds = [_difference(history[k], conv[k]) for k in diffs]
            if all(kinds) and (best is None or len(diffs) < len(best[1])):
                best = (cid, diffs, kinds)
        row = {"release_key": key("regular", i), "record": i, "n_entries": len(history), "ends_on": speakers[-1],
               "conversation_id": None, "quality": "unmatched", "end_turn_index": None, "differing_entries": [],
               "detail": (f"{len(candidates)} ESConv conversation(s) with this situation and labels, none "
                          "beginning with this history" if candidates else
                          "no ESConv conversation with this situation, emotion and problem type"),
               "original_status": "not_found", "original_turn_index": None}
        if best is not None:
            cid, diffs, kinds = best
            row.update(conversation_id=cid, end_turn_index=len(history) - 1, differing_entries=diffs,
                       quality="damaged" if diffs else "exact",
                       detail="; ".join(f"entry {k}: {how} (kept as released)" for k, how in zip(diffs, kinds)))
        rows.append(row)
    mapping = pd.DataFrame(rows, columns=MAPPING_COLUMNS)
    _original_status(mapping, records, texts)
    return mapping


def _original_status(mapping: pd.DataFrame, records: list[dict], texts: dict) -> None:
    """Fill original_status / original_turn_index in place (siblings: other records of the conversation)."""
    ends = mapping.dropna(subset=["conversation_id"]).groupby("conversation_id")["n_entries"].apply(list)
    for idx, row in mapping.iterrows():
        if pd.isna(row["conversation_id"]):
            continue
        cid = int(row["conversation_id"])
        conv, conv_roles, _ = texts[cid]
        reply = normalise(records[row["record"]]["vanilla_completion"])
        supporter = [k for k, (t, r) in enumerate(zip(conv, conv_roles)) if r == "supporter" and t == reply]
        n = row["n_entries"]
        siblings = [m for m in ends[cid] if m != n]
        if n in supporter:
            status, turn = "next_turn", n
        elif any(m in supporter for m in siblings):
            status, turn = "sibling_context", next(m for m in siblings if m in supporter)
        elif supporter:
            status, turn = "other_turn", supporter[0]
        else:
            status, turn = "not_found", None
        mapping.at[idx, "original_status"] = status
        mapping.at[idx, "original_turn_index"] = turn


def map_adversarial(records: list[dict], conversations: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """The ESConv conversation an adversarial rewrite keeps text of, where exactly one qualifies.

    Attributed: the conversation with the most entries equal (whitespace-normalised) to the record's,
    at least :data:`MIN_SHARED` of them, strictly more than any other conversation, and the same emotion
    and problem type. Otherwise quality ``unmatched`` (the item is then its own bootstrap cluster).
    """
    texts = conversation_texts(turns)
    where = {}
    for cid, (conv, _, _) in texts.items():
        for t in set(conv):
            where.setdefault(t, set()).add(cid)
    labels = conversations.set_index("conversation_id")[["emotion_type", "problem_type"]]
    rows = []
    for i, rec in enumerate(records):
        history = [normalise(t) for t in rec["dialogue_history"]]
        shared = Counter(c for t in set(history) for c in where.get(t, ()))
        top = shared.most_common(2)
        row = {"release_key": key("adversarial", i), "record": i, "n_entries": len(history),
               "ends_on": roles(rec, "adversarial")[-1], "conversation_id": None, "quality": "unmatched",
               "end_turn_index": None, "differing_entries": [], "original_status": None,
               "original_turn_index": None,
               "detail": "an LLM rewrite; no ESConv conversation shares two or more of its entries"}
        if top and top[0][1] >= MIN_SHARED and (len(top) == 1 or top[0][1] > top[1][1]):
            cid, n = top[0]
            same = tuple(labels.loc[cid]) == (rec["emotion_type"], rec["problem_type"])
            if same:
                row.update(conversation_id=int(cid), quality="shared_text",
                           detail=f"an LLM rewrite sharing {n} of its {len(history)} entries with this conversation")
            else:
                row["detail"] = (f"an LLM rewrite sharing {n} entries with conversation {cid}, whose emotion "
                                 "or problem type differs: not attributed")
        rows.append(row)
    return pd.DataFrame(rows, columns=MAPPING_COLUMNS)
