"""HEART ratings against external model metadata (HEART paper §4.5–4.7, Table 1, Figure 5): correlations of
Elo with the Artificial Analysis index and with time to first token. What is correlated, and how:
``docs/methods/external.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from heart.common import records
from heart.common.vocabulary import SYSTEM_NAMES
from heart import WORKFLOW_DIR

TEST_FAMILY = "external_correlates"
MODELS_CSV = WORKFLOW_DIR / "resources" / "external" / "models.csv"
MODEL_COLUMNS = ["model", "system", "family", "in_table_1", "elo_paper", "win_pct_paper", "aa_index_v3",
                 "ttft_median_s", "source"]
_NUMERIC = ["elo_paper", "win_pct_paper", "aa_index_v3", "ttft_median_s"]
RESULT_COLUMNS = ["family", "test", "x", "y", "method", "status", "exploratory", "n", "estimate", "ci_low",
                  "ci_high", "p_value", "systems", "ttft_source", "figure_5", "note"]
#: Where a median TTFT comes from: the paper's published medians (models.csv) or this run's measurements.
TTFT_SOURCES = ("paper", "measured")
TTFT_COLUMNS = ["system", "ttft_median_s", "n_ttft"]


def load_models(path=MODELS_CSV) -> pd.DataFrame:
    """The metadata resource, checked; errors name the file, row and field."""
    path = Path(path)
    table = records.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    missing = [c for c in MODEL_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; "
                         f"expected {', '.join(MODEL_COLUMNS)}")
    for col in ("model", "system", "family", "source"):
        for i, v in table[col].items():
            if pd.isna(v) or not str(v).strip():
                raise ValueError(f"{path}, row {i + 2}: field {col!r} is empty")
    dup = table["system"][table["system"].duplicated()].tolist()
    if dup:
        raise ValueError(f"{path}: system(s) listed twice: {', '.join(dup)}")
    for col in _NUMERIC:
        values = pd.to_numeric(table[col], errors="coerce")
        bad = table[col].notna() & values.isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{path}, row {i + 2}: field {col!r} is {table[col].iloc[i]!r}; "
                             "expected a number or empty")
        table[col] = values.astype(float)
    if (table["ttft_median_s"] <= 0).any():
        i = int(np.flatnonzero((table["ttft_median_s"] <= 0).to_numpy())[0])
        raise ValueError(f"{path}, row {i + 2}: field 'ttft_median_s' must be positive seconds")
    flags = table["in_table_1"].str.lower().map({"true": True, "false": False})
    if flags.isna().any():
        i = int(np.flatnonzero(flags.isna().to_numpy())[0])
        raise ValueError(f"{path}, row {i + 2}: field 'in_table_1' is {table['in_table_1'].iloc[i]!r}; "
                         "expected true/false")
    table["in_table_1"] = flags.astype(bool)
    return table[MODEL_COLUMNS]


def display_names(models: pd.DataFrame, overrides: Mapping | None = None) -> dict[str, str]:
    """System -> the name figures and tables show: the systems every study has
    (:data:`heart.common.vocabulary.SYSTEM_NAMES`), each model of ``models`` by its ``figure_name`` (Figure 4's
    spelling; a file without that column, or a row with it empty, names none), then config
    ``figures.fig4.display_names`` over both. Unnamed systems keep their key."""
    names = dict(SYSTEM_NAMES)
    if "figure_name" in models:
        names.update({s: n for s, n in zip(models["system"], models["figure_name"])
                      if isinstance(n, str) and n.strip()})
    return {**names, **dict(overrides or {})}


def measured_ttft(completions: pd.DataFrame | None) -> pd.DataFrame:
    """This run's median TTFT per system, from the completions tables (``completions.schema.yaml``).

    Returns
    -------
    DataFrame
        ``TTFT_COLUMNS``: per system with at least one measured ``ttft_s`` (seconds to the first
        streamed token of a completion call; null where the call was not streamed, was imported
        without one, or the completion is not a model's), the median over its non-null values and
        their number ``n_ttft``. Sorted by system; empty where nothing was measured.
    """
    if completions is None or not len(completions) or "ttft_s" not in completions:
        return pd.DataFrame({"system": pd.Series(dtype=object), "ttft_median_s": pd.Series(dtype=float),
                             "n_ttft": pd.Series(dtype="Int64")})
    t = pd.DataFrame({"system": completions["system"].astype(str),
                      "ttft_s": pd.to_numeric(completions["ttft_s"], errors="coerce")}).dropna()
    g = t.groupby("system", sort=True)["ttft_s"]
    median = g.median()
    return pd.DataFrame({"system": median.index.astype(object), "ttft_median_s": median.to_numpy(),
                         "n_ttft": pd.array(g.size().to_numpy(), dtype="Int64")})


def ttft_table(source: str, metadata: pd.DataFrame | None = None,
               completions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median TTFT per system from one source (:data:`TTFT_SOURCES`), ``TTFT_COLUMNS``.

    "paper": the rows of ``metadata`` (:func:`load_models`) with a published ``ttft_median_s``
    (``n_ttft`` missing); "measured": :func:`measured_ttft` of ``completions``.
    """
    if source not in TTFT_SOURCES:
        raise ValueError(f"ttft_source must be one of {', '.join(TTFT_SOURCES)}, not {source!r}")
    if source == "measured":
        return measured_ttft(completions)
    m = (metadata if metadata is not None else pd.DataFrame(columns=["system", "ttft_median_s"]))
    m = m[pd.to_numeric(m["ttft_median_s"], errors="coerce").notna()].drop_duplicates("system")
    return pd.DataFrame({"system": m["system"].astype(object).to_numpy(),
                         "ttft_median_s": pd.to_numeric(m["ttft_median_s"]).to_numpy(dtype=float),
                         "n_ttft": pd.array([pd.NA] * len(m), dtype="Int64")})


def _row(test: str, x: str, y: str, method: str, xs: pd.Series, ys: pd.Series, ci: float,
         exploratory: bool = False, note: str = "", ttft_source: str | None = None, figure_5: bool = False,
         absent: str | None = None) -> dict:
    ok = xs.notna() & ys.notna()
    xs, ys = xs[ok].astype(float), ys[ok].astype(float)
    n = len(xs)
    row = {"family": TEST_FAMILY, "test": test, "x": x, "y": y, "method": method, "exploratory": exploratory,
           "n": n, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan,
           "systems": ";".join(map(str, xs.index)), "ttft_source": ttft_source, "figure_5": figure_5}
    if absent:
        return {**row, "status": "absent", "note": absent}
    need = 4 if method == "pearson" else 3
    if n < need:
        why = f"{n} model(s) with both values; at least {need} needed"
        return {**row, "status": "insufficient", "note": "; ".join(s for s in (why, note) if s)}
    if xs.nunique() < 2 or ys.nunique() < 2:
        return {**row, "status": "degenerate", "note": "; ".join(s for s in ("a variable is constant", note) if s)}
    # scipy here, not at the top: the figure and table jobs read the models table from this module
    from scipy import stats

    from heart.stats.factors import fisher_ci

    if method == "pearson":
        res = stats.pearsonr(xs, ys)
        est, p = float(res.statistic), float(res.pvalue)
        lo, hi = fisher_ci(est, n, ci)
        how = "Pearson r; Fisher-z CI; t-test p"
    else:
        res = stats.spearmanr(xs, ys)
        est, p = float(res.statistic), float(res.pvalue)
        lo, hi = fisher_ci(est, n, ci, se_scale=math.sqrt(1.06))
        how = "Spearman rho; Fisher-z CI (SE sqrt(1.06/(n-3))); t-approximation p"
    return {**row, "status": "ok", "estimate": est, "ci_low": lo, "ci_high": hi, "p_value": p,
            "note": "; ".join(s for s in (how, note) if s)}


_TTFT_NOTES = {"paper": "TTFT: median published in the paper's text (§4.5; models.csv)",
               "measured": "TTFT: this run's median measured ttft_s per system (streamed completion calls)"}


def correlate(elo_table: pd.DataFrame, metadata: pd.DataFrame, elo_col: str = "elo", key: str = "system",
              win_col: str | None = None, ci: float = 0.95, measured: pd.DataFrame | None = None,
              figure_ttft: str | None = None) -> pd.DataFrame:
    """Correlations of HEART ratings with the AA Intelligence Index and with log median TTFT.

    Parameters
    ----------
    elo_table : DataFrame
        One row per system: ``key`` and ``elo_col`` (and ``win_col`` if given). Systems without
        the other variable (e.g. "human", "original") drop out of each test.
    metadata : DataFrame
        :func:`load_models` output (AA index, family, published TTFT).
    elo_col, key : str
        Column names in ``elo_table``.
    win_col : str, optional
        A win-rate column of ``elo_table``; adds ``pearson_winrate_aa``.
    ci : float
        Level of the Fisher-z intervals.
    measured : DataFrame, optional
        :func:`measured_ttft` (this run's TTFT); adds the "measured" TTFT rows (status "absent"
        where it is empty: nothing measured).
    figure_ttft : {"paper", "measured"}, optional
        The TTFT source Figure 5 draws: its rows get ``figure_5`` true.

    Returns
    -------
    DataFrame
        ``RESULT_COLUMNS``: one row per test (``docs/methods/external.md``); ``systems`` lists the models used,
        ``ttft_source`` names the TTFT of a TTFT row (empty for the AA rows).
    """
    if figure_ttft is not None and figure_ttft not in TTFT_SOURCES:
        raise ValueError(f"figure_ttft must be one of {', '.join(TTFT_SOURCES)}, not {figure_ttft!r}")
    if elo_table[key].duplicated().any():
        raise ValueError(f"elo table lists a {key} twice: "
                         f"{', '.join(elo_table[key][elo_table[key].duplicated()].astype(str))}")
    cols = [key, elo_col] + ([win_col] if win_col else [])
    meta = metadata.drop_duplicates("system").set_index("system")
    joined = (elo_table[cols].rename(columns={key: "system"}).astype({"system": str}).set_index("system")
              .join(meta[["family", "aa_index_v3"]], how="left"))
    joined[elo_col] = pd.to_numeric(joined[elo_col], errors="coerce")
    aa = pd.to_numeric(joined["aa_index_v3"], errors="coerce")
    rows = [_row("pearson_elo_aa", elo_col, "aa_index_v3", "pearson", joined[elo_col], aa, ci)]
    if win_col:
        rows.append(_row("pearson_winrate_aa", win_col, "aa_index_v3", "pearson",
                         pd.to_numeric(joined[win_col], errors="coerce"), aa, ci))
    family = joined["family"].where(joined["family"].notna(), pd.Series(joined.index, index=joined.index))
    for source in TTFT_SOURCES:
        if source == "measured" and measured is None:
            continue
        t = measured if source == "measured" else ttft_table("paper", metadata)
        log_ttft = np.log(t.set_index("system")["ttft_median_s"].astype(float)).reindex(joined.index)
        absent = ("no completion has a measured ttft_s (TTFT is measured on streamed completion calls)"
                  if source == "measured" and t.empty else None)
        common = {"ttft_source": source, "figure_5": source == figure_ttft, "absent": absent}
        rows.append(_row(f"spearman_elo_log_ttft_{source}", elo_col, f"log_ttft_{source}_s", "spearman",
                         joined[elo_col], log_ttft, ci, note=_TTFT_NOTES[source], **common))
        fam = (pd.DataFrame({"elo": joined[elo_col], "log_ttft": log_ttft, "family": family})
               .dropna().groupby("family")[["elo", "log_ttft"]].mean())
        rows.append(_row(f"spearman_elo_log_ttft_{source}_family_means", elo_col, f"log_ttft_{source}_s",
                         "spearman", fam["elo"], fam["log_ttft"], ci, exploratory=True,
                         note=f"one point per family: mean Elo and mean log TTFT of its models with a TTFT; "
                              f"{_TTFT_NOTES[source]}", **common))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def paper_elo_table(metadata: pd.DataFrame, table_1_only: bool = True) -> pd.DataFrame:
    """The paper's own ratings from the resource as an elo table (``system``, ``elo``, ``win_rate``)."""
    m = metadata[metadata["in_table_1"]] if table_1_only else metadata
    return pd.DataFrame({"system": m["system"].to_numpy(), "elo": m["elo_paper"].to_numpy(),
                         "win_rate": m["win_pct_paper"].to_numpy() / 100.0})
