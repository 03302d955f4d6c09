"""Pair design: which completions are compared, in which A/B order (HEART paper §4.2, §9.1, §9.5-9.6).

A *completion* is one row of a system's completions table, identified by
``(system, contributor_id)``; model systems and "original" have one per item,
"human" up to three (one per contributor). For every item the candidate pairs are

* every two model completions (kind "model-model"), and
* every model completion against the original reply ("dataset-model") and against
  every human completion ("human-model").

Every pair holds at least one model ("model vs. model and model vs. human", §4.2):
humans are not compared with each other nor with the original reply.

Stable under adding a system. A study grows: the authors' release is built around a
script that adds a new model to the leaderboard. Adding a system must pay only for
the pairs it is in, so nothing about an existing pair may depend on which other pairs
exist. Each pair's A/B order and its place in a budget therefore come from its own
hash and the seed, never from one random stream over all pairs:

* ``pair_id`` is a content hash of (item, the two completions, sorted);
* the A/B order: the sorted-first completion is shown as A when
  :func:`unit` (seed, "order", pair_id) < 1/2 -- a fair coin per pair;
* a budget (``sample``: kind -> inclusion rate, config ``judging.pair_sample``) keeps a
  pair of that kind when :func:`unit` (seed, "sample", pair_id) < rate (Poisson sampling
  by hash): the expected number of pairs is rate x candidates, every pair is kept or
  dropped on its own, and a pair kept before a system was added is kept after.

(A fixed number of pairs per item, as a balanced draw would give, cannot be stable: a
new system's candidates would displace existing ones. Rates can.)
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd

from heart.items import item_table as items_mod

COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "system_a", "contributor_a",
           "system_b", "contributor_b", "kind"]
#: The kinds of pair (sources of the two completions, sorted): the keys of a budget.
KINDS = ("model-model", "human-model", "dataset-model")


def completion_ref(system: str, contributor) -> str:
    """How a completion is named: its system, or ``<system>#<contributor>`` for a writer's."""
    return system if contributor is None or pd.isna(contributor) else f"{system}#{contributor}"


def key_text(values) -> np.ndarray:
    """Ids (systems, contributor ids) as text for joining completions: "" where missing (None, NaN, NA), so a
    completion without a contributor is the one anonymous completion of its system in a context."""
    values = pd.Series(values, dtype=object).to_numpy(dtype=object)
    return np.where(pd.isna(values), "", values).astype(str).astype(object)


def pair_id(item_id: str, ref_a: str, ref_b: str) -> str:
    """A stable id for an unordered pair of completions of one item (16 hex digits)."""
    first, second = sorted((ref_a, ref_b))
    return hashlib.sha256(f"{item_id}\x1f{first}\x1f{second}".encode()).hexdigest()[:16]


def unit(seed: int, purpose: str, key: str) -> float:
    """A number in [0, 1) fixed by (seed, purpose, key): the pair's own coin, independent of other pairs."""
    digest = hashlib.sha256(f"{seed}\x1f{purpose}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def source_of(system: str, contributor, sources: dict | None = None) -> str:
    """A completion's source: ``sources[system]`` if given, else human (a contributor, or system
    'human'), dataset (system 'original') or model."""
    if sources and system in sources:
        return sources[system]
    if not (contributor is None or pd.isna(contributor)) or system == "human":
        return "human"
    return "dataset" if system == "original" else "model"


def _kind(source_a: str, source_b: str) -> str:
    return "-".join(sorted((source_a, source_b)))  # e.g. "model-model", "human-model", "dataset-model"


def check_sample(sample: dict | None) -> dict:
    """A budget as kind -> rate in [0, 1]; kinds not named keep every pair (rate 1)."""
    sample = dict(sample or {})
    for kind, rate in sample.items():
        if kind not in KINDS:
            raise ValueError(f"judging.pair_sample: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        if rate is None or not 0 <= float(rate) <= 1:
            raise ValueError(f"judging.pair_sample.{kind}: {rate!r} is not a rate in [0, 1]")
    return {kind: float(sample.get(kind, 1.0)) for kind in KINDS}


def design(completions: pd.DataFrame, items: pd.DataFrame, seed: int, sample: dict | None = None
           ) -> pd.DataFrame:
    """The pairs to judge (``pairs.schema.yaml``), each in its own seeded A/B order (module docstring).

    Parameters
    ----------
    completions : pandas.DataFrame
        item_id, system, source ("model"/"dataset"/"human"), contributor_id, text; empty texts are left out.
    items : pandas.DataFrame
        The items table (item_id, subset and what :func:`heart.items.item_table.clusters` reads).
    seed : int
        Seed of every pair's A/B coin and budget coin.
    sample : dict, optional
        kind -> inclusion rate (:data:`KINDS`); ``None`` keeps every candidate pair.
    """
    rates = check_sample(sample)
    meta = items.set_index("item_id")[["subset"]].assign(cluster=items_mod.clusters(items))
    rows = []
    comp = completions[completions["text"].str.strip().astype(bool)]
    for item_id, group in comp.groupby("item_id", sort=True):
        refs = sorted(((completion_ref(r.system, r.contributor_id), r) for r in group.itertuples()),
                      key=lambda x: x[0])
        cluster, subset = meta.at[item_id, "cluster"], meta.at[item_id, "subset"]  # once per item, not per pair
        # a pair holds a model, and two systems (two completions of one system rate nothing)
        for (ref_1, c1), (ref_2, c2) in itertools.combinations(refs, 2):
            if "model" not in (c1.source, c2.source) or c1.system == c2.system:
                continue
            pid, kind = pair_id(item_id, ref_1, ref_2), _kind(c1.source, c2.source)
            if kind in rates and unit(seed, "sample", pid) >= rates[kind]:
                continue
            first, second = (c1, c2) if unit(seed, "order", pid) < 0.5 else (c2, c1)
            rows.append({
                "pair_id": pid, "item_id": item_id,
                "conversation_id": cluster, "subset": subset,
                "system_a": first.system, "contributor_a": first.contributor_id,
                "system_b": second.system, "contributor_b": second.contributor_id,
                "kind": kind,
            })
    return pd.DataFrame(rows, columns=COLUMNS).sort_values("pair_id", ignore_index=True)


def completion_text(completions: pd.DataFrame) -> dict[tuple, str]:
    """(item_id, system, contributor_id or None) -> text, for looking pairs' texts up."""
    return {(r.item_id, r.system, None if pd.isna(r.contributor_id) else r.contributor_id): r.text
            for r in completions.itertuples()}
