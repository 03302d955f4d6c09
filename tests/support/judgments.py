"""Hand-made and random judgments tables (SYNTHETIC) for the statistics' tests: one row per (pair, LLM judge)
or (pair, human rater), with the schema's dtypes."""

from __future__ import annotations

import numpy as np

from support.tables import JUDGMENT_AXES as AXES, judgments_frame as table


def judgment(pair, conv, judge, winner=None, status=None, preference=None, subset="regular",
             kind="model-model", system_a="m1", system_b="m2", contributor_a=None, contributor_b=None):
    """One row of a judgments table; judges named ``human:<id>`` are human raters."""
    human = judge.startswith("human:")
    if status is None:
        status = "ok" if winner else ("tie" if human else "inconsistent")
    if human and preference is None:
        preference = {"a": 1, "b": -1, None: 0}[winner]
    return {"pair_id": pair, "item_id": f"item-{pair}", "conversation_id": conv, "subset": subset,
            "system_a": system_a, "contributor_a": contributor_a, "system_b": system_b,
            "contributor_b": contributor_b, "kind": kind, "judge": judge,
            "judge_kind": "human" if human else "llm", "status": status, "winner": winner,
            "strength": 1 if winner else None, "preference": preference if human else None,
            "n_orders": None if human else 2, "flipped": None if human else False,
            **{a: None if human else 0 for a in AXES}}


def row(frame, **where):
    mask = np.ones(len(frame), bool)
    for k, v in where.items():
        mask &= (frame[k] == v).to_numpy()
    assert mask.sum() == 1, (where, frame)
    return frame[mask].iloc[0]


def humans(pair, conv, winners):
    return [judgment(pair, conv, f"human:r{k + 1}", w) for k, w in enumerate(winners)]


def hand_table():
    rows = [
        # p1: humans a, a, b -> a (2/3: clear); LLM: j1 a, j2 inconsistent, j3 unparsed -> a (1/2)
        *humans("p1", 1, ["a", "a", "b"]),
        judgment("p1", 1, "j1", "a"), judgment("p1", 1, "j2", None),
        judgment("p1", 1, "j3", None, status="unparsed"),
        # p2: humans a, b, about the same -> no winner (tie); LLM j1 b, j2 a -> tie
        *humans("p2", 1, ["a", "b", None]),
        judgment("p2", 1, "j1", "b"), judgment("p2", 1, "j2", "a"),
        # p3: humans a, tie, tie -> a with share 1/3 (ambiguous); LLM j1 b, j2 b -> b
        *humans("p3", 2, ["a", None, None]),
        judgment("p3", 2, "j1", "b"), judgment("p3", 2, "j2", "b"),
        # p4: no human; LLM j1 a, j2 a
        judgment("p4", 3, "j1", "a"), judgment("p4", 3, "j2", "a"),
        # p5: humans b, b, b -> b (clear); LLM j1 b, j2 a -> tie ; j3 b
        *humans("p5", 3, ["b", "b", "b"]),
        judgment("p5", 3, "j1", "b"), judgment("p5", 3, "j2", "a"), judgment("p5", 3, "j3", "b"),
    ]
    return table(rows)


def random_table(n_conv=30, pairs_per_conv=4, judges=("j1", "j2", "j3"), raters=3, p_agree=0.8, seed=0):
    """Synthetic judgments: each pair has a 'true' winner; judges and raters pick it with p_agree."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conv):
        for k in range(pairs_per_conv):
            pid, truth = f"c{c}p{k}", "ab"[rng.integers(2)]
            other = "b" if truth == "a" else "a"
            for j in [*judges, *(f"human:r{r}" for r in range(raters))]:
                rows.append(judgment(pid, c, j, truth if rng.random() < p_agree else other,
                                     subset="adversarial" if c % 5 == 0 else "regular"))
    return table(rows)
