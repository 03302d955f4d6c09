"""The conversation-level cluster bootstrap, one implementation for every interval and bootstrap p-value of the
workflow (HEART paper §9.12): clusters, resampling, percentile intervals, p-values.
The convention: ``docs/methods/bootstrap.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def counts(n_clusters: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """How often each cluster is drawn in each replicate: shape (n_boot, n_clusters), rows sum to n_clusters.

    Replicate ``b`` draws ``n_clusters`` cluster indices with replacement and counts them:
    ``numpy.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))``.
    No cluster (or ``n_boot`` 0): no draw.
    """
    n_clusters, n_boot = int(n_clusters), int(n_boot)
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, not {n_boot}")
    if n_clusters == 0 or n_boot == 0:
        return np.zeros((n_boot if n_clusters else 0, n_clusters), dtype=np.int64)
    draws = np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))
    flat = draws + n_clusters * np.arange(n_boot)[:, None]
    return np.bincount(flat.ravel(), minlength=n_boot * n_clusters).reshape(n_boot, n_clusters)


class ClusterBootstrap:
    """Resamples of conversations, drawn once and applied to any statistic of units in those conversations.

    Parameters
    ----------
    clusters : array_like
        The conversation ids of the universe (repeats are fine); the clusters are the distinct ids, sorted.
    n_boot : int
        Replicates (0: none; every interval is then NaN).
    seed : int
        Seed of the ``numpy.random.Generator``.

    Attributes
    ----------
    ids : numpy.ndarray
        The clusters, sorted.
    counts : numpy.ndarray of int, shape (n_boot, len(ids))
        :func:`counts`: how often each cluster is drawn in each replicate.
    """

    def __init__(self, clusters, n_boot: int, seed: int = 0):
        values = (clusters.to_numpy()  # (not Arrow's iterator)
                  if isinstance(clusters, (pd.Series, pd.Index)) else clusters)
        self.ids = np.unique(np.asarray(list(values)))
        self.counts = counts(len(self.ids), n_boot, seed)

    @property
    def n_boot(self) -> int:
        return int(self.counts.shape[0])

    def index(self, clusters) -> np.ndarray:
        """Position of each unit's cluster in :attr:`ids`; a cluster outside the universe is an error."""
        clusters = np.asarray(clusters)
        idx = np.searchsorted(self.ids, clusters)
        known = idx < len(self.ids)
        known[known] = self.ids[idx[known]] == clusters[known]
        if not known.all():
            raise ValueError(f"cluster(s) {sorted(set(clusters[~known].tolist()))[:5]} are not among the "
                             "bootstrap's clusters")
        return idx

    def sums(self, clusters, values) -> np.ndarray:
        """Per-cluster sums of ``values`` (one per unit, or one row per unit): shape (C,) or (C, k)."""
        values = np.asarray(values, dtype=float)
        idx = self.index(clusters)
        if values.ndim == 1:
            return np.bincount(idx, weights=values, minlength=len(self.ids)).astype(float)
        out = np.zeros((len(self.ids), *values.shape[1:]))
        np.add.at(out, idx, values)
        return out

    def resample(self, per_cluster) -> np.ndarray:
        """Replicate totals of per-cluster values (C, ...) in :attr:`ids` order: ``counts @ per_cluster``."""
        return self.counts.astype(float) @ np.asarray(per_cluster, dtype=float)

    def totals(self, clusters, values) -> np.ndarray:
        """Sum of ``values`` over the units of every replicate: shape (n_boot,) or (n_boot, k)."""
        return self.resample(self.sums(clusters, values))

    def ratio(self, clusters, numerator, denominator) -> np.ndarray:
        """Replicates of a ratio of totals, (resampled sum of ``numerator``) / (resampled sum of
        ``denominator``), one value of each per unit: shape (n_boot,); NaN where a replicate holds no unit with a
        denominator (0 / 0), without a warning."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.totals(clusters, numerator) / self.totals(clusters, denominator)

    def rate(self, clusters, hits):
        """The mean of ``hits`` over the units and its replicates (resampled sum / resampled number of units).

        ``hits`` has one value per unit (the estimate is a float, the replicates have shape (n_boot,)) or one
        row per unit (one rate per column: an array of k, replicates (n_boot, k)). A replicate without any of
        these units is NaN; no unit at all: NaN estimate and replicates.
        """
        hits = np.asarray(hits, dtype=float)
        if hits.shape[0] == 0:
            estimate = math.nan if hits.ndim == 1 else np.full(hits.shape[1:], np.nan)
            return estimate, np.full((self.n_boot, *hits.shape[1:]), np.nan)
        units = self.totals(clusters, np.ones(hits.shape[0]))
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = self.totals(clusters, hits) / units.reshape(-1, *[1] * (hits.ndim - 1))
        estimate = hits.mean(axis=0)
        return (float(estimate) if hits.ndim == 1 else estimate), reps

    def apply(self, clusters, rows, statistic) -> np.ndarray:
        """``statistic`` of every replicate's data: each unit's row, as often as its cluster was drawn.

        For statistics that are not sums (a κ, an α): ``rows`` has one row per unit, ``statistic`` takes
        such an array and returns a number.
        """
        rows = np.asarray(rows)
        idx = self.index(clusters)
        return np.array([statistic(np.repeat(rows, c[idx], axis=0)) for c in self.counts], dtype=float)


def _columns(reps) -> tuple[list[np.ndarray], tuple]:
    """The defined (finite) replicates of every column of ``reps`` (replicates along the first axis), and the
    shape of one replicate."""
    reps = np.asarray(reps, dtype=float)
    flat = reps.reshape(reps.shape[0], int(np.prod(reps.shape[1:])))
    return [c[np.isfinite(c)] for c in flat.T], reps.shape[1:]


def interval(reps, ci: float = 0.95):
    """Percentile interval at level ``ci`` of bootstrap replicates (along the first axis).

    Parameters
    ----------
    reps : array_like, shape (n_boot,) or (n_boot, k)
        Replicates; NaN and infinite ones are left out (per column).
    ci : float
        Coverage, in (0, 1).

    Returns
    -------
    (lo, hi)
        The ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles (``numpy.quantile``, linear interpolation): floats
        for 1-d ``reps``, arrays of shape (k,) otherwise; NaN where no replicate is defined.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must lie in (0, 1), not {ci}")
    cols, shape = _columns(reps)
    q = [(1 - ci) / 2, (1 + ci) / 2]
    bounds = np.array([np.quantile(c, q) if c.size else [np.nan, np.nan] for c in cols]).reshape(*shape, 2)
    lo, hi = bounds[..., 0], bounds[..., 1]
    return (float(lo), float(hi)) if not shape else (lo, hi)


def standard_error(reps):
    """Sample SD (ddof 1) of the defined replicates, along the first axis; NaN with fewer than 2 of them."""
    cols, shape = _columns(reps)
    se = np.array([float(np.std(c, ddof=1)) if c.size >= 2 else np.nan for c in cols]).reshape(shape)
    return float(se) if not shape else se


def p_value(estimate: float, reps) -> float:
    """Two-sided p-value of "the statistic is 0" from the bootstrap standard error (normal approximation).

    NaN when the estimate or the standard error is undefined (fewer than two defined replicates), and
    when the standard error is 0 but the estimate is not; 1 for an estimate of 0 with standard error 0.
    """
    se = standard_error(reps)
    if math.isnan(estimate) or math.isnan(se):
        return math.nan
    if se == 0:
        return 1.0 if estimate == 0 else math.nan
    # the normal's two-sided tail, 2 * (1 - Phi(|z|)) = erfc(|z| / sqrt 2), as scipy.stats.norm.sf computes it
    return float(math.erfc(abs(estimate) / se / math.sqrt(2)))
