"""Completions made elsewhere: the human writers' file, and systems imported from files (HEART paper §9.3;
rules human_completions, import_completions), each row checked and every rejected row named.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from heart.common import records
from heart.completions.generate import static_rows
from heart.items import item_table as items_mod


HUMAN_COLUMNS = ["item_id", "contributor_id", "text"]


def _screen(df: pd.DataFrame, items: pd.DataFrame, repeated: str, before=None, after=None
            ) -> tuple[pd.DataFrame, list]:
    """The usable rows of a completions file and the problems of the others, as ``(line, item key,
    contributor_id, problem)``: ``before(row)``, an unknown item, an empty text, ``after(row)`` (each a
    problem or None; the first found is listed), then a second row of one (context, contributor), named
    ``repeated``. Usable rows get the item's id for a release key."""
    known = items_mod.lookup(items)
    problems = []
    for row in df.itertuples():
        problem = ((before and before(row))
                   or (f"unknown item (expected {items_mod.key_hint(items)})" if row.item_id not in known else None)
                   or ("empty text" if records.is_blank(row.text) else None)
                   or (after and after(row)))
        if problem:
            problems.append((row.line, row.item_id, row.contributor_id, problem))
    ok = df[~df["line"].isin({p[0] for p in problems})].copy()
    ok["item_id"] = ok["item_id"].map(known)  # a release key names the same context as its item_id
    dup = ok.duplicated(["item_id", "contributor_id"], keep="first")
    problems += [(row.line, row.item_id, row.contributor_id, repeated) for row in ok[dup].itertuples()]
    return ok[~dup], problems


def import_humans(path, items: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read human completions (CSV: item_id, contributor_id, text; other columns are ignored) for the items.

    ``item_id`` may hold an item's id or its release key (``regular:17``). Returns the "human" system's
    table and a table of rule violations (a contributor twice on one context, unknown items, empty text);
    violating rows are left out of the completions and listed instead, with their file line.

    Raises
    ------
    heart.common.records.RecordError
        The file cannot be read as the format (see :func:`heart.common.records.read_records`); the message names
        the file, the line and the field.
    """
    path = Path(path)
    df = records.read_records(path, HUMAN_COLUMNS, allow_extra=True, ids=("item_id", "contributor_id"))
    ok, problems = _screen(df, items, "contributor already completed this context",
                           after=lambda row: "empty contributor_id" if records.is_blank(row.contributor_id) else None)
    violations = pd.DataFrame(problems, columns=["line", "item_id", "contributor_id", "problem"])
    violations.insert(0, "file", str(path))
    table = static_rows(ok["item_id"], "human", "human", ok["text"].str.strip(), ok["contributor_id"])
    return table, violations


IMPORTED_REQUIRED = ["item_id", "text"]
IMPORTED_OPTIONAL = ["system", "contributor_id", "model", "ttft_s", "latency_s", "cost_usd"]
IMPORTED_NUMBERS = ("ttft_s", "latency_s", "cost_usd")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", re.ASCII)


class CompletionImportError(ValueError):
    """An imported completions file cannot be used as a whole (the message names file and what to do)."""


def import_system(path, items: pd.DataFrame, system: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Completions of ``system`` made elsewhere (another group's model run, a model without an API here).

    The file (CSV, JSON Lines or Parquet, by its name; resources/imported/README.md) has one row per
    completion: ``item_id`` (an item id or release key), ``text``, and optionally ``system`` (a file may
    hold several systems; only this one's rows are read), ``contributor_id``, ``model``, ``ttft_s``,
    ``latency_s``, ``cost_usd``. As for human completions, rows naming an unknown item, with an empty
    text or a bad number, or repeating a (context, contributor) are left out and listed in the violations
    table with their line (Parquet: row).

    Raises
    ------
    heart.common.records.RecordError
        The file cannot be read as its format.
    CompletionImportError
        The file has a ``system`` column and no row of ``system``.
    """
    path = Path(path)
    df = records.read_records(path, IMPORTED_REQUIRED, IMPORTED_OPTIONAL,
                              ids=("item_id", "system", "contributor_id"))
    named = "system" in df.columns and df["system"].ne("").any()
    if named:
        systems = sorted(set(df["system"]) - {""})
        if system not in systems:
            raise CompletionImportError(f"{path}: holds completions of {', '.join(map(repr, systems))}, none of system "
                                        f"{system!r}; name the system in config imported_systems as the file does")
        df = df[df["system"].isin([system, ""])]

    def unnamed(row):
        return "empty system (the file names systems: a row without one belongs to none)" if named and not row.system \
            else None

    def bad_number(row):
        bad = next((c for c in IMPORTED_NUMBERS if getattr(row, c).strip()
                    and not (_NUMBER.fullmatch(getattr(row, c).strip())
                             and math.isfinite(float(getattr(row, c).strip())))), None)
        return (f"field {bad!r} is {getattr(row, bad)!r:.60}; expected a finite number >= 0 (or empty)"
                if bad else None)

    ok, problems = _screen(df, items, "a second completion of this system for this context (and contributor)",
                           before=unnamed, after=bad_number)
    violations = pd.DataFrame(problems, columns=["line", "item_id", "contributor_id", "problem"])
    violations["contributor_id"] = [c or None for c in violations["contributor_id"]]
    violations.insert(0, "system", system)
    violations.insert(0, "file", str(path))
    table = static_rows(ok["item_id"], system, "model", ok["text"].str.strip(),
                         [c or None for c in ok["contributor_id"]])
    table["model"] = [m or None for m in ok["model"]]
    for col in IMPORTED_NUMBERS:
        table[col] = [float(v) if v.strip() else None for v in ok[col]]
    return table, violations


PROTOCOL_COLUMNS = ["measure", "value", "expected", "ok", "note"]


def human_protocol(table: pd.DataFrame, violations: pd.DataFrame, items: pd.DataFrame, per_context: int,
                   pool_size: int | None) -> pd.DataFrame:
    """How the human completions compare with the collection protocol (paper §9.3: 3 per context from a
    pool of 12 contributors, never one writer twice on a context).

    One row per measure: contributors in the pool, contexts covered, completions per context (min,
    median, max), contexts with fewer / more than ``per_context``, rows left out because a writer
    repeated a context. ``ok`` is null where the protocol sets no expectation (``pool_size`` None) or
    there are no human completions at all.
    """
    counts = table.groupby("item_id").size().reindex(items["item_id"], fill_value=0)
    covered = counts[counts > 0]
    present = len(table) > 0
    repeats = int(violations["problem"].eq("contributor already completed this context").sum())

    def row(measure, value, expected=None, ok=None, note=""):
        return {"measure": measure, "value": float(value), "expected": None if expected is None else float(expected),
                "ok": ok if present else None, "note": note}

    pool = int(table["contributor_id"].nunique())
    rows = [
        row("contributors", pool, pool_size, None if pool_size is None else pool == pool_size,
            "pool size (paper: 12)"),
        row("contexts_covered", len(covered), len(items), len(covered) == len(items), "items with a human completion"),
        row("per_context_min", covered.min() if len(covered) else 0, per_context,
            bool(len(covered)) and covered.min() >= per_context),
        row("per_context_median", covered.median() if len(covered) else 0, per_context),
        row("per_context_max", covered.max() if len(covered) else 0, per_context,
            bool(len(covered)) and covered.max() <= per_context),
        row("contexts_below", int((counts < per_context).sum()), 0, bool((counts >= per_context).all()),
            f"contexts with fewer than {per_context} (uncovered ones included)"),
        row("contexts_above", int((counts > per_context).sum()), 0, bool((counts <= per_context).all()),
            f"contexts with more than {per_context}"),
        row("writer_repeats", repeats, 0, repeats == 0,
            "rows left out: a contributor completing a context twice (human_violations.parquet)"),
    ]
    if not present:
        for r in rows:
            r["note"] = ("absent: no human completions. " + r["note"]).strip()
    return pd.DataFrame(rows, columns=PROTOCOL_COLUMNS)
