"""Agreement of the judges: majorities, human–LLM, cross-judge, inter-human (HEART paper §4.2-4.4, §9.9).

Input is ``results/judging/judgments.parquet`` (:func:`heart.judging.judgments`): one row per
(pair, LLM judge) with the two presentation orders combined, and one row per (pair, human rater).
Every table returned here is tidy and carries ``status`` and ``note`` columns; when the data a
statistic needs are absent (no human judgments, a single LLM judge, family exclusion, ...) the
row says so with ``status`` "absent" / "no_pairs" / "unavailable" and a NaN value, never a zero.

Votes and majorities (:func:`majority`)
    A judgment with a winner ("a"/"b") is a vote for that side. A human "about the same"
    (status "tie") and an LLM "inconsistent" verdict (the two orders cancel out) are votes for
    neither side: they count in the denominator of the majority share but for no side. An
    "unparsed" LLM verdict is no vote at all. The majority winner is the side with more votes;
    equal votes (or no votes) give no winner (``None``). The majority *share* is the winner's
    votes over all votes (both sides and "neither").

Ambiguous pairs (§4.4: "our human annotators did not have a clear consensus")
    A pair is ambiguous when its human majority has no winner or its share is below
    ``consensus`` (default 2/3: with 3 raters 2-1 is clear; with 5 raters 3-2 or 3-1-1 is not).
    Agreement is computed only where the reference has a winner, so the "ambiguous" scope
    holds the pairs with a narrow human majority; tied pairs are counted in ``n_no_reference``.

Agreement (§4.4, §9.9)
    The share of pairs on which a judge (or the LLM-ensemble majority) names the same winner as
    the reference (the human majority, or the LLM-ensemble majority where no human judged), over
    the pairs where both have a winner; pairs where the judge gave no verdict are counted in
    ``n_no_verdict`` and left out. Cross-judge agreement is the same between two LLM judges (or
    two groups of judges, e.g. families, each reduced to its majority) on the pairs both judged,
    with Cohen's κ (:func:`heart.reliability.cohen_kappa`) on the same pairs; "all" is the share of
    pairs on which every judge (group) judged and all named the same winner (the paper's three-way
    agreement).

Inter-human reliability (§4.2, §9.9)
    Fleiss' κ over the raters of each pair, on the winner (a / about the same / b) and on the
    5-point preference (-2..2), and Krippendorff's α nominal and ordinal on the preference and
    nominal on the winner (the coefficients are in :mod:`heart.reliability`). Fleiss' κ needs the
    same number of raters on every pair, so it uses the pairs with the most common number (>= 2) of
    ratings; the others are counted in the note. Humans give no axis marks (Figure 2), so per-axis
    κ is reported as "unavailable".

Stability under judge subsampling (§9.9)
    The agreement of the majority of k random LLM judges with the reference, for every k; the
    spread over subsets is summarised by its mean, SD and central ``ci`` range
    (:func:`subsampling_stability`).

Trivial judges and the human ceiling (AlpacaEval style)
    "always-longer" picks the longer response (whitespace-separated words of the completion
    text; equal lengths give no verdict), "always-position-A" picks the pair's ``system_a``
    (the stored order, which was randomised). The human ceiling is leave-one-out: every rater's
    winner against the majority of the *other* raters of the pair, pooled over all (rater, pair)
    comparisons; it compares one rater with n-1 others, so it slightly understates what the
    full n-rater majority would reach. :func:`pair_lengths` (words of both completions of every
    pair) serves "always-longer" here and the length audit of :mod:`heart.bias`.

Uncertainty (§9.12)
    Intervals (``ci_low`` / ``ci_high``, level ``ci``, config ``stats.ci``) are percentile
    intervals of the conversation-level cluster bootstrap of :mod:`heart.bootstrap`: the
    conversation_ids of the whole judgments table are resampled with replacement (drawn once per
    call, so every row of one call shares the resamples) and a rate is re-estimated as (resampled
    sum of hits) / (resampled number of units); κ and α are recomputed on the resampled pairs.
    The bias audits are in :mod:`heart.bias`, Benjamini–Hochberg in :mod:`heart.multiple_testing`.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np
import pandas as pd

from heart import bootstrap, reliability

ENSEMBLE = "llm-ensemble"
HUMAN_MAJORITY = "human-majority"
LLM_MAJORITY = "llm-ensemble-majority"
LONGER = "always-longer"
POSITION_A = "always-position-A"
HUMAN_CEILING = "human-loo-ceiling"
CONSENSUS = 2 / 3
PREFERENCE_DOMAIN = [-2, -1, 0, 1, 2]
WINNER_DOMAIN = ["a", "tie", "b"]

MAJORITY_COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "kind", "judge_kind", "n_judgments",
                    "votes_a", "votes_b", "votes_neither", "n_unparsed", "winner", "share", "ambiguous",
                    "status", "note"]
AGREEMENT_COLUMNS = ["reference", "judge", "scope", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                     "n_conversations", "n_no_verdict", "n_no_reference", "status", "note"]
CROSS_COLUMNS = ["scope", "judge_1", "judge_2", "n_judges", "n_pairs", "n_agree", "agreement", "ci_low",
                 "ci_high", "kappa", "kappa_ci_low", "kappa_ci_high", "n_conversations", "status", "note"]
HUMAN_COLUMNS = ["measure", "labels", "level", "value", "ci_low", "ci_high", "n_units", "n_ratings",
                 "n_raters", "status", "note"]
STABILITY_COLUMNS = ["reference", "k", "n_judges", "n_subsets", "sampling", "mean_agreement", "sd_agreement",
                     "q_low", "q_high", "min_agreement", "max_agreement", "mean_n_pairs", "mean_coverage",
                     "status", "note"]
TRIVIAL_COLUMNS = ["reference", "judge", "judge_type", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                   "n_conversations", "n_no_verdict", "status", "note"]


# --- small helpers ------------------------------------------------------------------------------

def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=columns)


def pair_meta(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per pair (sorted by pair_id, its index): item, conversation, subset, kind and both sides."""
    cols = [c for c in ("pair_id", "item_id", "conversation_id", "subset", "kind", "system_a",
                        "contributor_a", "system_b", "contributor_b") if c in judgments.columns]
    return judgments[cols].drop_duplicates("pair_id").sort_values("pair_id").set_index("pair_id")


def _winners(judgments: pd.DataFrame, judge_kind: str = "llm") -> pd.DataFrame:
    """Pairs x judges of ``judge_kind``: "a" / "b" where the judge named a winner, else None."""
    ok = judgments[(judgments["judge_kind"] == judge_kind) & judgments["winner"].isin(["a", "b"])]
    wide = ok.drop_duplicates(["pair_id", "judge"]).pivot(index="pair_id", columns="judge", values="winner")
    wide = wide.reindex(pair_meta(judgments).index).astype(object)
    return wide.where(wide.notna(), None)


def _as_vote(winners) -> np.ndarray:
    """"a" -> +1, "b" -> -1, anything else -> 0."""
    w = pd.DataFrame(winners) if not isinstance(winners, (pd.Series, pd.DataFrame)) else winners
    return np.where(w == "a", 1, np.where(w == "b", -1, 0)).astype(np.int64)


def _from_vote(votes: np.ndarray) -> np.ndarray:
    return np.where(votes > 0, "a", np.where(votes < 0, "b", None)).astype(object)


def _rate_row(boot: bootstrap.ClusterBootstrap, conv, hits, ci: float) -> dict:
    est, reps = boot.rate(conv, hits)
    lo, hi = bootstrap.interval(reps, ci)
    hits = np.asarray(hits)
    return {"n_pairs": int(hits.size), "n_agree": int(hits.astype(float).sum()) if hits.size else 0,
            "agreement": est, "ci_low": lo, "ci_high": hi, "n_conversations": int(len(np.unique(conv)))}


# --- majorities ---------------------------------------------------------------------------------

def majority(judgments: pd.DataFrame, judge_kind: str, consensus: float = CONSENSUS,
             judges=None) -> pd.DataFrame:
    """Per pair, the majority winner of one kind of judge (module docstring: votes and ambiguity).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    judge_kind : {"llm", "human"}
        Whose votes: the LLM ensemble, or the human raters.
    consensus : float
        Majority share below which a pair is flagged ``ambiguous``.
    judges : collection of str, optional
        Restrict to these judges (e.g. one family, or all but one judge).

    Returns
    -------
    pandas.DataFrame
        One row per pair of ``judgments`` (sorted by pair_id) with ``MAJORITY_COLUMNS``:
        vote counts, ``winner`` ("a"/"b"/None), ``share``, ``ambiguous`` and ``status``
        ("ok", "tie" = votes but no winner, "absent" = no vote of this kind on the pair).
    """
    meta = pair_meta(judgments)
    j = judgments[judgments["judge_kind"] == judge_kind]
    if judges is not None:
        j = j[j["judge"].isin(list(judges))]
    flags = pd.DataFrame({
        "pair_id": j["pair_id"],
        "n_judgments": 1,
        "votes_a": (j["winner"] == "a").fillna(False).astype(int),
        "votes_b": (j["winner"] == "b").fillna(False).astype(int),
        "n_unparsed": (j["status"] == "unparsed").fillna(False).astype(int),
    })
    flags["votes_neither"] = flags["n_judgments"] - flags["votes_a"] - flags["votes_b"] - flags["n_unparsed"]
    counts = flags.groupby("pair_id").sum().reindex(meta.index, fill_value=0)
    out = meta.reindex(columns=["item_id", "conversation_id", "subset", "kind"]).join(counts)
    out["judge_kind"] = judge_kind
    a, b, n = out["votes_a"].to_numpy(), out["votes_b"].to_numpy(), out["n_judgments"].to_numpy()
    total = a + b + out["votes_neither"].to_numpy()
    out["winner"] = pd.Series(_from_vote(np.sign(a - b)), index=out.index, dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share"] = np.where(total > 0, np.maximum(a, b) / np.where(total > 0, total, 1), np.nan)
    out["ambiguous"] = (out["winner"].isna() | (out["share"] < consensus)).astype(bool)
    out["status"] = np.where(total == 0, "absent", np.where(a == b, "tie", "ok"))
    out["note"] = np.where(
        n == 0, f"no {judge_kind} judgment of this pair",
        np.where(total == 0, "only unparsed verdicts",
                 np.where(a == b, "equal votes for a and b: no majority winner", "")))
    return out.reset_index().reindex(columns=MAJORITY_COLUMNS)


def _loo_majority_winners(judgments: pd.DataFrame, judge_kind: str) -> pd.DataFrame:
    """Every judgment with a winner against the majority of the *other* judges of its kind on the pair.

    Returns one row per (pair, judge) judgment that named a winner: ``pair_id``, ``judge``,
    ``winner``, ``other_winner`` (None when the others are tied or absent).
    """
    j = judgments[(judgments["judge_kind"] == judge_kind) & (judgments["status"] != "unparsed")].copy()
    j["va"] = (j["winner"] == "a").fillna(False).astype(int)
    j["vb"] = (j["winner"] == "b").fillna(False).astype(int)
    tot = j.groupby("pair_id")[["va", "vb"]].transform("sum")
    j["other_winner"] = _from_vote(np.sign((tot["va"] - j["va"]) - (tot["vb"] - j["vb"])).to_numpy())
    return j[j["winner"].isin(["a", "b"])][["pair_id", "judge", "winner", "other_winner"]]


# --- human-LLM agreement ------------------------------------------------------------------------

def _scopes(ref: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    scopes = [("all", np.ones(len(ref), bool)), ("clear", ~ref["ambiguous"].to_numpy()),
              ("ambiguous", ref["ambiguous"].to_numpy())]
    for col in ("subset", "kind"):
        for value in sorted(ref[col].dropna().unique()):
            scopes.append((f"{col}={value}", (ref[col] == value).to_numpy()))
    return scopes


def human_llm_agreement(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                        consensus: float = CONSENSUS) -> pd.DataFrame:
    """Agreement of the LLM-ensemble majority, and of each LLM judge, with the human majority.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
    consensus : float
        Human majority share below which a pair is ambiguous.

    Returns
    -------
    pandas.DataFrame
        ``AGREEMENT_COLUMNS``, one row per (judge, scope). ``judge`` is "llm-ensemble" or an LLM
        judge; ``scope`` is "all", "clear", "ambiguous", "subset=<s>" or "kind=<k>".
        ``n_no_reference``: pairs in scope that the judge judged but without a human winner
        (ties, or no human rating). Without human (or LLM) judgments: one "absent" row per
        judge and scope "all"/"ambiguous", agreement NaN.
    """
    human = majority(judgments, "human", consensus)
    llm_judges = sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique())
    names = [ENSEMBLE, *llm_judges]
    if not llm_judges or not human["winner"].notna().any():
        missing = []
        if not (judgments["judge_kind"] == "human").any():
            missing.append("human judgments are absent")
        elif not human["winner"].notna().any():
            missing.append("no pair has a human majority winner")
        if not llm_judges:
            missing.append("LLM judgments are absent")
        missing = "; ".join(missing)
        return _frame([{"reference": HUMAN_MAJORITY, "judge": name, "scope": scope, "n_pairs": 0,
                        "n_agree": 0, "agreement": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                        "n_conversations": 0, "n_no_verdict": 0, "n_no_reference": 0, "status": "absent",
                        "note": f"{missing}: human-LLM agreement cannot be computed"}
                       for name in names for scope in ("all", "ambiguous")], AGREEMENT_COLUMNS)
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    wide = _winners(judgments, "llm")
    comparators = {ENSEMBLE: majority(judgments, "llm")["winner"].to_numpy(object)}
    comparators.update({j: wide[j].to_numpy(object) for j in llm_judges})
    pair_ids = human["pair_id"].to_numpy()
    ref = human["winner"].to_numpy(object)
    conv = human["conversation_id"].to_numpy()
    rows = []
    for name, comp in comparators.items():
        sel = (judgments["judge_kind"] == "llm") if name == ENSEMBLE else (judgments["judge"] == name)
        seen = np.isin(pair_ids, judgments.loc[sel, "pair_id"].unique())
        for scope, mask in _scopes(human):
            base = mask & seen
            use = base & pd.notna(ref) & pd.notna(comp)
            row = {"reference": HUMAN_MAJORITY, "judge": name, "scope": scope,
                   "n_no_verdict": int((base & pd.notna(ref) & pd.isna(comp)).sum()),
                   "n_no_reference": int((base & pd.isna(ref)).sum())}
            if use.any():
                row.update(_rate_row(boot, conv[use], (comp[use] == ref[use]).astype(float), ci),
                           status="ok", note="")
            else:
                row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                           n_conversations=0, status="no_pairs",
                           note=f"no pair in scope '{scope}' with both a human majority winner and a verdict")
            rows.append(row)
    return _frame(rows, AGREEMENT_COLUMNS)


# --- cross-judge agreement ----------------------------------------------------------------------

def cross_judge_agreement(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                          judge_groups: dict[str, str] | None = None) -> pd.DataFrame:
    """Agreement between LLM judges: every two, their mean, and all at once (paper §4.4).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (only LLM rows are used).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
        Cohen's κ gets its asymptotic interval at the same level.
    judge_groups : dict, optional
        judge -> group (e.g. family, for "Gemini-OpenAI"). Each group is first reduced to its
        majority winner per pair (:func:`majority`), and the groups are compared.

    Returns
    -------
    pandas.DataFrame
        ``CROSS_COLUMNS``. ``scope`` "pairwise" (one row per two judges, with Cohen's κ and its
        asymptotic interval on the pairs both judged), "mean-pairwise" (unweighted mean of the
        pairwise agreements, bootstrap interval from the same resamples) and "all" (pairs judged
        by every judge; agreement = all named the same winner). Fewer than two judges: one
        "absent" row.
    """
    llm = judgments[judgments["judge_kind"] == "llm"]
    if judge_groups is not None:
        llm = llm[llm["judge"].isin(list(judge_groups))]
        units = sorted(set(judge_groups[j] for j in llm["judge"].unique()))
        members = {g: [j for j, gg in judge_groups.items() if gg == g] for g in units}
        wide = pd.DataFrame({g: majority(judgments, "llm", judges=members[g]).set_index("pair_id")["winner"]
                             for g in units})
    else:
        units = sorted(llm["judge"].unique())
        wide = _winners(judgments, "llm")[units] if units else pd.DataFrame()
    if len(units) < 2:
        return _frame([{"scope": "pairwise", "judge_1": units[0] if units else None, "judge_2": None,
                        "n_judges": len(units), "n_pairs": 0, "n_agree": 0, "agreement": math.nan,
                        "ci_low": math.nan, "ci_high": math.nan, "kappa": math.nan, "kappa_ci_low": math.nan,
                        "kappa_ci_high": math.nan, "n_conversations": 0, "status": "absent",
                        "note": f"{len(units)} LLM judge{'' if len(units) == 1 else 's'}"
                                f"{' (groups)' if judge_groups else ''}: cross-judge agreement needs two"}],
                      CROSS_COLUMNS)
    meta = pair_meta(judgments)
    conv = meta["conversation_id"].reindex(wide.index).to_numpy()
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    rows, reps_all = [], []
    for u1, u2 in itertools.combinations(units, 2):
        w1, w2 = wide[u1].to_numpy(object), wide[u2].to_numpy(object)
        use = pd.notna(w1) & pd.notna(w2)
        row = {"scope": "pairwise", "judge_1": u1, "judge_2": u2, "n_judges": 2}
        if use.any():
            hits = (w1[use] == w2[use]).astype(float)
            est, reps = boot.rate(conv[use], hits)
            reps_all.append(reps)
            lo, hi = bootstrap.interval(reps, ci)
            kap = reliability.cohen_kappa(w1[use], w2[use], categories=["a", "b"], ci=ci)
            row.update(n_pairs=int(use.sum()), n_agree=int(hits.sum()), agreement=est, ci_low=lo, ci_high=hi,
                       kappa=kap["kappa"], kappa_ci_low=kap["kappa_ci_low"],
                       kappa_ci_high=kap["kappa_ci_high"],
                       n_conversations=int(len(np.unique(conv[use]))), status="ok",
                       note="" if not np.isnan(kap["kappa"]) else "kappa undefined: one winner side only")
        else:
            row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       kappa=math.nan, kappa_ci_low=math.nan, kappa_ci_high=math.nan, n_conversations=0,
                       status="no_pairs", note="no pair judged by both (e.g. family exclusion)")
        rows.append(row)
    ok = [r for r in rows if r["status"] == "ok"]
    mean_row = {"scope": "mean-pairwise", "judge_1": "mean", "judge_2": None, "n_judges": len(units),
                "n_pairs": int(sum(r["n_pairs"] for r in ok)), "n_agree": int(sum(r["n_agree"] for r in ok)),
                "kappa": float(np.nanmean([r["kappa"] for r in ok])) if ok and not all(
                    np.isnan(r["kappa"]) for r in ok) else math.nan,
                "kappa_ci_low": math.nan, "kappa_ci_high": math.nan,
                "n_conversations": int(len(np.unique(conv[wide.notna().sum(axis=1).to_numpy() >= 2]))),
                "status": "ok" if ok else "no_pairs",
                "note": f"unweighted mean over {len(ok)} judge pairs; kappa: mean of the pairwise kappas"}
    if ok:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_reps = np.nanmean(np.vstack(reps_all), axis=0) if boot.n_boot else np.array([])
        lo, hi = bootstrap.interval(mean_reps, ci)
        mean_row.update(agreement=float(np.mean([r["agreement"] for r in ok])), ci_low=lo, ci_high=hi)
    else:
        mean_row.update(agreement=math.nan, ci_low=math.nan, ci_high=math.nan)
    rows.append(mean_row)
    every = wide[units].notna().all(axis=1).to_numpy()
    all_row = {"scope": "all", "judge_1": "all", "judge_2": None, "n_judges": len(units),
               "kappa": math.nan, "kappa_ci_low": math.nan, "kappa_ci_high": math.nan}
    if every.any():
        vals = wide[units].to_numpy(object)[every]
        hits = (vals == vals[:, :1]).all(axis=1).astype(float)
        all_row.update(_rate_row(boot, conv[every], hits, ci), status="ok",
                       note=f"pairs judged by all of {', '.join(units)}")
    else:
        all_row.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       n_conversations=0, status="no_pairs", note="no pair was judged by every judge")
    rows.append(all_row)
    return _frame(rows, CROSS_COLUMNS)


# --- inter-human reliability --------------------------------------------------------------------

def _human_ratings(judgments: pd.DataFrame) -> pd.DataFrame:
    h = judgments[(judgments["judge_kind"] == "human") & judgments["status"].isin(["ok", "tie"])]
    pref = (pd.to_numeric(h["preference"], errors="coerce") if "preference" in h
            else pd.Series(np.nan, index=h.index))
    fallback = np.where(h["winner"] == "a", "a", np.where(h["winner"] == "b", "b", "tie"))
    winner = np.where(pref.isna(), fallback, np.where(pref > 0, "a", np.where(pref < 0, "b", "tie")))
    return pd.DataFrame({"unit": h["pair_id"].to_numpy(), "rater": h["judge"].to_numpy(),
                         "conversation_id": h["conversation_id"].to_numpy(),
                         "preference": pref.to_numpy(dtype=float), "winner": winner})


def inter_human(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Inter-human reliability: Fleiss' κ and Krippendorff's α (paper §4.2: κ = 0.673; §9.9).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (human rows with status "ok" or "tie" are used).
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.bootstrap`) for the percentile intervals at level ``ci``:
        κ and α are recomputed on the pairs of the resampled conversations, each pair as often as its
        conversation was drawn.

    Returns
    -------
    pandas.DataFrame
        ``HUMAN_COLUMNS``; ``measure`` "fleiss_kappa" / "krippendorff_alpha", ``labels``
        "winner (a/tie/b)" or "preference (-2..2)", ``level`` of measurement. A "per-axis" row is
        "unavailable" (humans give no axis marks). No pair with >= 2 human ratings: "absent" rows.
    """
    ratings = _human_ratings(judgments)
    specs = [("fleiss_kappa", "winner (a/tie/b)", "nominal"),
             ("fleiss_kappa", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "winner (a/tie/b)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "nominal"),
             ("krippendorff_alpha", "preference (-2..2)", "ordinal")]
    axis_row = {"measure": "fleiss_kappa", "labels": "per-axis", "level": "nominal", "value": math.nan,
                "ci_low": math.nan, "ci_high": math.nan, "n_units": 0, "n_ratings": 0, "n_raters": 0,
                "status": "unavailable",
                "note": "human raters give one overall choice (Figure 2) and no axis marks: "
                        "per-axis inter-human agreement cannot be computed"}
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    conv_of_unit = ratings.drop_duplicates("unit").set_index("unit")["conversation_id"]
    rows = []
    for measure, labels, level in specs:
        if labels.startswith("winner"):
            r, domain = ratings.assign(label=ratings["winner"]), WINNER_DOMAIN
        else:
            r = ratings[ratings["preference"].notna()]
            r, domain = r.assign(label=r["preference"].astype(int)), PREFERENCE_DOMAIN
        counts = reliability.unit_counts(r, domain)
        row = {"measure": measure, "labels": labels, "level": level, "n_raters": int(r["rater"].nunique())}
        if counts.empty:
            row.update(value=math.nan, ci_low=math.nan, ci_high=math.nan, n_units=0, n_ratings=0,
                       status="absent",
                       note="human judgments are absent" if ratings.empty
                       else "no pair has two or more human ratings")
            rows.append(row)
            continue
        if measure == "fleiss_kappa":
            kept, m = reliability.fleiss_units(counts)
            note = (f"pairs with {m} ratings; {len(counts) - len(kept)} pairs with another number of "
                    f"ratings left out")
        else:
            kept, note = counts, "pairs with >= 2 ratings"
        table = kept.to_numpy(dtype=float)
        value = reliability.fleiss_kappa_table if measure == "fleiss_kappa" else functools.partial(
            reliability.krippendorff_alpha_table, level=level, value_domain=domain)
        est = value(table)
        reps = boot.apply(conv_of_unit.reindex(kept.index).to_numpy(), table, value)
        lo, hi = bootstrap.interval(reps, ci)
        row.update(value=est, ci_low=lo, ci_high=hi, n_units=int(len(kept)), n_ratings=int(table.sum()),
                   status="ok" if not np.isnan(est) else "undefined",
                   note=note if not np.isnan(est) else note + "; undefined (a single category observed)")
        rows.append(row)
    rows.append(axis_row)
    return _frame(rows, HUMAN_COLUMNS)


# --- stability under judge subsampling ----------------------------------------------------------

def subsampling_stability(judgments: pd.DataFrame, n_rep: int = 200, seed: int = 0, ks=None, ci: float = 0.95,
                          consensus: float = CONSENSUS) -> pd.DataFrame:
    """Agreement of the majority of k random LLM judges with the reference, for each k (§9.9).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    n_rep : int
        Random judge subsets per k; when there are at most ``n_rep`` subsets of size k, all of
        them are used instead (``sampling`` "exhaustive").
    seed : int
        Seed of the subset draws.
    ks : sequence of int, optional
        Subset sizes (default 1 .. number of LLM judges).
    ci : float
        Share of the subsets' agreements between ``q_low`` and ``q_high``.
    consensus : float
        Passed to :func:`majority` (does not change the reference winner).

    Returns
    -------
    pandas.DataFrame
        ``STABILITY_COLUMNS``, one row per k. ``reference`` is "human-majority", or
        "llm-ensemble-majority" (all LLM judges) when no pair has a human majority winner, in
        which case k = all judges agrees trivially. Per subset, agreement is over pairs where the
        reference and the subset majority both have a winner; ``mean_coverage`` is the mean share
        of reference pairs that the subset majority decided. ``q_low``/``q_high`` are the
        ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles over subsets (2.5 % and 97.5 % for ci = 0.95).
    """
    wide = _winners(judgments, "llm")
    judges = list(wide.columns)
    if not judges:
        return _frame([{"reference": None, "k": 0, "n_judges": 0, "n_subsets": 0, "sampling": None,
                        "mean_agreement": math.nan, "sd_agreement": math.nan, "q_low": math.nan,
                        "q_high": math.nan, "min_agreement": math.nan, "max_agreement": math.nan,
                        "mean_n_pairs": math.nan, "mean_coverage": math.nan, "status": "absent",
                        "note": "LLM judgments are absent"}], STABILITY_COLUMNS)
    human = majority(judgments, "human", consensus).set_index("pair_id")["winner"].reindex(wide.index)
    if human.notna().any():
        reference, ref = HUMAN_MAJORITY, _as_vote(human.to_frame())[:, 0]
        ref_note = "reference: human majority"
    else:
        reference = LLM_MAJORITY
        ref = _as_vote(majority(judgments, "llm", consensus).set_index("pair_id")["winner"]
                       .reindex(wide.index).to_frame())[:, 0]
        ref_note = "human judgments are absent: reference is the majority of all LLM judges"
    votes = _as_vote(wide)
    n_ref = int((ref != 0).sum())
    rng = np.random.default_rng(seed)
    K = len(judges)
    rows = []
    for k in (ks if ks is not None else range(1, K + 1)):
        k = int(k)
        if not 1 <= k <= K:
            raise ValueError(f"k={k} outside 1..{K} (number of LLM judges)")
        total = math.comb(K, k)
        if total <= n_rep:
            subsets, sampling = [list(s) for s in itertools.combinations(range(K), k)], "exhaustive"
        else:
            subsets, sampling = [rng.choice(K, size=k, replace=False) for _ in range(n_rep)], "random"
        agr, npairs, cover = [], [], []
        for s in subsets:
            maj = np.sign(votes[:, s].sum(axis=1))
            use = (ref != 0) & (maj != 0)
            npairs.append(int(use.sum()))
            cover.append(use.sum() / n_ref if n_ref else math.nan)
            agr.append(float((maj[use] == ref[use]).mean()) if use.any() else math.nan)
        agr = np.array(agr, dtype=float)
        valid = agr[~np.isnan(agr)]
        row = {"reference": reference, "k": k, "n_judges": K, "n_subsets": len(subsets), "sampling": sampling,
               "mean_n_pairs": float(np.mean(npairs)), "mean_coverage": float(np.nanmean(cover)) if n_ref else
               math.nan}
        if valid.size:
            row.update(mean_agreement=float(valid.mean()),
                       sd_agreement=float(valid.std(ddof=1)) if valid.size > 1 else math.nan,
                       q_low=float(np.quantile(valid, (1 - ci) / 2)),
                       q_high=float(np.quantile(valid, (1 + ci) / 2)),
                       min_agreement=float(valid.min()), max_agreement=float(valid.max()), status="ok",
                       note=ref_note + (f"; {len(agr) - valid.size} subsets without a common pair"
                                        if valid.size < len(agr) else ""))
        else:
            row.update(mean_agreement=math.nan, sd_agreement=math.nan, q_low=math.nan, q_high=math.nan,
                       min_agreement=math.nan, max_agreement=math.nan, status="no_pairs",
                       note=ref_note + "; no subset decided a reference pair")
        rows.append(row)
    return _frame(rows, STABILITY_COLUMNS)


# --- trivial judges and the human ceiling -------------------------------------------------------

def _key_frame(system, contributor) -> pd.DataFrame:
    return pd.DataFrame({"system": pd.Series(system, dtype=object).astype(str).to_numpy(),
                         "contributor": pd.Series(contributor, dtype=object).map(
                             lambda c: "" if c is None or (isinstance(c, float) and math.isnan(c))
                             or c is pd.NA else str(c)).to_numpy()})


def pair_lengths(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    """Length in words (whitespace-separated) of both completions of every pair.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (pair_id, item_id, system_a/b, contributor_a/b).
    texts : pandas.DataFrame
        Completions: item_id, system, contributor_id, text.

    Returns
    -------
    pandas.DataFrame
        Indexed by pair_id: ``len_a``, ``len_b`` (NaN when a text is missing) and ``longer``
        ("a"/"b", None when equal or unknown).
    """
    meta = pair_meta(judgments)
    t = texts.copy()
    keys = _key_frame(t["system"], t["contributor_id"])
    lengths = pd.Series(t["text"].fillna("").astype(str).str.split().str.len().to_numpy(),
                        index=pd.MultiIndex.from_arrays([t["item_id"].astype(str).to_numpy(), keys["system"],
                                                         keys["contributor"]]))
    lengths = lengths[~lengths.index.duplicated()]
    out = pd.DataFrame(index=meta.index)
    for side in ("a", "b"):
        k = _key_frame(meta[f"system_{side}"], meta[f"contributor_{side}"])
        idx = pd.MultiIndex.from_arrays([meta["item_id"].astype(str).to_numpy(), k["system"],
                                         k["contributor"]])
        out[f"len_{side}"] = lengths.reindex(idx).to_numpy(dtype=float)
    diff = out["len_a"] - out["len_b"]
    out["longer"] = np.where(diff > 0, "a", np.where(diff < 0, "b", None)).astype(object)
    return out


def trivial_judges(judgments: pd.DataFrame, texts: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                   ci: float = 0.95, consensus: float = CONSENSUS) -> pd.DataFrame:
    """Real, trivial and ceiling judges side by side, against the human and the LLM-ensemble majority.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table.
    texts : pandas.DataFrame
        Completions (item_id, system, contributor_id, text), for "always-longer".
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.
    consensus : float
        Passed to :func:`majority`.

    Returns
    -------
    pandas.DataFrame
        ``TRIVIAL_COLUMNS``. Against "human-majority": the LLM ensemble, each LLM judge,
        "always-longer", "always-position-A" and the leave-one-out human ceiling. Against
        "llm-ensemble-majority": each LLM judge against the majority of the *other* LLM judges
        (leave-one-out), the two trivial judges, and the human majority. A missing reference gives
        "absent" rows.
    """
    meta = pair_meta(judgments)
    conv = meta["conversation_id"].to_numpy()
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    human = majority(judgments, "human", consensus).set_index("pair_id")["winner"].reindex(meta.index)
    ens = majority(judgments, "llm", consensus).set_index("pair_id")["winner"].reindex(meta.index)
    wide = _winners(judgments, "llm")
    llm_judges = list(wide.columns)
    longer = pair_lengths(judgments, texts)["longer"].reindex(meta.index)
    pos_a = pd.Series("a", index=meta.index, dtype=object)
    has_llm = bool(llm_judges)
    has_human = bool(human.notna().any())

    def row(reference, judge, judge_type, ref, comp, note="", judged=None):
        ref, comp = np.asarray(ref, object), np.asarray(comp, object)
        judged = np.ones(len(ref), bool) if judged is None else judged
        use = pd.notna(ref) & pd.notna(comp)
        out = {"reference": reference, "judge": judge, "judge_type": judge_type,
               "n_no_verdict": int((pd.notna(ref) & pd.isna(comp) & judged).sum())}
        if use.any():
            out.update(_rate_row(boot, conv[use], (ref[use] == comp[use]).astype(float), ci), status="ok",
                       note=note)
        else:
            out.update(n_pairs=0, n_agree=0, agreement=math.nan, ci_low=math.nan, ci_high=math.nan,
                       n_conversations=0, status="no_pairs",
                       note=(note + "; " if note else "") + "no common pair")
        return out

    def absent(reference, judge, judge_type, why):
        return {"reference": reference, "judge": judge, "judge_type": judge_type, "n_pairs": 0, "n_agree": 0,
                "agreement": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_conversations": 0,
                "n_no_verdict": 0, "status": "absent", "note": why}

    rows = []
    # reference: human majority
    why_h = ("human judgments are absent" if not (judgments["judge_kind"] == "human").any()
             else "no pair has a human majority winner")
    entries = [(ENSEMBLE, "llm-ensemble", ens), *((j, "llm", wide[j]) for j in llm_judges),
               (LONGER, "trivial", longer), (POSITION_A, "trivial", pos_a)]
    for judge, jtype, comp in entries:
        if not has_human:
            rows.append(absent(HUMAN_MAJORITY, judge, jtype, why_h))
        elif jtype.startswith("llm") and not has_llm:
            rows.append(absent(HUMAN_MAJORITY, judge, jtype, "LLM judgments are absent"))
        else:
            note = {LONGER: "longer in words; equal lengths give no verdict",
                    POSITION_A: "always the pair's system_a (stored order, randomised)"}.get(judge, "")
            rows.append(row(HUMAN_MAJORITY, judge, jtype, human, comp, note))
    loo = _loo_majority_winners(judgments, "human")
    loo_use = loo[loo["other_winner"].notna()]
    if loo_use.empty:
        rows.append(absent(HUMAN_MAJORITY, HUMAN_CEILING, "human",
                           why_h if not has_human else "no pair with two or more decisive human raters"))
    else:
        c = meta["conversation_id"].reindex(loo_use["pair_id"]).to_numpy()
        r = {"reference": HUMAN_MAJORITY, "judge": HUMAN_CEILING, "judge_type": "human",
             "n_no_verdict": int(loo["other_winner"].isna().sum()), "status": "ok",
             "note": "each rater vs the majority of the other raters, pooled over (rater, pair); "
                     "n_pairs counts rater-pair comparisons"}
        r.update(_rate_row(boot, c, (loo_use["winner"] == loo_use["other_winner"]).to_numpy(float), ci))
        r["n_conversations"] = int(len(np.unique(c)))
        rows.append(r)
    # reference: LLM-ensemble majority
    if not has_llm:
        for judge, jtype in ((LONGER, "trivial"), (POSITION_A, "trivial"), (HUMAN_MAJORITY, "human")):
            rows.append(absent(LLM_MAJORITY, judge, jtype, "LLM judgments are absent"))
    else:
        loo_llm = _loo_majority_winners(judgments, "llm")
        for j in llm_judges:
            lj = loo_llm[loo_llm["judge"] == j].set_index("pair_id").reindex(meta.index)
            rows.append(row(LLM_MAJORITY, j, "llm", lj["other_winner"], wide[j],
                            "against the majority of the other LLM judges (leave-one-out)"))
        rows.append(row(LLM_MAJORITY, LONGER, "trivial", ens, longer,
                        "longer in words; equal lengths give no verdict"))
        rows.append(row(LLM_MAJORITY, POSITION_A, "trivial", ens, pos_a,
                        "always the pair's system_a (stored order, randomised)"))
        if has_human:
            rows.append(row(LLM_MAJORITY, HUMAN_MAJORITY, "human", ens, human))
        else:
            rows.append(absent(LLM_MAJORITY, HUMAN_MAJORITY, "human", why_h))
    return _frame(rows, TRIVIAL_COLUMNS)
