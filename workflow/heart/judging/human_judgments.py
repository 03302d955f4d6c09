"""Human pairwise judgments: import, quality control (HEART paper §4.2, Figure 2, §9.6).

The file format is documented in ``resources/human/README.md``: one row per
judgment with the rater, the item and which completions were shown as A and B,
the 5-point choice of Figure 2 (1 = "A is significantly better than B" ...
3 = "A and B are about the same" ... 5 = "B is significantly better than A"),
a free-text rationale, the seconds spent, and for quality-check rows the
expected side. The item may be named by its item_id or, given the items table,
by its release key ("regular:17"; :func:`resolve_items`).

Per-axis marks (optional columns ``axis_H`` ... ``axis_T``, when a study asks raters for them, §9.9): ``A``,
``B`` (of the shown sides) or ``same`` (no clear difference); empty = not marked. They are oriented to the
pair like the choice (+1 = the pair's system_a, -1 = its system_b, 0 = no clear difference, missing = not
marked).

Quality control: a rater is excluded when the share of failed quality checks
reaches ``max_qc_fail_share`` (paper: 50 %) or when the median seconds per
judgment lies outside [``min_median_seconds``, ``max_median_seconds``], or, with
``outlier_alpha``, when their votes agree with the other raters' majority less than the pool's do
(:mod:`heart.judging.rater_agreement`). Every rater, their agreement with the majority and every exclusion
with its reason is listed in the raters table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from heart.items import item_table as items_mod
from heart.common import records
from heart.common.vocabulary import AXIS_COLUMNS
from heart.judging import pairs as pairs_mod
from heart.judging import rater_agreement

REQUIRED = ["rater_id", "item_id", "shown_a", "shown_b", "choice", "seconds_spent"]
OPTIONAL = ["pair_id", "rationale", "qc_expected", *AXIS_COLUMNS]
#: a per-axis mark of the shown sides -> its sign for shown A
AXIS_MARKS = {"A": 1, "B": -1, "same": 0}
CHOICES = {1: "A is significantly better than B", 2: "A is slightly better than B",
           3: "A and B are about the same", 4: "B is slightly better than A",
           5: "B is significantly better than A"}
JUDGMENT_COLUMNS = ["pair_id", "judge", "rater_id", "order", "preference", "winner", "strength", "rationale",
                    "seconds_spent", *AXIS_COLUMNS]
RATER_COLUMNS = ["rater_id", "n_judgments", "n_qc", "qc_failed", "qc_fail_share", "median_seconds",
                 "majority_agreement", "n_compared", "outlier_q", "excluded", "reason"]


class HumanJudgmentError(ValueError):
    """Bad input in the human judgments file; the message names the file, line and field."""


def _split_ref(ref: str) -> tuple[str, str | None]:
    system, _, contributor = ref.partition("#")
    return system, (contributor or None)


MAX_SECONDS = 86_400  # a judgment that took more than a day is a unit error (milliseconds?), not a rater


_CHOICE = re.compile(r"[1-5]", re.ASCII)
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)  # plain decimal digits: no 1e3, 1_000, NaN or "٤"


def read(path) -> pd.DataFrame:
    """Read and check the CSV; errors name the file, the line (header = line 1) and the field.

    Rejected: what :func:`heart.common.records.read_records` rejects (encoding, truncation, missing, repeated or
    unknown columns), an empty id, a choice outside 1-5, seconds that are not a number in [0, 86400],
    a quality-check side other than A/B, A and B naming the same completion, and one rater judging the
    same pair of an item twice, in either shown order (quality-check rows may repeat).
    """
    path = Path(path)
    try:
        table = records.read_records(path, REQUIRED, OPTIONAL,
                                     ids=("rater_id", "item_id", ("shown_a", "shown_b"), "pair_id"))
    except records.RecordError as exc:
        raise HumanJudgmentError(str(exc)) from None
    for col in ("choice", "seconds_spent"):  # numbers may be padded with spaces or tabs, nothing else
        table[col] = table[col].str.strip(" \t")
    for row in table.itertuples():
        where = f"{path}, line {row.line}"
        for col in ("rater_id", "item_id", "shown_a", "shown_b"):
            if records.is_blank(getattr(row, col)):
                raise HumanJudgmentError(f"{where}: field {col!r} is empty")
        if not _CHOICE.fullmatch(row.choice):
            raise HumanJudgmentError(f"{where}: field 'choice' is {row.choice!r}; expected 1-5 "
                                     f"(1 = {CHOICES[1]!r} ... 5 = {CHOICES[5]!r})")
        if not (_SECONDS.fullmatch(row.seconds_spent) and float(row.seconds_spent) <= MAX_SECONDS):
            raise HumanJudgmentError(f"{where}: field 'seconds_spent' is {row.seconds_spent!r}; "
                                     f"expected a number of seconds from 0 to {MAX_SECONDS}")
        if row.qc_expected not in ("", "A", "B"):
            raise HumanJudgmentError(f"{where}: field 'qc_expected' is {row.qc_expected!r}; "
                                     "expected A, B or empty (not a quality check)")
        for col in AXIS_COLUMNS:
            mark = getattr(row, col, "")
            if mark and mark not in AXIS_MARKS:
                raise HumanJudgmentError(f"{where}: field {col!r} is {mark!r}; expected A, B, same (no clear "
                                         "difference) or empty (not marked)")
        if row.shown_a == row.shown_b:
            raise HumanJudgmentError(f"{where}: fields 'shown_a' and 'shown_b' name the same completion")
    judgments = table[table["qc_expected"] == ""]  # a quality check may be shown to a rater more than once
    seen: dict[tuple, int] = {}
    for r in judgments.itertuples():  # the pair in either shown order: A/B swapped is the same pair
        key = (r.rater_id, r.item_id, *sorted((r.shown_a, r.shown_b)))
        if key in seen:
            raise HumanJudgmentError(f"{path}, lines {seen[key]} and {r.line}: fields 'rater_id', 'item_id', "
                                     f"'shown_a', 'shown_b': rater {r.rater_id!r} judged the same pair of an item "
                                     "twice (in either shown order); keep one judgment")
        seen[key] = r.line
    for col in OPTIONAL:
        table[col] = table[col].replace("", None)
    table["choice"] = table["choice"].astype(int)
    table["seconds_spent"] = table["seconds_spent"].astype(float)
    return table


def qc_passed(expected, choice):
    """A quality check passes when the choice is on the expected side: 1-2 for "A", 4-5 for "B" (scalars
    or Series)."""
    return ((expected == "A") & (choice <= 2)) | ((expected == "B") & (choice >= 4))


def quality_control(table: pd.DataFrame, max_qc_fail_share: float, min_median_seconds: float,
                    max_median_seconds: float, outlier_alpha: float | None = None) -> pd.DataFrame:
    """One row per rater: quality-check and timing figures, agreement with the other raters' majority and the
    outlier test (:mod:`heart.judging.rater_agreement`), whether excluded and why. With ``outlier_alpha``, an
    outlier rater (Benjamini-Hochberg q below it) is excluded too; without, the test is reported only."""
    agreement = rater_agreement.outliers(table, outlier_alpha or 0.05).set_index("rater_id")
    rows = []
    for rater, g in table.groupby("rater_id", sort=True):
        qc = g[g["qc_expected"].notna()]
        failed = int((~qc_passed(qc["qc_expected"], qc["choice"])).sum())
        share = failed / len(qc) if len(qc) else None
        median = float(g["seconds_spent"].median())
        reasons = []
        if share is not None and share >= max_qc_fail_share:
            reasons.append(f"failed {failed} of {len(qc)} quality checks (>= {max_qc_fail_share:.0%})")
        if median < min_median_seconds:
            reasons.append(f"median {median:.1f} s per judgment < {min_median_seconds} s")
        if median > max_median_seconds:
            reasons.append(f"median {median:.1f} s per judgment > {max_median_seconds} s")
        a = agreement.loc[rater] if rater in agreement.index else None
        if outlier_alpha is not None and a is not None and a["outlier"]:
            reasons.append(rater_agreement.reason(a))
        rows.append({"rater_id": rater, "n_judgments": int(len(g) - len(qc)), "n_qc": int(len(qc)),
                     "qc_failed": failed, "qc_fail_share": share, "median_seconds": median,
                     "majority_agreement": None if a is None or pd.isna(a["agreement"]) else float(a["agreement"]),
                     "n_compared": 0 if a is None else int(a["n_compared"]),
                     "outlier_q": None if a is None or pd.isna(a["outlier_q"]) else float(a["outlier_q"]),
                     "excluded": bool(reasons), "reason": "; ".join(reasons)})
    return pd.DataFrame(rows, columns=RATER_COLUMNS)


def resolve_items(table: pd.DataFrame, items: pd.DataFrame, path) -> pd.DataFrame:
    """:func:`read`'s table with every judgment's ``item_id`` made the item's id: a release key (column
    ``release_key`` of ``items``, e.g. "regular:17") becomes the item_id it names.

    Quality-check rows keep their ``item_id`` (they may use any). An ``item_id`` that is neither an item id
    nor a release key is an error naming the file, the line and the field, and so is one rater judging the
    same shown pair of an item twice under two keys.
    """
    keys = items_mod.lookup(items)
    out = table.copy()
    judged = out["qc_expected"].isna() | out["qc_expected"].eq("")
    seen: dict[tuple, int] = {}
    for idx in out.index[judged]:
        r = out.loc[idx]
        if r["item_id"] not in keys:
            raise HumanJudgmentError(f"{path}, line {r['line']}: field 'item_id' is {r['item_id']!r}, "
                                     "neither an item_id nor a release_key (e.g. 'regular:17') of the items "
                                     "table; check the key, or mark a quality-check row with qc_expected")
        out.at[idx, "item_id"] = keys[r["item_id"]]
        key = (r["rater_id"], keys[r["item_id"]], *sorted((r["shown_a"], r["shown_b"])))
        if key in seen:
            raise HumanJudgmentError(f"{path}, lines {seen[key]} and {r['line']}: rater {r['rater_id']!r} "
                                     "judged the same shown pair of an item twice (field 'item_id' names the "
                                     "item by two keys); keep one judgment")
        seen[key] = r["line"]
    return out


def orient(table: pd.DataFrame, pairs: pd.DataFrame, raters: pd.DataFrame, strength_map: dict, path,
           items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Judgments of included raters, oriented to the pairs (positive preference = the pair's system_a).

    ``preference`` is the signed Figure-2 choice in -2..2 (0 = about the same);
    ``winner``/``strength`` map it onto the judges' scale with ``strength_map``
    ({"slight": s1, "significant": s2}); "about the same" has no winner (a tie,
    kept for tie shares, not used by Bradley–Terry). With ``items``, a row's
    ``item_id`` may also be the item's release key (:func:`resolve_items`).
    """
    if items is not None:
        table = resolve_items(table, items, path)
    excluded = set(raters.loc[raters["excluded"], "rater_id"])
    by_id = pairs.set_index("pair_id")
    rows = []
    for r in table[table["qc_expected"].isna() & ~table["rater_id"].isin(excluded)].itertuples():
        ref_a, ref_b = r.shown_a, r.shown_b
        pid = pairs_mod.pair_id(r.item_id, ref_a, ref_b)
        if not pd.isna(r.pair_id) and r.pair_id != pid:
            raise HumanJudgmentError(f"{path}, line {r.line}: field 'pair_id' is {r.pair_id!r} but item "
                                     f"{r.item_id} with {ref_a} vs {ref_b} is pair {pid}")
        if pid not in by_id.index:
            raise HumanJudgmentError(
                f"{path}, line {r.line}: fields 'item_id', 'shown_a', 'shown_b' ({r.item_id}: {ref_a} vs {ref_b}) "
                "name no pair of results/judging/pairs.parquet; a completion is '<system>' or "
                "'human#<contributor_id>'")
        p = by_id.loc[pid]
        same_order = _split_ref(ref_a) == (p["system_a"], None if pd.isna(p["contributor_a"]) else p["contributor_a"])
        shown = 3 - r.choice  # +2 .. -2, positive = shown A better
        pref = shown if same_order else -shown
        strength = {0: None, 1: strength_map["slight"], 2: strength_map["significant"]}[abs(pref)]
        marks = {col: getattr(r, col, None) for col in AXIS_COLUMNS}
        rows.append({"pair_id": pid, "judge": f"human:{r.rater_id}", "rater_id": r.rater_id,
                     "order": "AB" if same_order else "BA", "preference": int(pref),
                     "winner": None if pref == 0 else ("a" if pref > 0 else "b"), "strength": strength,
                     "rationale": None if pd.isna(r.rationale) else r.rationale,
                     "seconds_spent": r.seconds_spent,
                     **{col: (None if not isinstance(m, str) or m not in AXIS_MARKS
                              else AXIS_MARKS[m] * (1 if same_order else -1)) for col, m in marks.items()}})
    out = pd.DataFrame(rows, columns=JUDGMENT_COLUMNS)
    for col in ("preference", "strength", *AXIS_COLUMNS):
        out[col] = out[col].astype("Int64")
    return out
