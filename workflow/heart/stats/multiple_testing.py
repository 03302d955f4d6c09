"""Benjamini–Hochberg within families, and every hypothesis test of the statistics in one table (HEART §9.12).

:func:`bh` is statsmodels' ``fdr_bh`` with NaN p-values (untested hypotheses) left out of the
correction; :func:`adjust_within_families` applies it separately within each family of tests (column
``family``). The bias audits (:mod:`heart.stats.bias`) adjust within each audit with it.

The statistics modules return raw two-sided p-values with a ``family`` column
(position bias, length bias, self-preference, human–model strategy differences,
factor–win correlations, external correlates, rationale codes). :func:`collect` puts them in one
long table -- what was tested, the estimate, its interval (at the configured ``stats.ci``), the raw
p-value -- and adjusts within each family. Tests without a p-value (absent data) stay in the table
with an empty ``p_adj``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats import multitest

COLUMNS = ["family", "table", "test", "estimate", "ci_low", "ci_high", "p_value", "p_adj", "reject", "status"]

# table name -> (columns naming the test, estimate column, CI columns)
SPECS = {
    "bias_position": (["judge"], "share_shown_a", ("ci_low", "ci_high")),
    "bias_length": (["judge"], "share_longer_wins", ("ci_low", "ci_high")),
    "bias_self_preference": (["judge"], "difference", ("ci_low", "ci_high")),
    "strategy_differences": (["tagger", "strategy"], "diff_pct", ("ci_low_pct", "ci_high_pct")),
    "factor_correlations": (["measure"], "r", ("ci_low", "ci_high")),
    "external_correlations": (["data", "test"], "estimate", ("ci_low", "ci_high")),
    "rationale_codes": (["code"], "partial_r", ("ci_low", "ci_high")),
}


def bh(pvalues, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg adjusted p-values and rejections (statsmodels ``fdr_bh``).

    Parameters
    ----------
    pvalues : array_like
        Raw p-values; NaN entries are left out of the correction and stay NaN (not rejected).
    alpha : float
        False discovery rate.

    Returns
    -------
    p_adj : numpy.ndarray
        Adjusted p-values (NaN where the input was NaN).
    reject : numpy.ndarray of bool
        Whether each hypothesis is rejected at ``alpha``.
    """
    p = np.asarray(pvalues, dtype=float)
    p_adj = np.full(p.shape, np.nan)
    reject = np.zeros(p.shape, dtype=bool)
    ok = ~np.isnan(p)
    if ok.any():
        rej, adj, _, _ = multitest.multipletests(p[ok], alpha=alpha, method="fdr_bh")
        p_adj[ok], reject[ok] = adj, rej
    return p_adj, reject


def adjust_within_families(table: pd.DataFrame, p_col: str = "p_value", family_col: str = "family",
                           alpha: float = 0.05) -> pd.DataFrame:
    """A copy of ``table`` with ``p_adj`` and ``reject``: BH applied separately within each family.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per test, with a p-value column and a family column.
    p_col, family_col : str
        Names of those columns.
    alpha : float
        False discovery rate within each family.

    Returns
    -------
    pandas.DataFrame
        ``table`` plus ``p_adj`` (float, NaN for untested rows) and ``reject`` (bool).
    """
    out = table.copy()
    out["p_adj"] = np.nan
    out["reject"] = False
    if out.empty:
        out["reject"] = out["reject"].astype(bool)
        return out
    for _, idx in out.groupby(family_col, dropna=False, sort=False).groups.items():
        adj, rej = bh(out.loc[idx, p_col].to_numpy(dtype=float), alpha)
        out.loc[idx, "p_adj"] = adj
        out.loc[idx, "reject"] = rej
    out["reject"] = out["reject"].astype(bool)
    return out


def collect(tables: dict[str, pd.DataFrame], alpha: float = 0.05) -> pd.DataFrame:
    """One row per test from the named tables (keys of :data:`SPECS`), BH-adjusted within families; the tables
    in the order of :data:`SPECS`, whatever the order they are given in."""
    unknown = set(tables) - set(SPECS)
    if unknown:
        raise ValueError(f"no test specification for tables {sorted(unknown)}; known: {sorted(SPECS)}")
    parts = []
    for name, table in sorted(tables.items(), key=lambda kv: list(SPECS).index(kv[0])):
        if table.empty:
            continue
        keys, estimate, (lo, hi) = SPECS[name]
        parts.append(pd.DataFrame({
            "family": table["family"].map(lambda v: name if pd.isna(v) else str(v)), "table": name,
            "test": table[keys].map(lambda v: "-" if pd.isna(v) else str(v)).agg(" / ".join, axis=1),
            "estimate": pd.to_numeric(table[estimate], errors="coerce"),
            "ci_low": pd.to_numeric(table[lo], errors="coerce"), "ci_high": pd.to_numeric(table[hi], errors="coerce"),
            "p_value": pd.to_numeric(table["p_value"], errors="coerce"),
            "status": table["status"].astype(str) if "status" in table else "ok",
        }))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    out = adjust_within_families(pd.concat(parts, ignore_index=True).drop(columns=["p_adj", "reject"], errors="ignore"),
                                 alpha=alpha)
    out["reject"] = out["reject"].astype("boolean")
    return out.reindex(columns=COLUMNS)
