"""Factor structure of the HEART axes (HEART paper §9.11): per-response axis scores, exploratory factor
analysis, Cronbach's alpha and the correlations with overall wins. The method: ``docs/methods/factors.md``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from heart.common.vocabulary import AXES

USABLE_STATUS = ("ok", "inconsistent", "tie")
TEST_FAMILY = "factor_win_correlation"
CORR_COLUMNS = ["family", "measure", "status", "n", "r", "ci_low", "ci_high", "p_value", "note"]


# --- per-response scores ---------------------------------------------------------------------

def _contributor(value):
    return None if value is None or pd.isna(value) else str(value)


def response_scores(judgments: pd.DataFrame, axes=AXES) -> pd.DataFrame:
    """Per response: mean signed axis marks from its own perspective, their z-scores and its win rate.

    Parameters
    ----------
    judgments : DataFrame
        ``results/judging/judgments.parquet`` (``judgments.schema.yaml``); only LLM rows with a usable
        status are read.
    axes : sequence of str
        Axis letters; columns ``axis_<letter>`` are read.

    Returns
    -------
    DataFrame
        One row per response: ``item_id``, ``system``, ``contributor_id``, ``n_judgments``,
        ``n_decided``, ``n_wins``, ``win_rate``, ``mean_<axis>``, ``z_<axis>`` and ``z_mean``.
        ``z_<axis>`` is NaN when the axis does not vary (see ``attrs["constant_axes"]``) or when no LLM
        judgment marked it (``attrs["unmarked_axes"]``: imported verdicts without axis marks).
    """
    axes = list(axes)
    mean_cols, z_cols = [f"mean_{a}" for a in axes], [f"z_{a}" for a in axes]
    columns = ["item_id", "system", "contributor_id", "n_judgments", "n_decided", "n_wins", "win_rate",
               *mean_cols, *z_cols, "z_mean"]
    j = judgments[(judgments["judge_kind"] == "llm") & judgments["status"].isin(USABLE_STATUS)]
    if j.empty:
        out = pd.DataFrame(columns=columns)
        out.attrs["constant_axes"] = []
        out.attrs["unmarked_axes"] = list(axes)
        return out
    decided = j["winner"].isin(["a", "b"]).to_numpy()
    parts = []
    for side, sign in (("a", 1.0), ("b", -1.0)):
        part = pd.DataFrame({"item_id": j["item_id"].to_numpy(), "system": j[f"system_{side}"].to_numpy(),
                             "contributor": j[f"contributor_{side}"].map(_contributor).fillna("").to_numpy(),
                             "decided": decided, "won": (j["winner"] == side).to_numpy() & decided})
        for a in axes:
            part[f"mean_{a}"] = sign * pd.to_numeric(j[f"axis_{a}"], errors="coerce").astype(float).to_numpy()
        parts.append(part)
    long = pd.concat(parts, ignore_index=True)
    g = long.groupby(["item_id", "system", "contributor"], sort=True)
    out = g[mean_cols].mean()
    out.insert(0, "n_judgments", g.size())
    out.insert(1, "n_decided", g["decided"].sum().astype(int))
    out.insert(2, "n_wins", g["won"].sum().astype(int))
    out.insert(3, "win_rate", (out["n_wins"] / out["n_decided"].where(out["n_decided"] > 0)).astype(float))
    constant, unmarked = [], []
    for a in axes:
        x = out[f"mean_{a}"]
        sd = x.std(ddof=1)
        if x.isna().all():  # no LLM judgment marked the axis: unknown, not constant
            unmarked.append(a)
            out[f"z_{a}"] = np.nan
        elif not np.isfinite(sd) or sd == 0:
            constant.append(a)
            out[f"z_{a}"] = np.nan
        else:
            out[f"z_{a}"] = (x - x.mean()) / sd
    out["z_mean"] = out[z_cols].mean(axis=1, skipna=True)
    out = out.reset_index().rename(columns={"contributor": "contributor_id"})
    out["contributor_id"] = out["contributor_id"].replace("", None)
    out = out[columns]
    out.attrs["constant_axes"] = constant
    out.attrs["unmarked_axes"] = unmarked
    return out


def _matrix(scores: pd.DataFrame, columns) -> tuple[pd.DataFrame, list[str]]:
    if columns is None:
        columns = [c for c in scores.columns if c.startswith("z_") and c != "z_mean"]
    return scores[list(columns)].astype(float), list(columns)


def _check(x: pd.DataFrame, min_vars: int, unmarked=()) -> tuple[str, str, pd.DataFrame]:
    """(status, note, complete rows); status "ok" when the matrix can be analysed."""
    if x.shape[1] < min_vars:
        return "insufficient", f"{x.shape[1]} variable(s); at least {min_vars} needed", x
    if any(c in unmarked for c in x.columns):
        return "absent", f"no axis marks on {', '.join(c for c in x.columns if c in unmarked)}", x
    empty = [c for c in x.columns if x[c].notna().sum() == 0]
    if empty:
        return "degenerate", f"no values in {', '.join(empty)} (a constant axis is not z-scored)", x
    constant = [c for c in x.columns if x[c].nunique(dropna=True) < 2]
    if constant:
        return "degenerate", f"constant column(s): {', '.join(constant)}", x
    complete = x.dropna()
    if len(complete) < x.shape[1] + 1:
        note = (f"{len(complete)} complete response(s) for {x.shape[1]} variables; "
                f"at least {x.shape[1] + 1} needed")
        return "insufficient", note, complete
    constant = [c for c in complete.columns if complete[c].nunique() < 2]
    if constant:
        return "degenerate", f"constant column(s) among complete rows: {', '.join(constant)}", complete
    return "ok", "", complete


# --- exploratory factor analysis -------------------------------------------------------------

@dataclass
class EFAResult:
    """The outcome of :func:`efa`; tables are empty unless ``status`` is "ok"."""

    status: str
    note: str
    n: int
    variables: list[str]
    n_factors: int | None = None
    n_factors_rule: str = ""
    rotation: str | None = None
    method: str = "minres"
    loadings: pd.DataFrame = field(default_factory=pd.DataFrame)
    communalities: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    variance: pd.DataFrame = field(default_factory=pd.DataFrame)
    eigenvalues: pd.DataFrame = field(default_factory=pd.DataFrame)
    factor_correlation: pd.DataFrame = field(default_factory=pd.DataFrame)
    kmo_total: float = float("nan")
    kmo_per_variable: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    bartlett_chi2: float = float("nan")
    bartlett_p: float = float("nan")
    scores: pd.DataFrame = field(default_factory=pd.DataFrame)

    def summary(self) -> pd.DataFrame:
        """One row: status, n, factors, rotation, KMO, Bartlett, total variance explained."""
        total = float(self.variance["cumulative"].iloc[-1]) if len(self.variance) else float("nan")
        return pd.DataFrame([{"status": self.status, "n": self.n, "n_variables": len(self.variables),
                              "n_factors": self.n_factors, "n_factors_rule": self.n_factors_rule,
                              "method": self.method, "rotation": self.rotation, "kmo": self.kmo_total,
                              "bartlett_chi2": self.bartlett_chi2, "bartlett_p": self.bartlett_p,
                              "variance_explained": total, "note": self.note}])

    def loadings_long(self) -> pd.DataFrame:
        """Loadings as (variable, factor, loading) rows with each variable's communality."""
        if self.loadings.empty:
            return pd.DataFrame(columns=["variable", "factor", "loading", "communality"])
        out = self.loadings.rename_axis("variable").reset_index().melt(
            id_vars="variable", var_name="factor", value_name="loading")
        out["communality"] = out["variable"].map(self.communalities)
        return out


def ledermann_bound(k: int) -> int:
    """The most common factors k variables identify (degrees of freedom (k-m)^2 - (k+m) >= 0)."""
    m = 0
    while m + 1 < k and (k - m - 1) ** 2 - (k + m + 1) >= 0:
        m += 1
    return m


def efa(scores: pd.DataFrame, n_factors: int | None = None, columns=None, rotation: str = "oblimin"
        ) -> EFAResult:
    """Exploratory factor analysis of the per-response axis z-scores.

    Parameters
    ----------
    scores : DataFrame
        :func:`response_scores` output (or any table of numeric columns).
    n_factors : int, optional
        Factors to extract; default: Kaiser criterion, capped at :func:`ledermann_bound`.
    columns : list of str, optional
        Variables to analyse (default: the ``z_<axis>`` columns).
    rotation : str
        Rotation for more than one factor ("oblimin", "varimax", "promax", ...); one factor is
        never rotated.

    Returns
    -------
    EFAResult
        With ``status`` "ok", "insufficient", "degenerate", "absent" (no axis marks) or "failed".
    """
    x, cols = _matrix(scores, columns)
    unmarked = [f"z_{a}" for a in scores.attrs.get("unmarked_axes", [])]
    if unmarked and set(cols) <= set(unmarked):
        return EFAResult(status="absent", note="no axis marks: no LLM judgment marked a HEART axis "
                         "(e.g. imported verdicts without axis marks)", n=0, variables=cols)
    status, note, complete = _check(x, min_vars=3, unmarked=unmarked)
    result = EFAResult(status=status, note=note, n=len(complete), variables=cols)
    if status != "ok":
        return result
    corr = np.corrcoef(complete.to_numpy(), rowvar=False)
    if np.linalg.matrix_rank(corr) < len(cols):
        result.status, result.note = "degenerate", "correlation matrix is singular (collinear variables)"
        return result
    eig = np.sort(np.linalg.eigvalsh(corr))[::-1]
    cap = max(1, ledermann_bound(len(cols)))
    if n_factors is None:
        n_factors = max(1, int((eig > 1).sum()))
        result.n_factors_rule = "kaiser (eigenvalue > 1)"
        if n_factors > cap:
            result.note = f"Kaiser gave {n_factors} factors; capped at the Ledermann bound {cap}"
            n_factors = cap
    else:
        result.n_factors_rule = "given"
        if not 1 <= n_factors <= cap:
            result.status = "insufficient"
            result.note = f"{n_factors} factors asked; {len(cols)} variables identify 1..{cap}"
            return result
    rot = None if n_factors == 1 else rotation
    result.n_factors, result.rotation = n_factors, rot
    try:
        from factor_analyzer import FactorAnalyzer
        from factor_analyzer.factor_analyzer import calculate_bartlett_sphericity, calculate_kmo

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fa = FactorAnalyzer(n_factors=n_factors, rotation=rot, method="minres", use_smc=True,
                                svd_method="lapack")
            fa.fit(complete.to_numpy())
            kmo_per, kmo_total = calculate_kmo(complete)
            chi2, p = calculate_bartlett_sphericity(complete)
            fscores = fa.transform(complete.to_numpy())
    except Exception as exc:  # noqa: BLE001 — reported, not raised
        result.status, result.note = "failed", f"factor_analyzer: {type(exc).__name__}: {exc}"
        return result
    names = [f"F{i + 1}" for i in range(n_factors)]
    load = np.asarray(fa.loadings_, dtype=float)
    signs = np.where(load.sum(axis=0) < 0, -1.0, 1.0)
    load = load * signs
    result.loadings = pd.DataFrame(load, index=cols, columns=names)
    result.communalities = pd.Series(fa.get_communalities(), index=cols, name="communality")
    ss, prop, cum = fa.get_factor_variance()
    result.variance = pd.DataFrame({"factor": names, "ss_loadings": ss, "proportion": prop,
                                    "cumulative": cum})
    orig, common = fa.get_eigenvalues()
    result.eigenvalues = pd.DataFrame({"component": range(1, len(cols) + 1), "eigenvalue": orig,
                                       "common_factor_eigenvalue": common})
    phi = getattr(fa, "phi_", None)
    if phi is not None:
        d = np.diag(signs)
        result.factor_correlation = pd.DataFrame(d @ np.asarray(phi) @ d, index=names, columns=names)
    result.kmo_total = float(kmo_total)
    result.kmo_per_variable = pd.Series(kmo_per, index=cols, name="kmo")
    result.bartlett_chi2, result.bartlett_p = float(chi2), float(p)
    result.scores = pd.DataFrame(np.asarray(fscores) * signs, index=complete.index, columns=names)
    if not result.note:
        result.note = f"{len(complete)} responses, {len(cols)} variables"
    return result


# --- Cronbach's alpha ------------------------------------------------------------------------

def _feldt_ci(alpha: float, n: int, k: int, ci: float) -> tuple[float, float]:
    df1, df2 = n - 1, (n - 1) * (k - 1)
    q = (1 - ci) / 2
    return (float(1 - (1 - alpha) * stats.f.isf(q, df1, df2)),
            float(1 - (1 - alpha) * stats.f.isf(1 - q, df1, df2)))


def cronbach_alpha_from_cov(cov) -> float:
    """Cronbach's alpha from an item covariance matrix: k/(k-1) * (1 - trace / sum of all entries)."""
    c = np.asarray(cov, dtype=float)
    k = c.shape[0]
    if c.ndim != 2 or c.shape != (k, k) or k < 2:
        raise ValueError("need a square covariance matrix of at least 2 items")
    return float(k / (k - 1) * (1 - np.trace(c) / c.sum()))


def cronbach_alpha(scores: pd.DataFrame, columns=None, ci: float = 0.95) -> dict:
    """Cronbach's alpha of the axis columns (rows = responses, columns = items), with Feldt's CI.

    Parameters
    ----------
    scores : DataFrame
        :func:`response_scores` output or any subjects x items table.
    columns : list of str, optional
        Items (default: the ``z_<axis>`` columns).
    ci : float
        Level of Feldt's interval.

    Returns
    -------
    dict
        ``status``, ``alpha``, ``ci_low``, ``ci_high``, ``n`` (complete rows), ``k`` and ``note``.
    """
    x, cols = _matrix(scores, columns)
    out = {"status": "ok", "alpha": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
           "n": 0, "k": len(cols), "note": ""}
    if len(cols) < 2:
        out.update(status="insufficient", note=f"{len(cols)} item(s); alpha needs at least 2")
        return out
    complete = x.dropna()
    out["n"] = len(complete)
    if len(complete) < 3:
        out.update(status="insufficient", note=f"{len(complete)} complete row(s); at least 3 needed")
        return out
    item_var = complete.var(ddof=1)
    total_var = complete.sum(axis=1).var(ddof=1)
    if not total_var > 0:
        out.update(status="degenerate", note="total score does not vary")
        return out
    k = len(cols)
    alpha = float(k / (k - 1) * (1 - item_var.sum() / total_var))
    lo, hi = _feldt_ci(alpha, len(complete), k, ci)
    const = [c for c in cols if item_var[c] == 0]
    out.update(alpha=alpha, ci_low=lo, ci_high=hi,
               note=f"listwise complete rows; constant item(s): {', '.join(const)}" if const
               else "listwise complete rows")
    return out


# --- correlation with wins -------------------------------------------------------------------

def fisher_ci(r: float, n: int, ci: float = 0.95, se_scale: float = 1.0) -> tuple[float, float]:
    """CI of a correlation from Fisher's z: tanh(atanh r +- q * se_scale / sqrt(n - 3)); NaN for n <= 3."""
    if n <= 3 or not np.isfinite(r):
        return float("nan"), float("nan")
    if abs(r) >= 1:
        return float(r), float(r)
    z, q = math.atanh(r), stats.norm.ppf(1 - (1 - ci) / 2)
    half = q * se_scale / math.sqrt(n - 3)
    return math.tanh(z - half), math.tanh(z + half)


def _pearson_row(measure: str, x: pd.Series, y: pd.Series, ci: float) -> dict:
    ok = x.notna() & y.notna()
    x, y = x[ok].astype(float), y[ok].astype(float)
    row = {"family": TEST_FAMILY, "measure": measure, "n": len(x), "r": np.nan, "ci_low": np.nan,
           "ci_high": np.nan, "p_value": np.nan}
    if len(x) < 4:
        return {**row, "status": "insufficient",
                "note": f"{len(x)} responses with both values; at least 4 needed"}
    if x.nunique() < 2 or y.nunique() < 2:
        return {**row, "status": "degenerate", "note": "a variable is constant"}
    res = stats.pearsonr(x, y)
    lo, hi = fisher_ci(float(res.statistic), len(x), ci)
    return {**row, "status": "ok", "r": float(res.statistic), "ci_low": lo, "ci_high": hi,
            "p_value": float(res.pvalue), "note": "Pearson r; Fisher-z CI; t-test p"}


def correlation_with_wins(scores: pd.DataFrame, efa_result: EFAResult | None = None,
                          ci: float = 0.95) -> pd.DataFrame:
    """Pearson r of ``z_mean`` (and of each EFA factor's scores) with the overall win rate.

    Parameters
    ----------
    scores : DataFrame
        :func:`response_scores` output (``z_mean`` and ``win_rate``).
    efa_result : EFAResult, optional
        An :func:`efa` result on the same table; its factor scores are correlated too.
    ci : float
        Level of the Fisher-z interval.

    Returns
    -------
    DataFrame
        ``CORR_COLUMNS``: one row per measure ("z_mean", "F1", ...).
    """
    wins = scores["win_rate"]
    rows = [_pearson_row("z_mean", scores["z_mean"], wins, ci)]
    if efa_result is not None:
        if efa_result.status == "ok":
            for f in efa_result.scores.columns:
                rows.append(_pearson_row(f, efa_result.scores[f], wins.loc[efa_result.scores.index],
                                         ci))
        else:
            rows.append({"family": TEST_FAMILY, "measure": "F1", "status": efa_result.status,
                         "n": efa_result.n,
                         "note": f"no factor scores: {efa_result.note}"})
    return pd.DataFrame(rows, columns=CORR_COLUMNS)
