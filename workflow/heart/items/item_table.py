"""The evaluation items table (``workflow/schemas/tables/items.schema.yaml``), whatever made the items.

Items come from the screening of ESConv (:mod:`heart.items.screening`), from the adversarial rewriter
(:mod:`heart.items.adversarial`) or from the paper's release (:mod:`heart.data.release`). Each builder fills the
columns it knows; :func:`complete` adds the rest with the values they have for items this workflow made
itself (no release key, the dataset's next turn as the original reply, no flags) and the bootstrap
cluster, and puts the columns in the schema's order.

Keys: an item is identified by ``item_id`` (a content hash of its history, :func:`heart.items.screening.item_id`)
everywhere in the workflow; files made elsewhere may name it by its release key instead
(:func:`lookup`).
"""

from __future__ import annotations

import pandas as pd

from heart.common.tableio import table_schema

COLUMNS = table_schema("items").names


def cluster(conversation_id, release_key, item_id) -> str:
    """The bootstrap cluster of an item: its ESConv conversation (as text), else its release key, else its id.

    Items of one conversation share the cluster, so a resample draws them together (paper §9.12).
    """
    if conversation_id is not None and not pd.isna(conversation_id):
        return str(int(conversation_id))
    if release_key is not None and not pd.isna(release_key):
        return str(release_key)
    return str(item_id)


def clusters(items: pd.DataFrame) -> pd.Series:
    """The bootstrap cluster of every item, indexed by item_id: the ``cluster`` column, or made as
    :func:`cluster` makes it (item tables written before the column existed, tables built in tests)."""
    if "cluster" in items.columns:
        values = items["cluster"].astype(str)
    else:
        keys = items["release_key"] if "release_key" in items.columns else [None] * len(items)
        values = [cluster(c, k, i) for c, k, i in zip(items["conversation_id"], keys, items["item_id"])]
    return pd.Series(list(values), index=items["item_id"].to_numpy(), name="cluster")


def complete(items: pd.DataFrame) -> pd.DataFrame:
    """``items`` with every items column: missing ones get the values of a screened item, in schema order."""
    items = items.copy()
    n = len(items)
    defaults = {"release_key": [None] * n, "original_status": ["next_turn"] * n, "flags": [[] for _ in range(n)]}
    for col, values in defaults.items():
        if col not in items.columns:
            items[col] = values
    if "original_reply" in items.columns:  # no reply, nothing to say about it
        items.loc[items["original_reply"].isna(), "original_status"] = None
    items["cluster"] = [cluster(c, k, i) for c, k, i in
                        zip(items["conversation_id"], items["release_key"], items["item_id"])]
    unknown = [c for c in items.columns if c not in COLUMNS]
    if unknown:
        raise ValueError(f"items: columns {unknown} are not in items.schema.yaml")
    return items.reindex(columns=COLUMNS)


def lookup(items: pd.DataFrame) -> dict[str, str]:
    """Every key an item may be given by -- its ``item_id`` and, if it has one, its release key -- to its id.

    Raises
    ------
    ValueError
        A release key given to two items, or equal to another item's item_id.
    """
    out = {str(i): str(i) for i in items["item_id"]}
    if "release_key" in items.columns:
        for item_id, key in zip(items["item_id"], items["release_key"]):
            if key is None or pd.isna(key):
                continue
            if out.setdefault(str(key), str(item_id)) != str(item_id):
                raise ValueError(f"items table: key {key!r} names two items ({out[str(key)]!r} and {item_id!r}); "
                                 "release keys and item ids must be unique")
    return out


def key_hint(items: pd.DataFrame) -> str:
    """What an item key may be, for error messages."""
    released = sorted(k for k in items.get("release_key", pd.Series(dtype=object)).dropna())
    return (f"a release key such as {released[0]!r} or an item_id of results/items/items.parquet" if released
            else "an item_id of results/items/items.parquet")
