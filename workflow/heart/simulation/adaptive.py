"""SIMULATED: the adaptive pair design (:mod:`heart.stats.adaptive`) against the paper's fixed design, in a world
with known answers (issue 44; ``docs/methods/adaptive-design.md``). Nothing here is data about models or people.

The world: the paper's 18 Figure 4 Elo values as the truth; 300 items in 250 conversations; every (item, pair of
systems) a candidate comparison, judged by the three judges of the paper's ensemble (families gpt, claude, gemini;
a judge never judges a pair with a system of its own family) in both shown orders. A verdict is "i wins" with
probability ``sigmoid(theta_i - theta_j + u)``, ``u ~ N(0, item_sd)`` shared by the six verdicts of one (item, pair)
(judges agree with each other about a reply pair more than chance would). Every candidate's verdicts are drawn
once per seed, so both designs read the same world. The fixed design is the paper's: each (item, pair) kept with
probability ``pair_sample`` (config/paper.yaml: 0.7714), both orders, every eligible judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from heart.stats import adaptive
from heart.stats import bradley_terry as bt
from heart.stats.bootstrap import counts as boot_counts

LABEL = "SIMULATED"
JUDGE_FAMILIES = ("gpt", "claude", "gemini")
LOGIT_PER_ELO = np.log(10) / 400


@dataclass
class World:
    """A seeded world (see the module docstring): ``elo`` the truth (K), ``families`` (K), the candidates
    (``item``, ``conv``, ``i``, ``j`` per (item, pair)), their verdict counts ``n`` and wins of ``i`` ``w_i``,
    and the fixed design's mask ``fixed``."""

    elo: np.ndarray
    families: list
    n_items: int = 300
    n_convs: int = 250
    item_sd: float = 0.5
    pair_sample: float = 0.7714
    seed: int = 0
    item: np.ndarray = field(init=False)

    def __post_init__(self):
        rng = np.random.default_rng(self.seed)
        K = len(self.elo)
        pairs = np.array(list(combinations(range(K), 2)))
        self.pairs = pairs
        self.item = np.repeat(np.arange(self.n_items), len(pairs))
        self.conv = self.item % self.n_convs
        self.pair = np.tile(np.arange(len(pairs)), self.n_items)
        self.i, self.j = pairs[self.pair, 0], pairs[self.pair, 1]
        fam = np.asarray(self.families)
        judges = np.array([[f != fam[a] and f != fam[b] for f in JUDGE_FAMILIES] for a, b in pairs]).sum(axis=1)
        self.n = 2 * judges[self.pair]  # both orders of every eligible judge
        theta = np.asarray(self.elo, dtype=float) * LOGIT_PER_ELO
        u = rng.normal(0, self.item_sd, self.item.size)
        p = 1 / (1 + np.exp(-(theta[self.i] - theta[self.j] + u)))
        self.w_i = rng.binomial(self.n, p)
        self.fixed = rng.random(self.item.size) < self.pair_sample

    @property
    def K(self) -> int:
        return len(self.elo)


def tensor(world: World, chosen: np.ndarray, systems=None) -> np.ndarray:
    """Per conversation the K x K win matrix of the ``chosen`` candidates (indices), over ``systems`` (indices;
    all by default): (n_convs, K', K')."""
    systems = np.arange(world.K) if systems is None else np.asarray(systems)
    where = -np.ones(world.K, dtype=np.int64)
    where[systems] = np.arange(systems.size)
    c = np.asarray(chosen)
    a, b = where[world.i[c]], where[world.j[c]]
    keep = (a >= 0) & (b >= 0)
    c, a, b = c[keep], a[keep], b[keep]
    K = systems.size
    T = np.zeros(world.n_convs * K * K)
    np.add.at(T, world.conv[c] * K * K + a * K + b, world.w_i[c])
    np.add.at(T, world.conv[c] * K * K + b * K + a, world.n[c] - world.w_i[c])
    return T.reshape(world.n_convs, K, K)


def fit(T: np.ndarray, n_boot: int, seed: int, alpha: float = bt.DEFAULT_ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Point Elo and the conversation bootstrap's replicates (n_boot x K) of win tensor ``T``."""
    K = T.shape[-1]
    flat = T.reshape(T.shape[0], K * K)
    theta = bt.fit_matrix(flat.sum(axis=0).reshape(K, K), alpha=alpha)
    W = (boot_counts(T.shape[0], n_boot, seed) @ flat).reshape(n_boot, K, K)
    return bt.elo(theta), bt.elo(bt.fit_matrix(W, alpha=alpha, theta0=theta))


def covered(boot, truth, ci: float = 0.95) -> np.ndarray:
    """Per system: does the percentile interval of ``boot`` (centred Elo) cover ``truth`` (centred the same)?"""
    lo, hi = np.percentile(np.asarray(boot), [50 * (1 - ci), 50 * (1 + ci)], axis=0)
    t = np.asarray(truth, dtype=float)
    t = t - t.mean() + 1500.0
    return (lo <= t) & (t <= hi)


def new_study(world: World, n_boot: int = 200, seed: int = 0, first: float = 0.05, step: float = 0.02,
              floor: float = 0.0) -> dict:
    """The fixed design and the adaptive one on the same world. Adaptive: a first round of ``first`` of the
    fixed design's comparisons, spread evenly over the pairs, then rounds of ``step`` allocated by
    :func:`heart.stats.adaptive.round_weights` (items of a pair taken in a seeded order, fewest-used conversation
    first; once the weighted pairs have no item left, the rest of a round is spread over the others), until
    the ranking is as settled as the fixed design's: mean τ at least its τ and the rank intervals' widths
    summed at most its sum (``met``; else every candidate was judged). Returns both designs' verdicts,
    comparisons, stability and coverage of the truth (:func:`covered`)."""
    rng = np.random.default_rng(seed + 1)
    fixed = np.flatnonzero(world.fixed)
    f_point, f_boot = fit(tensor(world, fixed), n_boot, seed)
    f_stab = adaptive.rank_stability(f_boot, f_point)
    order = rng.permutation(world.item.size)  # the seeded order in which a pair's items are taken
    by_pair = [order[world.pair[order] == p] for p in range(len(world.pairs))]
    used = np.zeros(len(world.pairs), dtype=np.int64)
    chosen: list[np.ndarray] = []
    budget = fixed.size
    P = len(world.pairs)
    weights = np.ones(P)
    rounds = []
    share = first
    capacity = np.array([len(b) for b in by_pair])
    met = False
    while True:
        n_round = int(round(share * budget))
        take = adaptive.allocate(weights, capacity - used, n_round)
        if take.sum() < n_round:  # the weighted pairs are used up: the rest of the round spread over the others
            take += adaptive.allocate(np.ones(P), capacity - used - take, n_round - int(take.sum()))
        if take.sum() == 0:  # every candidate judged
            break
        for p in np.flatnonzero(take):
            chosen.append(by_pair[p][used[p]:used[p] + take[p]])
        used += take
        picked = np.concatenate(chosen)
        point, boot = fit(tensor(world, picked), n_boot, seed + len(rounds) + 1)
        stab = adaptive.rank_stability(boot, point)
        rounds.append({"comparisons": int(picked.size), "verdicts": int(world.n[picked].sum()),
                       "tau": stab["tau"], "width_sum": float(stab["widths"].sum())})
        if stab["tau"] >= f_stab["tau"] and stab["widths"].sum() <= f_stab["widths"].sum():
            met = True
            break
        weights = adaptive.round_weights(boot, point, world.pairs[:, 0], world.pairs[:, 1], floor)
        share = step
    return {"fixed": {"comparisons": int(fixed.size), "verdicts": int(world.n[fixed].sum()), "tau": f_stab["tau"],
                      "width_sum": float(f_stab["widths"].sum()), "covered": covered(f_boot, world.elo)},
            "adaptive": {**rounds[-1], "rounds": len(rounds), "met": met, "covered": covered(boot, world.elo),
                         "history": rounds}}


def add_model(world: World, new: int, n_boot: int = 200, seed: int = 0, first: float = 0.05, step: float = 0.02,
              half_width: float = 15.0, confirm: int = 0, stop: str = "information") -> dict:
    """One system (``new``) placed into a study whose other systems were judged by the fixed design: its
    comparisons chosen in rounds (a first round of ``first`` of its fixed-design comparisons spread over its
    opponents, then rounds of ``step`` by :func:`heart.stats.adaptive.newcomer_weights`), until its Elo
    relative to the others' mean is known to ``half_width`` (95 %), then ``confirm``
    more rounds (the interval reported is the last one's: an interval that met the target by chance is not the
    one reported, against optional stopping). ``stop``: "information" judges the precision by the Fisher
    information of its comparisons at the current estimates (``1.96 / sqrt(sum n p (1 - p))``, on the Elo scale),
    "bootstrap" by the bootstrap interval's half-width itself; stopping on the bootstrap's own noisy width picks
    intervals that are narrow by chance (measured: ``docs/methods/adaptive-design.md``). Its full-design estimate is
    the fit with all its fixed-design comparisons."""
    rng = np.random.default_rng(seed + 2)
    mine = (world.i == new) | (world.j == new)
    base = np.flatnonzero(world.fixed & ~mine)
    full = np.flatnonzero(world.fixed)
    own_fixed = int((world.fixed & mine).sum())

    def relative(elo):  # the newcomer against the others' mean: the same anchor in every fit
        return elo[..., new] - np.delete(elo, new, axis=-1).mean(axis=-1)

    f_point, f_boot = fit(tensor(world, full), n_boot, seed)
    truth = relative(np.asarray(world.elo, dtype=float))
    opponents = np.array([k for k in range(world.K) if k != new])
    cand = np.flatnonzero(mine)
    cand = cand[rng.permutation(cand.size)]
    other = np.where(world.i[cand] == new, world.j[cand], world.i[cand])
    by_opp = [cand[other == o] for o in opponents]
    used = np.zeros(opponents.size, dtype=np.int64)
    weights = np.ones(opponents.size)
    chosen, share, rounds, extra = [], first, 0, None
    while True:
        take = adaptive.allocate(weights, np.array([len(b) for b in by_opp]) - used, int(round(share * own_fixed)))
        if take.sum() == 0:
            break
        for k in np.flatnonzero(take):
            chosen.append(by_opp[k][used[k]:used[k] + take[k]])
        used += take
        picked = np.concatenate([base, *chosen])
        point, boot = fit(tensor(world, picked), n_boot, seed + rounds + 1)
        rounds += 1
        rel = relative(boot)
        lo, hi = np.percentile(rel, [2.5, 97.5])
        own_picked = np.concatenate(chosen)
        if stop == "information":  # the design's own precision at the current estimates: not the interval's noise
            width = adaptive.information_half_width(point[world.i[own_picked]] - point[world.j[own_picked]],
                                                    world.n[own_picked])
        else:
            width = (hi - lo) / 2
        if extra is not None:
            extra -= 1
            if extra <= 0:
                break
        elif width <= half_width:
            if confirm <= 0:
                break
            extra = confirm
        weights = adaptive.newcomer_weights(boot, point, new, opponents)
        share = step
    own = int(sum(c.size for c in chosen))
    return {"own_fixed": own_fixed, "own_used": own, "share": own / own_fixed, "rounds": rounds, "stop_width": width,
            "estimate": float(relative(point)), "full_estimate": float(relative(f_point)),
            "truth": float(truth), "lo": float(lo), "hi": float(hi), "covers": bool(lo <= truth <= hi),
            "full_half_width": float(np.diff(np.percentile(relative(f_boot), [2.5, 97.5]))[0] / 2)}
