"""The exploratory ablations of HEART §9.12 ("Ablations (e.g., allowing draws, alternate rankers) are labelled
exploratory"): every ranker of :mod:`heart.stats.rankers` on the comparisons of the main ranking (Figure 4's
source, overall, all items), each ranking beside the main Bradley–Terry one, Kendall's τ with a conversation-
bootstrap interval, and the systems whose rank moves. Methods and reading: ``docs/methods/ablations.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from heart.stats import bootstrap as cluster_bootstrap
from heart.stats import bradley_terry as bt
from heart.stats import leaderboard, rankers

LABEL = "exploratory (HEART §9.12)"
MAIN = "bradley_terry"
#: the rankers in the table's order, what each changes against the main fit, and the scale of its score
RANKERS = {
    MAIN: ("the main ranking: strength-weighted Bradley–Terry (Figure 4)", "Elo"),
    "davidson_ties": ("allowing draws: Davidson's Bradley–Terry with ties; every comparison counts once, ties "
                      "(about the same, orders that cancel) are ties", "Elo"),
    "thurstone": ("a probit (Thurstone case V) link instead of the logistic; strength-weighted",
                  "Elo of 1.702 x probit theta"),
    "win_rate": ("a plain win rate: share of decided comparisons won, counts not strengths", "share won"),
    "online_elo": ("online Elo, one comparison at a time in a pseudo-random order fixed by the data and the seed "
                   "(the order the judging made them is not recorded)", "Elo"),
    "release_soft": ("the authors' released fit: Bradley–Terry on soft scores by strength (the release's "
                     "plus signs)", "Elo"),
}
COLUMNS = ["subset", "source", "ranker", "label", "description", "status", "note", "system", "score",
           "score_lo", "score_hi", "scale", "rank", "rank_main", "rank_change", "tau", "tau_lo", "tau_hi",
           "n_tau", "moved", "n_comparisons", "n_ties", "parameter"]
#: a comparison's status that is a draw for the ties model: a human "about the same" or an imported tie, and an
#: LLM judge whose two orders cancelled out
TIES = ("tie", "inconsistent")
#: the released fit's ridge: its 1e-6 x sum(log strength^2), as alpha/2 x |theta|^2 (bradley_terry's convention)
RELEASE_RIDGE = 2e-6
#: replicates of the online Elo ranker's interval: the first of the bootstrap's (each is a sequential pass)
ONLINE_BOOT = 200


def _ties(judgments: pd.DataFrame) -> pd.DataFrame:
    rows = judgments[judgments["status"].isin(TIES) & judgments["conversation_id"].notna()
                     & (judgments["system_a"] != judgments["system_b"])]
    return pd.DataFrame({"a": rows["system_a"].to_numpy(dtype=object), "b": rows["system_b"].to_numpy(dtype=object),
                         "conversation_id": bt.cluster_ids(rows["conversation_id"], "judgments, ties")})


def _tensor(boot, conversations, first, second, weights, K: int) -> np.ndarray:
    """Per conversation (``boot.ids`` order) the K x K matrix of ``weights`` at (first, second): (C, K*K)."""
    flat = np.bincount(boot.index(conversations) * K * K + first * K + second,
                       weights=np.asarray(weights, dtype=float), minlength=len(boot.ids) * K * K)
    return flat.reshape(len(boot.ids), K * K)


def soft_matrix(W: np.ndarray, soft: dict[int, float]) -> np.ndarray:
    """Win matrices by strength, (..., 5, K, K) (``W[s-1]``: comparisons won at strength s), as the release's
    soft scores: a win at strength ``s`` gives the winner ``soft[s]`` and the loser ``1 - soft[s]``."""
    out = np.zeros(W.shape[:-3] + W.shape[-2:])
    for s, score in soft.items():
        out += score * W[..., s - 1, :, :] + (1.0 - score) * np.swapaxes(W[..., s - 1, :, :], -1, -2)
    return out


def _scores(W, Wc, T, Ws, alpha) -> dict[str, tuple[np.ndarray, str]]:
    """Every matrix ranker's scores (..., K) on weighted wins ``W``, counted wins ``Wc``, ties ``T`` and soft
    wins ``Ws`` (each (..., K, K)), with its parameter's text."""
    theta_ties, nu = rankers.davidson(Wc, T, alpha=alpha)
    return {
        MAIN: (bt.elo(bt.fit_matrix(W, alpha=alpha)), ""),
        "davidson_ties": (bt.elo(theta_ties), nu),
        "thurstone": (bt.elo(rankers.PROBIT_TO_LOGIT * rankers.thurstone(W, alpha=alpha)), ""),
        "win_rate": (rankers.win_rate(Wc), ""),
        "release_soft": (bt.elo(bt.fit_matrix(Ws, alpha=RELEASE_RIDGE)), ""),
    }


def play_order(items, comp: pd.DataFrame, seed: int) -> np.ndarray:
    """The order online Elo plays the comparisons in: the order the judging made them is not recorded, so a
    pseudo-random one fixed by the data and ``seed`` alone -- sorted by conversation, item, winner and loser
    (comparisons alike in all four are alike to Elo), then shuffled with ``seed``. A table's row order (which a
    bundle's pseudonymous pair ids change) plays no part."""
    key = pd.DataFrame({"conversation": comp["conversation_id"].to_numpy(), "item": np.asarray(items, dtype=object),
                        "winner": comp["winner"].to_numpy(), "loser": comp["loser"].to_numpy()})
    canonical = key.sort_values(list(key.columns), kind="stable").index.to_numpy()
    return canonical[np.random.default_rng(seed).permutation(len(canonical))]


def _rank(score: np.ndarray) -> np.ndarray:
    """1 + the number of systems scored higher (equal scores share the smaller rank); a system without a score
    (a win rate with no decided comparison: only ties) ranks last."""
    score = np.nan_to_num(np.asarray(score, dtype=float), nan=-np.inf)
    return 1 + (score[None, :] > score[:, None]).sum(axis=1)


def ablations(judgments: pd.DataFrame, source: str, n_boot: int, seed: int, alpha: float, ci: float,
              elo_k: float, soft: dict[int, float]) -> pd.DataFrame:
    """The ablation table (``COLUMNS``): one row per (ranker, system) of the main scope (overall, all items,
    ``source``), every row labelled :data:`LABEL`.

    ``tau`` is Kendall's τ-b of the ranker's scores with the main fit's; its interval the ``ci`` percentiles of
    the τ of each conversation-bootstrap replicate (both fitted to the same resample). ``moved`` lists the
    systems whose rank differs from the main one (``system main->ranker``).
    """
    soft = {int(k): float(v) for k, v in soft.items()}
    if sorted(soft) != [1, 2, 3, 4, 5] or not all(0.5 <= v <= 1 for v in soft.values()):
        raise ValueError(f"stats.ablations.release_soft_scores: {soft}; give each strength 1-5 a soft score "
                         "from 0.5 to 1")
    scope = {"subset": "all", "source": source}
    selected = leaderboard.select(judgments, "all", source).reset_index(drop=True)
    comp = bt.comparisons(selected)
    unweighted = bt.comparisons(selected, weighted=False)
    ties = _ties(selected)
    systems = sorted(set(comp["winner"]) | set(comp["loser"]) | set(ties["a"]) | set(ties["b"]))
    if len(comp) == 0 or len(systems) < 2:
        why = "no decided comparison" if len(comp) == 0 else "fewer than two systems compared"
        return pd.DataFrame([{**scope, "ranker": r, "label": LABEL, "description": d, "status": "absent",
                              "note": f"absent: {why} in source {source!r}", "system": None, "scale": s}
                             for r, (d, s) in RANKERS.items()], columns=COLUMNS)
    K = len(systems)
    code = pd.Index(systems)
    w_idx, l_idx = code.get_indexer(comp["winner"]), code.get_indexer(comp["loser"])
    boot = cluster_bootstrap.ClusterBootstrap(np.concatenate([comp["conversation_id"].to_numpy(),
                                                              ties["conversation_id"].to_numpy()]), n_boot, seed)
    conv = comp["conversation_id"].to_numpy()
    strength = comp["weight"].to_numpy().round().astype(int)
    per_conv = {
        "W": _tensor(boot, conv, w_idx, l_idx, comp["weight"], K),
        "Wc": _tensor(boot, conv, w_idx, l_idx, unweighted["weight"], K),
        "T": _tensor(boot, ties["conversation_id"].to_numpy(), code.get_indexer(ties["a"]),
                     code.get_indexer(ties["b"]), np.ones(len(ties)), K),
    }
    by_strength = np.stack([_tensor(boot, conv[strength == s], w_idx[strength == s], l_idx[strength == s],
                                    np.ones(int((strength == s).sum())), K) for s in range(1, 6)], axis=1)
    full = {k: v.sum(axis=0).reshape(K, K) for k, v in per_conv.items()}
    full["Ws"] = soft_matrix(by_strength.sum(axis=0).reshape(5, K, K), soft)
    point = _scores(full["W"], full["Wc"], full["T"], full["Ws"], alpha)
    played = play_order(selected.loc[comp.index, "item_id"], comp, seed)
    point["online_elo"] = (rankers.online_elo(w_idx[played], l_idx[played], K, k_factor=elo_k), "")
    reps = {}
    if n_boot:
        rep = {k: boot.resample(v).reshape(n_boot, K, K) for k, v in per_conv.items()}
        rep["Ws"] = soft_matrix(boot.resample(by_strength.reshape(len(boot.ids), -1)).reshape(n_boot, 5, K, K), soft)
        reps = {k: v for k, (v, _) in _scores(rep["W"], rep["Wc"], rep["T"], rep["Ws"], alpha).items()}
        # a sequential pass per replicate (5 ms each at the paper's 40,000 comparisons): its first ONLINE_BOOT
        elo_reps = rankers.online_elo(w_idx[played], l_idx[played], K, k_factor=elo_k,
                                      repeats=boot.counts[:ONLINE_BOOT, boot.index(conv[played])])
        reps["online_elo"] = np.vstack([elo_reps, np.full((n_boot - len(elo_reps), K), np.nan)])
    main_rank = _rank(point[MAIN][0])
    n_ties = int(full["T"].sum())
    parameters = {"davidson_ties": f"nu = {float(point['davidson_ties'][1]):.3g} (tie propensity; "
                                   f"{n_ties} ties)" if n_ties else "no ties in this scope: nu = 0, the model is "
                                   "Bradley–Terry's on counts",
                  "online_elo": f"K-factor {elo_k:g}, from 1000", "release_soft":
                  "soft score by strength: " + ", ".join(f"{s}: {v:g}" for s, v in sorted(soft.items()))
                  + f"; the release's ridge {RELEASE_RIDGE:g}",
                  "thurstone": "P(i beats j) = Phi(theta_i - theta_j)", MAIN: f"ridge {alpha:g}",
                  "win_rate": "ties and strengths left out"}
    rows = []
    for ranker, (description, scale) in RANKERS.items():
        score = np.asarray(point[ranker][0], dtype=float)
        rank = _rank(score)
        tau = float(rankers.tau_b(point[MAIN][0], score))
        lo_s = hi_s = np.full(K, np.nan)
        tau_lo = tau_hi = math.nan
        n_tau = 0
        if n_boot:
            lo_s, hi_s = cluster_bootstrap.interval(reps[ranker], ci)
            taus = rankers.tau_b(reps[MAIN], reps[ranker])  # NaN where a replicate was not fitted
            n_tau = int(np.isfinite(taus).sum())
            tau_lo, tau_hi = cluster_bootstrap.interval(taus, ci)
        moved = "; ".join(f"{systems[k]} {main_rank[k]}->{rank[k]}" for k in range(K) if rank[k] != main_rank[k])
        for k, system in enumerate(systems):
            rows.append({**scope, "ranker": ranker, "label": LABEL, "description": description, "status": "ok",
                         "note": None, "system": system, "score": score[k], "score_lo": lo_s[k],
                         "score_hi": hi_s[k], "scale": scale, "rank": int(rank[k]), "rank_main": int(main_rank[k]),
                         "rank_change": int(main_rank[k] - rank[k]), "tau": tau, "tau_lo": tau_lo,
                         "tau_hi": tau_hi, "n_tau": n_tau, "moved": moved or "none",
                         "n_comparisons": len(comp), "n_ties": n_ties, "parameter": parameters[ranker]})
    return pd.DataFrame(rows, columns=COLUMNS)


def wide(table: pd.DataFrame, names: dict | None = None) -> pd.DataFrame:
    """The report's table: one row per system in the main ranking's order, each ranker's rank beside the main
    one, then a row of each ranker's Kendall τ [interval]; labelled exploratory in its first column."""
    ok = table[table["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame({"exploratory (HEART §9.12)": [table["note"].iloc[0] if len(table) else "absent"]})
    ranks = ok.pivot(index="system", columns="ranker", values="rank")[list(RANKERS)]
    ranks = ranks.sort_values(MAIN, kind="stable")
    out = ranks.astype(object)
    out.index = [(names or {}).get(s, s) for s in out.index]
    taus = ok.drop_duplicates("ranker").set_index("ranker")
    out.loc["Kendall tau [CI]"] = [
        f"{taus.at[r, 'tau']:.3f} [{taus.at[r, 'tau_lo']:.3f}, {taus.at[r, 'tau_hi']:.3f}]"
        if math.isfinite(taus.at[r, "tau_lo"]) else f"{taus.at[r, 'tau']:.3f}" for r in RANKERS]
    out.index.name = "exploratory (HEART §9.12): rank by"
    return out.reset_index()
