"""Human review of the safety screen's flags (HEART paper §6: "automated safety screening and human review"),
and what a confirmed flag does (``completions.confirmed_flags``). Methods: ``docs/methods/safety.md``.

A flagged completion is one the screen (:mod:`heart.completions.safety`) flagged in any category. People review
it in the annotation pages (task kind ``safety_review``) or in a file of their own; each review confirms or
clears the flag, with a reason. A flag is

* ``unreviewed`` -- nobody has reviewed it;
* ``confirmed`` -- every reviewer confirmed it; ``cleared`` -- every reviewer cleared it;
* ``disputed`` -- reviewers disagree. A disputed flag is not cleared: what a confirmed flag does, it does too.

What a confirmed (or disputed) flag does is the study's setting: kept but reported (the default), left out of
the human rating pages (``rating_pages``), its text left out of the bundle's public files (``bundle``).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pandas as pd

from heart.common import records
from heart.completions.safety import MODEL_ITEMS

REVIEW_REQUIRED = ["item_id", "system", "reviewer_id", "decision", "reason"]
REVIEW_OPTIONAL = ["contributor_id", "seconds_spent"]
#: a decision as written (any case) -> as kept
DECISIONS = {"confirm": "confirm", "confirmed": "confirm", "clear": "clear", "cleared": "clear"}
#: what a confirmed flag can be left out of (``completions.confirmed_flags``); none: kept but reported
LEAVE_OUT = ("rating_pages", "bundle")
#: the review states of a flag; a disputed flag acts as a confirmed one
ACTING = ("confirmed", "disputed")
KEY = ["item_id", "system", "contributor_id"]
FLAG_COLUMNS = [*KEY, "categories", "screens", "n_reviews", "n_confirmed", "n_cleared", "review", "left_out_of"]


def completion_keys(item_ids, systems, contributors) -> list[tuple[str, str, str]]:
    """(item_id, system, contributor_id or "") of each completion: the key every table here joins on (and the
    bundle's withholding and the report's example pair with it)."""
    return [(i, s, "" if records.is_blank(c) else str(c)) for i, s, c in zip(item_ids, systems, contributors)]


def _key_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with contributor_id "" where none (:func:`completion_keys`)."""
    return frame.assign(contributor_id=[k[2] for k in completion_keys(frame["item_id"], frame["system"],
                                                                      frame["contributor_id"])])


def touching(pairs: pd.DataFrame, keys) -> np.ndarray:
    """Per pair (item_id, system_a, contributor_a, system_b, contributor_b): does either of its completions have
    one of ``keys`` (:func:`completion_keys`)? A boolean array (a list would select columns when empty)."""
    sides = [completion_keys(pairs["item_id"], pairs[f"system_{x}"], pairs[f"contributor_{x}"]) for x in "ab"]
    return np.array([a in keys or b in keys for a, b in zip(*sides)], dtype=bool)


def without_originals(items: pd.DataFrame, keys) -> pd.DataFrame:
    """``items`` with the dataset's reply taken off every item whose "original" completion is in ``keys``."""
    originals = {i for i, s, _ in keys if s == "original"}
    if not originals or "original_reply" not in items:
        return items
    return items.assign(original_reply=items["original_reply"].where(~items["item_id"].isin(originals), None))


def flagged(screen: pd.DataFrame) -> pd.DataFrame:
    """One row per completion the screen flagged in any category: its categories and screens (sorted). The
    screen's rows of model-written items are reported (:func:`per_system`), not reviewed here."""
    hits = _key_frame(screen[screen["flagged"].fillna(False).astype(bool) & (screen["system"] != MODEL_ITEMS)])
    if hits.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in [*KEY, "categories", "screens"]})
    return hits.groupby(KEY, sort=True).agg(
        categories=("category", lambda c: ", ".join(sorted(set(c)))),
        screens=("screen", lambda s: ", ".join(sorted(set(s))))).reset_index()


def read_reviews(path, completions: pd.DataFrame) -> pd.DataFrame:
    """A file of reviews (CSV, JSON Lines or Parquet: ``resources/human/README.md``), checked; errors name the
    file, the line and the field.

    Every review names an existing completion (``completions``: item_id, system, contributor_id), a reviewer, a
    decision (confirm or clear; confirmed/cleared and any case are read the same) and a reason. An empty
    decision or reason is an error, never a default; so is a reviewer who reviewed one completion twice (keep
    the review that stands) and a seconds_spent that is not a number (empty: not recorded, stays missing).
    """
    path = Path(path)
    table = records.read_records(path, REVIEW_REQUIRED, REVIEW_OPTIONAL,
                                 ids=("item_id", "system", "contributor_id", "reviewer_id"))
    refs = set(map(tuple, _key_frame(completions)[KEY].itertuples(index=False)))
    systems = sorted({s for _, s, _ in refs})
    labels = records.record_labels(path, table["line"])
    decisions, seconds = [], []
    for row, label in zip(table.itertuples(), labels):
        where = f"{path}, {label}"
        for col in ("item_id", "system", "reviewer_id", "decision", "reason"):
            if records.is_blank(getattr(row, col)):
                hint = {"decision": ": say confirm or clear", "reason": ": say why the flag is confirmed or cleared"}
                raise ValueError(f"{where}: field {col!r} is empty{hint.get(col, '')}")
        decision = DECISIONS.get(row.decision.strip().lower())
        if decision is None:
            raise ValueError(f"{where}: field 'decision' is {row.decision!r}; expected confirm or clear")
        if (row.item_id, row.system, row.contributor_id) not in refs:
            close = difflib.get_close_matches(row.system, systems, n=1)
            hint = (f" (system {row.system!r} is not a system of the run; did you mean {close[0]!r}?)"
                    if row.system not in systems and close else "")
            raise ValueError(f"{where}: fields 'item_id', 'system', 'contributor_id' ({row.item_id}, {row.system}, "
                             f"{row.contributor_id or '-'}) name no completion of the run{hint}")
        try:
            seconds.append(None if records.is_blank(row.seconds_spent) else float(row.seconds_spent))
        except ValueError:
            raise ValueError(f"{where}: field 'seconds_spent' is {row.seconds_spent!r}; expected a number of "
                             "seconds (or empty: not recorded)") from None
        decisions.append(decision)
    twice = table[table.duplicated([*KEY, "reviewer_id"], keep=False)]
    if len(twice):
        first, second = records.record_labels(path, twice["line"].iloc[:2])
        raise ValueError(f"{path}, {records.two_records(first, second)}: reviewer {twice['reviewer_id'].iloc[0]!r} "
                         "reviewed the same completion twice; keep the review that stands")
    return table.assign(decision=decisions, seconds_spent=pd.array(seconds, dtype="Float64"))


def review_state(n_confirmed: int, n_cleared: int) -> str:
    """unreviewed, confirmed, cleared or disputed (the module's docstring)."""
    if not n_confirmed and not n_cleared:
        return "unreviewed"
    return "disputed" if n_confirmed and n_cleared else ("confirmed" if n_confirmed else "cleared")


def flags(screen: pd.DataFrame, reviews: pd.DataFrame | None, leave_out=()) -> pd.DataFrame:
    """Every flagged completion with its reviews counted, its state, and what it is left out of (``leave_out``:
    of :data:`LEAVE_OUT`, for a confirmed or disputed flag). Reviews of a completion the screen does not flag
    (a review from before the lexicon changed) are not counted here (:func:`unflagged_reviews` counts them)."""
    unknown = [w for w in leave_out if w not in LEAVE_OUT]
    if unknown:
        raise ValueError(f"completions.confirmed_flags: {unknown[0]!r} is not one of {', '.join(LEAVE_OUT)}")
    out = flagged(screen)
    counts = pd.DataFrame(columns=[*KEY, "n_confirmed", "n_cleared"])
    if reviews is not None and len(reviews):
        r = _key_frame(reviews)
        counts = (r.assign(n_confirmed=r["decision"].eq("confirm"), n_cleared=r["decision"].eq("clear"))
                  .groupby(KEY, sort=True)[["n_confirmed", "n_cleared"]].sum().reset_index())
    out = out.merge(counts, on=KEY, how="left")
    out[["n_confirmed", "n_cleared"]] = out[["n_confirmed", "n_cleared"]].fillna(0).astype("int64")
    out["n_reviews"] = out["n_confirmed"] + out["n_cleared"]
    out["review"] = [review_state(a, b) for a, b in zip(out["n_confirmed"], out["n_cleared"])]
    what = ", ".join(w.replace("_", " ") for w in LEAVE_OUT if w in leave_out)
    out["left_out_of"] = [what if state in ACTING else "" for state in out["review"]]
    out["contributor_id"] = out["contributor_id"].replace("", None)
    return out[FLAG_COLUMNS]


def unflagged_reviews(screen: pd.DataFrame, reviews: pd.DataFrame | None) -> int:
    """Reviews of completions the screen does not flag now."""
    if reviews is None or not len(reviews):
        return 0
    keys = set(map(tuple, flagged(screen)[KEY].itertuples(index=False)))
    return sum(k not in keys for k in map(tuple, _key_frame(reviews)[KEY].itertuples(index=False)))


def left_out(flag_table: pd.DataFrame, where: str) -> set[tuple[str, str, str]]:
    """The (item_id, system, contributor_id or "") of every completion left out of ``where`` (of
    :data:`LEAVE_OUT`)."""
    word = where.replace("_", " ")
    mask = pd.Series([word in str(w or "").split(", ") for w in flag_table["left_out_of"]], index=flag_table.index,
                     dtype=bool)  # a plain list would select columns when empty
    hit = flag_table[mask]
    return set(map(tuple, _key_frame(hit)[KEY].itertuples(index=False)))


def per_system(screen: pd.DataFrame, flag_table: pd.DataFrame) -> pd.DataFrame:
    """The report's table: per system, completions screened, flagged (any category), the flags by review state
    (confirmed, cleared, disputed, unreviewed) and the flags per category. Counts and category names only."""
    screened = screen[screen["status"] == "screened"]
    states = ["confirmed", "cleared", "disputed", "unreviewed"]
    if screened.empty:
        return pd.DataFrame({c: [] for c in ["system", "completions", "flagged", *states, "categories"]})
    per_completion = _key_frame(screened).groupby(KEY, sort=True)["flagged"].any()
    out = per_completion.groupby(level="system").agg(completions="size", flagged="sum").reset_index()
    by_state = flag_table.groupby(["system", "review"]).size().unstack(fill_value=0)
    for state in states:
        out[state] = out["system"].map(by_state[state] if state in by_state else {}).fillna(0).astype("int64")
    counts = screened[screened["flagged"].fillna(False).astype(bool)].groupby(["system", "category"]).size()
    out["categories"] = [", ".join(f"{c} {n}" for c, n in counts[s].items()) if s in counts.index.get_level_values(0)
                         else "none" for s in out["system"]]
    return out


def for_rating(items: pd.DataFrame, pairs: pd.DataFrame, flag_table: pd.DataFrame
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The items and pairs the rating pages may show: without the pairs one of whose sides is left out of the
    rating pages, and with a left-out original reply taken off its item (no quality check shows it)."""
    out = left_out(flag_table, "rating_pages")
    if not out:
        return items, pairs
    return without_originals(items, out), pairs[~touching(pairs, out)]
