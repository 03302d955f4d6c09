"""The audit log of the store: every answer, void, revocation, provisioning, consent, practice, stop and
restore, appended inside the transaction of the event it records."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd

from heart.annotation import db

#: what the audit log records (:func:`log`)
AUDIT_EVENTS = ("answer", "void", "revoke", "provision", "consent", "practice", "stop", "restore", "release")


def log(conn: sqlite3.Connection, event: str, person_id: str | None = None, task_id: str | None = None,
        at: float | None = None, **detail) -> None:
    """Append to the audit log (inside the caller's transaction, so the event and its record commit together)."""
    if event not in AUDIT_EVENTS:
        raise ValueError(f"unknown audit event {event!r}; one of {AUDIT_EVENTS}")
    conn.execute("INSERT INTO audit (at, event, person_id, task_id, detail) VALUES (?, ?, ?, ?, ?)",
                 (db.now() if at is None else at, event, person_id, task_id, json.dumps(detail, sort_keys=True)))


def audit_frame(conn: sqlite3.Connection) -> pd.DataFrame:
    """The audit log, oldest first: seq, at, event, person_id, task_id, detail (JSON text)."""
    return pd.read_sql_query("SELECT seq, at, event, person_id, task_id, detail FROM audit ORDER BY seq", conn)
