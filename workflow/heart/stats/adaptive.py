"""Adaptive pair design (issue 44; off by default, the paper's fixed design stays the paper's): rounds of
comparisons, each round chosen from the current fit's conversation bootstrap where it reduces the rank uncertainty
of the systems that are still close, and a stopping rule on that uncertainty. Methods and measured savings:
``docs/methods/adaptive-design.md``.

The pieces here act on a fit's bootstrap (``boot``: replicates x systems, Elo) and on the candidate comparisons a
design allows (eligibility, both shown orders and judge families are the fixed design's); the simulation that
measures them is :mod:`heart.simulation.adaptive` (SIMULATED).
"""

from __future__ import annotations

import numpy as np

from heart.stats.rankers import tau_b


def ranks(elo) -> np.ndarray:
    """1 = best, per row (ties broken by position: a bootstrap replicate's Elo are continuous)."""
    elo = np.asarray(elo, dtype=float)
    order = np.argsort(-elo, axis=-1, kind="stable")
    out = np.empty_like(order)
    np.put_along_axis(out, order, np.arange(1, elo.shape[-1] + 1)[None, :] if elo.ndim > 1
                      else np.arange(1, elo.shape[-1] + 1), axis=-1)
    return out


def swap_probability(boot, point) -> np.ndarray:
    """K x K: the share of bootstrap replicates that order systems i and j against the point estimate (a tie
    counts half); 0 on the diagonal. A pair whose order is settled is near 0, a coin toss near 0.5."""
    boot, point = np.asarray(boot, dtype=float), np.asarray(point, dtype=float)
    sign = np.sign(point[:, None] - point[None, :])
    rep = np.sign(boot[:, :, None] - boot[:, None, :])
    against = (rep * sign[None] < 0).mean(axis=0) + 0.5 * ((rep == 0) & (sign[None] != 0)).mean(axis=0)
    np.fill_diagonal(against, 0.0)
    return against


def rank_stability(boot, point, ci: float = 0.95) -> dict:
    """How settled the ranking is: ``tau`` the mean Kendall τ-b of each replicate's ranking with the point
    estimate's, and ``widths`` each system's rank interval (the ``ci`` percentile interval of its replicate
    ranks: upper minus lower rank; 0 = the same rank in every replicate)."""
    boot, point = np.asarray(boot, dtype=float), np.asarray(point, dtype=float)
    r = ranks(boot)
    lo, hi = np.percentile(r, [50 * (1 - ci), 50 * (1 + ci)], axis=0, method="inverted_cdf")
    return {"tau": float(np.nanmean(tau_b(boot, point[None, :]))), "widths": hi - lo}


def allocate(weights, capacity, budget: int) -> np.ndarray:
    """Integer counts per candidate, proportional to ``weights``, none above its ``capacity``, summing to
    ``min(budget, capacity where weight > 0)``: largest remainders first (ties by position), and what a capped
    candidate cannot take goes to the others in proportion. Deterministic."""
    w = np.asarray(weights, dtype=float).copy()
    cap = np.asarray(capacity, dtype=np.int64)
    if w.shape != cap.shape or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights and capacity must have one shape; weights finite and >= 0")
    w[cap <= 0] = 0.0
    out = np.zeros(w.shape, dtype=np.int64)
    left = int(min(budget, cap[w > 0].sum()))
    while left > 0 and w.sum() > 0:
        share = w / w.sum() * left
        take = np.minimum(np.floor(share).astype(np.int64), cap - out)
        if take.sum() == 0:  # fewer units than candidates: the largest shares get one each
            order = np.argsort(-share, kind="stable")
            take = np.zeros_like(out)
            take[order[:left]] = 1
            take = np.minimum(take, cap - out)
        out += take
        left -= int(take.sum())
        w[out >= cap] = 0.0
    return out


def round_weights(boot, point, pairs_i, pairs_j, floor: float = 0.0) -> np.ndarray:
    """The weight of each candidate pair (``pairs_i``, ``pairs_j``: system indices) in the next round:
    ``u_i * u_j``, with ``u_i`` the systems system ``i`` is expected to be mis-ordered with (the sum of its swap
    probabilities, :func:`swap_probability`). In a Bradley–Terry fit the gap between two close systems is learnt
    mostly through their comparisons with everyone else, so what settles a rank is more comparisons of the
    systems whose rank is unsettled, best against each other (one comparison informs both); a pair of two
    settled systems gets nothing. ``floor`` is added to every pair (a share kept for exploration). Chosen by
    simulation (``docs/methods/adaptive-design.md``: it needed 61 % of the fixed design's verdicts where weighting
    the pair's own swap probability needed 87 %)."""
    u = swap_probability(boot, point).sum(axis=1)
    return u[np.asarray(pairs_i)] * u[np.asarray(pairs_j)] + floor


def newcomer_weights(boot, point, new: int, opponents) -> np.ndarray:
    """The weight of each ``opponents`` system for a ``new`` system being placed: the Fisher information of one
    comparison at the current estimates, ``p (1 - p)`` with ``p`` the win probability from their Elo gap,
    averaged over the bootstrap replicates (an opponent the newcomer could be on either side of weighs most)."""
    boot = np.asarray(boot, dtype=float)
    gap = (boot[:, [new]] - boot[:, np.asarray(opponents)]) * np.log(10) / 400
    p = 1.0 / (1.0 + np.exp(-gap))
    return (p * (1 - p)).mean(axis=0)
