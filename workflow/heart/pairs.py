"""Pair design: which completions are compared, in which A/B order (HEART paper §4.2, §9.1).

A *completion* is one row of a system's completions table, identified by
``(system, contributor_id)``; model systems and "original" have one per item,
"human" up to three (one per contributor). For every item the pairs are

* every two model completions (model–model), and
* every model completion against the original reply and against every human
  completion (model–original, model–human).

Every pair holds at least one model ("model–model and model–human/original",
as in the paper): humans are not compared with each other nor with the
original reply.

With ``per_item`` set, a balanced budget is drawn instead of all pairs: each
item gets that many pairs, chosen so that every completion of the item appears
as evenly as possible (a round-robin over a seeded shuffle of the candidate
pairs). The A/B order of every pair is randomized with the seed; ``pair_id``
is a content hash of (item, first, second) and so does not depend on the order
the pairs were built in.
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd

from heart import items as items_mod

COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "system_a", "contributor_a",
           "system_b", "contributor_b", "kind"]


def completion_ref(system: str, contributor) -> str:
    """How a completion is named: its system, or ``<system>#<contributor>`` for a writer's."""
    return system if contributor is None or pd.isna(contributor) else f"{system}#{contributor}"


def pair_id(item_id: str, ref_a: str, ref_b: str) -> str:
    """A stable id for an unordered pair of completions of one item (16 hex digits)."""
    first, second = sorted((ref_a, ref_b))
    return hashlib.sha256(f"{item_id}\x1f{first}\x1f{second}".encode()).hexdigest()[:16]


def _kind(source_a: str, source_b: str) -> str:
    return "-".join(sorted((source_a, source_b)))  # e.g. "model-model", "human-model", "dataset-model"


def _balanced(candidates: list, k: int, rng: np.random.Generator) -> list:
    """k pairs from candidates, each completion used as evenly as possible."""
    order = [candidates[i] for i in rng.permutation(len(candidates))]
    use: dict[str, int] = {}
    chosen = []
    while order and len(chosen) < k:
        best = min(order, key=lambda p: (use.get(p[0][0], 0) + use.get(p[1][0], 0),
                                         max(use.get(p[0][0], 0), use.get(p[1][0], 0))))
        order.remove(best)
        chosen.append(best)
        for ref, _ in best:
            use[ref] = use.get(ref, 0) + 1
    return chosen


def design(completions: pd.DataFrame, items: pd.DataFrame, seed: int, per_item: int | None = None
           ) -> pd.DataFrame:
    """The pairs to judge (``pairs.schema.yaml``), A/B order randomized with ``seed``."""
    rng = np.random.default_rng(seed)
    meta = items.set_index("item_id")[["subset"]].assign(cluster=items_mod.clusters(items))
    rows = []
    comp = completions[completions["text"].str.strip().astype(bool)]
    for item_id, group in comp.groupby("item_id", sort=True):
        refs = sorted(((completion_ref(r.system, r.contributor_id), r) for r in group.itertuples()),
                      key=lambda x: x[0])
        # a pair holds a model, and two systems (two completions of one system rate nothing)
        candidates = [(a, b) for a, b in itertools.combinations(refs, 2)
                      if "model" in (a[1].source, b[1].source) and a[1].system != b[1].system]
        if per_item is not None and per_item < len(candidates):
            candidates = _balanced(candidates, per_item, rng)
        for (ref_1, c1), (ref_2, c2) in candidates:
            first, second = (c1, c2) if rng.random() < 0.5 else (c2, c1)
            rows.append({
                "pair_id": pair_id(item_id, ref_1, ref_2), "item_id": item_id,
                "conversation_id": meta.at[item_id, "cluster"],
                "subset": meta.at[item_id, "subset"],
                "system_a": first.system, "contributor_a": first.contributor_id,
                "system_b": second.system, "contributor_b": second.contributor_id,
                "kind": _kind(c1.source, c2.source),
            })
    return pd.DataFrame(rows, columns=COLUMNS).sort_values("pair_id", ignore_index=True)


def completion_text(completions: pd.DataFrame) -> dict[tuple, str]:
    """(item_id, system, contributor_id or None) -> text, for looking pairs' texts up."""
    return {(r.item_id, r.system, None if pd.isna(r.contributor_id) else r.contributor_id): r.text
            for r in completions.itertuples()}
