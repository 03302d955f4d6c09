"""Figure 4's table (HEART paper §4.5): per system the overall Elo, the overall win rate and each HEART axis's
column, from the leaderboard's ratings, and the words that say what each column measures and whose judgments
it uses. Why percentiles, and whose judgments: ``docs/methods/leaderboard.md``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from heart.common.vocabulary import AXES
from heart.stats.best_human import BEST_HUMAN, HUMAN

HEADLINE_COLUMNS = ["system", "status", "derived", "note", "elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot",
                    "elo_hi_boot", "n_comparisons", "win_pct", *(f"{a}_pct" for a in AXES)]
#: Figure 4's judges and per-axis measure: the paper's are "llm", "percentile".
FIGURE_4_SOURCE = "llm"
AXIS_MEASURES = ("percentile", "win_rate")


def percentiles(scope: pd.DataFrame) -> pd.Series:
    """Each system's percentile in one scope: 100 x its expected share of the field beaten.

    ``pct_i = 100 * mean_{j in F_i} sigmoid(theta_i - theta_j)`` (``docs/methods/leaderboard.md``),
    where ``F_i`` is the scope's main-fit systems (status "ok"; a ``derived`` row only where it is of the fit,
    i.e. no pooled "human" row is beside it) other than ``i``, and,
    for ``best-human``, other than the pooled "human".

    Parameters
    ----------
    scope : DataFrame
        The rows of one (axis, subset, source) scope of :func:`leaderboard`: ``system``, ``status``,
        ``theta`` and optionally ``derived``.

    Returns
    -------
    Series
        Indexed by ``system`` (every row of ``scope``); NaN where the system has no estimate or its
        field is empty.
    """
    systems = scope["system"].astype(str).to_numpy()
    theta = pd.to_numeric(scope["theta"], errors="coerce").to_numpy(dtype=float)
    derived = (scope["derived"].astype("boolean").fillna(False).to_numpy(dtype=bool) if "derived" in scope
               else systems == BEST_HUMAN)
    ok = scope["status"].eq("ok").to_numpy() & np.isfinite(theta)
    # a derived row beside the pooled human is outside the main fit; in its place (in_fit) it is of the fit
    field = ok & ~(derived & (systems == HUMAN).any())
    out = np.full(len(scope), np.nan)
    for i in np.flatnonzero(ok):
        others = field & (systems != systems[i])
        if systems[i] == BEST_HUMAN:
            others &= systems != HUMAN
        if others.any():
            out[i] = 100.0 * float((1.0 / (1.0 + np.exp(theta[others] - theta[i]))).mean())  # logistic
    return pd.Series(out, index=pd.Index(systems, name="system"), name="percentile")


def _check_columns(columns: str) -> None:
    if columns not in AXIS_MEASURES:
        raise ValueError(f"columns must be one of {', '.join(AXIS_MEASURES)}, not {columns!r}")


def _check_source(ratings: pd.DataFrame, source: str) -> None:
    known = sorted(ratings["source"].dropna().unique())
    if len(ratings) and source not in known:
        raise ValueError(f"source {source!r} is not in the ratings; they have {', '.join(known)}")


def headline(ratings: pd.DataFrame, source: str = FIGURE_4_SOURCE, columns: str = "percentile") -> pd.DataFrame:
    """Figure 4's table: per system, overall Elo (both CIs), overall win rate, and each axis's column.

    Parameters
    ----------
    ratings : DataFrame
        :func:`heart.stats.leaderboard.leaderboard` output (``COLUMNS``).
    source : str
        Whose judgments: "llm" (the paper's, default), "combined", "human" or "judge:<name>"
        (``docs/methods/leaderboard.md``); :func:`column_sources` says who judged each column.
    columns : {"percentile", "win_rate"}
        What ``H_pct`` ... ``T_pct`` hold: "percentile" (the paper's, :func:`percentiles` of each
        axis's fit) or "win_rate" (100 x the raw share of the system's comparisons on that axis
        that it won).

    Returns
    -------
    DataFrame
        ``HEADLINE_COLUMNS``, all items, sorted by Elo: ``elo`` and its intervals from the overall
        fit; ``win_pct`` = 100 x the overall fit's raw win rate (share of its comparisons won,
        unweighted); ``H_pct`` ... ``T_pct`` as ``columns`` says. ``best-human`` is a row like the
        others (each of its columns from its own scope's choice), with ``derived`` true and the
        overall scope's ``note`` saying it was chosen after judging.

    Raises
    ------
    ValueError
        An unknown ``columns`` or a ``source`` the ratings do not have.
    """
    _check_columns(columns)
    _check_source(ratings, source)
    r = ratings[(ratings["subset"] == "all") & (ratings["source"] == source)]
    overall = r[r["axis"] == "overall"].set_index("system")
    out = overall[["status", "derived", "note", "elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot",
                   "elo_hi_boot", "n_comparisons", "win_rate"]].copy()
    out["derived"] = out["derived"].astype("boolean").fillna(False).astype(bool)
    out["win_pct"] = 100 * out.pop("win_rate")
    for axis in AXES:
        scope = r[r["axis"] == axis]
        values = (percentiles(scope) if columns == "percentile"
                  else 100 * scope.set_index("system")["win_rate"].astype(float))
        out[f"{axis}_pct"] = values.reindex(out.index).to_numpy(dtype=float)
    out = out.reset_index().sort_values("elo", ascending=False, na_position="last", ignore_index=True)
    return out[HEADLINE_COLUMNS]


_WHO = {"llm": "LLM judges", "human": "human raters"}


def column_sources(ratings: pd.DataFrame, source: str = FIGURE_4_SOURCE) -> dict[str, str]:
    """Who judged each part of Figure 4, in words: ``{"elo": ..., "win": ..., "axes": ...}``.

    "elo" and "win" (the overall verdict) are the same; "axes" is H-T (the axis marks). From
    ``source`` and what the ratings contain (subset "all"): "llm" -> "LLM judges"; "human" -> "human
    raters"; "judge:<name>" -> "LLM judge <name>"; "combined" -> the kinds of judge with comparisons
    in that part (a kind's own scope has a row that is not "absent"), e.g. "LLM judges and human
    raters" for the overall verdict but "LLM judges" for the axes when the human raters marked none.
    A part where ``source`` rated no system says so: "absent (no ... from ...)" when it has no
    comparisons, "not estimable (...)" when its fit failed.
    """
    _check_source(ratings, source)
    r = ratings[ratings["subset"].eq("all")]
    out = {}
    for key, axes in (("elo", ("overall",)), ("axes", AXES)):
        part = r[r["axis"].isin(axes)]
        compared = set(part.loc[part["status"].ne("absent"), "source"])
        if source.startswith("judge:"):
            who = f"LLM judge {source.removeprefix('judge:')}"
        elif source == "combined":
            who = " and ".join(_WHO[k] for k in ("llm", "human") if k in compared) or "any judge"
        else:
            who = _WHO.get(source, source)
        if not (part["source"].eq(source) & part["status"].eq("ok")).any():
            what = "axis marks" if key == "axes" else "judgments"
            who = (f"not estimable ({who}: see the ratings' note)" if source in compared
                   else f"absent (no {what} from {who})")
        out[key] = who
    return {"elo": out["elo"], "win": out["elo"], "axes": out["axes"]}


def describe(ratings: pd.DataFrame, source: str = FIGURE_4_SOURCE, columns: str = "percentile") -> str:
    """What each of Figure 4's column groups measures and whose judgments it uses (:func:`column_sources`)."""
    _check_columns(columns)
    who = column_sources(ratings, source)
    axes = ("percentile = 100 × expected share of the other rated systems beaten on that axis "
            "(Bradley–Terry fit of its marks)" if columns == "percentile"
            else "win rate = share (%) of the system's comparisons with a clear mark on that axis that it won")
    return (f"H–T: {axes} (judges: {who['axes']}). Overall win rate: raw share (%) of pairwise comparisons "
            f"won on the overall verdict (judges: {who['win']}). Elo: Bradley–Terry on the overall verdict, "
            f"weighted by win strength 1–5 (judges: {who['elo']}). All items.")
