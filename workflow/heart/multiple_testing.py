"""Every hypothesis test of the statistics in one table, Benjamini–Hochberg within each family (HEART §9.12).

The statistics modules return raw two-sided p-values with a ``family`` column
(position bias, length bias, self-preference, human–model strategy differences,
factor–win correlations, external correlates). :func:`collect` puts them in one
long table -- what was tested, the estimate, its 95 % interval, the raw p-value
-- and adjusts within each family with statsmodels' ``fdr_bh``
(:func:`heart.agreement.adjust_within_families`). Tests without a p-value (absent
data) stay in the table with an empty ``p_adj``.
"""

from __future__ import annotations

import pandas as pd

from heart.agreement import adjust_within_families

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


def collect(tables: dict[str, pd.DataFrame], alpha: float = 0.05) -> pd.DataFrame:
    """One row per test from the named tables (keys of :data:`SPECS`), BH-adjusted within families."""
    unknown = set(tables) - set(SPECS)
    if unknown:
        raise ValueError(f"no test specification for tables {sorted(unknown)}; known: {sorted(SPECS)}")
    parts = []
    for name, table in tables.items():
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
