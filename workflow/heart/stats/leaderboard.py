"""The HEART leaderboard in every scope the paper reports (§4.1, §4.5, §9.8).

One Bradley–Terry/Elo fit (:mod:`heart.stats.bradley_terry`) per *scope*:

* ``axis``: "overall" (the judge's winner and strength 1-5) or one of the HEART
  axes H, E, A, R, T (the signed axis marks; pairs without a clear advantage on
  that axis are left out);
* ``subset``: "all", "regular" or "adversarial" items;
* ``source``: whose judgments -- "combined" (every LLM judge and every human
  rater), "llm" (the LLM judges), "human" (the human raters) or
  "judge:<name>" (one LLM judge).

Every system that appears in a pair is listed in every scope. Where a scope has
no comparisons at all (no human judgments, say) or a system has none in it, the
rows say so (``status`` "absent", a ``note``, empty numbers), never a rating of
1500 or a zero. Where the data do not give one common scale (systems never
compared with each other, even indirectly), ``status`` is "not_estimable" and
the note gives the reason.

Best Human (Figure 4's "Best Human" row, §9.3). Every context (``item_id``)
has up to three human completions, one per contributor (:mod:`heart.judging.pairs`);
the system "human" pools them all. Where "human" appears, every scope also
lists the derived system ``best-human`` (:data:`BEST_HUMAN`), next to it:

* *Choice.* Per context, the one human completion that scores highest in that
  scope: the largest share of its comparisons won (unweighted, the
  leaderboard's ``win_rate``; a comparison is a judgment the scope's fit uses --
  a verdict with a winner, or a non-zero axis mark -- so ties and unparsed
  verdicts do not count), ties broken by more comparisons, then by the
  contributor id (ascending). It is chosen anew in every scope (axis, subset,
  source) from the judgments that scope's fit uses (:func:`best_human`). A
  completion without comparisons in the scope cannot be chosen; a missing
  contributor id counts as one completion per context (as in
  :mod:`heart.judging.pairs`). The paper does not say how "top-scoring" is decided
  (§9.3 calls the row "Average Human" yet defines it as "the top-scoring
  completion per context"; Figure 4 labels it "Best Human"): this is our
  reading.
* *Selection bias.* The completion is chosen *after* judging, on the very
  judgments it is then rated with: the best of several noisy completions
  scores above what any one writer would, even if all were equally good (the
  winner's curse). Its row is flagged (``derived`` true) and its ``note`` says
  so; read it as flattered, an upper bound on the human writers rather than an
  estimate of a best writer. (An unbiased version would choose on some
  judgments and rate on others; not done here.)
* *Rating, without double counting.* The pooled "human" and ``best-human``
  are never in one fit (the chosen completions' comparisons would count twice).
  A second fit uses the scope's comparisons with those of the non-chosen human
  completions left out and those of the chosen ones relabelled ``best-human``;
  only its ``best-human`` row is kept. The main fit -- the pooled "human" row,
  every other system, the ranks and the separability -- is unchanged.
* *Elo scale.* Elo is centred on the mean of the fit's systems
  (:func:`heart.stats.bradley_terry.elo`), and the chosen completions are stronger
  than the pool, so in the second fit the centre rises and every other
  system's raw Elo drops (by about the gain over K systems). That fit is
  translated by the constant that gives the systems of both fits (all but
  "human" / ``best-human``) the mean Elo they have in the main fit (the least-
  squares alignment); their second-fit ratings then differ from the main fit's
  only through their comparisons with the left-out human completions, and the
  note gives the largest such difference. Both intervals are translated by the
  same constant: the asymptotic one uses the chosen completions' number of
  comparisons; the bootstrap one resamples conversations as usual but does not
  repeat the choice in each replicate, so it leaves out the selection's own
  variability. ``rank_asym`` / ``rank_boot`` rank it among the main fit's
  systems other than the pooled "human". Where no comparison is left out (in
  that scope every context's human comparisons are of one completion),
  ``best-human`` repeats the "human" row.
* *The paper's way* (``best_human="in_fit"``, :data:`IN_FIT`; ``stats.best_human`` in
  ``config/paper.yaml``). The paper's 18 Figure 4 Elo values average exactly 1500.0: one fit held
  its 16 models, Best Human and the dataset, with no pooled human row. In this mode every scope is
  that one fit: the comparisons of the second fit above (the chosen completion per context, the
  others' comparisons left out) with ``best-human`` a system of the fit like any other, no pooled
  "human" row and no translation, so the scope's Elo values average 1500 over its rated systems.
  The choice and its selection bias are as above (``derived`` true, the note says so). The pooled
  and derived rows (the default, :data:`DERIVED`) stay available as a labelled alternative
  (rule ratings writes them beside, ``ratings_alternative.parquet``).

Figure 4 (:func:`headline`). The paper's Figure 4 table has the columns H, E, A, R, T, "Overall Win
Rate" and "Elo Rating"; its caption calls the axis columns "per-dimension percentiles" ("each row
shows a model's percentile on H, E, A, R, T"), and the overall win rate "the raw proportion of
pairwise A/B comparisons in which a system's response was preferred on the primary HEART judgment".

* *Percentile* (the paper does not define it; our reading). A system's percentile on an axis is
  100 x its expected share of the field beaten on that axis: the mean, over the other rated systems
  of that axis's fit, of the Bradley–Terry probability that it wins,

      pct_i = 100 / |F_i| * sum_{j in F_i} sigmoid(theta_i - theta_j),

  with the thetas of that axis's fit (:func:`percentiles`). It is the percentile of the field it
  outranks in expectation: 50 for a system as strong as the field's average opponent, 100 for one
  that beats every other for sure; over the systems of a fit the percentiles average exactly 50
  (the pair probabilities sum to one). The field F_i is the main fit's systems other than i; for
  ``best-human`` it leaves out the pooled "human" too (the completions it was chosen from, as its
  ``rank_asym`` does), and ``best-human`` is in no other system's field (it is not in the main fit).
  Why not a rank percentile? With ~18 systems a rank percentile moves in steps of 1/17 and ignores
  how far apart systems are; the expected share is the smooth version the fit implies (and the
  rank order of both is the same). Why not a per-context percentile rank of a completion among the
  context's completions? Each context is judged on a few pairs only, so a completion's rank among
  the context's completions is not identified from its own judgments. The raw per-axis win rate
  (share of a system's comparisons with a clear mark on the axis that it won, unweighted) is kept
  as the variant ``columns="win_rate"``.
* *Judges* (``source``). The axis columns can only come from judges that mark the axes: the LLM
  judges ("LLM judges select a single winner and provide scores for each dimension", §4.1; human
  raters see no rubric, §4.2, Figure 2). The overall win rate is "an additional metric we gather
  from all the LLM judges" (§4.5). The Elo column is not said outright (§4.2 describes human
  annotators' comparisons aggregated by Bradley–Terry, but §4.5 reads the Figure 4 leaderboard as
  "model-based evaluation", where frontier models exceed the Best Human, as they do in the figure).
  We read the whole figure as the LLM judges' (:data:`FIGURE_4_SOURCE` = "llm"): one source for
  every column. ``source`` selects another (combined, human, judge:<name>); :func:`column_sources`
  says who judged each column, from what the ratings contain (with "combined", the axis columns
  stay the LLM judges' unless human raters marked axes, e.g. in imported judgments).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import expit

from heart.stats import bradley_terry as bt
from heart.judging import pairs
from heart.common.vocabulary import AXES, SUBSET_SCOPES

SUBSETS = SUBSET_SCOPES
COLUMNS = ["axis", "subset", "source", "status", "note", "derived", *bt.RATING_COLUMNS]
HEADLINE_COLUMNS = ["system", "status", "derived", "note", "elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot",
                    "elo_hi_boot", "n_comparisons", "win_pct", *(f"{a}_pct" for a in AXES)]
#: Figure 4's judges and per-axis measure (module docstring, "Figure 4"): the paper's are "llm", "percentile".
FIGURE_4_SOURCE = "llm"
AXIS_MEASURES = ("percentile", "win_rate")
#: The pooled human system (every human completion) and the derived Best Human system (module docstring).
HUMAN = "human"
BEST_HUMAN = "best-human"
#: How Best Human enters a scope: "derived" (pooled human in the fit, best-human by a second fit) or
#: "in_fit" (the paper's: best-human a system of the one fit, no pooled human row); module docstring.
DERIVED, IN_FIT = "derived", "in_fit"
BEST_HUMAN_MODES = (DERIVED, IN_FIT)
BEST_HUMAN_COLUMNS = ["item_id", "contributor", "n_comparisons", "wins", "win_rate", "best"]
_ELO_COLUMNS = ("elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot")
SEPARABILITY_COLUMNS = ["axis", "subset", "source", "status", "n_systems", "n_comparisons", "n_conversations",
                        "separability_asym", "separability_boot"]


def sources(judgments: pd.DataFrame) -> list[str]:
    """The judgment sources of the leaderboard: combined, llm, human, then one per LLM judge."""
    judges = sorted(judgments.loc[judgments["judge_kind"] == "llm", "judge"].unique())
    return ["combined", "llm", "human", *(f"judge:{j}" for j in judges)]


def select(judgments: pd.DataFrame, subset: str, source: str) -> pd.DataFrame:
    """The judgments of one (subset, source)."""
    rows = judgments if subset == "all" else judgments[judgments["subset"] == subset]
    if source in ("llm", "human"):
        return rows[rows["judge_kind"] == source]
    if source.startswith("judge:"):
        return rows[(rows["judge_kind"] == "llm") & (rows["judge"] == source.removeprefix("judge:"))]
    return rows


def _absent(systems, scope: dict, status: str, note: str) -> list[dict]:
    return [{**scope, "status": status, "note": note, "system": s} for s in systems]


def judged(judgments: pd.DataFrame, axis: str = "overall") -> pd.DataFrame:
    """A scope's comparisons (:func:`heart.stats.bradley_terry.comparisons`), their contexts and human completions.

    Returns
    -------
    DataFrame
        ``bradley_terry.COMPARISON_COLUMNS`` plus ``item_id`` and ``winner_contributor`` /
        ``loser_contributor`` (the contributor id of a human completion, "" where it is missing;
        meaningless for other systems).
    """
    if not judgments.index.is_unique:  # the comparisons keep the row labels: they must name one row
        judgments = judgments.reset_index(drop=True)
    comp = bt.comparisons(judgments, axis=None if axis == "overall" else axis)
    at = judgments.index.get_indexer(comp.index)

    def column(name: str) -> np.ndarray:  # a column of the kept rows; all None where the table lacks it
        if name not in judgments.columns:
            return np.full(len(comp), None, dtype=object)
        return judgments[name].to_numpy(dtype=object)[at]

    a_won = comp["winner"].to_numpy(dtype=object) == column("system_a")
    ca, cb = pairs.key_text(column("contributor_a")), pairs.key_text(column("contributor_b"))
    return comp.assign(item_id=column("item_id"), winner_contributor=np.where(a_won, ca, cb),
                       loser_contributor=np.where(a_won, cb, ca))


def best_human(comp: pd.DataFrame) -> pd.DataFrame:
    """Every human completion's record in a scope and which one is Best Human in its context.

    Parameters
    ----------
    comp : DataFrame
        :func:`judged` output of one scope.

    Returns
    -------
    DataFrame
        ``BEST_HUMAN_COLUMNS``: one row per human completion with comparisons (``item_id`` and
        ``contributor`` as text, ``n_comparisons``, ``wins``, ``win_rate``), ordered per context from the
        chosen one down: ``win_rate`` descending, then ``n_comparisons`` descending, then
        ``contributor`` ascending; ``best`` marks the first of every context (module docstring).

    Raises
    ------
    ValueError
        Human comparisons without an ``item_id`` (the context the choice is made in).
    """
    won, lost = comp["winner"].eq(HUMAN).to_numpy(), comp["loser"].eq(HUMAN).to_numpy()
    items = comp["item_id"].to_numpy(dtype=object)
    item = np.concatenate([items[won], items[lost]])
    if pd.isna(item).any():
        raise ValueError("judgments: human comparisons without an item_id (Best Human is chosen per context)")
    item = item.astype(str)
    contributor = np.concatenate([comp["winner_contributor"].to_numpy(dtype=object)[won],
                                  comp["loser_contributor"].to_numpy(dtype=object)[lost]]).astype(str)
    outcome = np.r_[np.ones(won.sum()), np.zeros(lost.sum())]
    # one code per completion (item, contributor): the unique rows of the two columns
    _, first, code = np.unique(np.stack([item, contributor], axis=1), axis=0, return_index=True,
                               return_inverse=True)
    code = code.ravel()
    n = np.bincount(code, minlength=len(first))
    wins = np.bincount(code, weights=outcome, minlength=len(first)).astype(np.int64)
    out = pd.DataFrame({"item_id": item[first].astype(object),
                        "contributor": contributor[first].astype(object),
                        "n_comparisons": n, "wins": wins, "win_rate": wins / np.maximum(n, 1)})
    out = out.sort_values(["item_id", "win_rate", "n_comparisons", "contributor"],
                          ascending=[True, False, False, True], ignore_index=True)
    out["best"] = ~out["item_id"].duplicated().to_numpy()
    return out[BEST_HUMAN_COLUMNS]


def best_human_comparisons(comp: pd.DataFrame, choice: pd.DataFrame) -> pd.DataFrame:
    """The second fit's comparisons: other human completions' left out, the chosen relabelled ``best-human``.

    ``comp`` is :func:`judged` output, ``choice`` :func:`best_human` output of the same scope.
    """
    chosen = pd.MultiIndex.from_frame(choice.loc[choice["best"], ["item_id", "contributor"]])
    keep = np.ones(len(comp), dtype=bool)
    out = comp[bt.COMPARISON_COLUMNS].copy()
    for side in ("winner", "loser"):
        human = comp[side].eq(HUMAN).to_numpy()
        completion = pd.MultiIndex.from_arrays([comp["item_id"].astype(str), comp[f"{side}_contributor"]])
        mine = completion.isin(chosen)
        keep &= ~human | mine
        out.loc[human, side] = BEST_HUMAN
    return out[keep]


def _best_human_row(comp: pd.DataFrame, main: pd.DataFrame, n_boot: int, seed: int, alpha: float,
                    ci: float) -> dict:
    """The ``best-human`` row of one scope whose main fit rated "human" (module docstring)."""
    choice = best_human(comp)
    what = _choice_note(choice)
    human = main.loc[main["system"] == HUMAN].iloc[0].to_dict()
    if choice["best"].all():  # one completion per context: the very comparisons of the pooled "human"
        return {**human, "system": BEST_HUMAN, "status": "ok",
                "note": what + "every context's human comparisons here are of one completion, so it repeats "
                               "the pooled human row"}
    second = best_human_comparisons(comp, choice)
    rated = sorted(set(second["winner"]) | set(second["loser"]))
    try:
        table = bt.ratings(second, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
    except ValueError as err:
        return {"status": "not_estimable", "note": what + f"its fit failed: {err}"}
    e1 = main.set_index("system")["elo"]
    e2 = table.set_index("system")["elo"]
    shared = [s for s in e2.index if s != BEST_HUMAN and s in e1.index]
    shift = float((e1[shared] - e2[shared]).mean())
    spread = float((e2[shared] + shift - e1[shared]).abs().max())
    row = table.loc[table["system"] == BEST_HUMAN].iloc[0].to_dict()
    for col in _ELO_COLUMNS:
        row[col] += shift
    row["theta"] = (row["elo"] - bt.ELO_BASE) / bt.ELO_SCALE
    others = main[main["system"] != HUMAN]
    row["rank_asym"] = 1 + int((others["elo_lo_asym"] > row["elo_hi_asym"]).sum())
    row["rank_boot"] = (pd.NA if math.isnan(row["elo_hi_boot"]) or others["elo_lo_boot"].isna().any()
                        else 1 + int((others["elo_lo_boot"] > row["elo_hi_boot"]).sum()))
    return {**row, "status": "ok",
            "note": what + (f"rated in a second fit with the pooled human's comparisons replaced by the "
                            f"chosen completions' ({row['n_comparisons']} of {human['n_comparisons']}), "
                            f"its Elo translated by {shift:+.1f} onto the main fit's scale (the other "
                            f"systems there differ from the main fit by at most {spread:.1f} Elo)")}


def _choice_note(choice: pd.DataFrame) -> str:
    """How a scope's Best Human was chosen (:func:`best_human` output ``choice``), the start of its note."""
    return (f"derived (Best Human, §9.3): per context the human completion that won the largest share of "
            f"its comparisons in this scope (ties: more comparisons, then contributor id), chosen from "
            f"{len(choice)} completions in {int(choice['best'].sum())} contexts after judging, on the judgments "
            "it is rated with -- the best of several noisy completions, so flattered (selection bias); ")


def other_mode(best_human: str) -> str:
    """The way Best Human enters the ratings that ``best_human`` is not (the labelled alternative)."""
    return next(mode for mode in BEST_HUMAN_MODES if mode != best_human)


def scope_ratings(judgments: pd.DataFrame, systems: list[str], axis: str, subset: str, source: str,
                  n_boot: int, seed: int, alpha: float, ci: float,
                  best: str = DERIVED) -> tuple[list[dict], dict]:
    """Rows of one scope and its separability row: every system listed, ``best-human`` next to "human"
    (``best`` "derived") or in its place, a system of the one fit (``best`` "in_fit"; module docstring)."""
    scope = {"axis": axis, "subset": subset, "source": source}
    in_fit = best == IN_FIT and HUMAN in systems
    listed = ([BEST_HUMAN if s == HUMAN else s for s in systems] if in_fit
              else [*systems, BEST_HUMAN] if HUMAN in systems else list(systems))
    full = judged(select(judgments, subset, source), axis)
    comp, in_fit_note = full[bt.COMPARISON_COLUMNS], None
    if in_fit and (full["winner"].eq(HUMAN).any() or full["loser"].eq(HUMAN).any()):
        choice = best_human(full)
        comp = best_human_comparisons(full, choice)
        in_fit_note = _choice_note(choice) + ("a system of this scope's one fit in place of the pooled human, the "
                                              "paper's Figure 4 (stats.best_human: in_fit)")
    sep = {**scope, "n_systems": 0, "n_comparisons": len(comp),
           "n_conversations": int(comp["conversation_id"].nunique()),
           "separability_asym": math.nan, "separability_boot": math.nan}
    if comp.empty:
        why = ("no human judgments" if source == "human" else "no judgments") + \
            (f" on axis {axis} (no clear advantage marked)" if axis != "overall" else "") + \
            (f" on {subset} items" if subset != "all" else "")
        return _absent(listed, scope, "absent", why), {**sep, "status": "absent"}
    rated = sorted(set(comp["winner"]) | set(comp["loser"]))
    missing = [s for s in (listed if in_fit else systems) if s not in rated]
    try:
        table = bt.ratings(comp, rated, n_boot=n_boot, seed=seed, alpha=alpha, ci=ci)
    except ValueError as err:
        return _absent(listed, scope, "not_estimable", str(err)), {**sep, "status": "not_estimable"}
    rows = [{**scope, "status": "ok", "note": in_fit_note if r["system"] == BEST_HUMAN else None, **r}
            for r in table.to_dict("records")]
    rows += _absent(missing, scope, "absent", "no comparisons involving this system in this scope")
    if HUMAN in systems and not in_fit:
        at = next(k for k, r in enumerate(rows) if r["system"] == HUMAN) + 1
        best = ({**scope, **_best_human_row(full, table, n_boot, seed, alpha, ci), "system": BEST_HUMAN}
                if HUMAN in rated else {**rows[at - 1], "system": BEST_HUMAN})
        rows.insert(at, best)
    summary = bt.summary(table)
    return rows, {**sep, "status": "ok", "n_systems": len(rated),
                  "separability_asym": summary["separability_asym"],
                  "separability_boot": summary["separability_boot"]}


def leaderboard(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0, alpha: float = bt.DEFAULT_ALPHA,
                ci: float = 0.95, axes=("overall", *AXES), subsets=SUBSETS,
                best_human: str = DERIVED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings and separability in every (axis, subset, source) scope.

    Returns
    -------
    (DataFrame, DataFrame)
        ``COLUMNS`` (one row per scope x system, plus the derived ``best-human``
        after "human" where humans appear, or in its place with ``best_human="in_fit"``; ``derived``
        marks it) and ``SEPARABILITY_COLUMNS`` (one row per scope, of the main fits).
    """
    if best_human not in BEST_HUMAN_MODES:
        raise ValueError(f"best_human must be one of {', '.join(BEST_HUMAN_MODES)}, not {best_human!r}")
    judgments = judgments.reset_index(drop=True)  # unique row labels, once (judged() joins on them)
    systems = sorted(set(judgments["system_a"]) | set(judgments["system_b"]))
    rows, seps = [], []
    for axis in axes:
        for subset in subsets:
            for source in sources(judgments):
                r, s = scope_ratings(judgments, systems, axis, subset, source, n_boot, seed, alpha, ci,
                                     best_human)
                rows += r
                seps.append(s)
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    table["derived"] = table["system"].eq(BEST_HUMAN)
    for col in ("n_comparisons", "wins", "rank_asym", "rank_boot"):
        table[col] = table[col].astype("Int64")
    return table, pd.DataFrame(seps).reindex(columns=SEPARABILITY_COLUMNS)


def percentiles(scope: pd.DataFrame) -> pd.Series:
    """Each system's percentile in one scope: 100 x its expected share of the field beaten.

    ``pct_i = 100 * mean_{j in F_i} sigmoid(theta_i - theta_j)`` (module docstring, "Figure 4"),
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
            out[i] = 100.0 * float(expit(theta[i] - theta[others]).mean())
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
        :func:`leaderboard` output (``COLUMNS``).
    source : str
        Whose judgments: "llm" (the paper's, default), "combined", "human" or "judge:<name>"
        (module docstring, "Figure 4"); :func:`column_sources` says who judged each column.
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
