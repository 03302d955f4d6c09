"""The HEART leaderboard in every scope the paper reports (§4.1, §4.5, §9.8).

One Bradley–Terry/Elo fit (:mod:`heart.bradley_terry`) per *scope*:

* ``axis``: "overall" (the judge's winner and strength 1-5) or one of the HEART
  axes H, E, A, R, T (the signed axis marks; pairs without a clear advantage on
  that axis are left out);
* ``subset``: "all", "regular" or "adversarial" items;
* ``source``: whose judgments -- "combined" (every LLM judge and every human
  rater), "llm" (the LLM judges), "human" (the human raters) or
  "judge:<name>" (one LLM judge).

Every system that appears in a pair is listed in every scope. Where a scope has
no comparisons at all (no human judgments, say) or a system has none in it, the
rows say so (``status`` "absent", a ``note``, empty numbers), never a rating of
1500 or a zero. Where the data do not give one common scale (systems never
compared with each other, even indirectly), ``status`` is "not_estimable" and
the note gives the reason.
"""

from __future__ import annotations

import math

import pandas as pd

from heart import bradley_terry as bt

AXES = ("H", "E", "A", "R", "T")
SUBSETS = ("all", "regular", "adversarial")
COLUMNS = ["axis", "subset", "source", "status", "note", *bt.RATING_COLUMNS]
SEPARABILITY_COLUMNS = ["axis", "subset", "source", "status", "n_systems", "n_comparisons", "n_conversations",
                        "separability_asym", "separability_boot"]


def sources(judgments: pd.DataFrame) -> list[str]:
    """The judgment sources of the leaderboard: combined, llm, human, then one per LLM judge."""
    judges = sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique())
    return ["combined", "llm", "human", *(f"judge:{j}" for j in judges)]


def select(judgments: pd.DataFrame, subset: str, source: str) -> pd.DataFrame:
    """The judgments of one (subset, source)."""
    rows = judgments if subset == "all" else judgments[judgments["subset"] == subset]
    if source in ("llm", "human"):
        return rows[rows["judge_kind"] == source]
    if source.startswith("judge:"):
        return rows[(rows["judge_kind"] == "llm") & (rows["judge"] == source.removeprefix("judge:"))]
    return rows


def _absent(systems, scope: dict, status: str, note: str) -> list[dict]:
    return [{**scope, "status": status, "note": note, "system": s} for s in systems]


def scope_ratings(judgments: pd.DataFrame, systems: list[str], axis: str, subset: str, source: str,
                  n_boot: int, seed: int, alpha: float, ci: float) -> tuple[list[dict], dict]:
    """Rows of one scope (every system listed) and its separability row."""
    scope = {"axis": axis, "subset": subset, "source": source}
    comp = bt.comparisons(select(judgments, subset, source), axis=None if axis == "overall" else axis)
    sep = {**scope, "n_systems": 0, "n_comparisons": len(comp),
           "n_conversations": int(comp["conversation_id"].nunique()),
           "separability_asym": math.nan, "separability_boot": math.nan}
    if comp.empty:
        why = ("no human judgments" if source == "human" else "no judgments") + \
            (f" on axis {axis} (no clear advantage marked)" if axis != "overall" else "") + \
            (f" on {subset} items" if subset != "all" else "")
        return _absent(systems, scope, "absent", why), {**sep, "status": "absent"}
    rated = sorted(set(comp["winner"]) | set(comp["loser"]))
    missing = [s for s in systems if s not in rated]
    try:
        table = bt.ratings(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
    except ValueError as err:
        return _absent(systems, scope, "not_estimable", str(err)), {**sep, "status": "not_estimable"}
    rows = [{**scope, "status": "ok", "note": None, **r} for r in table.to_dict("records")]
    rows += _absent(missing, scope, "absent", "no comparisons involving this system in this scope")
    summary = bt.summary(table)
    return rows, {**sep, "status": "ok", "n_systems": len(rated),
                  "separability_asym": summary["separability_asym"],
                  "separability_boot": summary["separability_boot"]}


def leaderboard(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, alpha: float = bt.DEFAULT_ALPHA,
                ci: float = 0.95, axes=("overall", *AXES), subsets=SUBSETS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings and separability in every (axis, subset, source) scope.

    Returns
    -------
    (DataFrame, DataFrame)
        ``COLUMNS`` (one row per scope x system) and ``SEPARABILITY_COLUMNS``
        (one row per scope).
    """
    systems = sorted(set(judgments["system_a"]) | set(judgments["system_b"]))
    rows, seps = [], []
    for axis in axes:
        for subset in subsets:
            for source in sources(judgments):
                r, s = scope_ratings(judgments, systems, axis, subset, source, n_boot, seed, alpha, ci)
                rows += r
                seps.append(s)
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    for col in ("n_comparisons", "wins", "rank_asym", "rank_boot"):
        table[col] = table[col].astype("Int64")
    return table, pd.DataFrame(seps).reindex(columns=SEPARABILITY_COLUMNS)


def headline(ratings: pd.DataFrame, source: str = "combined") -> pd.DataFrame:
    """Figure 4's table: per system, overall Elo (both CIs) and win rate, and each axis's win rate (%)."""
    r = ratings[(ratings["subset"] == "all") & (ratings["source"] == source)]
    overall = r[r["axis"] == "overall"].set_index("system")
    out = overall[["status", "elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot",
                   "n_comparisons", "win_rate"]].copy()
    out["win_pct"] = 100 * out.pop("win_rate")
    for axis in AXES:
        out[f"{axis}_pct"] = 100 * r[r["axis"] == axis].set_index("system")["win_rate"].reindex(out.index)
    return out.reset_index().sort_values("elo", ascending=False, na_position="last", ignore_index=True)
