"""Inter-human agreement and reliability: percent agreement, Fleiss' κ, Krippendorff's α (§4.2, §4.4, §9.9).

(:mod:`heart.stats.agreement`: inter-human agreement and reliability.)
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from heart.stats import bootstrap, reliability
from heart.stats.agreement.majority import PREFERENCE_DOMAIN, WINNER_DOMAIN, frame, join_notes
from heart.stats.agreement.orientation import orient
from heart.common.vocabulary import AXIS_COLUMNS


HUMAN_COLUMNS = ["measure", "labels", "level", "value", "ci_low", "ci_high", "n_units", "n_ratings",
                 "n_raters", "status", "note"]


def _human_ratings(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per human rating (status "ok"/"tie"): unit, rater, conversation, preference (float, NaN if
    missing) and winner ("a"/"tie"/"b": from the preference's sign, else from the winner)."""
    h = judgments[(judgments["judge_kind"] == "human") & judgments["status"].isin(["ok", "tie"])]
    if "preference" in h.columns:  # nullable Int64 with NA, object with None ...: float with NaN
        pref = pd.to_numeric(h["preference"], errors="coerce").astype("float64").to_numpy(dtype=float)
    else:
        pref = np.full(len(h), np.nan)
    fallback = np.where(h["winner"].isin(["a"]), "a", np.where(h["winner"].isin(["b"]), "b", "tie"))
    with np.errstate(invalid="ignore"):
        winner = np.where(np.isnan(pref), fallback, np.where(pref > 0, "a", np.where(pref < 0, "b", "tie")))
    return pd.DataFrame({"unit": h["pair_id"].to_numpy(), "rater": h["judge"].to_numpy(),
                         "conversation_id": h["conversation_id"].to_numpy(),
                         "preference": pref, "winner": winner})


def _percent_agreement(table: np.ndarray) -> float:
    agree, pairs = reliability.rater_pair_agreement(table)
    total = pairs.sum()
    return float(agree.sum() / total) if total else math.nan


def inter_human(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Inter-human agreement and reliability: percent agreement, Fleiss' κ, Krippendorff's α (§4.2, §4.4).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`; human rows with status "ok" or "tie"
        are used; a missing ``preference`` -- None, NaN or a nullable-integer NA -- leaves the rating
        out of the preference measures only).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`) for the percentile intervals at level ``ci``:
        κ and α are recomputed on the pairs of the resampled conversations, each pair as often as its
        conversation was drawn; percent agreement is re-estimated as (resampled agreeing rater pairs)
        / (resampled rater pairs).

    Returns
    -------
    pandas.DataFrame
        ``HUMAN_COLUMNS``; ``measure`` "fleiss_kappa" / "krippendorff_alpha" / "percent_agreement"
        (one row, on the winner: rater-to-rater, pooled over the unordered rater pairs of every pair
        with >= 2 ratings, the paper's 79.5 %; ``docs/methods/agreement.md``), ``labels`` "winner (a/tie/b)" or
        "preference (-2..2)", ``level`` of measurement; then Fleiss' κ per HEART axis ("axis H (a/no clear
        difference/b)" ...) where human raters marked axes (§9.9 "overall and per-axis"), else one
        "per-axis" row "unavailable" that says why. No pair with >= 2 human ratings: "absent" rows that say
        why.
    """
    judgments = orient(judgments)
    ratings = _human_ratings(judgments)
    specs = [("fleiss_kappa", "winner (a/tie/b)", "nominal"),
             ("fleiss_kappa", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "winner (a/tie/b)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "ordinal"),
             ("percent_agreement", "winner (a/tie/b)", "nominal")]
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    conv_of_unit = ratings.drop_duplicates("unit").set_index("unit")["conversation_id"]
    n_no_pref = int(ratings["preference"].isna().sum())
    # a tie is 0 on the preference scale with or without a strength: a source that gave no strength has ties
    # alone there, and the measures on them would be undefined rather than absent
    has_pref = ratings["preference"].notna()
    no_strengths = bool(has_pref.any()) and not (has_pref & ratings["winner"].ne("tie")).any()
    rows = []
    for measure, labels, level in specs:
        on_pref = labels.startswith("preference")
        if not on_pref:
            r, domain = ratings.assign(label=ratings["winner"]), WINNER_DOMAIN
        else:
            r = ratings.iloc[:0] if no_strengths else ratings[ratings["preference"].notna()]
            r, domain = r.assign(label=r["preference"].astype(int)), PREFERENCE_DOMAIN
        left_out = (f"{n_no_pref} human ratings without a preference left out"
                    if on_pref and n_no_pref and not no_strengths else "")
        why = ("human judgments are absent" if ratings.empty
               else "no strengths given: no decided human rating carries a 5-point preference (-2..2), only "
                    "ties (0)" if on_pref and no_strengths
               else "no human rating carries a 5-point preference (-2..2)" if r.empty
               else "no pair has two or more human ratings" + (" with a preference" if on_pref else ""))
        rows.append(_measure(measure, labels, level, r, domain, boot, conv_of_unit, ci, why, left_out))
    rows += _per_axis(judgments, boot, conv_of_unit, ci)
    return frame(rows, HUMAN_COLUMNS)


def _measure(measure: str, labels: str, level: str, r: pd.DataFrame, domain, boot, conv_of_unit, ci: float,
             absent_why: str, left_out: str = "") -> dict:
    """One row of :func:`inter_human`: ``measure`` on ratings ``r`` (unit, rater, label) with its bootstrap
    interval, or "absent" saying ``absent_why`` when no pair has two or more ratings."""
    row = {"measure": measure, "labels": labels, "level": level, "n_raters": int(r["rater"].nunique())}
    counts = reliability.unit_counts(r, domain)
    if counts.empty:
        return {**row, "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_units": 0, "n_ratings": 0,
                "status": "absent", "note": join_notes(absent_why, left_out)}
    if measure == "fleiss_kappa":
        kept, m = reliability.fleiss_units(counts)
        note = f"pairs with {m} ratings; {len(counts) - len(kept)} pairs with another number of ratings left out"
        value = reliability.fleiss_kappa_table
    elif measure == "krippendorff_alpha":
        kept, note = counts, "pairs with >= 2 ratings"
        value = functools.partial(reliability.krippendorff_alpha_table, level=level, value_domain=domain)
    else:
        kept, value = counts, _percent_agreement
        n_comparisons = int(reliability.rater_pair_agreement(counts.to_numpy(dtype=float))[1].sum())
        note = ("rater-to-rater percent agreement (paper §4.4): over every pair with >= 2 human ratings "
                "and all unordered rater pairs on it, the share of rater pairs choosing the same option "
                "among a / about the same / b ('about the same' agrees only with 'about the same'); "
                f"pooled over {n_comparisons} rater pairs (equal to Fleiss' observed agreement when "
                "every pair has the same number of ratings)")
    table = kept.to_numpy(dtype=float)
    unit_conv = conv_of_unit.reindex(kept.index).to_numpy()
    est = value(table)
    if measure == "percent_agreement":
        reps = boot.ratio(unit_conv, *reliability.rater_pair_agreement(table))
    else:
        reps = boot.apply(unit_conv, table, value)
    lo, hi = bootstrap.interval(reps, ci)
    note = join_notes(note, left_out)
    return {**row, "value": est, "ci_low": lo, "ci_high": hi, "n_units": int(len(kept)), "n_ratings": int(table.sum()),
            "status": "ok" if not np.isnan(est) else "undefined",
            "note": note if not np.isnan(est) else note + "; undefined (a single category observed)"}


def _per_axis(judgments: pd.DataFrame, boot, conv_of_unit, ci: float) -> list[dict]:
    """Fleiss' κ per HEART axis on the human raters' axis marks (a / no clear difference / b), where a study
    asked raters for them (annotation.rating.axes); else one "unavailable" row that says why."""
    h = judgments[(judgments["judge_kind"] == "human") & judgments["status"].isin(["ok", "tie"])]
    marked = {col: h[col] for col in AXIS_COLUMNS if col in h.columns and h[col].notna().any()}
    if not marked:
        return [{"measure": "fleiss_kappa", "labels": "per-axis", "level": "nominal", "value": math.nan,
                 "ci_low": math.nan, "ci_high": math.nan, "n_units": 0, "n_ratings": 0, "n_raters": 0,
                 "status": "unavailable",
                 "note": "human raters gave one overall choice (Figure 2) and no axis marks: per-axis inter-human "
                         "agreement needs them (annotation.rating.axes, or axis_* columns in the human file)"}]
    rows = []
    for col in AXIS_COLUMNS:
        if col not in marked:
            continue
        values = pd.to_numeric(marked[col], errors="coerce")
        keep = values.notna().to_numpy()
        sign = np.sign(values[keep].to_numpy(dtype=float))
        r = pd.DataFrame({"unit": h["pair_id"].to_numpy()[keep], "rater": h["judge"].to_numpy()[keep],
                          "label": np.where(sign > 0, "a", np.where(sign < 0, "b", "tie"))})
        rows.append(_measure("fleiss_kappa", f"axis {col.removeprefix('axis_')} (a/no clear difference/b)",
                             "nominal", r, WINNER_DOMAIN, boot, conv_of_unit, ci,
                             "no pair has two or more human marks on this axis",
                             f"{int((~keep).sum())} ratings without a mark on this axis left out" if (~keep).any()
                             else ""))
    return rows
