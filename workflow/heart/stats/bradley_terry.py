"""Strength-weighted Bradley–Terry ratings on the Elo scale, with asymptotic and conversation-bootstrap
intervals and separability (HEART paper §9.8). The model, the fit and its checks against choix:
``docs/methods/bradley-terry.md``.

Longer than 500 lines: one model from its comparisons to its ranks, kept in one module as choix keeps one
per algorithm (the comparisons, the fit, the two kinds of interval and the ratings table share its
definitions), each public function with its numpydoc.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from heart.common.config import schema_default
from heart.stats import bootstrap as cluster_bootstrap
from heart.common.vocabulary import AXES

DEFAULT_ALPHA = schema_default("stats.bt_alpha")  # config stats.bt_alpha's default, said once in the schema
ELO_SCALE = 400.0 / math.log(10.0)
ELO_BASE = 1500.0
COMPARISON_COLUMNS = ["winner", "loser", "weight", "conversation_id"]
RATING_COLUMNS = ["system", "theta", "elo", "n_comparisons", "wins", "win_rate", "elo_lo_asym", "elo_hi_asym",
                  "elo_lo_boot", "elo_hi_boot", "elo_se_boot", "rank_asym", "rank_boot"]


# --- judgments -> comparisons -----------------------------------------------------------------

def comparisons(judgments: pd.DataFrame, axis: str | None = None, weighted: bool = True) -> pd.DataFrame:
    """The comparisons Bradley–Terry is fitted to, one row per judgment with a winner.

    Parameters
    ----------
    judgments : DataFrame
        ``results/judging/judgments.parquet`` (``judgments.schema.yaml``); filter it
        first (judge kind, subset, ...) as the analysis needs.
    axis : {None, "H", "E", "A", "R", "T"}
        None: the overall verdict -- rows with ``status == "ok"`` and ``winner`` in
        {"a", "b"}, weight ``strength`` (1-5; a win whose strength was not given -- imported
        votes of a source without strengths, human or LLM -- weighs 1, so such a source's votes all
        weigh the same, in the combined fit too). An axis letter: rows whose
        ``axis_<k>`` mark is present and non-zero, the winner by its sign
        (positive = system_a), weight ``|mark|`` (1-5). Ties, inconsistent and
        unparsed verdicts and "no clear advantage" marks are left out.
    weighted : bool
        False gives every comparison weight 1.

    Returns
    -------
    DataFrame
        Columns ``winner``, ``loser`` (system names), ``weight`` (float),
        ``conversation_id`` (the bootstrap's cluster key as given: any
        sortable ids of one kind -- strings, as in ``judgments.schema.yaml``,
        or integers), in the input's row order and indexed by the kept
        judgment rows' index labels (so callers can join other columns of
        ``judgments`` back, e.g. ``item_id``).

    Raises
    ------
    ValueError
        Missing columns, an unknown axis, a strength outside 1-5 (when
        weighted), a mark outside -5..5, a missing conversation id,
        conversation ids mixing strings and numbers, or a system compared
        with itself.
    """
    if axis is None:
        need = ["status", "winner", "strength"]
    elif axis in AXES:
        need = [f"axis_{axis}"]
    else:
        raise ValueError(f"axis must be None or one of {''.join(AXES)}, not {axis!r}")
    missing = [c for c in ["conversation_id", "system_a", "system_b", *need] if c not in judgments.columns]
    if missing:
        raise ValueError(f"judgments: missing columns {missing}")
    what = "overall verdict" if axis is None else f"axis {axis}"
    if axis is None:
        rows = judgments[judgments["status"].eq("ok") & judgments["winner"].isin(["a", "b"])]
        a_won = rows["winner"].eq("a").to_numpy()
        strength = rows["strength"]
        if weighted and not strength.dropna().between(1, 5).all():
            raise ValueError(f"judgments, {what}: a winner's strength must be 1-5 (or not given)")
        strength = strength.astype("Float64").fillna(1.0)  # not given: weight 1, whoever judged
    else:
        mark = judgments[f"axis_{axis}"]
        rows = judgments[mark.notna() & mark.ne(0)]
        mark = rows[f"axis_{axis}"].astype("int64")
        if not mark.abs().le(5).all():
            raise ValueError(f"judgments, {what}: marks must lie in -5..5")
        a_won = (mark > 0).to_numpy()
        strength = mark.abs()
    if rows["conversation_id"].isna().any():
        raise ValueError(f"judgments, {what}: conversation_id missing")
    sa, sb = rows["system_a"].to_numpy(dtype=object), rows["system_b"].to_numpy(dtype=object)
    if (sa == sb).any():
        raise ValueError(f"judgments, {what}: a system is compared with itself")
    weight = strength.to_numpy(dtype="float64") if weighted else np.ones(len(rows))
    conversation_id = cluster_ids(rows["conversation_id"], f"judgments, {what}")
    return pd.DataFrame({"winner": np.where(a_won, sa, sb), "loser": np.where(a_won, sb, sa),
                         "weight": weight, "conversation_id": conversation_id}, index=rows.index)


def cluster_ids(values, what: str = "comparisons") -> np.ndarray:
    """Conversation ids as one sortable array: strings (object array) or numbers, never a mix.

    The conversation id is only a cluster key of the bootstrap (:mod:`heart.stats.bootstrap` sorts the
    distinct ids with ``numpy.unique``), so any string works; integer ids are kept as they are.
    Ids mixing strings and numbers cannot be sorted into one order (and "7" and 7 would be
    ambiguous), so they are refused.
    """
    values = pd.Series(values)
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy()
    arr = values.to_numpy(dtype=object)
    if isinstance(values.dtype, pd.StringDtype):  # text by its dtype: no element to look at one by one
        return arr
    kinds = {type(v) for v in arr}
    if kinds and not all(issubclass(k, str) for k in kinds):
        if all(issubclass(k, (int, np.integer)) and not issubclass(k, (bool, np.bool_)) for k in kinds):
            return arr.astype(np.int64)
        raise ValueError(f"{what}: conversation_id must be all strings or all integers, found "
                         f"{sorted(k.__name__ for k in kinds)}")
    return arr


def _check_comparisons(comp: pd.DataFrame, systems=None) -> list[str]:
    """Validate ``comp`` and return the systems (given, or the sorted names in ``comp``)."""
    missing = [c for c in COMPARISON_COLUMNS if c not in comp.columns]
    if missing:
        raise ValueError(f"comparisons: missing columns {missing}")
    if comp.empty:
        raise ValueError("comparisons: no comparisons (nothing to fit)")
    if comp[COMPARISON_COLUMNS].isna().any().any():
        bad = [c for c in COMPARISON_COLUMNS if comp[c].isna().any()]
        raise ValueError(f"comparisons: missing values (NaN/None) in {bad}")
    cluster_ids(comp["conversation_id"])
    w = comp["weight"].to_numpy(dtype="float64")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("comparisons: weights must be finite and > 0")
    if (comp["winner"].to_numpy() == comp["loser"].to_numpy()).any():
        raise ValueError("comparisons: a system is compared with itself")
    present = set(comp["winner"].unique()) | set(comp["loser"].unique())  # (iterating Arrow strings is slow)
    if systems is None:
        return sorted(present)
    systems = list(systems)
    if len(set(systems)) != len(systems):
        raise ValueError("systems: duplicate names")
    unknown = sorted(present - set(systems))
    if unknown:
        raise ValueError(f"comparisons involve systems not in `systems`: {unknown} "
                         "(filter the comparisons first)")
    absent = [s for s in systems if s not in present]
    if absent:
        raise ValueError(f"no comparisons for {absent}: a rating would only reflect the prior; "
                         "leave them out of `systems`")
    return systems


def _codes(comp: pd.DataFrame, systems: list[str]) -> tuple[np.ndarray, np.ndarray]:
    index = pd.Index(systems)
    return index.get_indexer(comp["winner"]), index.get_indexer(comp["loser"])


def win_matrix(winners, losers, weights, n: int) -> np.ndarray:
    """``W[i, j]`` = total weight of the comparisons ``i`` won against ``j`` (n x n)."""
    flat = np.bincount(np.asarray(winners) * n + np.asarray(losers), weights=np.asarray(weights, float),
                       minlength=n * n)
    return flat.reshape(n, n)


# --- fitting ----------------------------------------------------------------------------------

def _strongly_connected(W: np.ndarray) -> np.ndarray:
    """Per matrix of a (B, K, K) stack: does every system reach every other along "beat" edges?"""
    K = W.shape[-1]
    reach = ((W > 0) | np.eye(K, dtype=bool)).astype(np.float64)
    for _ in range(max(1, math.ceil(math.log2(max(K, 2))))):
        reach = np.minimum(reach @ reach, 1.0)  # transitive closure by repeated squaring
    return (reach > 0).all(axis=(-2, -1))


class _Pairs:
    """The K x K problem on its K(K-1)/2 pairs ``i < j``: gathers and the incidence matrices that sum a
    pair quantity to the systems (``x @ first``: to ``i``; ``x @ second``: to ``j``)."""

    def __init__(self, K: int):
        self.i, self.j = np.triu_indices(K, 1)
        rows = np.arange(self.i.size)
        self.first, self.second = np.zeros((self.i.size, K)), np.zeros((self.i.size, K))
        self.first[rows, self.i] = 1.0
        self.second[rows, self.j] = 1.0
        self.both = self.first + self.second  # to both systems of a pair (the Hessian's diagonal)
        self.upper, self.lower = self.i * K + self.j, self.j * K + self.i  # flat positions in a K x K matrix

    def objective(self, theta: np.ndarray, n: np.ndarray, linear: np.ndarray, alpha: float):
        """The penalised negative log-likelihood per matrix, with the pair differences and ``exp(-|d|)``
        that it computed (the next step's win probabilities need them)."""
        d = theta[:, self.i] - theta[:, self.j]
        e = np.exp(-np.abs(d))
        softplus = np.maximum(-d, 0.0) + np.log1p(e)  # log(1 + exp(-d)), stable for any d
        f = (np.einsum("bp,bp->b", n, softplus) + np.einsum("bk,bk->b", linear, theta)
             + 0.5 * alpha * np.einsum("bk,bk->b", theta, theta))
        return f, d, e


def fit_matrix(W, alpha: float = DEFAULT_ALPHA, tol: float = 1e-10, max_iter: int = 200,
               theta0=None) -> np.ndarray:
    """Batched strength-weighted Bradley–Terry fit from win matrices.

    Parameters
    ----------
    W : array_like, shape (..., K, K)
        Weighted win matrices (:func:`win_matrix`), zero diagonal.
    alpha : float
        Ridge (``docs/methods/bradley-terry.md``); 0 gives the maximum-likelihood estimate.
    tol : float
        Convergence: the largest Newton step (theta scale) is at most ``tol``.
    max_iter : int
        Newton iterations allowed.
    theta0 : array_like, shape (K,) or (..., K), optional
        Starting values (centred here); zeros by default.

    Returns
    -------
    ndarray, shape (..., K)
        Centred theta for every matrix.

    Notes
    -----
    Newton's method on the penalised log-likelihood. The Hessian ``H`` of the
    negative log-likelihood is a weighted graph Laplacian plus ``alpha * I``; it
    is singular along ``1`` when ``alpha == 0``, so the step solves
    ``(H + 11'/K) s = g``. Because the gradient ``g`` is orthogonal to ``1`` at
    centred theta (for any alpha), this is the exact Newton step within the
    centred subspace, where the optimum lies. A backtracking (Armijo) line
    search per matrix makes it converge from any start.

    Each pair of systems enters once (``i < j``): ``W[j, i] * log(1 + exp(theta_i - theta_j))``
    is ``W[j, i] * (d + log(1 + exp(-d)))`` with ``d = theta_i - theta_j``, so the objective needs
    one ``exp`` per pair, and the same ``exp`` gives the win probabilities of the next Newton step
    (half the transcendental work of the full K x K form; ``docs/benchmarks.md``).

    Raises
    ------
    ValueError
        ``alpha == 0`` and some matrix's maximum-likelihood estimate does not
        exist (its beat graph is not strongly connected), bad input, or no
        convergence within ``max_iter``.
    """
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be finite and >= 0, not {alpha}")
    W = np.asarray(W, dtype=np.float64)
    if W.ndim < 2 or W.shape[-1] != W.shape[-2]:
        raise ValueError(f"W must have shape (..., K, K), not {W.shape}")
    K, batch = W.shape[-1], W.shape[:-2]
    Wb = W.reshape(-1, K, K)
    if not np.isfinite(Wb).all() or (Wb < 0).any():
        raise ValueError("W: weights must be finite and >= 0")
    if np.diagonal(Wb, axis1=1, axis2=2).any():
        raise ValueError("W: a system is compared with itself (non-zero diagonal)")
    if alpha == 0 and K > 1:
        ok = _strongly_connected(Wb)
        if not ok.all():
            bad = int((~ok).sum())
            raise ValueError(f"alpha=0: the maximum-likelihood estimate does not exist for {bad} of "
                             f"{len(ok)} win matrices (some system won or lost all its comparisons against "
                             "the rest: the beat graph is not strongly connected); use alpha > 0")
    B = Wb.shape[0]
    theta = np.zeros((B, K)) if theta0 is None else np.broadcast_to(np.asarray(theta0, float), (B, K)).copy()
    theta -= theta.mean(axis=1, keepdims=True)
    pairs = _Pairs(K)
    beaten = Wb[:, pairs.j, pairs.i]  # j beat i, i < j
    N = Wb[:, pairs.i, pairs.j] + beaten  # comparisons of each pair
    linear = beaten @ (pairs.first - pairs.second)  # sum_{i<j} W[j, i] (theta_i - theta_j) = linear . theta
    wins = Wb.sum(axis=2)
    J = np.full((K, K), 1.0 / K)
    diag = np.arange(K)
    f, D, E = pairs.objective(theta, N, linear, alpha)
    active = np.ones(B, dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        th, n, lin, d, e = theta[idx], N[idx], linear[idx], D[idx], E[idx]
        inv = 1.0 / (1.0 + e)
        p = np.where(d >= 0, inv, e * inv)  # P(i beats j), i < j, from exp(-|d|): no overflow
        expected = n * p
        g = wins[idx] - expected @ pairs.first - (n - expected) @ pairs.second - alpha * th  # gradient
        c = expected * (1.0 - p)
        H = np.zeros((idx.size, K * K))
        H[:, pairs.upper] = -c
        H[:, pairs.lower] = -c
        H = H.reshape(idx.size, K, K)
        H[:, diag, diag] = c @ pairs.both + alpha
        step = np.linalg.solve(H + J, g[:, :, None])[:, :, 0]
        step -= step.mean(axis=1, keepdims=True)
        gs = np.sum(g * step, axis=1)
        f0, t = f[idx], np.ones(idx.size)
        todo = np.ones(idx.size, dtype=bool)
        f_new, d_new, e_new = f0.copy(), d.copy(), e.copy()
        for _ in range(60):
            cand = th[todo] + t[todo, None] * step[todo]
            fc, dc, ec = pairs.objective(cand, n[todo], lin[todo], alpha)
            ok = fc <= f0[todo] - 1e-4 * t[todo] * gs[todo] + 1e-12 * (1.0 + np.abs(f0[todo]))
            sub = np.flatnonzero(todo)
            f_new[sub[ok]], d_new[sub[ok]], e_new[sub[ok]] = fc[ok], dc[ok], ec[ok]
            todo[sub[ok]] = False
            if not todo.any():
                break
            t[todo] *= 0.5
        else:  # no decrease even for tiny steps: numerically converged
            t[todo] = 0.0
        move = t[:, None] * step
        theta[idx] = th + move
        f[idx], D[idx], E[idx] = f_new, d_new, e_new
        active[idx[np.abs(move).max(axis=1) <= tol]] = False
    else:
        if active.any():
            raise ValueError(f"Bradley–Terry fit did not converge in {max_iter} iterations for "
                             f"{int(active.sum())} of {B} win matrices")
    theta -= theta.mean(axis=1, keepdims=True)
    return theta.reshape(*batch, K)


def fit(winners, losers, weights, n: int, alpha: float = DEFAULT_ALPHA, tol: float = 1e-10,
        max_iter: int = 200) -> np.ndarray:
    """Strength-weighted Bradley–Terry estimate of ``n`` systems' strengths.

    Maximises ``sum_c w_c log sigmoid(theta[winners[c]] - theta[losers[c]]) - alpha/2 ||theta||^2``.

    Parameters
    ----------
    winners, losers : array_like of int, shape (m,)
        System indices 0..n-1 of each comparison's winner and loser.
    weights : array_like of float, shape (m,)
        Positive weights (win strengths 1-5); ones for an unweighted fit.
    n : int
        Number of systems.
    alpha : float
        Ridge in weight units, default :data:`DEFAULT_ALPHA` (config ``stats.bt_alpha``'s default; a N(0, 1/alpha)
        prior; keeps a system that won or lost everything finite; negligible
        otherwise -- ``docs/methods/bradley-terry.md``). 0 gives the maximum-likelihood
        estimate and raises if it does not exist.
    tol, max_iter
        Newton convergence: largest step at most ``tol`` (theta scale).

    Returns
    -------
    ndarray, shape (n,)
        theta, centred (mean 0). With ``alpha > 0`` a system without comparisons
        gets 0; with ``alpha == 0`` that raises.

    Raises
    ------
    ValueError
        No comparisons, mismatched lengths, indices outside 0..n-1, NaN or
        non-positive weights, a system compared with itself, or ``alpha == 0``
        without a maximum-likelihood estimate.
    """
    winners, losers = np.asarray(winners), np.asarray(losers)
    weights = np.asarray(weights, dtype=np.float64)
    if not (winners.shape == losers.shape == weights.shape and winners.ndim == 1):
        raise ValueError("winners, losers and weights must be 1-d arrays of one length")
    if winners.size == 0:
        raise ValueError("no comparisons (nothing to fit)")
    for name, a in (("winners", winners), ("losers", losers)):
        if not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= n:
            raise ValueError(f"{name} must be integer indices in 0..{n - 1}")
    if not (np.isfinite(weights).all() and (weights > 0).all()):
        raise ValueError("weights must be finite and > 0 (NaN found or non-positive)")
    if (winners == losers).any():
        raise ValueError("a system is compared with itself")
    return fit_matrix(win_matrix(winners, losers, weights, n), alpha=alpha, tol=tol, max_iter=max_iter)


# --- Elo and intervals ------------------------------------------------------------------------

def elo(theta) -> np.ndarray:
    """``400 * (theta - mean(theta)) / ln 10 + 1500`` along the last axis (HEART §9.8)."""
    theta = np.asarray(theta, dtype=np.float64)
    return ELO_SCALE * (theta - theta.mean(axis=-1, keepdims=True)) + ELO_BASE


def asymptotic_ci(theta, n_comparisons, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """The paper's interval: ``theta ± z * sqrt(1 / n_i)``, on the Elo scale.

    Parameters
    ----------
    theta : array_like, shape (K,)
        Strengths (centred here).
    n_comparisons : array_like, shape (K,)
        Comparisons involving each system (unweighted counts, > 0).
    z : float
        Normal quantile, 1.96 for 95 %.

    Returns
    -------
    (lo, hi) : tuple of ndarray
        Elo bounds.
    """
    n = np.asarray(n_comparisons, dtype=np.float64)
    centre = elo(theta)
    if n.shape != centre.shape:
        raise ValueError("theta and n_comparisons must have one shape")
    if not (np.isfinite(n).all() and (n > 0).all()):
        raise ValueError("n_comparisons must be > 0 for every system")
    half = z * ELO_SCALE * np.sqrt(1.0 / n)
    return centre - half, centre + half


def _conversation_tensor(comp: pd.DataFrame, systems: list[str], boot: cluster_bootstrap.ClusterBootstrap
                         ) -> np.ndarray:
    """Per conversation (in ``boot.ids`` order) the K x K weighted win matrix, flattened: (C, K*K)."""
    K = len(systems)
    w_idx, l_idx = _codes(comp, systems)
    conv = boot.index(comp["conversation_id"].to_numpy())
    flat = np.bincount(conv * K * K + w_idx * K + l_idx, weights=comp["weight"].to_numpy(dtype=np.float64),
                       minlength=len(boot.ids) * K * K)
    return flat.reshape(len(boot.ids), K * K)


def bootstrap(comp: pd.DataFrame, systems, n_boot: int = 1000, seed: int = 0, alpha: float = DEFAULT_ALPHA,
              theta0=None) -> np.ndarray:
    """Conversation-level cluster bootstrap of the Elo ratings.

    Parameters
    ----------
    comp : DataFrame
        :func:`comparisons` output.
    systems : list of str
        The systems, in the order of the returned columns; each must have
        comparisons and every system in ``comp`` must be listed.
    n_boot : int
        Replicates.
    seed : int
        Seed of the resampling (:func:`heart.stats.bootstrap.counts`).
    alpha : float
        Ridge, as in :func:`fit`. With ``alpha == 0`` a replicate without a
        maximum-likelihood estimate raises.
    theta0 : array_like, shape (K,), optional
        Starting values (e.g. the full-data estimate); the result does not
        depend on them beyond the convergence tolerance.

    Returns
    -------
    ndarray, shape (n_boot, K)
        Elo of every replicate. Replicate ``b`` is the fit to the comparisons of
        conversation ``c`` (sorted ids; text sorts as text, numbers as numbers)
        repeated ``heart.stats.bootstrap.counts(C, n_boot, seed)[b, c]`` times.
    """
    systems = _check_comparisons(comp, systems)
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    K = len(systems)
    boot = cluster_bootstrap.ClusterBootstrap(comp["conversation_id"], n_boot, seed)
    T = _conversation_tensor(comp, systems, boot)
    W = boot.resample(T).reshape(n_boot, K, K)  # one matmul: all replicates' win matrices
    if theta0 is None:
        theta0 = fit_matrix(T.sum(axis=0).reshape(K, K), alpha=alpha)
    return elo(fit_matrix(W, alpha=alpha, theta0=theta0))


# --- ranks ------------------------------------------------------------------------------------

def rank_by_overlap(point, lo, hi) -> np.ndarray:
    """Ranks that only separate systems whose intervals do not overlap.

    ``rank_i = 1 + #{j : lo_j > hi_i}``: the number of systems whose whole
    interval lies above system i's, plus one. Systems with overlapping
    intervals can share a rank.

    Parameters
    ----------
    point, lo, hi : array_like, shape (K,)
        Point estimates (checked for shape only) and interval bounds.

    Returns
    -------
    ndarray of int, shape (K,)
    """
    point, lo, hi = (np.asarray(x, dtype=np.float64) for x in (point, lo, hi))
    if not (point.shape == lo.shape == hi.shape and lo.ndim == 1):
        raise ValueError("point, lo and hi must be 1-d arrays of one length")
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("interval bounds contain NaN")
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def separability(lo, hi) -> float:
    """Share of the K(K-1)/2 system pairs whose intervals do not overlap."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("lo and hi must be 1-d arrays of one length")
    if lo.size < 2:
        raise ValueError("separability needs at least two systems")
    apart = (lo[None, :] > hi[:, None]) | (lo[:, None] > hi[None, :])
    i, j = np.triu_indices(lo.size, k=1)
    return float(apart[i, j].mean())


# --- the leaderboard --------------------------------------------------------------------------

def _connected(W: np.ndarray) -> bool:
    K = W.shape[0]
    reach = ((W + W.T) > 0) | np.eye(K, dtype=bool)
    return bool(_strongly_connected(reach[None].astype(float))[0])


def ratings(comp: pd.DataFrame, systems=None, n_boot: int = 1000, seed: int = 0, alpha: float = DEFAULT_ALPHA,
            ci: float = 0.95, replicates=None) -> pd.DataFrame:
    """The Bradley–Terry/Elo leaderboard with asymptotic and bootstrap intervals.

    Parameters
    ----------
    comp : DataFrame
        :func:`comparisons` output.
    systems : list of str, optional
        Systems to rate (default: all in ``comp``). Every listed system must
        have comparisons (else ``ValueError``) and ``comp`` must not involve others.
    n_boot : int
        Conversation-level bootstrap replicates; 0 skips the bootstrap (its
        columns are then NaN and ``rank_boot`` is missing).
    seed : int
        Bootstrap seed.
    alpha : float
        Ridge, as in :func:`fit`.
    ci : float
        Coverage of both intervals (0.95: z = 1.96; the bootstrap's percentile interval,
        :func:`heart.stats.bootstrap.interval`).
    replicates : array_like, shape (n_boot, K), optional
        The bootstrap's replicates when the caller has them already (:func:`bootstrap` of the same
        ``comp``, ``systems``, ``n_boot``, ``seed`` and ``alpha``; columns in ``systems`` order): used
        instead of fitting them again.

    Returns
    -------
    DataFrame
        One row per system, sorted by ``elo`` descending: ``system``, ``theta``,
        ``elo``, ``n_comparisons`` (comparisons involving it), ``wins``,
        ``win_rate`` (share of its comparisons won, unweighted),
        ``elo_lo_asym``/``elo_hi_asym`` (the paper's SE = sqrt(1/n)),
        ``elo_lo_boot``/``elo_hi_boot`` (percentile), ``elo_se_boot`` (sd of the
        replicates), ``rank_asym``/``rank_boot`` (:func:`rank_by_overlap`).
        ``df.attrs`` holds ``alpha``, ``ci``, ``n_boot``, ``seed``,
        ``n_conversations`` and ``separability_asym``/``separability_boot``;
        :func:`summary` recomputes the latter from the columns (attrs do not
        survive every pandas operation or a parquet round trip).

    Raises
    ------
    ValueError
        Empty or invalid comparisons, systems without comparisons, or systems
        in groups never compared with each other (their ratings would not be
        on one scale).
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must lie in (0, 1), not {ci}")
    systems = _check_comparisons(comp, systems)
    K = len(systems)
    w_idx, l_idx = _codes(comp, systems)
    W = win_matrix(w_idx, l_idx, comp["weight"].to_numpy(dtype=np.float64), K)
    if not _connected(W):
        raise ValueError("the systems fall into groups never compared with each other (even indirectly); "
                         "rate each group separately")
    theta = fit_matrix(W, alpha=alpha)
    n_comp = np.bincount(w_idx, minlength=K) + np.bincount(l_idx, minlength=K)
    wins = np.bincount(w_idx, minlength=K)
    z = NormalDist().inv_cdf(0.5 + ci / 2)
    lo_a, hi_a = asymptotic_ci(theta, n_comp, z=z)
    point = elo(theta)
    out = pd.DataFrame({"system": systems, "theta": theta, "elo": point, "n_comparisons": n_comp,
                        "wins": wins, "win_rate": wins / n_comp, "elo_lo_asym": lo_a, "elo_hi_asym": hi_a})
    if n_boot > 0:
        boot = (bootstrap(comp, systems, n_boot=n_boot, seed=seed, alpha=alpha, theta0=theta) if replicates is None
                else np.asarray(replicates, dtype=float))
        if boot.shape != (n_boot, K):
            raise ValueError(f"replicates must have shape (n_boot, K) = ({n_boot}, {K}), not {boot.shape}")
        lo_b, hi_b = cluster_bootstrap.interval(boot, ci)
        se_b = cluster_bootstrap.standard_error(boot)
        rank_b = pd.array(rank_by_overlap(point, lo_b, hi_b), dtype="Int64")
    else:
        lo_b = hi_b = se_b = np.full(K, np.nan)
        rank_b = pd.array([pd.NA] * K, dtype="Int64")
    out["elo_lo_boot"], out["elo_hi_boot"], out["elo_se_boot"] = lo_b, hi_b, se_b
    out["rank_asym"] = rank_by_overlap(point, lo_a, hi_a)
    out["rank_boot"] = rank_b
    out = out.sort_values(["elo", "system"], ascending=[False, True], ignore_index=True)[RATING_COLUMNS]
    out.attrs.update({"alpha": alpha, "ci": ci, "n_boot": n_boot, "seed": seed,
                      "n_conversations": int(comp["conversation_id"].nunique()), **summary(out)})
    return out


def summary(r: pd.DataFrame) -> dict:
    """Separability of the leaderboard's two intervals, from the columns of :func:`ratings`.

    Returns
    -------
    dict
        ``n_systems``, ``separability_asym`` and ``separability_boot`` (NaN when
        the bootstrap was skipped or there are fewer than two systems).
    """
    def sep(kind: str) -> float:
        lo, hi = r[f"elo_lo_{kind}"].to_numpy(float), r[f"elo_hi_{kind}"].to_numpy(float)
        if len(r) < 2 or np.isnan(lo).any() or np.isnan(hi).any():
            return math.nan
        return separability(lo, hi)
    return {"n_systems": len(r), "separability_asym": sep("asym"), "separability_boot": sep("boot")}
