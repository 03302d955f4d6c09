"""The judge leaderboard: every LLM judge and the study's ensemble side by side (AlpacaEval's evaluator
leaderboard, Judgemark), and the choice of an ensemble from it. Each column, and where it comes from:
``docs/methods/judge-board.md``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from heart.stats import bias, bradley_terry as bt, leaderboard, rankers, reliability
from heart.stats.best_human import DERIVED, HUMAN, IN_FIT, best_human_comparisons
from heart.stats.best_human import best_human as choose_best_human
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.majority import ENSEMBLE as LLM_ENSEMBLE, majority_oriented, winners
from heart.stats.agreement.orientation import orient, pair_meta
from heart.stats.agreement.per_vote import WITHOUT_TIES, per_vote_agreement

ENSEMBLE = "ensemble"
NO_HUMANS = "absent: no human judgments"
NO_HUMAN_WINNER = "absent: no pair has a human majority winner"
#: agreement (absolute) within which a subset counts as "as good as the best" (``docs/methods/judge-board.md``)
TOLERANCE = 0.02
#: up to this many judges every subset is evaluated; beyond, singles, leave-one-out and all
MAX_EXHAUSTIVE = 8
_PSEUDO = "\x00ensemble"  # the ensemble as one judge in a per-vote call (never a configured judge's name)
BOARD_COLUMNS = ["judge", "kind", "family", "status", "n_pairs",
                 "agreement_majority", "agreement_ci_low", "agreement_ci_high", "n_majority_pairs",
                 "agreement_per_vote", "n_votes", "kappa", "human_status",
                 "first_shown_rate", "n_order_verdicts", "longer_rate", "n_length_pairs",
                 "self_preference", "n_self_pairs", "flip_rate", "n_flip_pairs", "qc_accuracy", "n_qc_checks",
                 "meets_targets", "separability", "rank_tau", "n_systems",
                 "usd_per_1000", "seconds_per_1000", "n_cost_pairs", "note"]
ENSEMBLE_COLUMNS = ["ensemble", "judges", "n_judges", "n_pairs", "n_agree", "n_no_verdict", "agreement",
                    "usd_per_1000", "seconds_per_1000", "agreement_per_usd", "within_tolerance", "recommended",
                    "status", "note"]
_INTS = ("n_pairs", "n_majority_pairs", "n_votes", "n_order_verdicts", "n_length_pairs", "n_self_pairs",
         "n_flip_pairs", "n_qc_checks", "n_systems", "n_cost_pairs", "n_judges", "n_agree", "n_no_verdict")


def rank_stability(point, reps) -> tuple[float, int]:
    """Mean Kendall τ-b between every bootstrap replicate's ratings and the point estimate's.

    Parameters
    ----------
    point : array_like, shape (K,)
        The point estimates (Elo) of K systems.
    reps : array_like, shape (B, K)
        The replicates' estimates, same system order.

    Returns
    -------
    (float, int)
        The mean τ over the replicates where it is defined (τ-b, ties allowed, as ``scipy.stats.kendalltau``
        computes it and the tests hold it to; undefined where a replicate or the point rates every system the
        same) and how many those are; (NaN, 0) when none is.

    Notes
    -----
    :func:`heart.stats.rankers.tau_b`: a thousand replicates at once, not a thousand calls.
    """
    reps = np.atleast_2d(np.asarray(reps, dtype=float))
    taus = rankers.tau_b(point, reps[np.isfinite(reps).all(axis=1)])
    taus = taus[np.isfinite(taus)]
    return (float(np.mean(taus)), int(taus.size)) if taus.size else (math.nan, 0)


def separation(judgments: pd.DataFrame, source: str, n_boot: int, seed: int, alpha: float, ci: float,
               best_human: str = DERIVED) -> dict:
    """``separability``, ``rank_tau`` and ``n_systems`` of one leaderboard source (overall, all items), with a
    ``why`` when they cannot be had (``docs/methods/judge-board.md``)."""
    out = {"separability": math.nan, "rank_tau": math.nan, "n_systems": 0, "why": ""}
    full = leaderboard.judged(leaderboard.select(judgments.reset_index(drop=True), "all", source))
    comp = full[bt.COMPARISON_COLUMNS]
    human = HUMAN
    if best_human == IN_FIT and (full["winner"].eq(human).any() or full["loser"].eq(human).any()):
        comp = best_human_comparisons(full, choose_best_human(full))
    rated = sorted(set(comp["winner"].unique()) | set(comp["loser"].unique()))
    out["n_systems"] = len(rated)
    if len(rated) < 2:
        return {**out, "why": "fewer than two systems compared"}
    if n_boot < 1:
        return {**out, "why": "no bootstrap replicates (stats.n_boot 0)"}
    try:
        reps = bt.bootstrap(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha)
        table = bt.ratings(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci, replicates=reps)
    except ValueError as err:
        return {**out, "why": f"not estimable: {err}"}
    point = table.set_index("system")["elo"].reindex(rated).to_numpy(float)
    tau, n = rank_stability(point, reps)
    return {**out, "separability": bt.summary(table)["separability_boot"], "rank_tau": tau,
            "why": "" if n else "Kendall's tau undefined in every replicate (all systems rated alike)"}


def costs(verdicts: pd.DataFrame, local: bool = False) -> dict:
    """``usd_per_1000``, ``seconds_per_1000`` and ``n_cost_pairs`` of some verdict rows, and notes on what is
    missing (``docs/methods/judge-board.md``: cost). ``local``: the rows are a local model's (said so when unpriced)."""
    out = {"usd_per_1000": math.nan, "seconds_per_1000": math.nan, "n_cost_pairs": 0, "notes": []}
    n = int(verdicts["pair_id"].nunique()) if len(verdicts) else 0
    if not n:
        return {**out, "notes": ["cost: no verdict rows"]}
    out["n_cost_pairs"] = n
    for col, key, what in (("cost_usd", "usd_per_1000", "cost"), ("latency_s", "seconds_per_1000", "seconds")):
        values = pd.to_numeric(verdicts[col], errors="coerce") if col in verdicts else pd.Series(np.nan, verdicts.index)
        missing = int(values.isna().sum())
        if not missing:
            out[key] = 1000.0 * float(values.sum()) / n
        elif what == "cost" and missing == len(values):
            out["notes"].append("cost: no price (a local model)" if local else
                                "cost: no price (no cost recorded: a model litellm's price map does not know, "
                                "or verdicts made elsewhere)")
        else:
            out["notes"].append(f"{what}: {missing} of {len(values)} verdict rows without it")
    return out


def _fmt(notes) -> str:
    return "; ".join(n for n in notes if n)


def _ensemble_rows(oj: pd.DataFrame, judges=None) -> pd.DataFrame:
    """The ensemble's majority as rows of one LLM judge (:data:`_PSEUDO`) of an oriented table: status "ok"
    with a winner, "tie" when its votes are equal; pairs without a vote left out."""
    maj = majority_oriented(oj, "llm", judges=judges).set_index("pair_id")
    maj = maj[maj["status"].isin(["ok", "tie"])]
    meta = pair_meta(oj).reindex(maj.index)
    return meta.reset_index().assign(judge=_PSEUDO, judge_kind="llm", winner=maj["winner"].to_numpy(object),
                                     status=maj["status"].to_numpy(object))


def _human_columns(oj: pd.DataFrame, judgments: pd.DataFrame, names: list[str], n_boot: int, seed: int,
                   ci: float) -> tuple[str, dict]:
    """``human_status`` and, when humans judged, every judge's (and the ensemble's, :data:`_PSEUDO`) human
    columns."""
    human = majority_oriented(oj, "human")
    if not (oj["judge_kind"] == "human").any():
        return NO_HUMANS, {}
    if not human["winner"].notna().any():
        return NO_HUMAN_WINNER, {}
    agree = human_llm_agreement(judgments, n_boot=n_boot, seed=seed, ci=ci)
    agree = agree[agree["scope"] == "all"].set_index("judge")
    votes = per_vote_agreement(pd.concat([oj, _ensemble_rows(oj)], ignore_index=True), n_boot=n_boot, seed=seed,
                               ci=ci)
    votes = votes[votes["reference"] == WITHOUT_TIES].set_index("judge")
    ref = human.set_index("pair_id")["winner"]
    wide = winners(oj, "llm")
    comparators = {**{j: wide[j] for j in wide.columns},
                   _PSEUDO: majority_oriented(oj, "llm").set_index("pair_id")["winner"]}
    out = {}
    for name in names:
        cells, notes = {}, []
        a_key = LLM_ENSEMBLE if name == _PSEUDO else name
        if a_key in agree.index and agree.at[a_key, "status"] == "ok":
            row = agree.loc[a_key]
            cells.update(agreement_majority=row["agreement"], agreement_ci_low=row["ci_low"],
                         agreement_ci_high=row["ci_high"], n_majority_pairs=int(row["n_pairs"]))
            mine = comparators[name].reindex(ref.index)
            use = ref.notna() & mine.notna()
            cells["kappa"] = reliability.cohen_kappa(mine[use], ref[use], categories=["a", "b"], ci=ci)["kappa"]
            if math.isnan(cells["kappa"]):
                notes.append("kappa: undefined (one winner side only)")
        else:
            notes.append("agreement: no pair with both a human majority winner and a verdict of this judge")
        if name in votes.index and votes.at[name, "status"] == "ok":
            cells.update(agreement_per_vote=votes.at[name, "agreement"], n_votes=int(votes.at[name, "n_pairs"]))
        else:
            notes.append("per-vote agreement: no human vote without a tie on a pair this judge decided")
        out[name] = (cells, notes)
    return "ok", out


def judge_board(judgments: pd.DataFrame, verdicts: pd.DataFrame, texts: pd.DataFrame, flips: pd.DataFrame,
                quality: pd.DataFrame, judges, judge_families: dict, system_families: dict, local_judges=(),
                n_boot: int = 1000, seed: int = 0, ci: float = 0.95, alpha: float = bt.DEFAULT_ALPHA,
                best_human: str = DERIVED) -> pd.DataFrame:
    """One row per LLM judge and one for the ensemble (``docs/methods/judge-board.md``: every column).

    Parameters
    ----------
    judgments : pandas.DataFrame
        ``results/judging/judgments.parquet`` (LLM and human rows).
    verdicts : pandas.DataFrame
        The per-order verdicts (``judge_verdicts`` schema) of the LLM judges, concatenated.
    texts : pandas.DataFrame
        Completions (item_id, system, contributor_id, text), for the lengths; empty: ``longer_rate`` absent.
    flips, quality : pandas.DataFrame
        ``flip_rates`` and ``judge_quality`` tables (either may be empty: those cells are then absent).
    judges : list of str
        The configured LLM judges; a row each, also when they judged nothing (status "absent"). Other LLM
        judges of ``judgments`` get a row too.
    judge_families, system_families : dict
        Model family of every judge and of every system (self-preference).
    local_judges : collection of str
        Judges on a local model (their empty price says "a local model").
    n_boot, seed, ci, alpha, best_human
        The conversation bootstrap, the Bradley–Terry ridge and how Best Human enters a fit
        (``stats.*``, as rule ratings uses them).

    Returns
    -------
    pandas.DataFrame
        ``BOARD_COLUMNS``; empty cells are NaN / null and ``note`` says why ("<column>: <reason>").
    """
    oj = orient(judgments)
    llm = oj[oj["judge_kind"] == "llm"]
    names = sorted(set(judges) | set(llm["judge"].unique()))
    human_status, human = _human_columns(oj, judgments, [*names, _PSEUDO], n_boot, seed, ci)
    position = bias.position_bias(verdicts, ci=ci).set_index("judge", drop=False)
    pooled = bias.position_bias(verdicts.assign(judge=ENSEMBLE), ci=ci)
    length = bias.length_bias(judgments, texts, ci=ci).set_index("judge", drop=False)
    self_pref = bias.self_preference(judgments, judge_families, system_families, n_boot=n_boot, seed=seed,
                                     ci=ci).set_index("judge", drop=False)
    in_pairs = {system_families.get(s) for s in set(oj["system_a"]) | set(oj["system_b"])}
    flip = flips[flips["axis"] == "overall"].set_index("judge") if len(flips) else pd.DataFrame()
    qc = quality[quality["kind"] == "all"].set_index("judge") if len(quality) else pd.DataFrame()
    ens_win = majority_oriented(oj, "llm")
    rows = []
    for name in [*names, _PSEUDO]:  # the ensemble last, under a key no judge has
        ens = name == _PSEUDO
        mine = llm if ens else llm[llm["judge"] == name]
        row = {"judge": ENSEMBLE if ens else name, "kind": "ensemble" if ens else "judge",
               "family": None if ens else judge_families.get(name), "human_status": human_status,
               "status": "ok" if len(mine) else "absent",
               "n_pairs": int(ens_win["winner"].notna().sum()) if ens else int(mine["winner"].isin(["a", "b"]).sum())}
        absent = "no judgment of this judge in the study (not run, or every pair excluded by family)"
        notes = [] if len(mine) else [absent]
        cells, human_notes = human.get(name, ({}, []))
        row.update(cells)
        notes += human_notes
        p = pooled.iloc[0] if ens else position.loc[name] if name in position.index else None
        if p is not None and p["status"] == "ok":
            row.update(first_shown_rate=p["share_shown_a"], n_order_verdicts=int(p["n_verdicts"]))
        else:
            notes.append(f"first-shown: {p['note'] if p is not None else 'no per-order verdicts'}")
        ln = length.loc[LLM_ENSEMBLE if ens else name] if (LLM_ENSEMBLE if ens else name) in length.index else None
        if ln is not None and ln["status"] == "ok":
            row.update(longer_rate=ln["share_longer_wins"], n_length_pairs=int(ln["n_pairs"]))
        else:
            notes.append(f"longer: {ln['note'] if ln is not None else 'no combined verdict'}")
        sp = None if ens else self_pref.loc[name] if name in self_pref.index else None
        if sp is not None and sp["status"] == "ok":
            row.update(self_preference=sp["difference"], n_self_pairs=int(sp["n_pairs"]))
        elif ens:
            notes.append("self-preference: per judge only (the ensemble's judges need not share a family)")
        else:
            fam = judge_families.get(name)
            why = (sp["note"] if sp is not None else "no combined verdict") if fam is None or fam in in_pairs else \
                f"no system of the judge's family ({fam}) is in any pair"
            notes.append(f"self-preference: {why}")
        row.update(_consistency(name, ens, names, flip, qc, notes))
        sep = separation(judgments, "llm" if ens else f"judge:{name}", n_boot, seed, alpha, ci, best_human)
        row.update(separability=sep["separability"], rank_tau=sep["rank_tau"], n_systems=sep["n_systems"])
        if sep["why"]:
            notes.append(f"separability: {sep['why']}")
        members = names if ens else [name]
        cost = costs(verdicts[verdicts["judge"].isin(members)] if len(verdicts) else verdicts,
                     local=bool(members) and all(m in set(local_judges) for m in members))
        if ens and math.isnan(cost["usd_per_1000"]):
            unpriced = [m for m in members if (verdicts["judge"] == m).any()
                        and math.isnan(costs(verdicts[verdicts["judge"] == m])["usd_per_1000"])]
            if unpriced and cost["n_cost_pairs"]:
                local = " (a local model each)" if set(unpriced) <= set(local_judges) else ""
                cost["notes"] = [f"cost: no price for {', '.join(unpriced)}{local}"] + cost["notes"][1:]
        row.update({k: cost[k] for k in ("usd_per_1000", "seconds_per_1000", "n_cost_pairs")})
        notes += cost["notes"]
        row["note"] = _fmt(notes)
        rows.append(row)
    return _typed(pd.DataFrame(rows).reindex(columns=BOARD_COLUMNS))


def _consistency(name: str, ens: bool, names, flip: pd.DataFrame, qc: pd.DataFrame, notes: list) -> dict:
    """Flip rate and QC accuracy of one row, read from their tables (pooled over the judges for the ensemble)."""
    out = {}
    keys = [n for n in names if n in flip.index] if ens else [name] if name in flip.index else []
    f = flip.loc[keys] if keys else pd.DataFrame(columns=["n_pairs", "flip_rate"])
    f = f[f["flip_rate"].notna() & (f["n_pairs"] > 0)]
    if len(f):
        n = int(f["n_pairs"].sum())
        out.update(flip_rate=float((f["flip_rate"] * f["n_pairs"]).sum() / n), n_flip_pairs=n)
    else:
        notes.append("flip rate: no pair judged in both orders")
    keys = [n for n in names if n in qc.index] if ens else [name] if name in qc.index else []
    q = qc.loc[keys] if keys else pd.DataFrame(columns=["n_checks", "qc_accuracy", "meets_targets"])
    q = q[q["qc_accuracy"].notna() & (q["n_checks"] > 0)]
    if len(q):
        n = int(q["n_checks"].sum())
        meets = q["meets_targets"].iloc[0]
        out.update(qc_accuracy=float((q["qc_accuracy"] * q["n_checks"]).sum() / n), n_qc_checks=n,
                   meets_targets=None if ens or pd.isna(meets) else bool(meets))
    else:
        notes.append("QC accuracy: no quality checks of this judge")
    return out


def _typed(out: pd.DataFrame) -> pd.DataFrame:
    for col in _INTS:
        if col in out:
            out[col] = pd.array(out[col].astype("Float64").round(), dtype="Int64")
    for col in ("meets_targets", "within_tolerance", "recommended"):
        if col in out:
            out[col] = out[col].astype("boolean")
    return out


def subsets(judges) -> list[tuple[str, ...]]:
    """The subsets :func:`ensembles` evaluates: every non-empty one up to :data:`MAX_EXHAUSTIVE` judges, else
    each judge alone, all but one, and all (sorted by size, then names)."""
    judges = sorted(judges)
    n = len(judges)
    if n <= MAX_EXHAUSTIVE:
        sizes = range(1, n + 1)
        return [c for k in sizes for c in itertools.combinations(judges, k)]
    return ([(j,) for j in judges] + list(itertools.combinations(judges, n - 1)) + [tuple(judges)])


def ensembles(judgments: pd.DataFrame, verdicts: pd.DataFrame, local_judges=(),
              tolerance: float = TOLERANCE) -> pd.DataFrame:
    """Every subset of the LLM judges as an ensemble: agreement with the human majority, cost, agreement per
    dollar, and the recommended subset (``docs/methods/judge-board.md``: choosing an ensemble).

    Parameters
    ----------
    judgments, verdicts : pandas.DataFrame
        As for :func:`judge_board`.
    local_judges : collection of str
        Judges on a local model (said so where their price is missing).
    tolerance : float
        How far (absolute agreement) below the best a subset may be and still be chosen.

    Returns
    -------
    pandas.DataFrame
        ``ENSEMBLE_COLUMNS``, one row per subset (``ensemble`` is the judges joined by "+"); at most one row
        ``recommended``. Without human judgments every row's status says so and agreement is empty.
    """
    oj = orient(judgments)
    judges = sorted(oj.loc[oj["judge_kind"] == "llm", "judge"].unique())
    human = majority_oriented(oj, "human").set_index("pair_id")["winner"]
    status = ("ok" if human.notna().any() else NO_HUMAN_WINNER) if (oj["judge_kind"] == "human").any() else NO_HUMANS
    rows = []
    for members in subsets(judges):
        cost = costs(verdicts[verdicts["judge"].isin(members)] if len(verdicts) else verdicts,
                     local=all(m in set(local_judges) for m in members))
        row = {"ensemble": "+".join(members), "judges": list(members), "n_judges": len(members),
               "usd_per_1000": cost["usd_per_1000"], "seconds_per_1000": cost["seconds_per_1000"],
               "within_tolerance": False, "recommended": False}
        notes = list(cost["notes"])
        if status == "ok":
            maj = majority_oriented(oj, "llm", judges=members).set_index("pair_id")
            seen = maj["status"].ne("absent").reindex(human.index, fill_value=False)
            mine = maj["winner"].reindex(human.index)
            use = human.notna() & mine.notna()
            row.update(n_pairs=int(use.sum()), n_agree=int((mine[use] == human[use]).sum()),
                       n_no_verdict=int((seen & human.notna() & mine.isna()).sum()))
            row["agreement"] = row["n_agree"] / row["n_pairs"] if row["n_pairs"] else math.nan
            row["status"] = "ok" if row["n_pairs"] else "no_pairs"
            if not row["n_pairs"]:
                notes.insert(0, "no pair with both a human majority winner and a majority of this subset")
            usd = row["usd_per_1000"]
            row["agreement_per_usd"] = (math.inf if usd == 0 else row["agreement"] / usd) if row["n_pairs"] \
                else math.nan
        else:
            row.update(n_pairs=0, n_agree=0, n_no_verdict=0, agreement=math.nan, agreement_per_usd=math.nan,
                       status=status)
        row["note"] = _fmt(notes)
        rows.append(row)
    out = pd.DataFrame(rows).reindex(columns=ENSEMBLE_COLUMNS)
    if out.empty:
        return _typed(out)
    ok = out["status"].eq("ok")
    if ok.any():
        best = out.loc[ok, "agreement"].max()
        out["within_tolerance"] = ok & (out["agreement"] >= best - tolerance - 1e-12)
        band = out[out["within_tolerance"] & out["agreement_per_usd"].notna()]
        if len(band):
            pick = band.assign(_neg=-band["agreement_per_usd"], _agr=-band["agreement"]).sort_values(
                ["_neg", "n_judges", "_agr", "ensemble"]).index[0]
            out.loc[pick, "recommended"] = True
            why = (f"recommended: best agreement per dollar among the priced subsets within {tolerance:.0%} of the "
                   f"best agreement ({best:.3f})")
            out.loc[pick, "note"] = _fmt([why, out.at[pick, "note"]])
        else:
            out.loc[out["within_tolerance"], "note"] = [
                _fmt([f"nothing recommended: no subset within {tolerance:.0%} of the best agreement has a price",
                      n]) for n in out.loc[out["within_tolerance"], "note"]]
    return _typed(out)
