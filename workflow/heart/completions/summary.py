"""One row per system: present or absent, and why (rule summarize_systems)."""

from __future__ import annotations

import pandas as pd


def summarize(tables: dict[str, pd.DataFrame], human_path, human_file: bool = False,
              imported: dict | None = None) -> pd.DataFrame:
    """One row per system: source, present/absent, completions, items covered, and a note.

    ``human_file``: whether a file was found at ``human_path`` (an absent human system then says that
    nothing in it could be used, not that there is no file). ``imported``: system -> file of the systems
    whose completions were made elsewhere.
    """
    imported = imported or {}
    rows = []
    for system, t in tables.items():
        source = "human" if system == "human" else "dataset" if system == "original" else "model"
        present = len(t) > 0
        cut = _cut(t) if source == "model" else None
        if system == "human":
            note = (f"{t['contributor_id'].nunique()} contributors, "
                    f"{t.groupby('item_id').size().mean():.1f} per item" if present
                    else f"absent: {human_path} holds no usable completions (see human_violations.parquet)"
                    if human_file else f"absent: no human completions file at {human_path}")
        elif system in imported:
            note = (f"imported from {imported[system]}" if present
                    else f"absent: {imported[system]} holds no usable completions of it (see its violations table)")
        elif source == "model":
            note = f"model {t['model'].iloc[0]}, prompt {t['prompt_template'].iloc[0]}" if present else "absent"
            if present and cut is not None:
                trimmed = int(t["postprocessing"].map(lambda s: "trimmed_to_last_sentence" in list(s)).sum())
                note += (f"; {cut[0]} of {cut[1]} replies with a finish reason cut by the token limit"
                         + (f" ({trimmed} ended at their last complete sentence)" if cut[0] else ""))
        else:
            note = "the dataset's next supporter turn"
        rows.append({"system": system, "source": source, "status": "present" if present else "absent",
                     "n_completions": len(t), "n_items": int(t["item_id"].nunique()) if present else 0,
                     "n_cut": None if cut is None else cut[0],
                     "share_cut": None if cut is None else cut[0] / cut[1],
                     "note": note})
    return pd.DataFrame(rows).astype({"n_cut": "Int64", "share_cut": "Float64"})


def _cut(t: pd.DataFrame) -> tuple[int, int] | None:
    """(replies cut by the token limit, replies whose finish reason is known) of a model system's completions;
    None when no finish reason is known (answers cached before it was recorded, a provider that gives none)."""
    if "finish_reason" not in t.columns:
        return None
    known = t["finish_reason"].dropna()
    return (int(known.eq("length").sum()), len(known)) if len(known) else None
