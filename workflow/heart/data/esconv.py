"""Read raw ESConv JSON into tidy conversation and turn tables.

ESConv (Liu et al., 2021) ships one JSON array of conversations, each with
situational labels and a ``dialog`` of utterances. The HEART paper (§9.2)
builds its evaluation items from this file. This module validates the file
strictly -- every problem is reported as ``<file>: conversation <i>, <field>:
<problem>`` -- and turns it into two tables:

* conversations: one row per conversation (labels, situation, survey scores);
* turns: one row per *turn*, where consecutive utterances of one speaker are
  merged (the utterance boundaries are kept in ``utterances``).

Both speaker vocabularies seen upstream are understood: ``seeker/supporter``
(ESConv.json) and ``speaker/listener`` (FailedESConv.json).
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

import jsonschema
import pandas as pd
import yaml

from heart import WORKFLOW_DIR
from heart.common.atomic import atomic_path, sha256_file
from heart.common.strict_json import (
    MAX_DEPTH,
    Duplicates,
    HugeNumber,
    bad_text,
    brackets,
    describe_char,
    find_duplicates,
    find_huge,
    find_undecodable,
    int_hook,
    pairs_hook,
    too_deep,
    too_deep_at,
)
from heart.common.strict_json import format_path

SCHEMA_PATH = WORKFLOW_DIR / "schemas" / "esconv.schema.yaml"

#: upstream speaker label -> HEART role
ROLE_OF_SPEAKER = {
    "seeker": "seeker",
    "supporter": "supporter",
    "speaker": "seeker",
    "listener": "supporter",
}
VOCABULARY_OF_SPEAKER = {
    "seeker": "seeker/supporter",
    "supporter": "seeker/supporter",
    "speaker": "speaker/listener",
    "listener": "speaker/listener",
}
SEEKER_SCORES = ["initial_emotion_intensity", "empathy", "relevance", "final_emotion_intensity"]
SUPPORTER_SCORES = ["relevance"]


class ESConvFormatError(ValueError):
    """Raised when an ESConv file cannot be read; the message names file, record and field."""


_SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())


def _inline_defs(node, defs: dict):
    """``node`` with every ``{$ref: "#/$defs/<name>"}`` replaced by that definition (the schema has no cycle):
    the same checks, without resolving a reference for every text and score of every turn (the real file's
    ~75,000 lookups were a fifth of its validation)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_defs(defs[ref.removeprefix("#/$defs/")], defs)
        return {key: _inline_defs(value, defs) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline_defs(value, defs) for value in node]
    return node


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(_SCHEMA)
    cls.check_schema(_SCHEMA)
    return cls(_inline_defs(_SCHEMA, _SCHEMA["$defs"]))


_TEXT_PATTERN = _SCHEMA["$defs"]["text"]["pattern"]
_SCORE_DIGITS = _SCHEMA["$defs"]["score"]["anyOf"][0]["enum"]




def _field_name(path) -> str:
    return format_path(path) or "(conversation)"


def _describe(error: jsonschema.ValidationError) -> tuple[str, str]:
    """Turn a jsonschema error into (field, problem) in plain words."""
    path = list(error.absolute_path)
    kind = error.validator
    value = error.instance
    if kind == "required":
        missing = next(m for m in error.validator_value if m not in value)
        return _field_name(path + [missing]), "missing"
    if kind == "type":
        expected = error.validator_value
        return _field_name(path), f"expected {expected}, got {type(value).__name__} {value!r:.60}"
    if kind == "enum" and error.validator_value == _SCORE_DIGITS:
        return _field_name(path), f"expected a rating from 0 to 5 written as digits, got {value!r:.60}"
    if kind == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return _field_name(path), f"unknown value {value!r:.60} (expected one of: {allowed})"
    if kind == "minItems":
        return _field_name(path), "is empty"
    if kind == "pattern" and error.validator_value == _TEXT_PATTERN:
        return _field_name(path), "is empty or blank (white space or invisible characters only)"
    if kind in ("anyOf", "pattern", "minimum", "maximum"):
        return _field_name(path), f"expected a rating from 0 to 5 written as digits, got {value!r:.60}"
    return _field_name(path), error.message


def _fail(path, index, field, problem) -> ESConvFormatError:
    where = f"conversation {index}, {field}" if index is not None else field
    return ESConvFormatError(f"{path}: {where}: {problem}")




def _conversation_index_at(text: str, pos: int) -> int | None:
    """Index of the top-level array element that contains character ``pos`` (None if outside)."""
    index, depth = -1, 0
    for _, depth, opening in brackets(text, pos):
        if opening and depth == 2:
            index += 1
    return index if index >= 0 and depth >= 2 else None






















def _locate(where) -> tuple[int | None, str]:
    """(conversation index, field) of a location in the whole file: the first step is the conversation
    only when the file is an array."""
    where = list(where)
    if where and isinstance(where[0], int):
        return where[0], _field_name(where[1:])
    return None, format_path(where) or "(top level)"






def read_raw(path: str | Path) -> list[dict]:
    """Read and syntactically check an ESConv JSON file.

    Parameters
    ----------
    path : str or Path
        ESConv.json or FailedESConv.json in the upstream schema.

    Returns
    -------
    list of dict
        The conversations, unmodified.

    Raises
    ------
    ESConvFormatError
        File missing, not UTF-8, not JSON, or not a JSON array of objects. The
        message names the file and, where it can be located, the conversation.
    """
    path = Path(path)
    if path.is_dir():
        raise ESConvFormatError(f"{path}: is a directory; expected the file ESConv.json")
    if not path.is_file():
        raise ESConvFormatError(
            f"{path}: file not found. Point the workflow at a copy of ESConv.json with "
            "'esconv: {local_copy: /path/to/ESConv.json}' in the config (or make run ESCONV=...)."
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is accepted
    except UnicodeDecodeError as exc:
        lossy = raw.decode("utf-8", errors="surrogateescape")
        where = f"byte {exc.start}"
        try:
            loc = find_undecodable(json.loads(lossy, parse_int=int_hook([]), parse_float=Decimal))
        except (ValueError, RecursionError):
            loc = None
        if loc and isinstance(loc[0], int):
            raise _fail(path, loc[0], _field_name(loc[1:]), f"not valid UTF-8 ({where})") from None
        index = _conversation_index_at(lossy, exc.start)
        raise _fail(path, index, "text", f"not valid UTF-8 ({where})") from None
    if not text.strip():
        raise ESConvFormatError(f"{path}: file is empty")
    duplicates: list[Duplicates] = []
    huge_numbers: list[HugeNumber] = []
    try:
        # a number with a fraction or exponent stays a Decimal, which the schema's integer ratings refuse:
        # as a float, 5.0 or 4.99999999999999999999 would pass as the rating 5
        data = json.loads(text, object_pairs_hook=pairs_hook(duplicates), parse_int=int_hook(huge_numbers),
                          parse_float=Decimal)
    except json.JSONDecodeError as exc:
        index = _conversation_index_at(text, exc.pos)
        problem = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise _fail(path, index, "json", problem) from None
    except RecursionError:
        pos = too_deep_at(text)
        index = _conversation_index_at(text, pos)
        raise _fail(path, index, "json", f"nested more than {MAX_DEPTH} levels deep (at character {pos}); "
                    "ESConv nests 5 levels") from None
    deep = too_deep(data)
    if deep:
        index = deep[0] if isinstance(deep[0], int) else None
        under = format_path(deep[1:4] if index is not None else deep[:3])
        raise _fail(path, index, "json", f"nested more than {MAX_DEPTH} levels deep (under {under}); "
                    "ESConv nests 5 levels") from None
    if duplicates:
        where, key = find_duplicates(data) or ((), duplicates[0].keys_twice[0])
        raise _fail(path, *_locate([*where, key]),
                    "the key appears twice in one object (a JSON reader keeps one silently); remove one") from None
    huge = find_huge(data) if huge_numbers else None
    if huge:
        raise _fail(path, *_locate(huge[0]), f"a number of {huge[1].digits} digits; no ESConv field holds "
                    "one (ratings are 0 to 5)") from None
    if not isinstance(data, list):
        raise ESConvFormatError(
            f"{path}: top level must be a JSON array of conversations, got {type(data).__name__}"
        )
    if not data:
        raise ESConvFormatError(f"{path}: contains no conversations")
    return data


def validate_conversation(conv, index: int, path) -> None:
    """Check one conversation against ``workflow/schemas/esconv.schema.yaml``.

    Raises
    ------
    ESConvFormatError
        ``<file>: conversation <index>, <field>: <problem>`` for the first problem found.
    """
    if not isinstance(conv, dict):
        raise _fail(path, index, "(conversation)", f"expected object, got {type(conv).__name__}")
    errors = list(_validator().iter_errors(conv))
    if errors:
        # report the most specific problem of the first offending field, in document order
        def order(e):
            return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in e.absolute_path]

        first = min(errors, key=order)
        same_field = [e for e in errors if list(e.absolute_path) == list(first.absolute_path)]
        raise _fail(path, index, *_describe(jsonschema.exceptions.best_match(same_field)))
    bad = bad_text(conv)
    if bad:
        raise _fail(path, index, _field_name(bad[0]), f"contains {describe_char(bad[1])}")
    vocabularies = {VOCABULARY_OF_SPEAKER[u["speaker"]] for u in conv["dialog"]}
    if len(vocabularies) > 1:
        raise _fail(
            path, index, "dialog", f"mixes speaker vocabularies {sorted(vocabularies)}"
        )
    roles = {ROLE_OF_SPEAKER[u["speaker"]] for u in conv["dialog"]}
    if len(roles) < 2:
        raise _fail(path, index, "dialog", f"has only {roles.pop()} utterances; a conversation needs a seeker "
                    "and a supporter")


def _score(value):
    return None if value is None else int(value)


def normalise(data: list[dict], path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate every conversation and build the conversations and turns tables.

    Parameters
    ----------
    data : list of dict
        Output of :func:`read_raw`.
    path : str or Path
        The file the data came from (for error messages only).

    Returns
    -------
    conversations, turns : DataFrame
        See ``workflow/schemas/tables/conversations.schema.yaml`` and ``turns.schema.yaml``.
    """
    conv_rows, turn_rows = [], []
    for i, conv in enumerate(data):
        validate_conversation(conv, i, path)
        survey = conv.get("survey_score") or {}
        seeker, supporter = survey.get("seeker") or {}, survey.get("supporter") or {}
        turns = []
        for j, utt in enumerate(conv["dialog"]):
            role = ROLE_OF_SPEAKER[utt["speaker"]]
            ann = utt.get("annotation") or {}
            text = " ".join(utt["content"].split())
            if turns and turns[-1]["role"] == role:
                cur = turns[-1]
            else:
                cur = {"role": role, "utterances": [], "strategies": [], "feedback": None,
                       "first_utterance": j}
                turns.append(cur)
            cur["utterances"].append(text)
            if role == "supporter":
                cur["strategies"].append(ann.get("strategy"))
            if ann.get("feedback") is not None:
                # feedback rates the supporter's preceding turns; keep the latest in the turn
                cur["feedback"] = int(ann["feedback"])
        for k, t in enumerate(turns):
            turn_rows.append({
                "conversation_id": i,
                "turn_index": k,
                "role": t["role"],
                "text": " ".join(t["utterances"]),
                "utterances": t["utterances"],
                "first_utterance_index": t["first_utterance"],
                "strategies": t["strategies"] if t["role"] == "supporter" else None,
                "feedback": t["feedback"],
            })
        conv_rows.append({
            "conversation_id": i,
            "experience_type": conv["experience_type"],
            "emotion_type": conv["emotion_type"],
            "problem_type": conv["problem_type"],
            "situation": " ".join(conv["situation"].split()),
            "speaker_vocabulary": VOCABULARY_OF_SPEAKER[conv["dialog"][0]["speaker"]],
            "n_utterances": len(conv["dialog"]),
            "n_turns": len(turns),
            **{f"seeker_{k}": _score(seeker.get(k)) for k in SEEKER_SCORES},
            **{f"supporter_{k}": _score(supporter.get(k)) for k in SUPPORTER_SCORES},
        })
    conversations = pd.DataFrame(conv_rows)
    turns = pd.DataFrame(turn_rows)
    return conversations, turns


def source_record(path, data: list[dict], upstream_sha256: str | None) -> pd.DataFrame:
    """One-row table recording which file was used (path, sha256, size) and how it compares upstream."""
    path = Path(path)
    digest = sha256_file(path)
    vocab = sorted({VOCABULARY_OF_SPEAKER[c["dialog"][0]["speaker"]] for c in data})
    return pd.DataFrame([{
        "path": str(path),
        "sha256": digest,
        "bytes": path.stat().st_size,
        "n_conversations": len(data),
        "speaker_vocabulary": ",".join(vocab),
        "upstream_sha256": upstream_sha256,
        "matches_upstream": None if upstream_sha256 is None else digest == upstream_sha256,
    }])


def ingest(path) -> tuple[pd.DataFrame, pd.DataFrame, list[dict]]:
    """Read, validate and normalise an ESConv file (see :func:`normalise`)."""
    data = read_raw(path)
    conversations, turns = normalise(data, path)
    return conversations, turns, data


def download(url: str, dest, sha256: str | None = None, timeout: float = 60.0, what: str = "ESConv",
             setting: str = "esconv", howto: str | None = None) -> str:
    """Download ``url`` to ``dest`` atomically; check ``sha256`` when given; return the digest.

    ``what`` names the data in messages, ``setting`` the config section pinning it, ``howto`` says how to
    use a local copy instead (default: ESConv's).

    Raises
    ------
    RuntimeError
        With a message saying how to provide a local copy when the download fails
        (e.g. offline) or the digest does not match.
    """
    howto = howto or (
        "To use a local copy instead, set it in the config: "
        "'esconv: {local_copy: /path/to/ESConv.json}' (or run: make run ESCONV=/path/to/ESConv.json), "
        f"or place the file at {dest}."
    )
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            payload = resp.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise RuntimeError(f"could not download {what} from {url}: {exc}. {howto}") from None
    digest = hashlib.sha256(payload).hexdigest()
    if sha256 and digest != sha256:
        raise RuntimeError(
            f"downloaded {url} has sha256 {digest}, expected {sha256} (config {setting}.sha256). {howto}"
        )
    with atomic_path(dest) as tmp:
        Path(tmp).write_bytes(payload)
    return digest
