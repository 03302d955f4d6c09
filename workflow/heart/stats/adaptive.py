"""Adaptive pair design (issue 44; off by default, the paper's fixed design stays the paper's): rounds of
comparisons, each round chosen from the current fit's conversation bootstrap where it reduces the rank uncertainty
of the systems that are still close, and a stopping rule on that uncertainty. Methods and measured savings:
``docs/methods/adaptive-design.md``.

:func:`next_round` is what rule ``adaptive_round`` runs: a study's next round of pairs (or the decision that it has
ended) from the pairs its judges may judge and the verdicts of the rounds before. The pieces it uses act on a fit's
bootstrap (``boot``: replicates x systems, Elo) and on the candidate comparisons a
design allows (eligibility, both shown orders and judge families are the fixed design's); the simulation that
measures them is :mod:`heart.simulation.adaptive` (SIMULATED).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from heart.stats import bradley_terry as bt
from heart.stats.rankers import tau_b


def ranks(elo) -> np.ndarray:
    """1 = best, per row (ties broken by position: a bootstrap replicate's Elo are continuous)."""
    elo = np.asarray(elo, dtype=float)
    order = np.argsort(-elo, axis=-1, kind="stable")
    out = np.empty_like(order)
    np.put_along_axis(out, order, np.arange(1, elo.shape[-1] + 1)[None, :] if elo.ndim > 1
                      else np.arange(1, elo.shape[-1] + 1), axis=-1)
    return out


def swap_probability(boot, point) -> np.ndarray:
    """K x K: the share of bootstrap replicates that order systems i and j against the point estimate (a tie
    counts half); 0 on the diagonal. A pair whose order is settled is near 0, a coin toss near 0.5."""
    boot, point = np.asarray(boot, dtype=float), np.asarray(point, dtype=float)
    sign = np.sign(point[:, None] - point[None, :])
    rep = np.sign(boot[:, :, None] - boot[:, None, :])
    against = (rep * sign[None] < 0).mean(axis=0) + 0.5 * ((rep == 0) & (sign[None] != 0)).mean(axis=0)
    np.fill_diagonal(against, 0.0)
    return against


def rank_stability(boot, point, ci: float = 0.95) -> dict:
    """How settled the ranking is: ``tau`` the mean Kendall τ-b of each replicate's ranking with the point
    estimate's, and ``widths`` each system's rank interval (the ``ci`` percentile interval of its replicate
    ranks: upper minus lower rank; 0 = the same rank in every replicate)."""
    boot, point = np.asarray(boot, dtype=float), np.asarray(point, dtype=float)
    r = ranks(boot)
    lo, hi = np.percentile(r, [50 * (1 - ci), 50 * (1 + ci)], axis=0, method="inverted_cdf")
    return {"tau": float(np.nanmean(tau_b(boot, point[None, :]))), "widths": hi - lo}


def allocate(weights, capacity, budget: int) -> np.ndarray:
    """Integer counts per candidate, proportional to ``weights``, none above its ``capacity``, summing to
    ``min(budget, capacity where weight > 0)``: largest remainders first (ties by position), and what a capped
    candidate cannot take goes to the others in proportion. Deterministic."""
    w = np.asarray(weights, dtype=float).copy()
    cap = np.asarray(capacity, dtype=np.int64)
    if w.shape != cap.shape or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights and capacity must have one shape; weights finite and >= 0")
    w[cap <= 0] = 0.0
    out = np.zeros(w.shape, dtype=np.int64)
    left = int(min(budget, cap[w > 0].sum()))
    while left > 0 and w.sum() > 0:
        share = w / w.sum() * left
        take = np.minimum(np.floor(share).astype(np.int64), cap - out)
        if take.sum() == 0:  # fewer units than candidates: the largest shares get one each
            order = np.argsort(-share, kind="stable")
            take = np.zeros_like(out)
            take[order[:left]] = 1
            take = np.minimum(take, cap - out)
        out += take
        left -= int(take.sum())
        w[out >= cap] = 0.0
    return out


def round_weights(boot, point, pairs_i, pairs_j, floor: float = 0.0) -> np.ndarray:
    """The weight of each candidate pair (``pairs_i``, ``pairs_j``: system indices) in the next round:
    ``u_i * u_j``, with ``u_i`` the systems system ``i`` is expected to be mis-ordered with (the sum of its swap
    probabilities, :func:`swap_probability`). In a Bradley–Terry fit the gap between two close systems is learnt
    mostly through their comparisons with everyone else, so what settles a rank is more comparisons of the
    systems whose rank is unsettled, best against each other (one comparison informs both); a pair of two
    settled systems gets nothing. ``floor`` is added to every pair (a share kept for exploration). Chosen by
    simulation (``docs/methods/adaptive-design.md``: it needed 61 % of the fixed design's verdicts where weighting
    the pair's own swap probability needed 87 %)."""
    u = swap_probability(boot, point).sum(axis=1)
    return u[np.asarray(pairs_i)] * u[np.asarray(pairs_j)] + floor


def newcomer_weights(boot, point, new: int, opponents) -> np.ndarray:
    """The weight of each ``opponents`` system for a ``new`` system being placed: the Fisher information of one
    comparison at the current estimates, ``p (1 - p)`` with ``p`` the win probability from their Elo gap,
    averaged over the bootstrap replicates (an opponent the newcomer could be on either side of weighs most)."""
    boot = np.asarray(boot, dtype=float)
    gap = (boot[:, [new]] - boot[:, np.asarray(opponents)]) * np.log(10) / 400
    p = 1.0 / (1.0 + np.exp(-gap))
    return (p * (1 - p)).mean(axis=0)


# --- a study's rounds (rule adaptive_round) ------------------------------------------------------------

def involving(pairs: pd.DataFrame, system: str | None) -> np.ndarray:
    """Mask of the rows of ``pairs`` with ``system`` on either side (none for None)."""
    if not system:
        return np.zeros(len(pairs), dtype=bool)
    return ((pairs["system_a"] == system) | (pairs["system_b"] == system)).to_numpy()


def information_half_width(gap_elo, counts=1.0) -> float:
    """The 95 % half-width (Elo) of a rating known from comparisons at Elo gaps ``gap_elo`` (each made ``counts``
    times), by their Fisher information at those gaps: ``1.96 / sqrt(sum n p (1 - p))`` on the Elo scale, ``p`` the
    win probability at the gap. The design's own precision, not a bootstrap interval's noisy width (stopping on
    that picks intervals narrow by chance: docs/methods/adaptive-design.md)."""
    p = 1 / (1 + np.exp(-np.asarray(gap_elo, dtype=float) / bt.ELO_SCALE))
    return float(1.96 * bt.ELO_SCALE / np.sqrt(np.sum(np.asarray(counts) * p * (1 - p))))


def system_pair(pairs: pd.DataFrame) -> np.ndarray:
    """The unordered pair of systems of each row, as text ("a | b", sorted): the unit a round allocates over."""
    a, b = pairs["system_a"].astype(str).to_numpy(), pairs["system_b"].astype(str).to_numpy()
    lo, hi = np.where(a <= b, a, b), np.where(a <= b, b, a)
    return np.char.add(np.char.add(lo.astype(str), " | "), hi.astype(str))


def draw_order(pair_ids, seed: int) -> np.ndarray:
    """Each pair's place in the seeded order its system pair's items are taken in: a hash of the seed and the pair
    id alone, so a pair's place does not depend on which other pairs exist."""
    keys = [hashlib.sha256(f"{seed}:{p}".encode()).hexdigest()[:16] for p in pair_ids]
    return np.argsort(np.argsort(keys, kind="stable"), kind="stable")


def _fit(comp: pd.DataFrame, n_boot: int, seed: int, alpha: float):
    """Point Elo, the conversation bootstrap's replicates and the systems (those with a comparison) of
    comparisons ``comp`` (:func:`heart.stats.bradley_terry.comparisons`), or Nones."""
    if comp.empty:
        return None, None, []
    systems = sorted(set(comp["winner"]) | set(comp["loser"]))
    index = pd.Index(systems)
    theta = bt.fit(index.get_indexer(comp["winner"]), index.get_indexer(comp["loser"]),
                   comp["weight"].to_numpy(dtype=float), len(systems), alpha=alpha)
    boot = bt.bootstrap(comp, systems, n_boot=n_boot, seed=seed, alpha=alpha, theta0=theta)
    return bt.elo(theta), boot, systems


def _newcomer_half_width(comp: pd.DataFrame, point, systems, newcomer: str) -> float:
    """The newcomer's 95 % half-width (Elo) by :func:`information_half_width`, its comparisons at the current
    estimates' gaps (infinite before it has one)."""
    if point is None or newcomer not in systems:
        return float("inf")
    mine = comp[(comp["winner"] == newcomer) | (comp["loser"] == newcomer)]
    if mine.empty:
        return float("inf")
    elo_of = dict(zip(systems, point))
    other = np.where(mine["winner"] == newcomer, mine["loser"], mine["winner"])
    return information_half_width(elo_of[newcomer] - np.array([elo_of[o] for o in other]))


def next_round(candidates: pd.DataFrame, chosen_ids, judgments: pd.DataFrame | None, round_: int,
               settings: dict, n_fixed: int, seed: int, alpha: float = bt.DEFAULT_ALPHA
               ) -> tuple[pd.DataFrame, dict]:
    """Round ``round_`` of the adaptive design: the pairs to judge next (rows of ``candidates``), and its status
    (the columns of ``workflow/schemas/tables/adaptive_rounds.schema.yaml`` but ``calls``, ``calls_fixed`` and
    the costs, which the rule adds; ``done`` with no pairs when the design has ended, ``reason`` saying why).

    ``candidates`` are the fixed design's pairs that at least one judge may judge (``results/judging/pairs.parquet``
    after the family exclusion; ``n_fixed`` the fixed design's pair count: the worst case), ``chosen_ids`` the pair
    ids of the earlier rounds, ``judgments`` their combined verdicts (every judge; ``heart.judging.combine``).
    ``settings`` is config ``judging.adaptive``.

    A new study (no ``newcomer``): round 0 takes ``first`` of the fixed design's pairs spread evenly over the pairs
    of systems; each later round fits the verdicts so far with their conversation bootstrap, ends the design if
    every system's 95 % rank interval is at most ``max_rank_width`` wide, else takes ``step`` more, allocated by
    :func:`round_weights`. Add a model (``newcomer``): round 0 takes every pair without it (an existing study's
    verdicts: from the response cache, paying nothing) and ``first`` of its own, each later round ends when its
    rating is known to ``half_width`` Elo (:func:`_newcomer_half_width`) or takes ``step`` more of its own,
    allocated by :func:`newcomer_weights`. Either ends at ``budget`` (a share of the fixed design's pairs, the
    newcomer's own when adding a model), after ``max_rounds`` rounds, or when no candidate is left. Within a pair of
    systems, items are taken in :func:`draw_order`. Deterministic given its inputs."""
    newcomer = settings.get("newcomer")
    chosen = candidates["pair_id"].isin(set(chosen_ids)).to_numpy()
    sp = system_pair(candidates)
    is_new = involving(candidates, newcomer)
    n_new_fixed = int(is_new.sum())
    status = {"round": int(round_), "n_round": 0, "n_chosen": int(chosen.sum()), "n_candidates": len(candidates),
              "n_fixed": int(n_fixed), "newcomer": newcomer, "n_newcomer_chosen": int((chosen & is_new).sum()),
              "n_newcomer_fixed": n_new_fixed if newcomer else None, "n_comparisons": 0, "max_rank_width": None,
              "tau": None, "newcomer_half_width": None, "done": False, "reason": ""}
    none = candidates.iloc[:0]

    def end(reason):
        return none, {**status, "done": True, "reason": reason}

    if newcomer and n_new_fixed == 0:
        raise ValueError(f"judging.adaptive.newcomer: {newcomer!r} is in no pair a judge may judge "
                         "(is it a system of this study, and not of every judge's family?)")
    if round_ >= settings["max_rounds"]:
        return end(f"max_rounds ({settings['max_rounds']}) reached")
    scope = is_new if newcomer else np.ones(len(candidates), dtype=bool)
    denominator = n_new_fixed if newcomer else int(n_fixed)
    budget = int(np.floor(settings["budget"] * denominator + 1e-9))
    spent = int((chosen & scope).sum())
    take_base = np.zeros(len(candidates), dtype=bool)
    units = np.unique(sp[scope])
    if round_ == 0:
        n_round = max(1, int(round(settings["first"] * denominator)))
        weights = np.ones(len(units))
        if newcomer:
            take_base = ~is_new & ~chosen
    else:
        comp = bt.comparisons(judgments) if judgments is not None and len(judgments) else pd.DataFrame(
            columns=bt.COMPARISON_COLUMNS)
        point, boot, systems = _fit(comp, settings["n_boot"], seed + round_, alpha)
        status["n_comparisons"] = len(comp)
        if newcomer:
            width = _newcomer_half_width(comp, point, systems, newcomer)
            status["newcomer_half_width"] = width if np.isfinite(width) else None
            if width <= settings["half_width"]:
                return end(f"target met: {newcomer} known to +/- {width:.1f} Elo "
                           f"(half_width {settings['half_width']})")
        if point is not None and len(systems) > 1:
            stab = rank_stability(boot, point)
            status["max_rank_width"] = float(stab["widths"].max())
            status["tau"] = stab["tau"]
            every_one = set(candidates["system_a"]) | set(candidates["system_b"]) <= set(systems)
            if not newcomer and every_one and stab["widths"].max() <= settings["max_rank_width"]:
                return end(f"target met: every rank interval at most {settings['max_rank_width']} wide "
                           f"(widest {stab['widths'].max():g})")
        weights = _unit_weights(units, point, boot, systems, newcomer)
        n_round = max(1, int(round(settings["step"] * denominator)))
    left = scope & ~chosen
    if not left.any() and not take_base.any():
        return end("every candidate chosen")
    n_round = min(n_round, budget - spent)
    if n_round <= 0 and not take_base.any():
        return end(f"budget reached ({spent} of {denominator} pairs, budget {settings['budget']:g})")
    pick = take_base | (_take(candidates, sp, left, units, weights, n_round, seed) if n_round > 0 else False)
    out = candidates[pick]
    return out, {**status, "n_round": int(pick.sum()), "n_chosen": int((chosen | pick).sum()),
                 "n_newcomer_chosen": int(((chosen | pick) & is_new).sum()),
                 "reason": "first round" if round_ == 0 else "continuing"}


def _take(candidates: pd.DataFrame, sp, left, units, weights, n_round: int, seed: int) -> np.ndarray:
    """Mask of the ``n_round`` candidates a round takes among those ``left``: allocated over the pairs of systems
    ``units`` by ``weights`` (:func:`allocate`; once the weighted ones are used up, the rest evenly over the
    others), each pair of systems' items in :func:`draw_order`."""
    pick = np.zeros(len(candidates), dtype=bool)
    unit_of = pd.Index(units).get_indexer(sp)
    capacity = np.bincount(unit_of[left], minlength=len(units))
    take = allocate(weights, capacity, n_round)
    if take.sum() < n_round:
        take += allocate(np.ones(len(units)), capacity - take, n_round - int(take.sum()))
    rank = draw_order(candidates["pair_id"].astype(str).to_numpy(), seed)
    for u in np.flatnonzero(take):
        rows = np.flatnonzero(left & (unit_of == u))
        pick[rows[np.argsort(rank[rows], kind="stable")[:take[u]]]] = True
    return pick


def _unit_weights(units, point, boot, systems, newcomer) -> np.ndarray:
    """The weight of each pair of systems (``units``, "a | b") in the next round: :func:`round_weights` for a new
    study, :func:`newcomer_weights` for the newcomer's opponents; a pair with a system not fitted yet (no
    comparison won or lost) weighs most."""
    a = np.array([u.split(" | ")[0] for u in units])
    b = np.array([u.split(" | ")[1] for u in units])
    if point is None:
        return np.ones(len(units))
    index = pd.Index(systems)
    ia, ib = index.get_indexer(a), index.get_indexer(b)
    known = (ia >= 0) & (ib >= 0)
    w = np.zeros(len(units))
    if newcomer:
        if newcomer in systems:
            opp = np.where(a == newcomer, ib, ia)
            ok = known & (opp >= 0)
            w[ok] = newcomer_weights(boot, point, index.get_loc(newcomer), opp[ok])
    else:
        w[known] = round_weights(boot, point, ia[known], ib[known])
    top = w.max() if len(w) and w.max() > 0 else 1.0
    w[~known] = top
    return w


def cost_scenarios(design: pd.DataFrame, settings: dict, expected: dict, seed: int) -> dict[str, pd.DataFrame]:
    """The pairs of ``design`` (the fixed design's) an adaptive design would judge, for the call preview:
    ``worst case`` what its budget allows (every pair at budget 1.0; adding a model: every pair without it and the
    budget's share of its own), ``expected`` the SIMULATED median share ``expected`` holds
    (``workflow/resources/adaptive/expected.yaml``, written by ``tests/benchmarks/bench_adaptive.py --write``: a new
    study to the fixed design's rank stability, a newcomer to +-15 Elo, scaled by ``(15 / half_width)^2`` for
    another target: comparisons grow with the inverse square of the precision), at least round 0's. The pairs are
    the first of :func:`draw_order`, so their prompts are the design's own."""
    rank = draw_order(design["pair_id"].astype(str).to_numpy(), seed)
    newcomer = settings.get("newcomer")
    mine = involving(design, newcomer) if newcomer else np.ones(len(design), dtype=bool)
    n = int(mine.sum())
    if newcomer:
        share = expected["newcomer_share"] * (expected["newcomer_half_width"] / settings["half_width"]) ** 2
    else:
        share = expected["new_study_share"]
    worst = int(np.floor(settings["budget"] * n + 1e-9))
    likely = min(worst, max(int(round(min(share, 1.0) * n)), int(round(settings["first"] * n))))

    def first(k):
        rows = np.flatnonzero(mine)
        keep = ~mine
        keep[rows[np.argsort(rank[rows], kind="stable")[:k]]] = True
        return design[keep]

    return {"worst case": first(worst), "expected": first(likely)}
