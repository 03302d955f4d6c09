"""The alternative rankers of the exploratory ablations (HEART §9.12: "Ablations (e.g., allowing draws,
alternate rankers) are labelled exploratory"): Bradley–Terry with ties (Davidson), a probit (Thurstone) fit,
a plain win rate, online Elo in a stated order, and the authors' released soft-score fit. Each is fitted to
win (and tie) matrices, one per bootstrap replicate at once. Models and reading: ``docs/methods/ablations.md``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from heart.stats import bradley_terry as bt


# --- Kendall's tau, row by row -------------------------------------------------------------------

def tau_b(x, y) -> np.ndarray:
    """Kendall's τ-b of each row of ``x`` with the same row of ``y`` (shapes (..., K), broadcast); NaN where
    a row rates every system alike (τ undefined), as ``scipy.stats.kendalltau`` computes it.

    ``sum(sign(x_i - x_j) sign(y_i - y_j)) / sqrt(n_x n_y)`` over the pairs ``i < j``, where ``n_x`` and
    ``n_y`` count the pairs each leaves untied.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], 1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    sx, sy = np.broadcast_arrays(sx, sy)
    denominator = np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("...p,...p->...", sx, sy) / denominator
    return np.where(denominator > 0, out, np.nan)


# --- a batched Newton solver for concave pairwise likelihoods -------------------------------------

def _newton(x, objective, K: int, tol: float = 1e-10, max_iter: int = 200, what: str = "fit") -> np.ndarray:
    """Minimise ``objective(x) -> (f, g, H)`` (shapes (B,), (B, P), (B, P, P)) for every row of ``x`` (B, P)
    whose first ``K`` entries are strengths identified up to a constant: the step solves ``(H + J) s = g``
    with ``J = 11'/K`` on that block and is centred there (as :func:`heart.stats.bradley_terry.fit_matrix`),
    with a backtracking (Armijo) line search per row."""
    x = np.array(x, dtype=float)
    B, P = x.shape
    J = np.zeros((P, P))
    J[:K, :K] = 1.0 / K
    active = np.ones(B, dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            return x
        f, g, H = objective(x[idx], idx)
        step = -np.linalg.solve(H + J, g[:, :, None])[:, :, 0]
        step[:, :K] -= step[:, :K].mean(axis=1, keepdims=True)
        slope = np.sum(g * step, axis=1)
        t = np.ones(idx.size)
        todo = np.ones(idx.size, dtype=bool)
        for _ in range(60):
            sub = np.flatnonzero(todo)
            fc = objective(x[idx[sub]] + t[sub, None] * step[sub], idx[sub], value_only=True)
            ok = fc <= f[sub] + 1e-4 * t[sub] * slope[sub] + 1e-12 * (1.0 + np.abs(f[sub]))
            todo[sub[ok]] = False
            if not todo.any():
                break
            t[todo] *= 0.5
        else:
            t[todo] = 0.0  # no decrease even for tiny steps: numerically converged
        move = t[:, None] * step
        x[idx] += move
        active[idx[np.abs(move).max(axis=1) <= tol]] = False
    if active.any():
        raise ValueError(f"{what} did not converge in {max_iter} iterations for {int(active.sum())} of {B} "
                         "matrices")
    return x


def _pair_counts(M: np.ndarray, pairs: bt._Pairs) -> tuple[np.ndarray, np.ndarray]:
    """(B, K, K) -> ``M[i, j]`` and ``M[j, i]`` of the pairs ``i < j``: shapes (B, P)."""
    return M[:, pairs.i, pairs.j], M[:, pairs.j, pairs.i]


def _laplacian(h: np.ndarray, pairs: bt._Pairs, K: int) -> np.ndarray:
    """``sum_p h_p (e_i - e_j)(e_i - e_j)'`` per row: the Hessian of a function of the pair differences."""
    H = np.zeros((h.shape[0], K * K))
    H[:, pairs.upper] = -h
    H[:, pairs.lower] = -h
    H = H.reshape(h.shape[0], K, K)
    diag = np.arange(K)
    H[:, diag, diag] = h @ pairs.both
    return H


# --- Davidson's Bradley–Terry model with ties -----------------------------------------------------

def davidson(W, T, alpha: float = bt.DEFAULT_ALPHA, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Davidson's (1970) Bradley–Terry model with ties, fitted to win and tie matrices.

    ``P(i beats j) = p_i / D``, ``P(j beats i) = p_j / D``, ``P(tie) = nu sqrt(p_i p_j) / D`` with
    ``D = p_i + p_j + nu sqrt(p_i p_j)`` and ``p_i = exp(theta_i)``: a win among the decided comparisons has
    Bradley–Terry's odds, so theta is on the main model's scale.

    Parameters
    ----------
    W : array_like, shape (..., K, K)
        ``W[i, j]``: comparisons ``i`` won against ``j`` (counts, or a replicate's resampled counts).
    T : array_like, shape (..., K, K)
        Ties of ``i`` and ``j``, in either triangle (``T + T'`` is used).
    alpha : float
        Ridge ``alpha/2 * |theta|^2`` as the main fit's; the tie parameter is not penalised.

    Returns
    -------
    (ndarray (..., K), ndarray (...))
        Centred theta and ``nu`` (0 where a matrix holds no tie: the model is then Bradley–Terry's).
    """
    W, T = np.asarray(W, dtype=float), np.asarray(T, dtype=float)
    K, batch = W.shape[-1], W.shape[:-2]
    W, T = W.reshape(-1, K, K), T.reshape(-1, K, K)
    pairs = bt._Pairs(K)
    won, lost = _pair_counts(W, pairs)
    t = T[:, pairs.i, pairs.j] + T[:, pairs.j, pairs.i]
    n = won + lost + t
    no_ties = t.sum(axis=1) == 0
    incidence = pairs.first - pairs.second  # pair quantity -> +i, -j

    def objective(x, rows, value_only=False):
        theta, lam = x[:, :K], x[:, K]
        d = theta[:, pairs.i] - theta[:, pairs.j]
        half = 0.5 * np.abs(d)
        # log D = log(e^{d/2} + e^{-d/2} + nu), computed from the larger of the two exponents
        nu = np.where(no_ties[rows], 0.0, np.exp(np.minimum(lam, 700.0)))[:, None]
        logD = half + np.log1p(np.exp(-2 * half) + nu * np.exp(-half))
        ll = (won[rows] - lost[rows]) * d / 2 + np.where(no_ties[rows], 0.0, lam)[:, None] * t[rows] - n[rows] * logD
        f = -ll.sum(axis=1) + 0.5 * alpha * np.einsum("bk,bk->b", theta, theta)
        if value_only:
            return f
        a, b = np.exp(d / 2 - half), np.exp(-d / 2 - half)  # e^{+-d/2} / e^{|d|/2}
        nus = nu * np.exp(-half)
        D = a + b + nus
        p_tie = nus / D
        g_d = (won[rows] - lost[rows]) / 2 - n[rows] * (a - b) / (2 * D)
        g_l = t[rows] - n[rows] * p_tie
        h_dd = n[rows] * ((a + b) * D - (a - b) ** 2) / (4 * D ** 2)
        h_dl = -n[rows] * (a - b) * nus / (2 * D ** 2)
        h_ll = n[rows] * p_tie * (1 - p_tie)
        B = x.shape[0]
        g = np.zeros((B, K + 1))
        g[:, :K] = -(g_d @ incidence) + alpha * theta
        g[:, K] = -g_l.sum(axis=1)
        H = np.zeros((B, K + 1, K + 1))
        H[:, :K, :K] = _laplacian(h_dd, pairs, K) + alpha * np.eye(K)
        H[:, :K, K] = H[:, K, :K] = h_dl @ incidence
        H[:, K, K] = h_ll.sum(axis=1)
        fixed = no_ties[rows]  # no tie: nu stays 0, the tie parameter out of the step
        g[fixed, K], H[fixed, :K, K], H[fixed, K, :K], H[fixed, K, K] = 0.0, 0.0, 0.0, 1.0
        return f, g, H

    start = np.zeros((W.shape[0], K + 1))
    with np.errstate(divide="ignore"):
        share = t.sum(axis=1) / np.maximum(n.sum(axis=1), 1)
        start[:, K] = np.where(no_ties, 0.0, np.log(np.maximum(2 * share / np.maximum(1 - share, 1e-9), 1e-9)))
    x = _newton(start, objective, K, tol=tol, what="Davidson's ties model")
    theta = x[:, :K] - x[:, :K].mean(axis=1, keepdims=True)
    nu = np.where(no_ties, 0.0, np.exp(x[:, K]))
    return theta.reshape(*batch, K), nu.reshape(batch)


# --- Thurstone's case V (probit) --------------------------------------------------------------------

#: the probit scale to the logistic: ``Phi(x) ~ 1 / (1 + exp(-1.702 x))`` (Camilli 1994), for the Elo column only
PROBIT_TO_LOGIT = 1.702


def thurstone(W, alpha: float = bt.DEFAULT_ALPHA, tol: float = 1e-10) -> np.ndarray:
    """Thurstone's case V: ``P(i beats j) = Phi(theta_i - theta_j)``, fitted to weighted win matrices
    ``(..., K, K)`` (the main fit's strength weights) with the main fit's ridge; centred theta (probit scale)."""
    W = np.asarray(W, dtype=float)
    K, batch = W.shape[-1], W.shape[:-2]
    W = W.reshape(-1, K, K)
    pairs = bt._Pairs(K)
    won, lost = _pair_counts(W, pairs)
    incidence = pairs.first - pairs.second

    def objective(theta, rows, value_only=False):
        d = theta[:, pairs.i] - theta[:, pairs.j]
        f = -(won[rows] * special.log_ndtr(d) + lost[rows] * special.log_ndtr(-d)).sum(axis=1) \
            + 0.5 * alpha * np.einsum("bk,bk->b", theta, theta)
        if value_only:
            return f
        log_pdf = -0.5 * d ** 2 - 0.5 * math.log(2 * math.pi)
        r_up, r_down = np.exp(log_pdf - special.log_ndtr(d)), np.exp(log_pdf - special.log_ndtr(-d))  # Mills
        g_d = won[rows] * r_up - lost[rows] * r_down
        h_dd = won[rows] * r_up * (d + r_up) + lost[rows] * r_down * (r_down - d)
        g = -(g_d @ incidence) + alpha * theta
        H = _laplacian(h_dd, pairs, K) + alpha * np.eye(K)
        return f, g, H

    theta = _newton(np.zeros((W.shape[0], K)), objective, K, tol=tol, what="Thurstone fit")
    theta -= theta.mean(axis=1, keepdims=True)
    return theta.reshape(*batch, K)


# --- a plain win rate ---------------------------------------------------------------------------------

def win_rate(W) -> np.ndarray:
    """Each system's share of its decided comparisons won (counts, not strength): (..., K, K) -> (..., K);
    NaN for a system without a comparison."""
    W = np.asarray(W, dtype=float)
    won, played = W.sum(axis=-1), W.sum(axis=-1) + W.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(played > 0, won / played, np.nan)


# --- online Elo -------------------------------------------------------------------------------------

def online_elo(winner, loser, K: int, k_factor: float = 4.0, repeats=None, base: float = 1000.0) -> np.ndarray:
    """Elo updated one comparison at a time, in the order given (chess's rule, as Chatbot Arena first ranked):
    ``R_w += k (1 - E_w)``, ``R_l -= k (1 - E_w)`` with ``E_w = 1 / (1 + 10^((R_l - R_w) / 400))``.

    Parameters
    ----------
    winner, loser : array_like of int
        System codes 0..K-1 of each comparison, in the order they are played.
    k_factor : float
        The K-factor.
    repeats : array_like, shape (B, N), optional
        How often each comparison is played in each of B replicates (a conversation bootstrap repeats its
        conversation's comparisons): each is played that many times in a row where it stands. Default: once.

    Returns
    -------
    ndarray, shape (K,) or (B, K)
        The ratings after the last comparison (starting at ``base``).
    """
    winner, loser = np.asarray(winner, dtype=np.int64), np.asarray(loser, dtype=np.int64)
    scale = math.log(10.0) / 400.0
    if repeats is None:  # one pass: plain floats (a numpy call per comparison costs more than the update)
        r = [float(base)] * K
        for first, second in zip(winner.tolist(), loser.tolist()):
            gain = k_factor / (1.0 + math.exp((r[first] - r[second]) * scale))
            r[first] += gain
            r[second] -= gain
        return np.array(r)
    reps = np.asarray(repeats, dtype=np.int64)
    R = np.full((K, reps.shape[0]), float(base))  # one row per system: a comparison updates two rows in place
    times = reps.T  # (N, B)
    most = reps.max(axis=0, initial=0).tolist()
    for n, (first, second) in enumerate(zip(winner.tolist(), loser.tolist())):
        rw, rl = R[first], R[second]
        for k in range(most[n]):  # the replicates that play it a (k+1)-th time, in a row
            gain = k_factor * (times[n] > k) / (1.0 + np.exp((rw - rl) * scale))  # k (1 - E_w)
            rw += gain
            rl -= gain
    return R.T
