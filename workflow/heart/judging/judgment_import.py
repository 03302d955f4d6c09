"""Pairwise judgments made elsewhere, brought into the workflow's tables ("imported judgments"): read in the
public format of ``resources/imported/README.md`` (CSV, JSON Lines or Parquet), checked, and turned into
pairs, verdicts and human judgments. The decisions it makes: ``docs/methods/imported-judgments.md``.
"""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from heart.items import item_table as items_mod
from heart.judging import human_judgments as hj
from heart.judging import combine, verdicts
from heart.common import records
from heart.judging import pairs as pairs_mod
from heart.judging.pairs import source_of
from heart.common.vocabulary import AXES, AXIS_COLUMNS

REQUIRED = ["item", "system_a", "system_b", "judge", "judge_kind", "winner"]
OPTIONAL = ["contributor_a", "contributor_b", "conversation", "subset", "strength", "order", *AXIS_COLUMNS,
            "rationale", "seconds_spent"]
COLUMNS = [*REQUIRED, *OPTIONAL]
#: the columns of :func:`read`'s table: the format's, then where each record came from
TABLE_COLUMNS = [*COLUMNS, "file", "record"]
JUDGE_KINDS = ("human", "llm")
WINNERS = ("a", "b", "tie")
#: an LLM judge answered, and nobody could read a verdict in its answer: counted as such, never a choice
UNPARSED = "unparsed"
ORDERS = ("AB", "BA")
MARKS = {"a": 1, "b": -1, "tie": 0}
SOURCES = ("model", "human", "dataset")
#: as the config's ``human_judgments.strength_map`` default
DEFAULT_STRENGTH_MAP = {"slight": 2, "significant": 4}
EXTENSIONS = (".csv", *records.JSONL_SUFFIXES, *records.PARQUET_SUFFIXES)
#: identifier fields; each group is one vocabulary (two spellings differing only in case are an error)
ID_GROUPS = [("item",), ("system_a", "system_b"), ("contributor_a", "contributor_b"), ("judge",),
             ("conversation",), ("subset",)]
_ID_FIELDS = {c for g in ID_GROUPS for c in g}
_NUMBER_FIELDS = {"strength", "seconds_spent"}
_STRENGTH = re.compile(r"[1-5](?:\.0+)?", re.ASCII)  # "4.0": how pandas writes a whole number beside gaps
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ref = pairs_mod.completion_ref  # how a completion is named: <system> or <system>#<contributor>
_EXPECTED = f"expected {', '.join(REQUIRED)} (+ optional {', '.join(OPTIONAL)})"


class JudgmentImportError(ValueError):
    """Bad input in an imported judgments file; the message names the file, the record and the field."""


# --- reading -----------------------------------------------------------------------------------

def read(path) -> pd.DataFrame:
    """Read and check an imported judgments file (``.csv``, ``.jsonl``/``.ndjson`` or ``.parquet``).

    Parameters
    ----------
    path : str or Path
        The file; its extension chooses the reader.

    Returns
    -------
    pandas.DataFrame
        ``TABLE_COLUMNS``: the format's columns (identifiers normalised as in
        :func:`heart.common.records.normalise_id`, empty optional fields None, ``strength`` Int64,
        ``seconds_spent`` float; defaults are not filled in yet), ``file`` and ``record``
        ("line 5", "row 3"). The same content in any of the three formats gives the same table but
        for ``record``.

    Raises
    ------
    JudgmentImportError
        Anything :func:`check` rejects, an unknown extension, and what the format's reader rejects
        (for CSV, what :func:`heart.common.records.read_records` rejects; for JSON Lines a line that is not one
        JSON object; for Parquet an unreadable file), each naming the file, the record and the field.
    """
    path = Path(path)
    if path.suffix.lower() not in EXTENSIONS:
        raise JudgmentImportError(f"{path}: unknown file type {path.suffix!r}; name the file *.csv, *.jsonl "
                                  "or *.parquet after its format")
    if not path.is_file():
        raise JudgmentImportError(f"{path}: no such file")
    try:  # one strict reader for the three formats (heart.common.records.read_records): every value as text
        table = records.read_records(path, REQUIRED, OPTIONAL)
    except records.RecordError as exc:
        raise JudgmentImportError(str(exc)) from None
    labels = records.record_labels(path, table["line"])
    return check({c: table[c].to_numpy(dtype=object) for c in COLUMNS}, path, labels)


def from_frame(frame: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """Check a DataFrame in the public format (records are its rows, counted from 1); see :func:`read`."""
    unknown = [c for c in frame.columns if c not in COLUMNS]
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing or unknown:
        raise JudgmentImportError(f"{source}: missing column(s) {missing}, unknown column(s) {unknown}; "
                                  f"{_EXPECTED}")
    values = {c: frame[c].to_numpy(dtype=object) if c in frame.columns else [None] * len(frame) for c in COLUMNS}
    return check(values, source, [f"row {i + 1}" for i in range(len(frame))])


# --- checking ----------------------------------------------------------------------------------

def _texts(values: dict) -> dict[str, list] | None:
    """Every field as :func:`_text` reads it, column -> one value per record; None when a value is refused.

    A value is read once per column however often it repeats (ids and verdicts repeat on every record: at
    paper scale 800,000 fields hold a few hundred distinct values)."""
    out = {}
    for col in COLUMNS:
        seen: dict = {}
        column = []
        try:
            for value in values[col]:
                key = (type(value), value)  # 1, 1.0 and True are equal keys; they read differently
                if key not in seen:
                    seen[key] = _text(value, col, "")
                column.append(seen[key])
        except (JudgmentImportError, TypeError):  # TypeError: unhashable (a nested value), refused by _text
            return None
        out[col] = column
    return out


def _text(value, col: str, where: str) -> str | None:
    """One field as text (None when empty); numbers are accepted where a reader may have typed them."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, numbers.Real)):
        raise JudgmentImportError(f"{where}: field {col!r} is {value!r}; expected text"
                                  + (" or a number" if col in _ID_FIELDS | _NUMBER_FIELDS else ""))
    if isinstance(value, str):
        bad = _CONTROL.search(value)
        if bad:
            raise JudgmentImportError(f"{where}: field {col!r} contains the control character "
                                      f"U+{ord(bad.group()):04X}; remove it")
        if col == "rationale":
            return value if value.strip() else None
        value = records.normalise_id(value) if col in _ID_FIELDS else value.strip(" \t")
        return value or None
    if col == "seconds_spent" and math.isfinite(value):
        return str(int(value)) if isinstance(value, numbers.Integral) else repr(float(value))
    if (col in _ID_FIELDS or col == "strength") and math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    raise JudgmentImportError(f"{where}: field {col!r} is {value!r}; expected "
                              + ("a whole number or text" if col in _ID_FIELDS else
                                 "a whole number 1-5" if col == "strength" else "text"))


def check(values: dict, path, labels: list[str]) -> pd.DataFrame:
    """Check records of the public format (column -> the records' raw values, one label per record); see
    :func:`read`.

    Rejected, with the file, the record and the field named: an empty required field; a ``judge_kind``
    other than human/llm, a ``winner`` other than a/b/tie, an ``order`` other than AB/BA, an axis mark
    other than a/b/tie; a ``strength`` outside 1-5 or given with a tie; ``seconds_spent`` that is not a
    number from 0 to 86400; a ``#`` in a system name; both sides naming the same completion; a judge
    id used as both kinds, or an LLM judge named ``human:...``; one item with two conversations or two
    subsets; an LLM judge giving two verdicts for the same pair in the same order, or more than two for
    one pair; a human rater judging the same pair twice; two spellings of an id differing only in case.
    """
    texts = _texts(values)
    if texts is None:  # a value refused: record by record in file order, to name the first bad record and field
        for n, label in enumerate(labels):
            _record({c: _text(values[c][n], c, f"{path}, {label}") for c in COLUMNS}, f"{path}, {label}")
        raise AssertionError("a value _texts refused passed record by record")  # cannot happen
    rows = [{**_record({c: texts[c][n] for c in COLUMNS}, f"{path}, {label}"), "file": str(path), "record": label}
            for n, label in enumerate(labels)]
    table = pd.DataFrame([[row[c] for c in TABLE_COLUMNS] for row in rows], columns=TABLE_COLUMNS,
                         dtype=object)  # None stays None (pandas would make some of them NaN)
    for group in ID_GROUPS:
        try:
            records.same_but_for_case(path, table, group, labels=table["record"])
        except records.RecordError as exc:
            raise JudgmentImportError(str(exc)) from None
    _one_kind_per_judge(table)
    _one_value_per_item(table, "item", "conversation")
    _one_value_per_item(table, "item", "subset")
    check_duplicates(table, "item")
    table["strength"] = pd.array([None if v is None else int(float(v)) for v in table["strength"]], dtype="Int64")
    table["seconds_spent"] = [math.nan if v is None else float(v) for v in table["seconds_spent"]]
    return table


def _record(row: dict, where: str) -> dict:
    """One record's fields (as :func:`_text` reads them) checked; a human rater's ``human:`` prefix dropped."""
    for col in REQUIRED:
        if row[col] is None:
            raise JudgmentImportError(f"{where}: field {col!r} is empty; every record needs {', '.join(REQUIRED)}")
    _check_values(row, where)
    if row["judge_kind"] == "human" and row["judge"].startswith("human:"):
        row["judge"] = row["judge"].removeprefix("human:")  # "human:r1" and "r1" are one rater
        if not row["judge"]:
            raise JudgmentImportError(f"{where}: field 'judge' names no rater")
    return row


def _check_values(row: dict, where: str) -> None:
    def bad(col, expected):
        raise JudgmentImportError(f"{where}: field {col!r} is {row[col]!r}; expected {expected}")

    if row["judge_kind"] not in JUDGE_KINDS:
        bad("judge_kind", "human or llm")
    if row["winner"] not in (*WINNERS, UNPARSED):
        bad("winner", "a (system_a won), b (system_b won), tie, or unparsed (an LLM judge answered and no verdict "
                      "could be read); a and b name the systems, not the position on screen (that is 'order')")
    if row["winner"] == UNPARSED:
        if row["judge_kind"] != "llm":
            bad("winner", "a, b or tie: 'unparsed' is an LLM judge's answer nobody could read; a person's rating "
                          "is a choice")
        given = [col for col in ("strength", *AXIS_COLUMNS) if row[col] is not None]
        if given:
            raise JudgmentImportError(f"{where}: field {given[0]!r} is {row[given[0]]!r} but the winner is "
                                      "unparsed; an answer nobody could read has no strength or axis mark, leave "
                                      "the field empty")
    if row["order"] not in (None, *ORDERS):
        bad("order", "AB (system_a shown first), BA (system_b shown first) or empty (not known)")
    for col in AXIS_COLUMNS:
        if row[col] not in (None, *MARKS):
            bad(col, "a, b, tie (no clear advantage) or empty (not marked)")
    if row["strength"] is not None:
        if not _STRENGTH.fullmatch(row["strength"]):
            bad("strength", "a whole number 1-5 (1 = minimal advantage ... 5 = decisive) or empty")
        if row["winner"] == "tie":
            raise JudgmentImportError(f"{where}: field 'strength' is {row['strength']!r} but the winner is a "
                                      "tie; a tie has no strength, leave the field empty")
    if row["seconds_spent"] is not None and not (
            hj._SECONDS.fullmatch(row["seconds_spent"]) and float(row["seconds_spent"]) <= hj.MAX_SECONDS):
        bad("seconds_spent", f"a number of seconds from 0 to {hj.MAX_SECONDS} or empty")
    for col in ("system_a", "system_b"):
        if "#" in row[col]:
            bad(col, "a system name without '#'; put a human writer's id in "
                     f"contributor_{col[-1]} (e.g. system 'human', contributor 'c7')")
    if _ref(row["system_a"], row["contributor_a"]) == _ref(row["system_b"], row["contributor_b"]):
        same = _ref(row["system_a"], row["contributor_a"])
        raise JudgmentImportError(f"{where}: fields 'system_a' and 'system_b' name the same completion "
                                  f"({same!r}); a judgment compares two")
    if row["system_a"] == row["system_b"]:
        raise JudgmentImportError(f"{where}: fields 'system_a' and 'system_b' are both {row['system_a']!r}; the "
                                  "ratings compare systems, so two completions of one system (e.g. two human "
                                  "writers) cannot be a judgment here; leave such records out")
    if row["judge_kind"] == "llm" and row["judge"].startswith("human:"):
        bad("judge", "an LLM judge's name; 'human:<id>' is how human raters are named")


def _one_kind_per_judge(table: pd.DataFrame) -> None:
    first: dict[str, tuple[str, str]] = {}
    for r in table.itertuples():
        kind, label = first.setdefault(r.judge, (r.judge_kind, r.record))
        if kind != r.judge_kind:
            raise JudgmentImportError(f"{r.file}, {records.two_records(label, r.record)}: "
                                      f"field 'judge_kind' is {kind!r} "
                                      f"and {r.judge_kind!r} for judge {r.judge!r}; give a human rater and "
                                      "an LLM judge different ids")


def _one_value_per_item(table: pd.DataFrame, item_col: str, col: str) -> None:
    first: dict[str, tuple] = {}
    for r in table.itertuples():
        value, label = first.setdefault(getattr(r, item_col), (getattr(r, col), r.record))
        if value != getattr(r, col):
            shown = " and ".join("empty" if v is None else repr(v) for v in (value, getattr(r, col)))
            raise JudgmentImportError(
                f"{r.file}, {records.two_records(label, r.record)}: field {col!r} is {shown} for item "
                f"{getattr(r, item_col)!r}; an item belongs to one {col}: give the same value on every "
                "record of the item (or leave it empty on all of them)")


def check_duplicates(table: pd.DataFrame, item_col: str = "item") -> None:
    """An LLM judge may give one verdict per (pair, order) and so two per pair (a record of unknown order
    takes one of the two), a human rater one per pair.

    ``item_col`` names the item column ("item" for the file's keys, "item_id" once resolved).
    """
    seen: dict[tuple, list[tuple[str | None, str]]] = {}
    for r in table.itertuples():
        ref_a, ref_b = _ref(r.system_a, r.contributor_a), _ref(r.system_b, r.contributor_b)
        item = getattr(r, item_col)
        key = (r.judge_kind, r.judge, item, *sorted((ref_a, ref_b)))
        first = None if r.order is None else (ref_b if r.order == "BA" else ref_a)  # the completion shown first
        earlier = seen.setdefault(key, [])
        if r.judge_kind == "llm":
            fields = "'judge', 'item', 'system_a', 'system_b', 'order'"
            same = [label for shown, label in earlier if first is not None and shown == first]
            if same:
                raise JudgmentImportError(
                    f"{r.file}, {records.two_records(same[0], r.record)}: fields {fields}: LLM judge {r.judge!r} "
                    f"gave two verdicts for {ref_a} vs {ref_b} on item {item!r} with {first} shown first; "
                    "keep one per order (AB and BA are the two orders)")
            if len(earlier) >= 2:
                raise JudgmentImportError(
                    f"{r.file}, {records.two_records(earlier[-1][1], r.record)}: fields {fields}: LLM judge "
                    f"{r.judge!r} gave a third verdict for {ref_a} vs {ref_b} on item {item!r} (also "
                    f"{earlier[0][1]}); a judge gives one per order, two at most")
        elif earlier:
            raise JudgmentImportError(
                f"{r.file}, {records.two_records(earlier[0][1], r.record)}: fields 'judge', 'item', 'system_a', "
                f"'system_b': rater {r.judge!r} judged {ref_a} vs {ref_b} on item {item!r} twice; keep one "
                "judgment per rater and pair")
        earlier.append((first, r.record))


# --- items -------------------------------------------------------------------------------------

def _item_meta(items: pd.DataFrame) -> pd.DataFrame:
    """item_id -> conversation_id (the bootstrap cluster, :func:`heart.items.item_table.clusters`) and subset."""
    return pd.DataFrame({"conversation_id": items_mod.clusters(items).to_numpy(), "subset": list(items["subset"])},
                        index=pd.Index(items["item_id"], name="item_id"))


def resolve_items(table: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Add ``item_id``, ``conversation_id`` and ``subset`` (filled in) to a table from :func:`read`.

    With ``items`` (``items.parquet``: ``item_id``, optional ``release_key``, ``cluster`` or
    ``conversation_id``, ``subset``) a record's item key may be an item_id or a release key
    ("regular:17"); an unknown key is an error, and so is a ``conversation``/``subset`` in the record
    that differs from the item's. Without items, the item key is the item id, the conversation
    defaults to it and the subset to "regular".
    """
    out = table.copy()
    if items is None:
        out["item_id"] = out["item"]
        out["conversation_id"] = out["conversation"].where(out["conversation"].notna(), out["item"])
        out["subset"] = out["subset"].where(out["subset"].notna(), "regular")
        return out
    keys = items_mod.lookup(items)
    meta = _item_meta(items)
    ids, convs, subsets = [], [], []
    for r in out.itertuples():
        where = f"{r.file}, {r.record}"
        if r.item not in keys:
            raise JudgmentImportError(f"{where}: field 'item' is {r.item!r}, neither an item_id nor a "
                                      "release_key (e.g. 'regular:17') of the items table; check the key or "
                                      "the items table")
        item_id = keys[r.item]
        conv, subset = meta.at[item_id, "conversation_id"], meta.at[item_id, "subset"]
        for col, given, known in (("conversation", r.conversation, conv), ("subset", r.subset, subset)):
            if given is not None and given != known:
                raise JudgmentImportError(f"{where}: field {col!r} is {given!r} but item {r.item!r} has "
                                          f"{col} {known!r} in the items table; leave the field empty or "
                                          "correct it")
        ids.append(item_id)
        convs.append(conv)
        subsets.append(subset)
    out["item_id"], out["conversation_id"], out["subset"] = ids, convs, subsets
    check_duplicates(out, "item_id")  # two keys of one item may hide a repeated judgment
    return out


# --- the workflow's tables -----------------------------------------------------------------------

def _prepared(table, items) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        table = read(table)
    elif not {"file", "record"} <= set(table.columns):
        table = from_frame(table)
    resolved = resolve_items(table, items)  # an order not given stays unknown (None)
    resolved["pair_id"] = [
        pairs_mod.pair_id(r.item_id, _ref(r.system_a, r.contributor_a), _ref(r.system_b, r.contributor_b))
        for r in resolved.itertuples()]
    return resolved


def check_completions(table, items: pd.DataFrame, completions: pd.DataFrame) -> None:
    """Every completion an imported judgment names must be one of the study's: its item, system and (for
    a human writer) contributor in ``completions`` (the study's completion tables, concatenated).

    Raises
    ------
    JudgmentImportError
        Naming the file, the record and the field of the first completion the study does not have (a
        misspelt or never-run system, a writer without a completion of that item).
    """
    resolved = _prepared(table, items)
    known = {(r.item_id, r.system, None if pd.isna(r.contributor_id) else r.contributor_id)
             for r in completions.itertuples()}
    systems = sorted(set(completions["system"]))
    for r in resolved.itertuples():
        for side in ("a", "b"):
            system, contributor = getattr(r, f"system_{side}"), getattr(r, f"contributor_{side}")
            if (r.item_id, system, contributor) not in known:
                field = f"system_{side}" if system not in systems else (
                    f"contributor_{side}" if contributor is not None else f"system_{side}")
                raise JudgmentImportError(
                    f"{r.file}, {r.record}: field {field!r}: item {r.item!r} has no completion "
                    f"{_ref(system, contributor)!r} in this study (systems: {', '.join(systems)}); judgments "
                    "made elsewhere must judge the study's completions (or re-analyse them with analysis_only)")


def _pairs_of(resolved: pd.DataFrame, sources: dict | None) -> pd.DataFrame:
    bad = {s: v for s, v in (sources or {}).items() if v not in SOURCES}
    if bad:
        raise ValueError(f"sources: {bad}; a system's source is one of {', '.join(SOURCES)}")
    rows = []
    for r in resolved.drop_duplicates("pair_id").itertuples():  # the first record orients the pair
        rows.append({"pair_id": r.pair_id, "item_id": r.item_id, "conversation_id": r.conversation_id,
                     "subset": r.subset, "system_a": r.system_a, "contributor_a": r.contributor_a,
                     "system_b": r.system_b, "contributor_b": r.contributor_b,
                     "kind": "-".join(sorted((source_of(r.system_a, r.contributor_a, sources),
                                              source_of(r.system_b, r.contributor_b, sources))))})
    return pd.DataFrame(rows, columns=pairs_mod.COLUMNS).sort_values("pair_id", ignore_index=True)


def to_pairs(table, items: pd.DataFrame | None = None, sources: dict | None = None) -> pd.DataFrame:
    """The pairs (``pairs.schema.yaml``) that the imported judgments mention.

    Parameters
    ----------
    table : pandas.DataFrame or path
        :func:`read`'s table (a path is read; a DataFrame in the public format is checked first).
    items : pandas.DataFrame, optional
        The items table, for release keys, conversations and subsets (:func:`resolve_items`).
    sources : dict, optional
        system -> "model" / "human" / "dataset", overriding :func:`source_of` (which sets ``kind``).

    Returns
    -------
    pandas.DataFrame
        One row per pair, sorted by ``pair_id`` (:func:`heart.judging.pairs.pair_id` of the item id and the
        completion references ``<system>`` / ``<system>#<contributor>``); the pair's system_a is the
        system_a of the first record that names the pair.
    """
    return _pairs_of(_prepared(table, items), sources)


class Imported(NamedTuple):
    """The workflow's tables made from imported judgments."""

    pairs: pd.DataFrame  #: pairs.schema.yaml
    verdicts: pd.DataFrame  #: judge_verdicts.schema.yaml: the LLM judges' records, one per (pair, order)
    human: pd.DataFrame  #: human_judgments.schema.yaml (+ axis columns; seconds_spent NaN when not given)
    judgments: pd.DataFrame  #: judgments.schema.yaml
    combined: pd.DataFrame  #: heart.judging.combine of the verdicts: one row per (pair, LLM judge)

    def source_rows(self, path) -> list[dict]:
        """Each imported LLM judge's line in results/judging/sources.parquet (heart.judging.combine.source_row)."""
        return [combine.source_row(judge, v, self.combined[self.combined["judge"] == judge], 0)
                | {"note": f"imported from {path}"} for judge, v in self.verdicts.groupby("judge", sort=True)]


def convert(table, items: pd.DataFrame | None = None, pairs: pd.DataFrame | None = None,
            sources: dict | None = None, strength_map: dict | None = None) -> Imported:
    """Imported judgments as the workflow's tables (``docs/methods/imported-judgments.md`` for the rules).

    Parameters
    ----------
    table : pandas.DataFrame or path
        :func:`read`'s table (a path is read; a DataFrame in the public format is checked first).
    items : pandas.DataFrame, optional
        The items table (:func:`resolve_items`).
    pairs : pandas.DataFrame, optional
        An existing pairs table (e.g. ``results/judging/pairs.parquet``): every judged pair must be one
        of its pairs, whose A/B orientation and metadata are then used. Default: :func:`to_pairs`.
    sources : dict, optional
        system -> source, for ``kind`` (:func:`to_pairs`).
    strength_map : dict, optional
        {"slight": s1, "significant": s2} as in the config's ``human_judgments.strength_map``
        (default 2 and 4).

    Returns
    -------
    Imported
        ``pairs`` (only the pairs judged), ``verdicts``, ``human`` and ``judgments``.
    """
    strength_map = strength_map or DEFAULT_STRENGTH_MAP
    levels = {0: None, 1: strength_map["slight"], 2: strength_map["significant"]}  # |preference| -> strength
    weighted: set[tuple[str, str]] = set()  # (pair, LLM judge) of which some record gave a strength
    resolved = _prepared(table, items)
    if pairs is None:
        pair_table = _pairs_of(resolved, sources)
    else:
        known = set(pairs["pair_id"])
        for r in resolved.itertuples():
            if r.pair_id not in known:
                raise JudgmentImportError(
                    f"{r.file}, {r.record}: fields 'item', 'system_a', 'system_b' (item {r.item_id}: "
                    f"{_ref(r.system_a, r.contributor_a)} vs {_ref(r.system_b, r.contributor_b)}) name no "
                    "pair of the pairs table; check the names, or convert without a pairs table")
        pair_table = pairs[pairs["pair_id"].isin(set(resolved["pair_id"]))].reset_index(drop=True)
    pair_a = {p.pair_id: (_ref(p.system_a, p.contributor_a), p.system_a, p.system_b)
              for p in pair_table.itertuples()}
    verdict_rows, human = [], []
    for r in resolved.itertuples():
        a_ref, system_a, system_b = pair_a[r.pair_id]
        ref_a, ref_b = _ref(r.system_a, r.contributor_a), _ref(r.system_b, r.contributor_b)
        flip = 1 if ref_a == a_ref else -1  # 1: the record's system_a is the pair's system_a
        if r.order is None:  # not known which was shown first
            shown_first = pair_order = None
        else:
            shown_first = ref_a if r.order == "AB" else ref_b
            pair_order = "AB" if shown_first == a_ref else "BA"
        unparsed = r.winner == UNPARSED  # (an LLM judge's, without strength or marks: checked on reading)
        side = {"a": 1, "b": -1, "tie": 0, UNPARSED: 0}[r.winner] * flip  # +1: the pair's system_a won
        axes = {c: None if getattr(r, c) is None else MARKS[getattr(r, c)] * flip for c in AXIS_COLUMNS}
        if r.judge_kind == "llm":
            if not pd.isna(r.strength):
                weighted.add((r.pair_id, r.judge))
            strength = 1 if pd.isna(r.strength) else int(r.strength)  # for the combining rule only
            winner_ref = {"a": ref_a, "b": ref_b}.get(r.winner)
            verdict_rows.append({"pair_id": r.pair_id, "judge": r.judge, "order": pair_order,
                             "shown_a": None if pair_order is None else (system_a if pair_order == "AB" else system_b),
                             "parse_ok": not unparsed,
                             "parse_error": "no verdict could be read in the judge's answer (as imported)"
                             if unparsed else None,
                             "winner_shown": (None if shown_first is None or winner_ref is None
                                              else "A" if winner_ref == shown_first else "B"),
                             "signed": None if unparsed else side * strength, "rationale": r.rationale,
                             "raw_text": "",
                             "cache_key": "", "from_cache": False, "neutralised_tokens": 0,
                             "latency_s": None, "cost_usd": None, **axes})
        else:
            level = 0 if side == 0 else (None if pd.isna(r.strength) else  # a win of unknown strength
                                         2 if int(r.strength) >= strength_map["significant"] else 1)
            human.append({"pair_id": r.pair_id, "judge": f"human:{r.judge}", "rater_id": r.judge,
                          "order": pair_order, "preference": None if level is None else side * level,
                          "winner": None if side == 0 else ("a" if side > 0 else "b"),
                          "strength": None if level is None else levels[level],
                          "rationale": r.rationale, "seconds_spent": r.seconds_spent, **axes})
    verdict_table = pd.DataFrame(verdict_rows,
                                 columns=[*verdicts.VERDICT_COLUMNS, *AXIS_COLUMNS, *verdicts.MARGIN_COLUMNS])
    for col in ("signed", *AXIS_COLUMNS):
        verdict_table[col] = verdict_table[col].astype("Int64")
    for col in verdicts.MARGIN_COLUMNS:  # imported verdicts are verdicts, never letter margins
        verdict_table[col] = verdict_table[col].astype("float64")
    verdict_table = verdict_table.sort_values(["pair_id", "judge", "order"], ignore_index=True)
    human_table = pd.DataFrame(human, columns=hj.JUDGMENT_COLUMNS)  # (with the axis columns)
    for col in ("preference", "strength", *AXIS_COLUMNS):
        human_table[col] = human_table[col].astype("Int64")
    human_table["seconds_spent"] = human_table["seconds_spent"].astype(float)
    human_table = human_table.sort_values(["pair_id", "judge"], ignore_index=True)
    combined = combine.combine(verdict_table, pair_table, AXES)
    none_given = [(p, j) not in weighted for p, j in zip(combined["pair_id"], combined["judge"])]
    combined.loc[np.array(none_given, dtype=bool), "strength"] = pd.NA  # no order of it gave a strength
    table = combine.judgments(pair_table, combined, human_table)
    return Imported(pair_table, verdict_table, human_table, table, combined)


def to_judgments(table, items: pd.DataFrame | None = None, pairs: pd.DataFrame | None = None,
                 sources: dict | None = None, strength_map: dict | None = None) -> pd.DataFrame:
    """Imported judgments as rows of ``judgments.schema.yaml``: :func:`convert`'s ``judgments``.

    One row per (pair, LLM judge), its orders combined by :func:`heart.judging.combine`, and one row per
    (pair, human rater) as judge ``human:<rater>``; sorted as :func:`heart.judging.combine.judgments` sorts.
    """
    return convert(table, items=items, pairs=pairs, sources=sources, strength_map=strength_map).judgments
