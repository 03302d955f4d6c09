"""Shards of the LLM stages: items split by a hash of their id, and the cheap merge.

A shard is named ``"<k>of<n>"`` (1-based, e.g. ``"2of8"``). An item belongs to
shard ``sha256(item_id) mod n``, so the split does not depend on the order or
number of items, and a pair or a completion goes wherever its item goes. Tagging is split
by the reply's text instead (:func:`heart.tagging.tagger.shard_rows`): a tagger's request holds only the
text, so identical replies land in one shard and are paid for once. Every
shard of a stage reads the same inputs and keeps only its items; the merge
concatenates the shards and puts the rows in one canonical order, so the merged
table is the same whatever the number of shards.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd

from heart.common.provenance import JOB_FIELDS

_NAME = re.compile(r"^(\d+)of(\d+)$")


def names(n: int) -> list[str]:
    """The shard names of an ``n``-way split: ``["1of3", "2of3", "3of3"]``."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"the shard count must be a positive integer, got {n!r}")
    return [f"{k}of{n}" for k in range(1, n + 1)]


def parse(name: str) -> tuple[int, int]:
    """``"2of8"`` -> ``(2, 8)``; a clear error for anything else."""
    m = _NAME.match(str(name))
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"shard {name!r}: expected '<k>of<n>' with 1 <= k <= n, e.g. '2of8'")
    return int(m.group(1)), int(m.group(2))


def shard_of(item_id: str, n: int) -> int:
    """The 1-based shard of ``item_id`` in an ``n``-way split (stable across runs and machines)."""
    digest = hashlib.sha256(str(item_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def in_shard(item_ids, shard: str) -> np.ndarray:
    """Boolean mask: which of ``item_ids`` belong to ``shard``."""
    k, n = parse(shard)
    return np.array([shard_of(i, n) == k for i in item_ids], dtype=bool)


def select(df: pd.DataFrame, shard: str, column: str = "item_id") -> pd.DataFrame:
    """The rows of ``df`` whose ``column`` (an item id) falls in ``shard``, in their order."""
    return df[in_shard(df[column], shard)]


def merge(frames: list[pd.DataFrame], order: dict[str, list]) -> pd.DataFrame:
    """Concatenate shard tables and sort them canonically.

    ``order`` maps columns to the sequence that orders their values (e.g.
    ``{"item_id": items.item_id}``); rows are sorted by those positions in turn,
    stably, so rows that tie keep their order within the shard. A value missing
    from its sequence is an error: the shard holds a row the merge cannot place.
    """
    frames = [f for f in frames if len(f)] or frames[:1]
    if not frames:
        raise ValueError("no shard tables to merge")
    table = pd.concat(frames, ignore_index=True)
    keys = []
    for column, sequence in order.items():
        position = {v: i for i, v in enumerate(dict.fromkeys(sequence))}
        pos = table[column].map(position)
        if pos.isna().any():
            bad = table.loc[pos.isna(), column].iloc[0]
            raise ValueError(f"shard merge: {column} = {bad!r} is not in the table that orders {column}")
        keys.append(pos.to_numpy())
    if keys and len(table):
        table = table.iloc[np.lexsort(keys[::-1])].reset_index(drop=True)
    return table


def order_of(table: str, *, items: pd.DataFrame | None = None, pairs: pd.DataFrame | None = None,
             systems: list[str] | None = None) -> dict[str, list]:
    """The canonical row order of a sharded stage's table (see :func:`merge`)."""
    if table == "completions":
        return {"item_id": list(items["item_id"])}
    if table == "judge_verdicts":
        return {"pair_id": list(pairs["pair_id"])}
    if table == "strategy_tags":
        return {"system": list(systems), "item_id": list(items["item_id"])}
    raise ValueError(f"no shard merge is defined for table {table!r}")


def merge_provenance(provenances: list[dict], paths: list[str]) -> dict:
    """Provenance of a merged table from its shards' (each a :func:`heart.common.tableio.provenance_of` dict).

    The shards must agree on what made them (resource hashes, prompt versions, model, ...), else the
    merge would mix two versions of a stage: that is an error naming the shard. Counts (keys ``n_*``)
    are summed. The shard job's own rule and the shard names are kept.
    """
    if not provenances:
        raise ValueError("no shard provenance to merge")
    first, merged = provenances[0], {}
    for key, value in first.items():
        if key in JOB_FIELDS:
            continue
        if key.startswith("n_") and isinstance(value, int):
            merged[key] = sum(int(p.get(key) or 0) for p in provenances)
            continue
        for path, prov in zip(paths[1:], provenances[1:]):
            if prov.get(key) != value:
                raise ValueError(f"{path}: provenance field {key!r} is {prov.get(key)!r} but {paths[0]} has "
                                 f"{value!r}; the shards were made by different versions of the stage. "
                                 "Delete the stale shard files (or run snakemake with --forcerun on the "
                                 "shard rule) and rerun.")
        merged[key] = value
    merged["shard_rule"] = first.get("rule")
    merged["shards"] = [Path(p).stem for p in paths]
    return merged
