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
        else:
            note = "the dataset's next supporter turn"
        rows.append({"system": system, "source": source, "status": "present" if present else "absent",
                     "n_completions": len(t), "n_items": int(t["item_id"].nunique()) if present else 0,
                     "note": note})
    return pd.DataFrame(rows)
