"""Spot checks of the strategy tags as the store holds them: which completion a task labels, which labels
agree, and which are open for the coordinator to adjudicate."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd


def spot_key(task: dict) -> str:
    """The completion a spot-check task labels, as text: item, system and contributor ("" for none)."""
    return "\x1f".join([task["item_id"], task["system"], task.get("contributor_id") or ""])


def begun(conn: sqlite3.Connection) -> set[str]:
    """Unanswered spot-check tasks whose completion another labeller has already labelled: kept when a new
    sample no longer draws the completion, so its second label (and so its export) is not stranded."""
    rows = conn.execute("SELECT t.task_id, t.payload, a.task_id IS NOT NULL AS done FROM tasks t "
                        "LEFT JOIN answers a USING (task_id) WHERE t.kind = 'spot_check'").fetchall()
    keys = {r["task_id"]: spot_key(json.loads(r["payload"])) for r in rows}
    labelled = {keys[r["task_id"]] for r in rows if r["done"]}
    return {r["task_id"] for r in rows if not r["done"] and keys[r["task_id"]] in labelled}


def spot_checks(answers: pd.DataFrame, decided: dict[str, list[str]]) -> dict[str, dict]:
    """Every spot-checked completion (by :func:`spot_key`): its task, its labels [(person_id, set of
    strategies)], and its status -- "adjudicated" (``decided`` holds it), "single" (one label so far),
    "agreed" (the labels are equal) or "open" (they differ: for the coordinator to adjudicate)."""
    out: dict[str, dict] = {}
    for a in answers[answers["kind"] == "spot_check"].itertuples():
        entry = out.setdefault(spot_key(a.task), {"task": a.task, "labels": []})
        entry["labels"].append((a.person_id, set(a.answer["present"])))
    for key, entry in out.items():
        sets = {frozenset(s) for _, s in entry["labels"]}
        entry["status"] = ("adjudicated" if key in decided else "single" if len(entry["labels"]) < 2
                           else "agreed" if len(sets) == 1 else "open")
    return dict(sorted(out.items()))
