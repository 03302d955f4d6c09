"""Reliability coefficients: Cohen's κ, Fleiss' κ and Krippendorff's α (HEART paper §4.2, §9.9).

Thin wrappers around well-kept libraries -- statsmodels (``cohens_kappa``, ``fleiss_kappa``) and
``krippendorff`` -- that agree on the input layout, say when a coefficient is undefined (NaN, never
a zero) and are checked in tests/stats/test_agreement.py against published worked examples.

Layout. Ratings come as one row per rating with columns ``unit`` and ``label``
(:func:`unit_counts` turns them into a units x categories count table, dropping units with fewer
than two ratings: they carry no information on agreement).

Fleiss' κ assumes the same number of ratings on every unit; :func:`fleiss_units` keeps the units
with the most common count (>= 2; the larger on a tie) and the others are dropped and counted.
Krippendorff's α allows any number of ratings per unit; nominal and ordinal α are invariant to the
coding of the values, so ranks are passed to the library for those levels.

Raw rater-to-rater agreement (:func:`rater_pair_agreement`): on every unit, the unordered pairs of
ratings that chose the same category, out of all pairs of ratings; pooled over units it is the
share of all rater pairs that agree (with the same number of ratings on every unit, Fleiss'
observed agreement P̄).

:func:`fleiss_kappa_table` and :func:`krippendorff_alpha_table` take a count table directly; the
bootstrap of :func:`heart.stats.agreement.inter_human` calls them on resampled tables.
"""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats import inter_rater


def cohen_kappa(labels_1, labels_2, categories=None, ci: float = 0.95) -> dict:
    """Cohen's κ of two raters on the same units (statsmodels ``cohens_kappa``).

    Parameters
    ----------
    labels_1, labels_2 : sequence
        The two raters' labels, aligned by unit (no missing values).
    categories : sequence, optional
        All categories (default: those that occur), so absent ones still get a row/column.
    ci : float
        Coverage of the interval.

    Returns
    -------
    dict
        ``kappa`` with its asymptotic (normal) interval ``kappa_ci_low`` / ``kappa_ci_high``, ``n``
        units and ``p_observed`` (raw agreement). κ is NaN when undefined (chance agreement 1).
    """
    l1, l2 = list(labels_1), list(labels_2)
    cats = list(categories) if categories is not None else sorted(set(l1) | set(l2), key=str)
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    for x, y in zip(l1, l2):
        table[index[x], index[y]] += 1
    out = {"kappa": math.nan, "kappa_ci_low": math.nan, "kappa_ci_high": math.nan, "n": len(l1),
           "p_observed": float(np.trace(table) / table.sum()) if len(l1) else math.nan}
    if not len(l1):
        return out
    p_exp = float((table.sum(0) * table.sum(1)).sum() / table.sum() ** 2)
    if p_exp >= 1:
        return out
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = inter_rater.cohens_kappa(table, return_results=True)
    half = stats.norm.isf((1 - ci) / 2) * float(res.std_kappa)
    kappa = float(res.kappa)
    out.update(kappa=kappa, kappa_ci_low=kappa - half, kappa_ci_high=kappa + half)
    return out


def unit_counts(ratings: pd.DataFrame, categories) -> pd.DataFrame:
    """Units x categories counts from a (unit, label) table; units with < 2 ratings dropped."""
    cats = list(categories)
    counts = pd.crosstab(ratings["unit"], pd.Categorical(ratings["label"], categories=cats), dropna=False)
    counts = counts.reindex(columns=cats, fill_value=0)
    return counts[counts.sum(axis=1) >= 2]


def fleiss_units(counts: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The units Fleiss' κ uses: those with the most common number m (>= 2) of ratings; and m."""
    if counts.empty:
        return counts, 0
    per_unit = counts.sum(axis=1)
    freq = per_unit.value_counts()
    m = int(max(freq[freq == freq.max()].index))
    return counts[per_unit == m], m


def rater_pair_agreement(table) -> tuple[np.ndarray, np.ndarray]:
    """Per unit of a units x categories count table: agreeing rater pairs and all rater pairs.

    With n_ic ratings of category c on unit i and n_i = sum_c n_ic, the unit has n_i (n_i - 1) / 2
    unordered pairs of ratings, of which sum_c n_ic (n_ic - 1) / 2 chose the same category. The
    pooled percent agreement is (sum of the first) / (sum of the second); with the same n on every
    unit it equals Fleiss' observed agreement P̄ (the mean over units of their ratio).

    Returns
    -------
    (agree, pairs) : two float arrays, one value per unit
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2:
        raise ValueError("a units x categories count table is expected")
    n = table.sum(axis=1)
    return (table * (table - 1) / 2).sum(axis=1), n * (n - 1) / 2


def fleiss_kappa_table(table: np.ndarray) -> float:
    """Fleiss' κ of a units x categories count table with the same number of ratings per unit.

    NaN without units, or when a single category occurs (chance agreement 1: κ undefined).
    """
    if table.shape[0] == 0:
        return math.nan
    p_cat = table.sum(0) / table.sum()
    if (p_cat ** 2).sum() >= 1:
        return math.nan
    return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def fleiss_kappa(ratings: pd.DataFrame, categories) -> dict:
    """Fleiss' κ (statsmodels ``fleiss_kappa``) from one row per rating.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Columns ``unit`` and ``label``.
    categories : sequence
        All categories of the scale.

    Returns
    -------
    dict
        ``kappa``; ``n_units`` used, ``n_per_unit`` (ratings per unit), ``n_units_dropped``. Fleiss'
        κ assumes the same number of ratings per unit; units with the most common count (>= 2;
        the larger on a tie) are used and the others dropped.
    """
    counts = unit_counts(ratings, categories)
    kept, m = fleiss_units(counts)
    return {"kappa": fleiss_kappa_table(kept.to_numpy(dtype=float)), "n_units": int(len(kept)),
            "n_per_unit": m, "n_units_dropped": int(len(counts) - len(kept))}


def krippendorff_alpha_table(counts: np.ndarray, level: str, value_domain) -> float:
    """Krippendorff's α of a units x values count table (columns in ``value_domain`` order).

    NaN without units or when fewer than two values occur.
    """
    if counts.shape[0] == 0 or (counts.sum(0) > 0).sum() < 2:
        return math.nan
    codes = list(range(len(value_domain)))  # ranks: ordinal/nominal are invariant to the coding
    domain = codes if level in ("nominal", "ordinal") else list(value_domain)
    return float(krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level))


def krippendorff_alpha(ratings: pd.DataFrame, level: str, value_domain) -> dict:
    """Krippendorff's α (package ``krippendorff``) from one row per rating.

    Parameters
    ----------
    ratings : pandas.DataFrame
        Columns ``unit`` and ``label`` (rater identity does not enter α).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement.
    value_domain : sequence
        The ordered values of the scale.

    Returns
    -------
    dict
        ``alpha`` (NaN when undefined, e.g. a single value observed) and ``n_units`` pairable
        units (>= 2 ratings).
    """
    counts = unit_counts(ratings, value_domain)
    return {"alpha": krippendorff_alpha_table(counts.to_numpy(dtype=float), level, value_domain),
            "n_units": int(len(counts))}
