"""The coordinator's page, as data: progress, each person's quality figures and status, the adjudication queue.

Per person (:func:`people`): answered / assigned, their status (not started, consent, practice, working,
finished, stopped, released: why), the platform participant id when they came through a study link, and for raters the
quality figures a crowd study watches -- quality checks passed, agreement with the other raters' majority
and the outlier test (:mod:`heart.judging.rater_agreement`, the same test rule ``human_judgments`` applies),
median seconds, answers under the study's minimum time ("fast") and replies that were pasted or arrived
faster than anyone types.
"""

from __future__ import annotations

import statistics
from collections import Counter

import pandas as pd

from heart.annotation import crowd, export, links, spot_labels, store
from heart.judging import rater_agreement
from heart.judging.human_judgments import qc_passed


def disagreements(conn, strategy_keys: list[str], completion_id) -> list[dict]:
    """Spot-checked completions whose labellers differ and that are not yet adjudicated, with the votes
    per strategy."""
    checks = spot_labels.spot_checks(store.answers_frame(conn), store.adjudications(conn))
    return [{"completion": key, "cid": completion_id(key), "text": c["task"]["text"],
             "context": store.context(conn, c["task"]["item_id"]), "n": len(c["labels"]),
             "votes": {k: sum(k in s for _, s in c["labels"]) for k in strategy_keys}}
            for key, c in checks.items() if c["status"] == "open"]


def _status(state: dict, done: int, total: int, served: bool, released: str | None = None) -> str:
    if state["stopped_at"] is not None:
        return "stopped"
    if released:  # the place went back (declined, idle, freed, revoked); its unanswered tasks moved on
        return f"released: {released}"
    if total and done >= total:
        return "finished"
    return "working" if done or served else "not started"


def report(conn, key: bytes) -> dict:
    """Progress per person and per item, quality-check failures and the adjudication queue."""
    study = crowd.settings(conn)
    answers = store.answers_frame(conn)
    checks = [a for a in answers.itertuples() if a.kind == "rating" and a.task.get("qc_expected")]
    failures = [a for a in checks if not qc_passed(a.task["qc_expected"], a.answer["choice"])]
    n_checks, n_failed = Counter(a.person_id for a in checks), Counter(a.person_id for a in failures)
    judged = export.judgments(answers)
    agreement = rater_agreement.outliers(judged).set_index("rater_id") if len(judged) else pd.DataFrame()
    platform = crowd.participants(conn)
    served = {r[0] for r in conn.execute("SELECT DISTINCT person_id FROM serves")}
    # a place given back with answers keeps them under its person (who is nobody's now); one given back with
    # none is a free place again, shown as such
    released = {r["person_id"]: r["reason"] for r in conn.execute(
        "SELECT person_id, reason FROM released WHERE answered > 0 ORDER BY released_at")}
    people = []
    for r in conn.execute("SELECT person_id, role, epoch FROM people ORDER BY role, person_id"):
        if r["role"] == links.COORDINATOR:
            continue
        pid = r["person_id"]
        done, total = store.progress(conn, pid)
        mine = answers[answers["person_id"] == pid]
        state = crowd.state(conn, pid)
        a = agreement.loc[pid] if pid in agreement.index else None
        flags = [a_.answer.get("server", {}) for a_ in mine.itertuples()]
        people.append({
            "person_id": pid, "role": r["role"], "done": done, "total": total,
            "status": _status(state, done, total, pid in served, released.get(pid)),
            "stop_reason": state["stop_reason"],
            "participant": platform.get(pid),
            "link": links.link_path(key, pid, r["role"], r["epoch"]),
            "median_seconds": statistics.median(mine["seconds"]) if len(mine) else None,
            "last": mine["answered_at"].max() if len(mine) else None,
            "qc": n_checks[pid], "qc_failed": n_failed[pid],
            "agreement": None if a is None or pd.isna(a["agreement"]) else float(a["agreement"]),
            "n_compared": 0 if a is None else int(a["n_compared"]),
            "outlier": bool(a is not None and a["outlier"]),
            "fast": sum(bool(f.get("fast")) for f in flags),
            "pasted": sum(export.pasted(x.answer) for x in mine.itertuples() if x.kind == "writing"),
        })
    qc_failures = [{"person_id": a.person_id, "item_id": a.item_id, "expected": a.task["qc_expected"],
                    "choice": a.answer["choice"], "rationale": a.answer["rationale"]} for a in failures]
    items = [dict(r) for r in conn.execute(
        "SELECT t.kind, t.item_id, COUNT(*) AS total, COUNT(a.task_id) AS done FROM tasks t "
        "LEFT JOIN answers a USING (task_id) WHERE t.active = 1 GROUP BY t.kind, t.item_id "
        "ORDER BY CAST(COUNT(a.task_id) AS REAL) / COUNT(*), t.kind, t.item_id")]
    kinds = [dict(r) for r in conn.execute(
        "SELECT t.kind, COUNT(*) AS total, COUNT(a.task_id) AS done, COUNT(DISTINCT t.item_id) AS n_items "
        "FROM tasks t LEFT JOIN answers a USING (task_id) WHERE t.active = 1 GROUP BY t.kind ORDER BY t.kind")]
    pending = sum(c["status"] == "open" for c in spot_labels.spot_checks(answers, store.adjudications(conn)).values())
    return {"people": people, "qc_failures": qc_failures, "items": items[:60], "n_items": len(items),
            "kinds": kinds, "pending": pending, "study": study, "study_links": crowd.study_links(key)}
