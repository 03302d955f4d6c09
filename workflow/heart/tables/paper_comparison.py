"""The paper's headline numbers beside this run's (issue: "a side-by-side table").

The paper's numbers, what each was computed on and where this workflow computes it are a versioned
resource, ``workflow/resources/paper/headline_numbers.yaml``: per number a results/stats table, the
column filters that pick its row, the value and interval columns, and what it *needs* (human
judgments, two or three LLM judges, strategy spot checks, ...). :func:`compare` gives one row per
number:

* ``this_run`` with ``ci_low`` / ``ci_high`` (the table's interval, at the run's ``stats.ci``) and
  ``scope`` (how many pairs, ratings, verdicts or completions it rests on), and the ``definition``
  it is computed under, next to the paper's value and ``paper_scope``;
* ``status`` "computed" where the row exists with a finite value, else a plain reason a reader can
  act on -- "needs human judgments", "needs >= 2 LLM judges", ... (from ``needs``, checked against
  what the run has, :func:`available`, before any value is taken: a "three-way" agreement over two
  judges is not the paper's number), "not computable in this run" (what it needs is there, but the
  row says why there is no value, e.g. no adversarial pair) or "not in this run" (no such table or
  row; a table of "absent" rows only stands for the missing row) -- with the source row's own note;
  never a zero or a guess;
* ``difference`` = this_run - paper where both exist (no test: the paper gives no intervals).

Then the strategy spread of §4.8 (SD and range of the 15 strategy rates per family, humans pooled)
and Figure 4's Elo column: every system the run rated that the paper rated (by
``resources/external/models.csv``'s ``system`` key, plus Best Human and the original replies).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

COLUMNS = ["group", "id", "quantity", "section", "unit", "paper", "this_run", "ci_low", "ci_high", "difference",
           "scope", "definition", "paper_scope", "status", "note"]
NEEDS = {
    "human": "needs human judgments",
    "human2": "needs >= 2 human ratings of a pair",
    "human_completions": "needs human completions",
    "judges2": "needs >= 2 LLM judges",
    "judges3": "needs >= 3 LLM judges",
    "tags": "needs strategy tags",
    "spot_checks": "needs human strategy spot-check labels",
    "external": "needs >= 4 of the paper's models (external metadata)",
    "texts": "needs completion texts and their tags (analysis-only has judgments only)",
}
_SCOPE_COLUMNS = ("n_pairs", "n_units", "n", "n_agreed_pairs", "n_completions", "n_comparisons")
_OK = {"ok", "present", "computed"}


def load(path) -> dict:
    """The headline-numbers resource, checked for the keys :func:`compare` reads."""
    spec = yaml.safe_load(Path(path).read_text())
    for k, entry in enumerate(spec.get("numbers", [])):
        missing = [key for key in ("id", "quantity", "paper", "table", "where", "value", "needs") if key not in entry]
        if missing:
            raise ValueError(f"{path}: numbers[{k}] ({entry.get('id', '?')}): missing {', '.join(missing)}")
        if entry["needs"] not in NEEDS:
            raise ValueError(f"{path}: numbers[{k}] ({entry['id']}): needs {entry['needs']!r} is not one of "
                             f"{', '.join(NEEDS)}")
    return spec


def _pick(table: pd.DataFrame | None, where: dict) -> pd.Series | None:
    if table is None or table.empty:
        return None
    mask = np.ones(len(table), dtype=bool)
    for col, value in where.items():
        if col not in table.columns:
            return None
        mask &= (table[col].astype(object) == value).to_numpy()
    rows = table[mask]
    return rows.iloc[0] if len(rows) else None


def _num(row: pd.Series, col: str | None, scale: float) -> float:
    if row is None or not col or col not in row.index or pd.isna(row[col]):
        return math.nan
    return float(row[col]) * scale


def _scope(row: pd.Series | None) -> str:
    if row is None:
        return ""
    parts = [f"{c}={int(row[c])}" for c in _SCOPE_COLUMNS if c in row.index and pd.notna(row[c])]
    if "n_conversations" in row.index and pd.notna(row["n_conversations"]):
        parts.append(f"n_conversations={int(row['n_conversations'])}")
    return ", ".join(parts)


def available(judgments: pd.DataFrame, completions_sources=(), spot_checks: bool = False,
              paper_models: int = 0, tags: bool = True, texts: bool = True) -> dict[str, bool]:
    """Which of :data:`NEEDS` this run meets, from its judgments table and what else it has (``tags``,
    ``texts``: False in analysis-only, which has neither completions nor their strategy tags)."""
    human = judgments[judgments["judge_kind"] == "human"]
    n_llm = judgments.loc[judgments["judge_kind"] == "llm", "judge"].nunique()
    return {"human": len(human) > 0,
            "human2": bool(len(human)) and int(human.groupby("pair_id")["judge"].nunique().max()) >= 2,
            "human_completions": "human" in set(completions_sources), "judges2": n_llm >= 2, "judges3": n_llm >= 3,
            "tags": tags, "texts": texts, "spot_checks": spot_checks, "external": paper_models >= 4}


def _row(group: str, e: dict, source: pd.Series | None, met: bool | None) -> dict:
    """One row of the table for the number ``e`` (a resource entry: id, quantity, section, unit, paper,
    definition, paper_scope, value / ci_low / ci_high columns, scale, needs, and ``lookup``, where its row
    was looked for) from its ``source`` row (None: not found) and whether the run meets its need."""
    scale = float(e.get("scale", 1))
    value = _num(source, e["value"], scale)
    status_ok = source is not None and ("status" not in source.index or source["status"] in _OK)
    out = {"group": group, "id": e["id"], "quantity": e["quantity"], "section": e.get("section", ""),
           "unit": e.get("unit", ""), "paper": float(e["paper"]) if e["paper"] is not None else math.nan,
           "definition": e.get("definition", ""), "paper_scope": e.get("paper_scope", ""), "scope": _scope(source)}
    if met is False:  # a value computed without what the number needs (e.g. "all agree" over 2 judges
        status_ok, value = False, math.nan  # where the paper's is over 3) is not the paper's number
    if status_ok and not math.isnan(value):
        lo, hi = _num(source, e.get("ci_low"), scale), _num(source, e.get("ci_high"), scale)
        out.update(this_run=value, ci_low=lo, ci_high=hi, difference=value - out["paper"], status="computed",
                   note=str(source.get("note") or "") if "note" in source.index else "")
    else:
        own = "" if source is None or "note" not in source.index or pd.isna(source["note"]) else str(source["note"])
        if met is False:
            reason = NEEDS[e["needs"]]
        elif source is None:
            reason = f"not in this run ({e['lookup']})"
        elif met:  # what it needs is there, yet no value: the row's note says why (e.g. no pair in scope)
            reason = "not computable in this run"
        else:
            reason = NEEDS[e["needs"]] + (" (value undefined)" if status_ok else "")
        out.update(this_run=math.nan, ci_low=math.nan, ci_high=math.nan, difference=math.nan, status=reason,
                   note=own)
    return out


def compare(spec: dict, tables: dict[str, pd.DataFrame], models: pd.DataFrame | None = None,
            headline: pd.DataFrame | None = None, headline_source: str = "",
            met: dict[str, bool] | None = None) -> pd.DataFrame:
    """Every headline number of the paper beside this run's (module docstring).

    Parameters
    ----------
    spec : dict
        :func:`load` output.
    tables : dict
        results/stats tables by schema name (``agreement_human_llm``, ``preference_shares``, ...); a
        missing one makes its numbers "not in this run".
    models : pandas.DataFrame, optional
        :func:`heart.stats.external.load_models` (the paper's Elo per system key) for Figure 4's Elo column.
    headline : pandas.DataFrame, optional
        Figure 4's table of this run (:func:`heart.stats.figure4.headline`: system, status, elo,
        elo_lo_boot, elo_hi_boot, n_comparisons), from ``headline_source``.
    met : dict, optional
        :func:`available`: need -> met. An unmet need gives its reason; a met one without a value gives
        "not computable in this run" and the source row's note. Without it, the reason is guessed from
        ``needs`` alone.
    """
    met = met or {}
    rows = []
    for e in spec.get("numbers", []):
        table = tables.get(e["table"])
        source = _pick(table, e["where"])
        if (source is None and table is not None and len(table) and set(e["where"]) <= set(table.columns)
                and "status" in table.columns and table["status"].eq("absent").all()):
            source = table.iloc[0]  # a table of "absent" rows only (e.g. one row for a missing judge): its note
        need = e["needs"] if table is not None or met.get("texts", True) else "texts"  # analysis-only
        rows.append(_row("headline", {"ci_low": "ci_low", "ci_high": "ci_high", **e, "needs": need,
                                      "lookup": f"{e['table']}: {e['where']}"}, source, met.get(need)))
    spread = spec.get("strategy_spread")
    if spread:
        diversity = tables.get("strategy_diversity")
        for measure, col, label in (("sd", "rate_sd_pct", "SD"), ("range", "rate_range_pct", "range")):
            for group, paper in spread.get(measure, {}).items():
                src = _pick(diversity, {"level": "family", "group": group})
                need = ("texts" if not met.get("texts", True)
                        else "human_completions" if group == "human" else "tags")
                if src is None and group == "human":
                    src = _pick(diversity, {"level": "source", "group": "human"})
                rows.append(_row("strategy spread", {
                    "id": f"strategy_{measure}_{group}", "quantity": f"Strategy-rate {label}, {group}",
                    "section": spread.get("section", ""), "unit": "pp", "paper": paper,
                    "definition": spread.get("definition", ""), "paper_scope": "15 strategies, the paper's taggers",
                    "value": col, "needs": need, "lookup": f"strategy_diversity: family {group}"}, src, met.get(need)))
    fig4 = spec.get("figure4") or {}
    paper_elo = figure4_elo(spec, models).to_dict()
    if headline is not None and len(headline):
        board = headline.set_index("system")
        for system, paper in paper_elo.items():
            src = board.loc[system] if system in board.index else None
            need = "human_completions" if system == "best-human" else "external"
            rows.append(_row("Figure 4 Elo", {
                "id": f"elo_{system}", "quantity": f"Elo, {system}", "section": fig4.get("section", "Figure 4"),
                "unit": "Elo", "paper": paper, "paper_scope": "paper's 18 systems",
                "definition": f"overall Bradley-Terry Elo (source: {headline_source}); bootstrap interval",
                "value": "elo", "ci_low": "elo_lo_boot", "ci_high": "elo_hi_boot", "needs": need,
                "lookup": f"leaderboard: {system}"}, src, met.get(need) if need == "human_completions" else None))
    return pd.DataFrame(rows, columns=COLUMNS)


def figure4_elo(spec: dict, models: pd.DataFrame | None) -> pd.Series:
    """The paper's Figure 4 Elo column by system key: the models' (``elo_paper`` of the model metadata,
    resources/external/models.csv) and the rest (``figure4.elo`` of the spec: best-human, original).
    The paper's 18 average exactly 1500.0 (one fit held them all)."""
    elo = dict((spec.get("figure4") or {}).get("elo", {}))
    if models is not None and len(models):
        elo.update({r.system: r.elo_paper for r in models.itertuples()
                    if isinstance(r.system, str) and pd.notna(r.elo_paper)})
    return pd.Series(elo, dtype=float, name="elo").rename_axis("system")


def to_text(table: pd.DataFrame) -> pd.DataFrame:
    """The table as a reader sees it: numbers rounded, "—" where this run has none."""
    out = table.copy()

    def fmt(x, unit):
        if pd.isna(x):
            return "—"
        return f"{x:.1f}" if unit in ("%", "pp", "Elo") else f"{x:.3f}"

    for col in ("paper", "this_run", "difference"):
        out[col] = [fmt(x, u) for x, u in zip(out[col], out["unit"])]
    out["interval"] = [("—" if pd.isna(lo) or pd.isna(hi) else f"[{fmt(lo, u)}, {fmt(hi, u)}]")
                       for lo, hi, u in zip(table["ci_low"], table["ci_high"], table["unit"])]
    return out[["group", "quantity", "section", "unit", "paper", "this_run", "interval", "status", "scope",
                "definition", "paper_scope"]]
