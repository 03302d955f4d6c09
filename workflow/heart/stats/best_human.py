"""Best Human (Figure 4's "Best Human" row, HEART paper §9.3): per context the human completion that scores
highest in a scope, and its rating without double counting. The method, its selection bias and the two ways
it enters the ratings ("derived", "in_fit"): ``docs/methods/leaderboard.md``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from heart.stats import bradley_terry as bt

#: The pooled human system (every human completion) and the derived Best Human system.
HUMAN = "human"
BEST_HUMAN = "best-human"
#: How Best Human enters a scope: "derived" (pooled human in the fit, best-human by a second fit) or
#: "in_fit" (the paper's: best-human a system of the one fit, no pooled human row).
DERIVED, IN_FIT = "derived", "in_fit"
BEST_HUMAN_MODES = (DERIVED, IN_FIT)
BEST_HUMAN_COLUMNS = ["item_id", "contributor", "n_comparisons", "wins", "win_rate", "best"]
_ELO_COLUMNS = ("elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot")


def best_human(comp: pd.DataFrame) -> pd.DataFrame:
    """Every human completion's record in a scope and which one is Best Human in its context.

    Parameters
    ----------
    comp : DataFrame
        :func:`heart.stats.leaderboard.judged` output of one scope.

    Returns
    -------
    DataFrame
        ``BEST_HUMAN_COLUMNS``: one row per human completion with comparisons (``item_id`` and
        ``contributor`` as text, ``n_comparisons``, ``wins``, ``win_rate``), ordered per context from the
        chosen one down: ``win_rate`` descending, then ``n_comparisons`` descending, then
        ``contributor`` ascending; ``best`` marks the first of every context (``docs/methods/leaderboard.md``).

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

    ``comp`` is :func:`heart.stats.leaderboard.judged` output, ``choice`` :func:`best_human` output of the same scope.
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


def best_human_row(comp: pd.DataFrame, main: pd.DataFrame, n_boot: int, seed: int, alpha: float,
                    ci: float) -> dict:
    """The ``best-human`` row of one scope whose main fit rated "human" (``docs/methods/leaderboard.md``)."""
    choice = best_human(comp)
    what = choice_note(choice)
    human = main.loc[main["system"] == HUMAN].iloc[0].to_dict()
    if choice["best"].all():  # one completion per context: the very comparisons of the pooled "human"
        return {**human, "system": BEST_HUMAN, "status": "ok",
                "note": what + "every context's human comparisons here are of one completion, so it repeats "
                               "the pooled human row"}
    second = best_human_comparisons(comp, choice)
    rated = sorted(set(second["winner"].unique()) | set(second["loser"].unique()))
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


def choice_note(choice: pd.DataFrame) -> str:
    """How a scope's Best Human was chosen (:func:`best_human` output ``choice``), the start of its note."""
    return (f"derived (Best Human, §9.3): per context the human completion that won the largest share of "
            f"its comparisons in this scope (ties: more comparisons, then contributor id), chosen from "
            f"{len(choice)} completions in {int(choice['best'].sum())} contexts after judging, on the judgments "
            "it is rated with -- the best of several noisy completions, so flattered (selection bias); ")


def other_mode(best_human: str) -> str:
    """The way Best Human enters the ratings that ``best_human`` is not (the labelled alternative)."""
    return next(mode for mode in BEST_HUMAN_MODES if mode != best_human)
