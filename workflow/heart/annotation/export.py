"""The store's answers as the import files the workflow reads (``resources/human/README.md``).

- writing answers -> human completions (item_id, contributor_id, text, and seconds_spent, pasted: the page saw
  a paste, or the text arrived faster than anyone types);
- rating answers -> human judgments (rater_id, item_id, shown_a, shown_b, choice, seconds_spent,
  rationale, qc_expected, pair_id); quality-check rows carry ``qc_expected``;
- spot-check answers -> strategy labels (item_id, system, contributor_id, strategy, present), one row
  per strategy of each completion whose labellers agree, or that the coordinator adjudicated; a
  completion with one label so far, or with an open disagreement, is left out (and counted);
- safety-review answers -> safety reviews (item_id, system, contributor_id, reviewer_id, decision, reason,
  seconds_spent), one row per answer: every reviewer's decision is kept (two who disagree leave the flag
  disputed: :mod:`heart.completions.safety_review`).

Every answer is exported (an answered task is never retired: :func:`heart.annotation.store.load_tasks`).
Files are written atomically, and each is recorded with its sha256 in a manifest beside it, so a later
export knows which files it may replace: one it did not write (a hand-made import) is never overwritten.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from heart.annotation import db, spot_labels, store
from heart.common.atomic import atomic_path, sha256_file
from heart.common.export import spreadsheet_safe
from heart.common.vocabulary import AXIS_COLUMNS

COMPLETION_COLUMNS = ["item_id", "contributor_id", "text", "seconds_spent", "pasted"]
JUDGMENT_COLUMNS = ["rater_id", "item_id", "shown_a", "shown_b", "choice", "seconds_spent", "rationale",
                    "qc_expected", "pair_id", *AXIS_COLUMNS]
LABEL_COLUMNS = ["item_id", "system", "contributor_id", "strategy", "present"]
REVIEW_COLUMNS = ["item_id", "system", "contributor_id", "reviewer_id", "decision", "reason", "seconds_spent"]


class ExportError(RuntimeError):
    """An export would overwrite a file it did not write; the message says what to do."""


def manifest_path(path) -> Path:
    path = Path(path)
    return path.with_name(f".{path.name}.export.json")


def check_writable(path) -> None:
    """Raise unless ``path`` is absent or is, byte for byte, a file an earlier export wrote."""
    path, manifest = Path(path), manifest_path(path)
    if not path.exists():
        return
    try:
        recorded = json.loads(manifest.read_text()) if manifest.exists() else {}
    except (ValueError, OSError):
        recorded = {}
    if sha256_file(path) not in {recorded.get("sha256"), recorded.get("previous")} - {None}:
        raise ExportError(
            f"{path} was not written by the annotation export (or was edited since), and exporting would "
            f"replace it. Move it away (or merge it into the store's answers), or point the export at "
            f"another path in config (human_completions.path, human_judgments.path, tagging.spot_checks, "
            f"completions.safety_reviews)")


def _write(frame: pd.DataFrame, path) -> None:
    """Write the CSV atomically (:func:`export` has checked the path); its manifest names the new bytes
    (and the old) before the file moves, so a crash between the two leaves a state the next export
    accepts."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:  # a text that starts like a formula gets a "'" (read back without it)
        spreadsheet_safe(frame).to_csv(tmp, index=False, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        previous = sha256_file(path) if path.exists() else None
        with atomic_path(manifest_path(path)) as mtmp:
            Path(mtmp).write_text(json.dumps({"sha256": sha256_file(tmp), "previous": previous,
                                              "rows": len(frame)}) + "\n")


def pasted(answer: dict) -> int:
    """1 when the page saw the reply pasted or the server saw it arrive faster than anyone types
    (:func:`heart.annotation.crowd.flags`): the page's flag can add suspicion, never remove it."""
    return int(bool(answer.get("pasted")) or bool((answer.get("server") or {}).get("pasted_rate")))


def completions(answers: pd.DataFrame) -> pd.DataFrame:
    rows = [{"item_id": a.item_id, "contributor_id": a.person_id, "text": a.answer["text"],
             "seconds_spent": a.seconds, "pasted": pasted(a.answer)}
            for a in answers.itertuples() if a.kind == "writing"]
    return pd.DataFrame(rows, columns=COMPLETION_COLUMNS)


def judgments(answers: pd.DataFrame) -> pd.DataFrame:
    rows = [{"rater_id": a.person_id, "item_id": a.item_id, "shown_a": a.task["ref_a"], "shown_b": a.task["ref_b"],
             "choice": a.answer["choice"], "seconds_spent": a.seconds, "rationale": a.answer["rationale"],
             "qc_expected": a.task.get("qc_expected") or "", "pair_id": a.task.get("pair_id") or "",
             # per-axis marks where the study asked for them (A, B or same, of the shown sides); else empty
             **{col: (a.answer.get("axes") or {}).get(col.removeprefix("axis_"), "") for col in AXIS_COLUMNS}}
            for a in answers.itertuples() if a.kind == "rating"]
    return pd.DataFrame(rows, columns=JUDGMENT_COLUMNS)


def labels(answers: pd.DataFrame, decided: dict[str, list[str]], strategy_keys: list[str]
           ) -> tuple[pd.DataFrame, dict]:
    """Consensus labels, one row per strategy of each agreed or adjudicated completion, and counts
    {agreed, adjudicated, open, single} (:func:`heart.annotation.store.spot_checks`)."""
    rows, counts = [], {"agreed": 0, "adjudicated": 0, "open": 0, "single": 0}
    for key, check in spot_labels.spot_checks(answers, decided).items():
        counts[check["status"]] += 1
        if check["status"] not in ("agreed", "adjudicated"):
            continue
        final = set(decided[key]) if check["status"] == "adjudicated" else check["labels"][0][1]
        t = check["task"]
        rows += [{"item_id": t["item_id"], "system": t["system"], "contributor_id": t.get("contributor_id") or "",
                  "strategy": k, "present": int(k in final)} for k in strategy_keys]
    return pd.DataFrame(rows, columns=LABEL_COLUMNS), counts


def reviews(answers: pd.DataFrame) -> pd.DataFrame:
    rows = [{"item_id": a.item_id, "system": a.task["system"], "contributor_id": a.task.get("contributor_id") or "",
             "reviewer_id": a.person_id, "decision": a.answer["decision"], "reason": a.answer["reason"],
             "seconds_spent": a.seconds}
            for a in answers.itertuples() if a.kind == "safety_review"]
    return pd.DataFrame(rows, columns=REVIEW_COLUMNS)


def export(db_path, completions_path, judgments_path, labels_path, strategy_keys: list[str],
           reviews_path=None) -> dict:
    """Write the import files from the store (the safety reviews where ``reviews_path`` is given); returns what
    was written, for the log.

    Every file is written, a kind without answers as its header only (which the import reads as "no
    data", not "absent"); every path is checked before any is written.
    """
    conn = db.connect(db_path)
    try:
        answers = store.answers_frame(conn)
        decided = store.adjudications(conn)
    finally:
        conn.close()
    tables = {"completions": (completions(answers), completions_path),
              "judgments": (judgments(answers), judgments_path)}
    label_table, label_counts = labels(answers, decided, strategy_keys)
    tables["strategy_labels"] = (label_table, labels_path)
    if reviews_path is not None:
        tables["safety_reviews"] = (reviews(answers), reviews_path)
    for _, path in tables.values():
        check_writable(path)
    summary = {}
    for name, (frame, path) in tables.items():
        _write(frame, path)
        summary[name] = {"path": str(path), "rows": len(frame)}
    summary["strategy_labels"].update(label_counts)
    return summary
