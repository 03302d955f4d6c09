"""Human spot-check labels of the tagger, and its per-strategy and macro F1 against them (§9.10)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from heart.common import records
from heart.tagging.taxonomy import strategy_keys


SPOT_CHECK_REQUIRED = ["item_id", "system", "strategy", "present"]
SPOT_CHECK_OPTIONAL = ["contributor_id"]
_TRUTH = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def read_spot_checks(path, taxonomy: dict, completions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Human spot-check labels (``resources/human/README.md``); errors name file, line and field.

    With ``completions`` (item_id, system, contributor_id of every tagged completion), a label for a
    completion that does not exist is an error too; so is a (completion, strategy) labelled twice.
    """
    path = Path(path)
    table = records.read_records(path, SPOT_CHECK_REQUIRED, SPOT_CHECK_OPTIONAL,
                                 ids=("item_id", "system", "contributor_id", "strategy"))
    known = set(strategy_keys(taxonomy))
    refs = None
    if completions is not None:
        refs = {(i, s, "" if c is None or pd.isna(c) else c)
                for i, s, c in completions[["item_id", "system", "contributor_id"]].itertuples(index=False)}
    present = []
    for row in table.itertuples():
        where = f"{path}, line {row.line}"
        for col in ("item_id", "system"):
            if records.is_blank(getattr(row, col)):
                raise ValueError(f"{where}: field {col!r} is empty")
        if row.strategy not in known:
            raise ValueError(f"{where}: field 'strategy' is {row.strategy!r}; "
                             f"expected one of the taxonomy keys ({', '.join(sorted(known))})")
        value = _TRUTH.get(row.present.strip().lower())
        if value is None:
            raise ValueError(f"{where}: field 'present' is {row.present!r}; expected 1/0 or true/false")
        if refs is not None and (row.item_id, row.system, row.contributor_id) not in refs:
            raise ValueError(f"{where}: fields 'item_id', 'system', 'contributor_id' ({row.item_id}, {row.system}, "
                             f"{row.contributor_id or '-'}) name no completion that was tagged")
        present.append(value)
    repeated = table[table.duplicated(["item_id", "system", "contributor_id", "strategy"], keep=False)]
    if len(repeated):
        lines = repeated["line"].tolist()
        raise ValueError(f"{path}, lines {lines[0]} and {lines[1]}: the same completion and strategy are "
                         "labelled twice; keep the adjudicated label only")
    table["present"] = present
    table["contributor_id"] = table["contributor_id"].replace("", None)
    return table


def absent_f1(taxonomy: dict) -> pd.DataFrame:
    """The F1 table when there are no human labels: every strategy and the macro row "absent", F1 null."""
    return pd.DataFrame([{"strategy": k, "status": "absent", "n": 0, "tp": 0, "fp": 0, "fn": 0, "f1": None}
                         for k in [*strategy_keys(taxonomy), "macro"]])


def f1_scores(tags: pd.DataFrame, spot: pd.DataFrame, taxonomy: dict) -> pd.DataFrame:
    """Per-strategy F1 (tagger "present" vs the human label) on the spot-checked completions, and macro F1.

    "uncertain" counts as not present (the tagger abstained); unparsed answers are left out.
    """
    tags = tags[tags["parse_ok"]].copy()
    for t in (tags, spot):
        t["contributor_id"] = t["contributor_id"].fillna("")
    merged = spot.merge(tags, on=["item_id", "system", "contributor_id", "strategy"], how="inner")
    rows = []
    for k in strategy_keys(taxonomy):
        g = merged[merged["strategy"] == k]
        pred, true = g["label"].eq("present"), g["present"].astype(bool)
        tp, fp, fn = int((pred & true).sum()), int((pred & ~true).sum()), int((~pred & true).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else np.nan
        rows.append({"strategy": k, "status": "present", "n": len(g), "tp": tp, "fp": fp, "fn": fn, "f1": f1})
    out = pd.DataFrame(rows)
    macro = {"strategy": "macro", "status": "present", "n": int(out["n"].sum()), "tp": int(out["tp"].sum()),
             "fp": int(out["fp"].sum()), "fn": int(out["fn"].sum()), "f1": float(out["f1"].mean())}
    return pd.concat([out, pd.DataFrame([macro])], ignore_index=True)
