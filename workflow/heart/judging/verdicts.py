"""The verdict table every judge kind's answers become: one row per (pair, shown order), oriented to the pair.

A pair stores ``system_a`` / ``system_b`` (its randomized order). Every verdict is stored *oriented to the
pair*: ``signed`` > 0 means system_a won, with ``|signed|`` the strength; axis marks likewise (0 = no clear
advantage; null = not asked). The two orders are combined in :mod:`heart.judging.combine`.
"""

from __future__ import annotations

import pandas as pd

from heart.common.vocabulary import AXES
from heart.judging.material import orders

VERDICT_COLUMNS = ["pair_id", "judge", "order", "shown_a", "parse_ok", "parse_error", "winner_shown", "signed",
                   "rationale", "raw_text", "cache_key", "from_cache", "neutralised_tokens", "latency_s", "cost_usd"]
#: a letter judge's margins (log P(A) - log P(B) as shown), overall and per axis; null for other judges
MARGIN_COLUMNS = ["margin", *(f"margin_{k}" for k in AXES)]


def axis_marks() -> list[str]:
    """The marks an answer gives an axis, in the shown order: "none", "A+" ... "A+++++", "B+" ... "B+++++"."""
    return ["none"] + [f"{side}{'+' * k}" for side in "AB" for k in range(1, 6)]


def parse_mark(mark: str | None) -> int | None:
    """'A+++' -> +3, 'B+' -> -1, 'none' -> 0 (in the shown order: positive = response A); None (an axis a
    letter judge was not asked about) -> None."""
    if mark is None:
        return None
    if mark == "none":
        return 0
    return (1 if mark[0] == "A" else -1) * mark.count("+")


def orient(parsed: dict, order: str, axes: list[str]) -> dict:
    """A parsed answer as signed values oriented to the pair (positive = system_a)."""
    flip = 1 if order == "AB" else -1
    shown = parsed["strength"] * (1 if parsed["winner"] == "A" else -1)
    out = {"signed": flip * shown}
    for k in axes:
        mark = parse_mark(parsed["axes"].get(k))  # an axis the kind does not ask: unmarked
        out[f"axis_{k}"] = None if mark is None else flip * mark
    return out


def verdict_row(pair, judge: str, order: str, answer: dict, axes: list[str]) -> dict:
    """One answer (a kind's, for ``<pair_id>:<order>``) as a row of the verdict table."""
    ok = answer.get("parsed") is not None
    row = {"pair_id": pair.pair_id, "judge": judge, "order": order,
           "shown_a": pair.system_a if order == "AB" else pair.system_b,
           "parse_ok": ok, "parse_error": answer.get("parse_error"),
           "winner_shown": answer["parsed"]["winner"] if ok else None,
           "signed": None, "rationale": answer["parsed"]["rationale"] if ok else None,
           "raw_text": answer["text"], "cache_key": answer["cache_key"], "from_cache": bool(answer["from_cache"]),
           "neutralised_tokens": answer.get("neutralised_tokens", 0),
           "latency_s": answer.get("latency_s"), "cost_usd": answer.get("cost")}
    row.update({f"axis_{k}": None for k in axes})
    if ok:
        row.update(orient(answer["parsed"], order, axes))
    margins = answer.get("margins") or {}  # a letter judge's log P(A) - log P(B), as shown
    row["margin"] = margins.get("overall")
    row.update({f"margin_{k}": margins.get(k) for k in axes})
    return row


def verdict_table(pairs: pd.DataFrame, judge: str, results: dict[str, dict], axes: list[str],
                  both_orders: bool = True) -> pd.DataFrame:
    """One row per (pair, order): the answer oriented to the pair (``judgments_llm.schema.yaml``)."""
    rows = [verdict_row(p, judge, order, results[f"{p.pair_id}:{order}"], axes)
            for p in pairs.itertuples() for order in orders(both_orders)]
    table = pd.DataFrame(rows, columns=[*VERDICT_COLUMNS, *(f"axis_{k}" for k in axes), *MARGIN_COLUMNS])
    for col in ["signed", *(f"axis_{k}" for k in axes)]:
        table[col] = table[col].astype("Int64")
    for col in MARGIN_COLUMNS:
        table[col] = table[col].astype("float64")
    return table
