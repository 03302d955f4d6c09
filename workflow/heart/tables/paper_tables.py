r"""The paper's tables as CSV and LaTeX, from the statistics tables (HEART paper Table 1, §4, §9.9-9.12).

Each function returns a display DataFrame (rounded, readable column names);
:func:`write` saves it as CSV and as a LaTeX ``tabular`` (``pandas.Styler.to_latex``),
both atomically, the CSV safe to open in a spreadsheet and the LaTeX safe to ``\input``
(:mod:`heart.common.export`). Absent values stay empty cells ("--" in LaTeX), never zeros.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from heart.common import export

#: Appended to a derived row's name (best-human: chosen after judging), as in Figure 4.
DERIVED_MARK = " \u2020"
#: Header of the leaderboard table's axis columns, per what they hold (heart.stats.figure4.headline ``columns``).
AXIS_HEADERS = {"percentile": "{axis} percentile", "win_rate": "{axis} win %"}


def table1(leaderboard: pd.DataFrame, models: pd.DataFrame, external: pd.DataFrame,
           labels: Mapping | None = None, paper: bool = True) -> pd.DataFrame:
    """Table 1: HEART Elo, win % and the AA index -- the paper's rows (``paper``) and this run's, with the correlation.

    ``leaderboard`` is :func:`heart.stats.figure4.headline` (the same as Figure 4's); this run's rows
    show the ``labels`` display name of each system (config ``figures.fig4.display_names``; unmapped
    systems by their name) and the derived ``best-human`` with :data:`DERIVED_MARK`.
    """
    published = models[models["in_table_1"]] if paper else models.iloc[:0]
    paper_rows = published[["model", "elo_paper", "win_pct_paper", "aa_index_v3"]].rename(
        columns={"elo_paper": "HEART Elo", "win_pct_paper": "Win %", "aa_index_v3": "AA"}).assign(data="paper")
    meta = models.drop_duplicates("system").set_index("system")
    ok = leaderboard[leaderboard["status"] == "ok"]
    run = pd.DataFrame({"model": display_names(ok, labels), "HEART Elo": ok["elo"], "Win %": ok["win_pct"],
                        "AA": ok["system"].map(meta["aa_index_v3"]) if len(meta) else np.nan})
    run = run.assign(data="this run")
    out = pd.concat([paper_rows, run], ignore_index=True)
    r = external[external["test"] == "pearson_elo_aa"].set_index("data")
    for data, label in (("paper Table 1", "paper"), ("this run", "this run")):
        if data in r.index:
            row = r.loc[data]
            value = "" if pd.isna(row["estimate"]) else f"r = {row['estimate']:.2f} (n = {int(row['n'])})"
            out.loc[out["data"] == label, "Pearson r (Elo, AA)"] = value or f"{row['status']}: {row['note']}"
    return out[["data", "model", "HEART Elo", "Win %", "AA", "Pearson r (Elo, AA)"]].round(1)


def display_names(board: pd.DataFrame, labels: Mapping | None = None) -> pd.Series:
    """Each row's display name: ``labels[system]`` (else the system), with :data:`DERIVED_MARK` on a derived row."""
    labels = labels or {}
    derived = (board["derived"].astype("boolean").fillna(False).to_numpy(dtype=bool) if "derived" in board
               else np.zeros(len(board), dtype=bool))
    return pd.Series([str(labels.get(s, s)) + (DERIVED_MARK if d else "") for s, d in zip(board["system"], derived)],
                     index=board.index)


def ci_label(ci: float) -> str:
    """``0.95`` -> ``"95% CI"``: the intervals' coverage as the configuration sets it (stats.ci)."""
    return f"{100 * ci:g}% CI"


def leaderboard(board: pd.DataFrame, ci: float = 0.95, columns: str = "percentile",
                labels: Mapping | None = None) -> pd.DataFrame:
    """The leaderboard table: Figure 4's columns (same :func:`heart.stats.figure4.headline`) and both Elo intervals.

    Columns: System (:func:`display_names`), H ... T (headed "<axis> percentile" or "<axis> win %" as
    ``columns`` says: what the headline's ``H_pct`` ... hold), "Overall win %", "Elo", the two
    intervals at level ``ci``, "Comparisons", ``status`` and ``note`` (a derived row, best-human,
    says how it was chosen: after judging).
    """
    if columns not in AXIS_HEADERS:
        raise ValueError(f"columns must be one of {', '.join(AXIS_HEADERS)}, not {columns!r}")
    axes = {f"{a}_pct": AXIS_HEADERS[columns].format(axis=a) for a in "HEART"}
    out = board.rename(columns={"elo": "Elo", "win_pct": "Overall win %", "n_comparisons": "Comparisons", **axes})
    out["System"] = display_names(board, labels)
    asym, boot = f"Elo {ci_label(ci)} (asymptotic)", f"Elo {ci_label(ci)} (bootstrap)"
    out[asym] = _interval(board["elo_lo_asym"], board["elo_hi_asym"])
    out[boot] = _interval(board["elo_lo_boot"], board["elo_hi_boot"])
    out["note"] = board["note"].fillna("") if "note" in board.columns else ""
    return out[["System", *axes.values(), "Overall win %", "Elo", asym, boot, "Comparisons", "status",
                "note"]].round(1)


def agreement(human_llm: pd.DataFrame, cross_judge: pd.DataFrame, ci: float = 0.95,
              quality: pd.DataFrame | None = None) -> pd.DataFrame:
    """Human-LLM and cross-judge agreement; with ``quality`` (results/judging/judge_quality.parquet), each
    LLM judge's agreement with the known answers of its quality checks (95 % Wilson interval) and, in its
    note, its flip rates."""
    h = human_llm[human_llm["scope"].isin(["all", "ambiguous", "ambiguous-human-only", "subset=regular",
                                           "subset=adversarial"])].assign(
        comparison=lambda d: d["judge"] + " vs " + d["reference"])
    c = cross_judge.assign(comparison=lambda d: d["judge_1"].fillna("") + " vs " + d["judge_2"].fillna("all"),
                           scope=cross_judge["scope"])
    cols = ["comparison", "scope", "n_pairs", "agreement", "ci_low", "ci_high", "status", "note"]
    parts = [h[cols], c[cols]]
    if quality is not None and len(quality):
        q = quality[quality["kind"] == "all"]
        parts.append(pd.DataFrame({
            "comparison": q["judge"] + " vs known answers", "scope": "quality checks", "n_pairs": q["n_checks"],
            "agreement": q["qc_accuracy"], "ci_low": q["ci_low"], "ci_high": q["ci_high"], "status": q["status"],
            "note": [_flip_note(r) for r in q.itertuples()]}))
    out = pd.concat(parts, ignore_index=True)
    out["agreement %"] = 100 * out.pop("agreement")
    out[ci_label(ci)] = _interval(100 * out.pop("ci_low"), 100 * out.pop("ci_high"))
    return out[["comparison", "scope", "n_pairs", "agreement %", ci_label(ci), "status", "note"]].round(1)


def _flip_note(r) -> str:
    flips = [f"flip rate {v:.2f} on {what}" for v, what in ((r.study_flip_rate, "the study's pairs"),
                                                           (r.qc_flip_rate, "the checks")) if pd.notna(v)]
    return "; ".join([*flips, r.note])


JUDGE_QUALITY_COLUMNS = ["judge", "checks", "n", "QC accuracy %", "95% CI", "per-order accuracy %",
                         "flip rate (checks)", "flip rate (study pairs)", "meets targets", "status", "note"]
DIVERSITY_COLUMNS = ["level", "group", "tagger", "status", "n_completions", "coverage", "mean_unique_per_completion",
                     "entropy_bits", "rate_sd_pct", "rate_range_pct"]


def rubric(rubric: dict) -> pd.DataFrame:
    """Table 2, the HEART rubric summary: per axis its name (and letter), description and the high- and
    low-scoring example replies, as the rubric file gives them to the judges."""
    return pd.DataFrame([{"Axis": f"{a['name']} ({a['key']})", "Description": a["description"],
                          "High-scoring example": a["high"], "Low-scoring example": a["low"]}
                         for a in rubric["axes"]])


def absent(columns: list[str], note: str) -> pd.DataFrame:
    """A table whose input this run does not have: one row, status "absent" and the reason (in ``note``, or
    in the last column when the table has no note column), every other cell empty."""
    row = dict.fromkeys(columns)
    row["status"] = "absent"
    row["note" if "note" in columns else columns[-1]] = note
    return pd.DataFrame([row], columns=list(dict.fromkeys([*columns, "status"])))


def judge_quality(quality: pd.DataFrame) -> pd.DataFrame:
    """Each LLM judge's quality checks by kind: QC accuracy (95 % Wilson interval), per-order accuracy,
    flip rates, and whether it meets the targets (heart/judging/judge_qc.py)."""
    out = pd.DataFrame({
        "judge": quality["judge"], "checks": quality["kind"], "n": quality["n_checks"],
        "QC accuracy %": 100 * quality["qc_accuracy"],
        "95% CI": _interval(100 * quality["ci_low"], 100 * quality["ci_high"]),
        "per-order accuracy %": 100 * quality["order_accuracy"],
        "flip rate (checks)": quality["qc_flip_rate"], "flip rate (study pairs)": quality["study_flip_rate"],
        "meets targets": quality["meets_targets"].map({True: "yes", False: "no"}).fillna("--"),
        "status": quality["status"], "note": quality["note"]})
    return out.round(2)


def strategy_diversity(diversity: pd.DataFrame) -> pd.DataFrame:
    return diversity[DIVERSITY_COLUMNS].round(2)


def factors(summary: pd.DataFrame, loadings: pd.DataFrame) -> pd.DataFrame:
    wide = loadings.pivot_table(index="variable", columns="factor", values="loading") if len(loadings) else \
        pd.DataFrame()
    wide = wide.reset_index().rename(columns={"variable": "axis z-score"}) if len(wide) else pd.DataFrame(
        {"axis z-score": []})
    s = summary.iloc[0] if len(summary) else pd.Series(dtype=object)
    foot = {"axis z-score": f"EFA {s.get('status', 'absent')}: {s.get('n_factors', '')} factor(s), "
                            f"KMO {_fmt(s.get('kmo'))}, Cronbach alpha {_fmt(s.get('cronbach_alpha'))}"}
    return pd.concat([wide, pd.DataFrame([foot])], ignore_index=True).round(3)


def tests(table: pd.DataFrame) -> pd.DataFrame:
    out = table[["family", "test", "estimate", "ci_low", "ci_high", "p_value", "p_adj", "reject", "status"]].copy()
    out = out.rename(columns={"p_value": "p (raw)", "p_adj": "p (BH, within family)"})
    return out.round({"estimate": 3, "ci_low": 3, "ci_high": 3}).assign(
        **{"p (raw)": out["p (raw)"].map(_p), "p (BH, within family)": out["p (BH, within family)"].map(_p)})


def _fmt(v) -> str:
    return "--" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.2f}"


def _p(v) -> str:
    if v is None or pd.isna(v):
        return ""
    return f"{v:.2e}" if v < 1e-3 else f"{v:.3f}"


def _interval(lo, hi) -> pd.Series:
    return pd.Series([("" if pd.isna(a) or pd.isna(b) else f"[{a:.1f}, {b:.1f}]") for a, b in zip(lo, hi)],
                     index=getattr(lo, "index", None))


def write(table: pd.DataFrame, csv_path, tex_path, caption: str, label: str | None = None) -> None:
    """CSV and a LaTeX tabular of ``table``, both written atomically. With a ``label`` ("SIMULATED" for a
    rehearsal), the CSV gains a first column ``run`` holding it and the caption starts with it."""
    if label:
        table = table.copy()
        table.insert(0, "run", label)
        caption = f"{label} (made by heart.simulation, not by models or people; not results): {caption}"
    export.write_csv(table, csv_path)  # safe to open in a spreadsheet, safe to \input (heart.common.export)
    export.write_latex(table, tex_path, caption)
