"""Both orders of an LLM judge combined into one judgment per pair, and the judgments table.

Combining the two orders (:func:`combine_signed`), documented rule:

1. Only one order parsed: that verdict.
2. Both: s = s_AB + s_BA. If s != 0 the winner is sign(s) and the strength is
   ceil(|s| / 2) (both orders agree on a: the mean strength, rounded up; they
   disagree: the margin, halved, rounded up).
3. s == 0 (equal and opposite: a pure position effect): broken by the sum of the
   signed axis marks of both orders; if that is 0 too, the pair has no combined
   verdict (``winner`` null, status "inconsistent") and is left out of ratings.
   Ties are never invented.
4. Every parsed order a tie (signed 0; only an imported judge whose scale has ties gives them): status
   "tie", no winner. A tie in one order and a win in the other is combined by rule 2.

The same rule combines each axis over the parsed orders that marked it ("none" counts as 0), except
that an axis with s == 0 is simply "no clear advantage" (0). An axis that no parsed order marked stays
unmarked (null): "not marked" is never turned into "no clear advantage". A *flip* is a pair whose two
orders name different winners (overall, or per axis among the pairs whose axis both orders marked;
otherwise null). A letter judge's orders are combined by their
margins (:func:`combine_margins`). :func:`judgments` stacks the combined LLM verdicts and the human
judgments into the statistics' input (rule combine_judgments).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from heart.common.vocabulary import AXIS_COLUMNS
from heart.judging.kinds.logprobs import margin_strength


def combine_signed(values, tiebreak: int = 0) -> int | None:
    """The documented rule (module docstring) for one pair: signed verdicts -> one signed verdict."""
    vals = [int(v) for v in values if v is not None and not pd.isna(v)]
    if not vals:
        return None
    if len(vals) == 1:
        return vals[0]
    s = sum(vals)
    if s == 0:
        s = tiebreak
        if s == 0:
            return None
        return int(np.sign(s))  # broken by the axes: the smallest strength
    return int(np.sign(s)) * math.ceil(abs(s) / len(vals))


def combine_margins(margins, orders, none_below: float = 0.0) -> int | None:
    """A letter judge's orders combined by their margins (log P(A) - log P(B) as shown): oriented to the
    pair (an order "BA" margin negated) and averaged; the sign is the winner and the mean's size the
    strength (:func:`margin_strength`). A judge that prefers the first letter by the same margin in both orders
    cancels out, and what is left is the content signal. A mean below ``none_below`` in size: None."""
    oriented = [float(m) * (1 if o == "AB" else -1) for m, o in zip(margins, orders)]
    if not oriented:
        return None
    mean = sum(oriented) / len(oriented)
    if mean == 0 or abs(mean) < none_below:
        return None
    return int(np.sign(mean)) * margin_strength(mean)


def _values(column: pd.Series) -> list:
    """A column as a list of Python values, None where missing (fast to index one by one)."""
    return [None if pd.isna(v) else v for v in column.astype(object)]


def combine(verdicts: pd.DataFrame, pairs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """One row per (pair, judge): the combined verdict, per-axis marks and whether the orders flipped.

    A letter judge's orders (rows with a ``margin``) combine by their margins (:func:`combine_margins`);
    every other judge's by :func:`combine_signed` (module docstring). The columns are read once as lists
    and the (pair, judge) groups walked in order (at paper scale, ~40,000 groups of one or two rows, a
    pandas group-by per group took minutes)."""
    v = verdicts.sort_values(["pair_id", "judge"], kind="stable")  # groups in key order, rows in file order
    has_margins = "margin" in v.columns
    pid, judge, order = v["pair_id"].tolist(), v["judge"].tolist(), _values(v["order"])
    parse_ok = [bool(x) for x in v["parse_ok"].tolist()]
    signed, rationale = _values(v["signed"]), v["rationale"].astype(object).tolist()
    marks_of = {k: _values(v[f"axis_{k}"]) for k in axes}
    margin = _values(v["margin"]) if has_margins else None
    margin_of = {k: _values(v[f"margin_{k}"]) for k in axes} if has_margins else {}
    rows = []
    n, start = len(pid), 0
    while start < n:
        end = start + 1
        while end < n and pid[end] == pid[start] and judge[end] == judge[start]:
            end += 1
        ok = [i for i in range(start, end) if parse_ok[i]]
        by_margin = has_margins and bool(ok) and all(margin[i] is not None for i in ok)
        axis_sum = int(sum(marks_of[k][i] or 0 for k in axes for i in ok))
        ok_signed = [signed[i] for i in ok]
        tied = bool(ok) and not by_margin and all(x == 0 for x in ok_signed)  # an imported judge's ties
        combined = (combine_margins([margin[i] for i in ok], [order[i] for i in ok]) if by_margin
                    else None if tied else combine_signed(ok_signed, tiebreak=axis_sum))
        row = {"pair_id": pid[start], "judge": judge[start], "n_orders": len(ok),
               "flipped": (len({int(np.sign(x)) for x in ok_signed if x is not None}) == 2 if len(ok) == 2
                           else None),
               "status": ("ok" if combined is not None else "tie" if tied
                          else "unparsed" if not ok else "inconsistent"),
               "winner": None if combined is None else ("a" if combined > 0 else "b"),
               "strength": None if combined is None else abs(combined),
               "rationale": " | ".join(f"{order[i]}: {rationale[i]}" if order[i] else rationale[i] for i in ok
                                       if isinstance(rationale[i], str)) or None}  # imported: may have none
        for k in axes:
            marks = [int(marks_of[k][i]) for i in ok if marks_of[k][i] is not None]  # 0: no clear edge seen
            if by_margin and all(margin_of[k][i] is not None for i in ok):
                row[f"axis_{k}"] = combine_margins([margin_of[k][i] for i in ok], [order[i] for i in ok]) or 0
            elif marks:
                row[f"axis_{k}"] = combine_signed(marks) or 0
            else:
                row[f"axis_{k}"] = None  # no order marked the axis: it stays unmarked
            row[f"flipped_{k}"] = bool(marks[0] * marks[1] < 0) if len(marks) == 2 else None  # both marked
        rows.append(row)
        start = end
    out = pd.DataFrame(rows)
    if out.empty:
        out = pd.DataFrame(columns=["pair_id", "judge", "n_orders", "flipped", "status", "winner", "strength",
                                    "rationale",
                                    *(f"axis_{k}" for k in axes), *(f"flipped_{k}" for k in axes)])
    out["strength"] = out["strength"].astype("Int64")
    return pairs.merge(out, on="pair_id", how="inner")


def flip_rates(combined: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Per judge: share of pairs judged in both orders whose winner flipped, overall and per axis."""
    rows = []
    for judge, g in combined.groupby("judge", sort=True):
        both = g[g["n_orders"] == 2]
        rows.append({"judge": judge, "axis": "overall", "n_pairs": len(both),
                     "flip_rate": float(both["flipped"].astype(bool).mean()) if len(both) else None})
        for k in axes:  # among the pairs whose axis both orders marked
            marked = both[f"flipped_{k}"].dropna().astype(bool)
            rows.append({"judge": judge, "axis": k, "n_pairs": len(marked),
                         "flip_rate": float(marked.mean()) if len(marked) else None})
    return pd.DataFrame(rows, columns=["judge", "axis", "n_pairs", "flip_rate"])


JUDGMENT_COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "system_a", "contributor_a", "system_b",
                    "contributor_b", "kind", "judge", "judge_kind", "status", "winner", "strength", "preference",
                    "n_orders", "flipped", *AXIS_COLUMNS, "rationale"]


def judgments(pairs: pd.DataFrame, combined: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """The statistics' input: combined LLM verdicts and human judgments, one schema."""
    llm = combined.assign(judge_kind="llm", preference=pd.NA)
    hum = pairs.merge(human, on="pair_id", how="inner").assign(
        judge_kind="human", status=lambda d: np.where(d["winner"].isna(), "tie", "ok"),
        n_orders=pd.NA, flipped=pd.NA)
    parts = [t.reindex(columns=JUDGMENT_COLUMNS) for t in (llm, hum) if not t.empty]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=JUDGMENT_COLUMNS)
    for col in ("strength", "preference", "n_orders", *AXIS_COLUMNS):
        out[col] = out[col].astype("Int64")
    out["flipped"] = out["flipped"].astype("boolean")
    return out.sort_values(["pair_id", "judge_kind", "judge"], ignore_index=True)


def source_row(judge: str, verdicts: pd.DataFrame, combined: pd.DataFrame, n_excluded: int) -> dict:
    """An LLM judge's line in results/judging/sources.parquet."""
    n = int(combined["status"].eq("ok").sum())
    note = (f"{n} pairs judged; {n_excluded} left out by family exclusion" if n
            else "no pair judged" + (f" ({n_excluded} left out by family exclusion)" if n_excluded else ""))
    return {"judge": judge, "judge_kind": "llm", "status": "present" if n else "absent", "n_pairs": n,
            "n_excluded_family": int(n_excluded), "n_unparsed": int((~verdicts["parse_ok"]).sum()),
            "n_inconsistent": int(combined["status"].eq("inconsistent").sum()), "note": note}
