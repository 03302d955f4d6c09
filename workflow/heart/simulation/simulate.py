"""SIMULATED judgments and strategy tags, for validating the statistics and rendering at paper scale.

Nothing here is data. Every table made here carries ``attrs["simulated"] = True``
and every judge and rater name starts with ``sim-``, so a simulated row cannot be
mistaken for a real judgment. The generating model is a Bradley–Terry model with
known strengths (``true_theta``), a per-conversation random effect (so that
comparisons within a conversation are correlated, which is what the cluster
bootstrap is for) and judge-specific noise; axis marks follow per-axis strengths
around the overall one.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from heart.judging.combine import JUDGMENT_COLUMNS
from heart.stats import bradley_terry as bt
from heart.common.vocabulary import AXES



def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def win_probability(elo_a, elo_b):
    """P(a beats b) under Bradley–Terry at Elo ratings (HEART §9.8: theta = (elo - 1500) / (400 / ln 10))."""
    return _sigmoid((np.asarray(elo_a, dtype=float) - np.asarray(elo_b, dtype=float)) / bt.ELO_SCALE)


def judgments(n_systems: int = 21, n_items: int = 300, n_adversarial: int = 20, pairs_per_item: int = 47,
              llm_judges: int = 3, human_raters: int = 5, human_pairs: int = 300, seed: int = 0
              ) -> tuple[pd.DataFrame, pd.Series]:
    """A SIMULATED judgments table (``judgments.schema.yaml``) and the true strengths it was drawn from.

    Defaults give the paper's scale: 300 items (20 adversarial), 21 systems
    ("sim-model-01" ..., "original", "human"), 47 pairs per item judged by 3 LLM
    judges (42,300 LLM comparisons) and 300 pairs judged by 5 human raters each.
    """
    rng = np.random.default_rng(seed)
    models = [f"sim-model-{k:02d}" for k in range(1, n_systems - 1)]
    systems = models + ["original", "human"]
    theta = pd.Series(np.sort(rng.normal(0, 0.6, len(systems)))[::-1], index=systems)
    theta["original"] = theta.min() - 0.3
    axis_theta = {a: theta + rng.normal(0, 0.25, len(systems)) for a in AXES}
    rows = []
    n_pairs_total = 0
    for i in range(n_items):
        item, conv = f"sim-item-{i:03d}", str(100000 + i)
        subset = "adversarial" if i >= n_items - n_adversarial else "regular"
        conv_effect = rng.normal(0, 0.5, len(systems))
        cand = [(a, b) for ai, a in enumerate(systems) for b in systems[ai + 1:]
                if "model" in (_source(a), _source(b))]
        chosen = rng.choice(len(cand), size=min(pairs_per_item, len(cand)), replace=False)
        for c in chosen:
            a, b = cand[c] if rng.random() < 0.5 else cand[c][::-1]
            pid = hashlib.sha256(f"{item}|{a}|{b}".encode()).hexdigest()[:16]
            n_pairs_total += 1
            base = theta[a] - theta[b] + conv_effect[systems.index(a)] - conv_effect[systems.index(b)]
            kind = "-".join(sorted((_source(a), _source(b))))
            meta = {"pair_id": pid, "item_id": item, "conversation_id": conv, "subset": subset,
                    "system_a": a, "contributor_a": "sim-person-1" if a == "human" else None,
                    "system_b": b, "contributor_b": "sim-person-1" if b == "human" else None, "kind": kind}
            for j in range(llm_judges):
                judge = f"sim-judge-{j + 1}"
                p = _sigmoid(base + rng.normal(0, 0.3))
                a_wins = rng.random() < p
                strength = int(1 + rng.binomial(4, min(1.0, abs(p - 0.5) * 2)))
                row = {**meta, "judge": judge, "judge_kind": "llm", "status": "ok", "winner": "a" if a_wins else "b",
                       "strength": strength, "preference": None, "n_orders": 2,
                       "flipped": bool(rng.random() < 0.1), "rationale": "SIMULATED"}
                for ax in AXES:
                    pa = _sigmoid(axis_theta[ax][a] - axis_theta[ax][b] + 0.7 * (1 if a_wins else -1))
                    mark = 0 if rng.random() < 0.3 else int(rng.integers(1, 4))
                    row[f"axis_{ax}"] = mark * (1 if rng.random() < pa else -1)
                rows.append(row)
            if n_pairs_total <= human_pairs:
                for r in range(human_raters):
                    p = _sigmoid(base + rng.normal(0, 0.6))
                    pref = int(np.clip(np.round((p - 0.5) * 5 + rng.normal(0, 0.7)), -2, 2))
                    rows.append({**meta, "judge": f"human:sim-rater-{r + 1}", "judge_kind": "human",
                                 "status": "tie" if pref == 0 else "ok",
                                 "winner": None if pref == 0 else ("a" if pref > 0 else "b"),
                                 "strength": None if pref == 0 else (1 if abs(pref) == 1 else 3),
                                 "preference": pref, "n_orders": None, "flipped": None,
                                 **{f"axis_{ax}": None for ax in AXES}, "rationale": "SIMULATED"})
    out = pd.DataFrame(rows).reindex(columns=JUDGMENT_COLUMNS)
    for col in ("strength", "preference", "n_orders", *(f"axis_{a}" for a in AXES)):
        out[col] = out[col].astype("Int64")
    out["flipped"] = out["flipped"].astype("boolean")
    out.attrs["simulated"] = True
    return out, theta - theta.mean()


def at_elo(elo: pd.Series, n_items: int = 300, n_adversarial: int = 20, pairs_per_item: int = 47,
           judges: int = 3, seed: int = 0) -> pd.DataFrame:
    """SIMULATED LLM judgments drawn from a Bradley–Terry model at known Elo ratings (a known-answer test).

    ``elo`` maps system -> Elo (HEART §9.8: ``theta = (elo - 1500) ln 10 / 400``). Per item,
    ``pairs_per_item`` distinct pairs of systems in a random order, each judged by ``judges`` judges
    (``sim-judge-k``), the first system winning with probability ``sigmoid(theta_a - theta_b)``:
    no conversation effect and no judge noise, so a fit on them estimates ``elo`` itself (less its
    mean, the Elo scale's centre). Strength is 3 throughout (the fit's weights then change nothing);
    axis marks agree with the winner. A system named "human" is one writer (``sim-writer-1``).
    """
    rng = np.random.default_rng(seed)
    systems = list(elo.index)
    ratings = elo.to_numpy(dtype=float)
    cand = np.array([(a, b) for a in range(len(systems)) for b in range(a + 1, len(systems))])
    per_item = min(pairs_per_item, len(cand))
    picks = np.concatenate([rng.choice(len(cand), size=per_item, replace=False) for _ in range(n_items)])
    a, b = cand[picks, 0], cand[picks, 1]
    swap = rng.random(len(a)) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    item = np.repeat(np.arange(n_items), per_item)
    names = np.array(systems, dtype=object)
    frames = []
    for j in range(judges):
        a_wins = rng.random(len(a)) < win_probability(ratings[a], ratings[b])
        mark = np.where(a_wins, 2, -2)
        frames.append(pd.DataFrame({
            "pair_id": [f"sim-pair-{i:03d}-{x}-{y}" for i, x, y in zip(item, a, b)],
            "item_id": [f"sim-item-{i:03d}" for i in item], "conversation_id": (100000 + item).astype(str),
            "subset": np.where(item >= n_items - n_adversarial, "adversarial", "regular"),
            "system_a": names[a], "contributor_a": np.where(names[a] == "human", "sim-writer-1", None),
            "system_b": names[b], "contributor_b": np.where(names[b] == "human", "sim-writer-1", None),
            "judge": f"sim-judge-{j + 1}", "judge_kind": "llm", "status": "ok",
            "winner": np.where(a_wins, "a", "b"), "strength": 3, "n_orders": 2, "flipped": False,
            "rationale": "SIMULATED", **{f"axis_{ax}": mark for ax in AXES}}))
    out = pd.concat(frames, ignore_index=True).reindex(columns=JUDGMENT_COLUMNS)
    for col in ("strength", "preference", "n_orders", *(f"axis_{a}" for a in AXES)):
        out[col] = out[col].astype("Int64")
    out["flipped"] = out["flipped"].astype("boolean")
    out.attrs["simulated"] = True
    return out


def _source(system: str) -> str:
    return {"original": "dataset", "human": "human"}.get(system, "model")


def strategy_tags(systems, strategies, n_items: int = 300, seed: int = 0) -> pd.DataFrame:
    """SIMULATED strategy tags (``strategy_tags.schema.yaml``): system-specific usage rates."""
    rng = np.random.default_rng(seed)
    rows = []
    rates = {s: rng.beta(1.2, 3.0, len(strategies)) for s in systems}
    for i in range(n_items):
        for s in systems:
            used = rng.random(len(strategies)) < rates[s]
            for k, strategy in enumerate(strategies):
                rows.append({"item_id": f"sim-item-{i:03d}", "system": s,
                             "contributor_id": "sim-person-1" if s == "human" else None, "tagger": "sim-tagger",
                             "strategy": strategy, "label": "present" if used[k] else "absent",
                             "probability": float(0.9 if used[k] else 0.1), "evidence": "SIMULATED", "parse_ok": True,
                             "parse_error": None, "cache_key": "simulated", "from_cache": False,
                             "neutralised_tokens": 0})
    out = pd.DataFrame(rows)
    out.attrs["simulated"] = True
    return out
