"""Style-controlled Bradley–Terry ratings: the leaderboard with length and warmth held constant (beyond the
paper, after Chatbot Arena's style control). Features, model and reading: ``docs/methods/style-control.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
from scipy import optimize, sparse, stats

from heart.stats import bootstrap as cluster_bootstrap
from heart.stats import bradley_terry as bt
from heart.stats import leaderboard
from heart.stats.style_features import Lexicon, completion_features


COVARIATES = ("length", "warmth")
#: the completion feature behind each covariate and its unit
FEATURES = {"length": ("words", "words"), "warmth": ("warmth", "warmth-lexicon hits per 100 words")}
SOURCES = ("combined", "llm", "human")
FAMILY = "style_coefficients"
RATING_COLUMNS = ["source", "system", "status", "note", "n_comparisons", "wins", "mean_words", "mean_warmth",
                  "elo_plain", "elo_plain_lo_asym", "elo_plain_hi_asym", "elo_plain_lo_boot", "elo_plain_hi_boot",
                  "elo_style", "elo_style_lo_asym", "elo_style_hi_asym", "elo_style_lo_boot", "elo_style_hi_boot",
                  "elo_shift", "rank_plain", "rank_style", "rank_change"]
COEFFICIENT_COLUMNS = ["source", "covariate", "status", "note", "unit", "scale", "coefficient", "se", "ci_low",
                       "ci_high", "z", "p_value", "se_boot", "ci_low_boot", "ci_high_boot", "elo_per_sd",
                       "n_comparisons", "n_conversations", "lexicon_version", "family"]


def style_comparisons(judgments: pd.DataFrame, features: pd.DataFrame) -> pd.DataFrame:
    """The plain model's comparisons with both completions' style features.

    Returns
    -------
    DataFrame
        :data:`heart.stats.bradley_terry.COMPARISON_COLUMNS` plus ``winner_words``, ``loser_words``,
        ``winner_warmth``, ``loser_warmth`` (NaN where the completion has no text row), and the keys
        ``item_id``, ``winner_contributor``, ``loser_contributor``. Rows as :func:`heart.stats.leaderboard.judged`.
    """
    comp = leaderboard.judged(judgments, "overall")
    table = features.set_index(["item_id", "system", "contributor"])
    out = comp.copy()
    items = pd.Series(comp["item_id"], dtype=object).astype(str).to_numpy()
    for side in ("winner", "loser"):
        key = pd.MultiIndex.from_arrays([items, comp[side].to_numpy(dtype=object),
                                         comp[f"{side}_contributor"].to_numpy(dtype=object)])
        found = table.reindex(key)
        out[f"{side}_words"] = found["words"].to_numpy(dtype=float)
        out[f"{side}_warmth"] = found["warmth"].to_numpy(dtype=float)
    return out


# --- the fit ----------------------------------------------------------------------------------

def design(winners, losers, n_systems: int, covariates=None) -> sparse.csr_matrix:
    """The design matrix, one row per comparison oriented winner/loser: ``[e_winner - e_loser, covariates]``.

    ``covariates`` (m x p, optional) are the winner-minus-loser feature differences, already scaled.
    """
    winners, losers = np.asarray(winners), np.asarray(losers)
    m = winners.size
    rows = np.repeat(np.arange(m), 2)
    cols = np.column_stack([winners, losers]).ravel()
    vals = np.tile([1.0, -1.0], m)
    sys_part = sparse.csr_matrix((vals, (rows, cols)), shape=(m, n_systems))
    if covariates is None or np.asarray(covariates).size == 0:
        return sys_part
    cov = np.asarray(covariates, dtype=np.float64).reshape(m, -1)
    return sparse.hstack([sys_part, sparse.csr_matrix(cov)], format="csr")


def _objective(X, w, beta, alpha) -> float:
    return float(np.sum(w * np.logaddexp(0.0, -(X @ beta)))) + 0.5 * alpha * float(beta @ beta)


def _hessian(X, w, beta, alpha) -> np.ndarray:
    p = 0.5 * (1.0 + np.tanh(0.5 * (X @ beta)))
    H = (X.T @ X.multiply((w * p * (1.0 - p))[:, None])).toarray()
    H[np.diag_indices_from(H)] += alpha
    return H


def _null(n_systems: int, d: int) -> np.ndarray:
    """``u u' / K``, u the direction (1 on every system, 0 on the covariates) the likelihood ignores."""
    u = np.zeros(d)
    u[:n_systems] = 1.0
    return np.outer(u, u) / n_systems


def separable(X) -> bool:
    """Do the rows of ``X`` admit a direction ``d`` with ``X d >= 0`` on every row and ``> 0`` on some?

    That is (quasi-)complete separation: the log-likelihood keeps rising along ``d``, so the unpenalised
    maximum-likelihood estimate does not exist (Albert & Anderson 1984) -- a system that won every
    comparison, a covariate that orders every verdict. A linear programme (scipy's HiGHS): maximise
    ``sum(X d)`` subject to ``X d >= 0`` and ``-1 <= d <= 1``; separation when the maximum is positive.
    """
    X = sparse.csr_matrix(X, dtype=np.float64)
    res = optimize.linprog(-np.asarray(X.sum(axis=0)).ravel(), A_ub=-X, b_ub=np.zeros(X.shape[0]),
                           bounds=[(-1.0, 1.0)] * X.shape[1], method="highs")
    return bool(res.status == 0 and -res.fun > 1e-7)


def fit(X, weights, n_systems: int, alpha: float = bt.DEFAULT_ALPHA, start=None, tol: float = 1e-10,
        max_iter: int = 200) -> np.ndarray:
    """Penalised weighted logistic regression of "the winner wins" on the design ``X``
    (``docs/methods/style-control.md``).

    Maximises ``sum_c w_c log sigmoid(X_c . b) - alpha/2 ||b||^2``; the first ``n_systems`` entries of
    ``b`` are the system strengths (reported centred), the rest the covariate coefficients.

    Parameters
    ----------
    X : sparse or dense matrix, shape (m, n_systems + p)
        :func:`design`.
    weights : array_like, shape (m,)
        Positive weights (win strengths; a bootstrap replicate's weight times the draw count may be 0).
    n_systems : int
        K, the leading columns of ``X`` that are system indicators.
    alpha : float
        Ridge on all parameters (:data:`heart.stats.bradley_terry.DEFAULT_ALPHA`); 0 for maximum likelihood.
    start : array_like, optional
        Starting values (the system part is centred).
    tol, max_iter
        Newton converges when the largest step is at most ``tol``.

    Returns
    -------
    ndarray, shape (n_systems + p,)

    Raises
    ------
    ValueError
        Bad input, ``alpha == 0`` when the maximum-likelihood estimate does not exist (:func:`separable`),
        or no convergence.
    """
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be finite and >= 0, not {alpha}")
    X = sparse.csr_matrix(X, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    m, d = X.shape
    if w.shape != (m,) or m == 0:
        raise ValueError("weights must be one per row of X, and X must have rows")
    if not (np.isfinite(w).all() and (w >= 0).all()) or not np.isfinite(X.data).all():
        raise ValueError("weights must be finite and >= 0, the design finite")
    if not 1 <= n_systems <= d:
        raise ValueError(f"n_systems must lie in 1..{d}")
    keep = w > 0
    X, w = X[keep], w[keep]
    if alpha == 0 and separable(X):
        raise ValueError("alpha=0: the maximum-likelihood estimate does not exist (the verdicts are separated: "
                         "a system won or lost all its comparisons, or the covariates order every verdict); "
                         "use alpha > 0")
    beta = np.zeros(d) if start is None else np.array(start, dtype=np.float64)
    beta[:n_systems] -= beta[:n_systems].mean()
    J = _null(n_systems, d)
    f = _objective(X, w, beta, alpha)
    for _ in range(max_iter):
        p = 0.5 * (1.0 + np.tanh(0.5 * (X @ beta)))
        g = X.T @ (w * (1.0 - p)) - alpha * beta  # gradient of the penalised log-likelihood
        step = np.linalg.solve(_hessian(X, w, beta, alpha) + J, g)
        step[:n_systems] -= step[:n_systems].mean()
        gs = float(g @ step)
        t = 1.0
        for _ in range(60):
            cand = beta + t * step
            fc = _objective(X, w, cand, alpha)
            if fc <= f - 1e-4 * t * gs + 1e-12 * (1.0 + abs(f)):
                break
            t *= 0.5
        else:  # no decrease even for tiny steps: numerically converged
            return beta
        beta, f = cand, fc
        if np.abs(t * step).max() <= tol:
            beta[:n_systems] -= beta[:n_systems].mean()
            return beta
    raise ValueError(f"the style-controlled Bradley–Terry fit did not converge in {max_iter} iterations")


def covariance(X, weights, beta, n_systems: int, alpha: float = bt.DEFAULT_ALPHA) -> np.ndarray:
    """``Sigma``: the inverse Hessian of the penalised negative log-likelihood, weights rescaled to mean 1.

    Along the centred subspace of the system strengths (the only directions the likelihood sees
    when ``alpha == 0``); use it with contrasts orthogonal to the all-systems direction (centred
    strengths) and for the covariate entries.
    """
    X = sparse.csr_matrix(X, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w[w > 0].mean()
    J = _null(n_systems, X.shape[1])
    return np.linalg.inv(_hessian(X, w, np.asarray(beta, float), alpha) + J) - J


def _elo_se(sigma: np.ndarray, K: int) -> np.ndarray:
    C = np.eye(K) - 1.0 / K  # rows: the centring contrasts e_i - 1/K
    return bt.ELO_SCALE * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", C, sigma[:K, :K], C), 0.0))


def _rank(elo: np.ndarray) -> np.ndarray:
    return pd.Series(elo).rank(ascending=False, method="min").to_numpy(dtype=np.int64)


@dataclass
class Fit:
    """One source's two fits (:func:`rate`): the tables and how many bootstrap refits failed (left out)."""

    ratings: pd.DataFrame
    coefficients: pd.DataFrame
    failed: int = 0


def rate(comp: pd.DataFrame, systems: list[str], n_boot: int = 1000, seed: int = 0,
         alpha: float = bt.DEFAULT_ALPHA, ci: float = 0.95) -> Fit:
    """Plain and style-controlled ratings and the covariates' coefficients on one set of comparisons.

    Parameters
    ----------
    comp : DataFrame
        :func:`style_comparisons` rows with both completions' features present (no NaN).
    systems : list of str
        The systems to rate: exactly those in ``comp``.
    n_boot, seed, alpha, ci
        Bootstrap replicates (0: none; the bootstrap columns are then NaN), seed, ridge, coverage.

    Returns
    -------
    Fit
        ``ratings``: one row per system (``RATING_COLUMNS`` but ``source``, ``status``, ``note``);
        ``coefficients``: one row per covariate (``COEFFICIENT_COLUMNS`` but ``source`` and
        ``lexicon_version``).

    Raises
    ------
    ValueError
        From :func:`heart.stats.bradley_terry.ratings` (e.g. systems never compared with each other) or
        :func:`fit`.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must lie in (0, 1), not {ci}")
    K = len(systems)
    plain = bt.ratings(comp[bt.COMPARISON_COLUMNS], systems, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
    plain = plain.set_index("system").loc[systems]
    index = pd.Index(systems)
    w_idx, l_idx = index.get_indexer(comp["winner"]), index.get_indexer(comp["loser"])
    weight = comp["weight"].to_numpy(dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + ci / 2)

    # the distinct completions of the comparisons: per-system means and the standardisation scales
    sides = [comp[[side, "item_id", f"{side}_contributor", f"{side}_words", f"{side}_warmth"]].set_axis(
        ["system", "item_id", "contributor", "words", "warmth"], axis=1) for side in ("winner", "loser")]
    done = pd.concat(sides, ignore_index=True).drop_duplicates(["system", "item_id", "contributor"])
    means = done.groupby("system")[["words", "warmth"]].mean().reindex(systems)
    scales, used, diffs = {}, [], []
    for cov in COVARIATES:
        col = FEATURES[cov][0]
        scales[cov] = float(done[col].std(ddof=0))
        if math.isfinite(scales[cov]) and scales[cov] > 0:
            used.append(cov)
            diffs.append((comp[f"winner_{col}"].to_numpy(float) - comp[f"loser_{col}"].to_numpy(float)) / scales[cov])
    X0 = design(w_idx, l_idx, K)
    X = design(w_idx, l_idx, K, np.column_stack(diffs) if diffs else None)
    theta0 = plain["theta"].to_numpy(float)  # bradley_terry's fit: this model without covariates
    beta = fit(X, weight, K, alpha, start=np.r_[theta0, np.zeros(len(used))])
    se_plain = _elo_se(covariance(X0, weight, theta0, K, alpha), K)
    sigma = covariance(X, weight, beta, K, alpha)
    se_style = _elo_se(sigma, K)
    elo_plain, elo_style = plain["elo"].to_numpy(float), bt.elo(beta[:K])

    reps = np.full((n_boot, K + len(used)), np.nan)
    failed = 0
    if n_boot > 0:
        boot = cluster_bootstrap.ClusterBootstrap(comp["conversation_id"], n_boot, seed)  # bt.bootstrap's draws
        conv = boot.index(comp["conversation_id"].to_numpy())
        for b in range(n_boot):
            try:
                reps[b] = fit(X, weight * boot.counts[b, conv], K, alpha, start=beta)
            except ValueError:
                failed += 1
    boot_elo = bt.elo(reps[:, :K])
    lo_b, hi_b = cluster_bootstrap.interval(boot_elo, ci) if n_boot else (np.full(K, np.nan),) * 2
    rank_plain, rank_style = _rank(elo_plain), _rank(elo_style)
    ratings = pd.DataFrame({
        "system": systems, "n_comparisons": plain["n_comparisons"].to_numpy(), "wins": plain["wins"].to_numpy(),
        "mean_words": means["words"].to_numpy(float), "mean_warmth": means["warmth"].to_numpy(float),
        "elo_plain": elo_plain, "elo_plain_lo_asym": elo_plain - z * se_plain,
        "elo_plain_hi_asym": elo_plain + z * se_plain, "elo_plain_lo_boot": plain["elo_lo_boot"].to_numpy(float),
        "elo_plain_hi_boot": plain["elo_hi_boot"].to_numpy(float), "elo_style": elo_style,
        "elo_style_lo_asym": elo_style - z * se_style, "elo_style_hi_asym": elo_style + z * se_style,
        "elo_style_lo_boot": lo_b, "elo_style_hi_boot": hi_b, "elo_shift": elo_style - elo_plain,
        "rank_plain": rank_plain, "rank_style": rank_style, "rank_change": rank_plain - rank_style})
    ratings = ratings.sort_values(["elo_style", "system"], ascending=[False, True], ignore_index=True)

    n_conv = int(pd.Series(comp["conversation_id"]).nunique())
    rows = []
    for cov in COVARIATES:
        row = {"covariate": cov, "unit": FEATURES[cov][1], "scale": scales[cov], "n_comparisons": len(comp),
               "n_conversations": n_conv, "family": FAMILY}
        if cov not in used:
            rows.append({**row, "status": "undefined",
                         "note": "no variation in this feature across the compared completions: not estimable, "
                                 "left out of the model"})
            continue
        k = K + used.index(cov)
        coef, se = float(beta[k]), float(math.sqrt(max(sigma[k, k], 0.0)))
        zval = coef / se if se > 0 else math.nan
        col = reps[:, k]
        lo, hi = cluster_bootstrap.interval(col, ci) if n_boot else (math.nan, math.nan)
        rows.append({**row, "status": "ok", "coefficient": coef, "se": se, "ci_low": coef - z * se,
                     "ci_high": coef + z * se, "z": zval,
                     "p_value": float(2 * stats.norm.sf(abs(zval))) if math.isfinite(zval) else math.nan,
                     "se_boot": cluster_bootstrap.standard_error(col) if n_boot else math.nan,
                     "ci_low_boot": lo, "ci_high_boot": hi, "elo_per_sd": bt.ELO_SCALE * coef,
                     "note": f"log-odds of winning per SD ({scales[cov]:.3g} {FEATURES[cov][1]}) of advantage"})
    return Fit(ratings, pd.DataFrame(rows), failed)


# --- every source -----------------------------------------------------------------------------

def _not_rated(ratings: list, coefficients: list, scope: dict, systems, status: str, note: str, n_comp: int,
               n_conv: int, version: int) -> None:
    ratings.extend({**scope, "system": s, "status": status, "note": note} for s in systems)
    coefficients.extend({**scope, "covariate": c, "status": status, "note": note, "unit": FEATURES[c][1],
                         "n_comparisons": n_comp, "n_conversations": n_conv, "lexicon_version": version,
                         "family": FAMILY} for c in COVARIATES)


def style_control(judgments: pd.DataFrame, completions: pd.DataFrame, lexicon: Lexicon, n_boot: int = 1000,
                  seed: int = 0, alpha: float = bt.DEFAULT_ALPHA, ci: float = 0.95,
                  sources=SOURCES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Plain and style-controlled ratings per judgment source, and the covariates' coefficients.

    Parameters
    ----------
    judgments : DataFrame
        ``results/judging/judgments.parquet``.
    completions : DataFrame
        Every system's completions (``item_id``, ``system``, ``contributor_id``, ``text``).
    lexicon : Lexicon
        :func:`load_lexicon`.
    n_boot, seed, alpha, ci
        Conversation bootstrap replicates and seed, ridge (config ``stats.bt_alpha``), coverage.
    sources : iterable of str
        Judgment sources ("combined", "llm", "human"; :func:`heart.stats.leaderboard.select`).

    Returns
    -------
    (DataFrame, DataFrame)
        ``RATING_COLUMNS`` (every system of the judgments in every source, sorted by style-controlled
        Elo within a source) and ``COEFFICIENT_COLUMNS`` (one row per source and covariate).
    """
    judgments = judgments.reset_index(drop=True)
    systems = sorted(set(judgments["system_a"]) | set(judgments["system_b"]))
    features = completion_features(completions, lexicon)
    ratings, coefficients = [], []
    for source in sources:
        comp = style_comparisons(leaderboard.select(judgments, "all", source), features)
        has_text = comp[["winner_words", "loser_words"]].notna().all(axis=1).to_numpy()
        dropped = int((~has_text).sum())
        comp = comp[has_text]
        scope = {"source": source}
        if comp.empty:
            why = (f"no {source} judgments with a winner" if dropped == 0 else
                   f"none of the {dropped} comparisons has both completions' texts")
            _not_rated(ratings, coefficients, scope, systems, "absent", why, 0, 0, lexicon.version)
            continue
        rated = sorted(set(comp["winner"].unique()) | set(comp["loser"].unique()))
        try:
            result = rate(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
        except ValueError as err:
            _not_rated(ratings, coefficients, scope, systems, "not_estimable", str(err), len(comp),
                       int(comp["conversation_id"].nunique()), lexicon.version)
            continue
        notes = [f"{dropped} comparisons without both completions' texts left out of both fits" if dropped else "",
                 f"{result.failed} of {n_boot} bootstrap refits of the style-controlled model failed (left out of "
                 "its interval)" if result.failed else ""]
        note = "; ".join(n for n in notes if n) or None
        ratings += [{**scope, "status": "ok", "note": note, **r} for r in result.ratings.to_dict("records")]
        ratings += [{**scope, "system": s, "status": "absent",
                     "note": "no comparisons involving this system in this source"} for s in systems if s not in rated]
        for r in result.coefficients.to_dict("records"):
            if note and r["status"] == "ok":
                r["note"] = f"{r['note']}; {note}"
            coefficients.append({**scope, **r, "lexicon_version": lexicon.version})
    out = pd.DataFrame(ratings).reindex(columns=RATING_COLUMNS)
    for col in ("n_comparisons", "wins", "rank_plain", "rank_style", "rank_change"):
        out[col] = out[col].astype("Int64")
    coef = pd.DataFrame(coefficients).reindex(columns=COEFFICIENT_COLUMNS)
    for col in ("n_comparisons", "n_conversations", "lexicon_version"):
        coef[col] = coef[col].astype("Int64")
    return out, coef


# --- the report's tables ----------------------------------------------------------------------

def _interval(lo: pd.Series, hi: pd.Series) -> pd.Series:
    return pd.Series([f"[{a:.0f}, {b:.0f}]" if pd.notna(a) and pd.notna(b) else "" for a, b in zip(lo, hi)],
                     index=lo.index)


def report_tables(ratings: pd.DataFrame, coefficients: pd.DataFrame,
                  ci: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The report's two tables (CSV): ratings side by side, and the coefficients, rounded.

    Ratings: per source the systems with status "ok" (plain Elo with both intervals, style-controlled
    Elo with both intervals, shift, ranks); coefficients: every row, the intervals as text.
    """
    label = f"{100 * ci:g}% CI"
    r = ratings[ratings["status"] == "ok"]
    out = pd.DataFrame({"source": r["source"], "system": r["system"], "comparisons": r["n_comparisons"],
                        "words": r["mean_words"].round(1), "warmth": r["mean_warmth"].round(2),
                        "Elo": r["elo_plain"].round(0),
                        f"Elo {label} (asymptotic)": _interval(r["elo_plain_lo_asym"], r["elo_plain_hi_asym"]),
                        f"Elo {label} (bootstrap)": _interval(r["elo_plain_lo_boot"], r["elo_plain_hi_boot"]),
                        "style-controlled Elo": r["elo_style"].round(0),
                        f"style-controlled {label} (asymptotic)": _interval(r["elo_style_lo_asym"],
                                                                            r["elo_style_hi_asym"]),
                        f"style-controlled {label} (bootstrap)": _interval(r["elo_style_lo_boot"],
                                                                           r["elo_style_hi_boot"]),
                        "shift": r["elo_shift"].round(0), "rank": r["rank_plain"],
                        "rank (style-controlled)": r["rank_style"], "rank change": r["rank_change"]})
    c = coefficients
    coef = pd.DataFrame({"source": c["source"], "covariate": c["covariate"], "status": c["status"],
                         "per SD of": [f"{s:.3g} {u}" if pd.notna(s) else "" for s, u in zip(c["scale"], c["unit"])],
                         "coefficient (log-odds)": c["coefficient"].round(3), "SE": c["se"].round(3),
                         f"{label} (asymptotic)": [f"[{a:.3f}, {b:.3f}]" if pd.notna(a) else ""
                                                   for a, b in zip(c["ci_low"], c["ci_high"])],
                         "z": c["z"].round(2), "p": c["p_value"].map(lambda p: "" if pd.isna(p) else f"{p:.2g}"),
                         f"{label} (bootstrap)": [f"[{a:.3f}, {b:.3f}]" if pd.notna(a) else ""
                                                  for a, b in zip(c["ci_low_boot"], c["ci_high_boot"])],
                         "Elo per SD": c["elo_per_sd"].round(0), "note": c["note"].fillna("")})
    return out.reset_index(drop=True), coef.reset_index(drop=True)
