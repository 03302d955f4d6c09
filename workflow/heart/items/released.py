"""The paper's released dialogue contexts as the study's items (``items.source: release``, rule
release_items), exactly as released, with their ESConv mapping (:mod:`heart.data.release`) and flags: a
damaged or unmatched record, a context ending on the supporter, an original reply that is not the next turn,
line breaks inside a turn; adversarial contexts carry no profile and no reply."""

from __future__ import annotations

import pandas as pd

from heart.data import release
from heart.items import item_table as items_mod
from heart.items import screening


def regular_items(records: list[dict], mapping: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """The regular records as items, exactly as released, with their mapping and flags."""
    texts = release.conversation_texts(turns)
    rows = []
    for rec, m in zip(records, mapping.itertuples()):
        history = [{"role": r, "text": t} for r, t in zip(release.roles(rec, "regular"), rec["dialogue_history"])]
        flags = []
        if m.quality != "exact":
            flags.append(m.quality)
        if m.ends_on != "seeker":
            flags.append("ends_on_supporter")
        if m.original_status != "next_turn":
            flags.append(f"original_{m.original_status}")
        if any("\n" in t or "\r" in t for t in rec["dialogue_history"]):
            flags.append("contains_newlines")
        strategies = []
        if not pd.isna(m.original_turn_index):
            labels = texts[int(m.conversation_id)][2][int(m.original_turn_index)]
            strategies = [] if labels is None else list(labels)
        rows.append({
            "item_id": screening.item_id(history), "release_key": m.release_key,
            "conversation_id": None if pd.isna(m.conversation_id) else int(m.conversation_id),
            "subset": "regular", "profile": None,
            "seeker_turn_index": None if pd.isna(m.end_turn_index) else int(m.end_turn_index),
            "history": history, "original_reply": rec["vanilla_completion"],
            "original_status": m.original_status, "original_strategies": strategies,
            "emotion_type": rec["emotion_type"], "problem_type": rec["problem_type"],
            "situation": rec["situation"], "flags": flags,
            "response_potential": None, "distress": None, "conflict": None, "help_request": None,
            "n_strategy_families": None,
        })
    return items_mod.complete(pd.DataFrame(rows))


def adversarial_items(records: list[dict], mapping: pd.DataFrame) -> pd.DataFrame:
    """The adversarial records as items of subset ``adversarial``, as released (no profile, no reply)."""
    rows = []
    for rec, m in zip(records, mapping.itertuples()):
        history = [{"role": r, "text": t} for r, t in zip(release.roles(rec, "adversarial"), rec["dialogue_history"])]
        flags = ["profile_unknown", "no_original_reply"]
        if m.ends_on != "seeker":
            flags.append("ends_on_supporter")
        rows.append({
            "item_id": screening.item_id(history), "release_key": m.release_key,
            "conversation_id": None if pd.isna(m.conversation_id) else int(m.conversation_id),
            "subset": "adversarial", "profile": None, "seeker_turn_index": None, "history": history,
            "original_reply": rec.get("vanilla_completion"), "original_status": None, "original_strategies": [],
            "emotion_type": rec["emotion_type"], "problem_type": rec["problem_type"],
            "situation": rec.get("situation"), "flags": flags,
            "response_potential": None, "distress": None, "conflict": None, "help_request": None,
            "n_strategy_families": None,
        })
    return items_mod.complete(pd.DataFrame(rows))
