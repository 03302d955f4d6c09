"""The store of human answers: one SQLite file in WAL mode.

Every answer is committed (``synchronous=FULL``) before the page that received it answers, so a
refresh, a closed tab or a server killed with ``kill -9`` loses nothing already submitted. Tasks come
from the task table that rule ``annotation_tasks`` writes (:mod:`heart.annotation.tasks`); loading a
newer table adds its new tasks and retires the unanswered ones it no longer holds, and never touches an
answer.

People are known by a secret link (:mod:`.links`); every event is in the audit log (:mod:`.audit`); the
store is opened through :mod:`.db` and copied by :mod:`.backup`.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sqlite3
from pathlib import Path

import pandas as pd

from heart.annotation import audit, db, links, spot_labels
from heart.annotation.db import StoreError, connect, transaction
from heart.annotation.links import COORDINATOR
from heart.annotation.tasks import KINDS

SCHEMA_VERSION = 3  # 1 -> 2 -> 3 add tables only: an older store is upgraded in place by create()
ROLES = KINDS  # task kind -> the role of the people who do it

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS people (
    person_id TEXT PRIMARY KEY, role TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, kind TEXT NOT NULL, person_id TEXT NOT NULL REFERENCES people(person_id),
    position INTEGER NOT NULL, item_id TEXT NOT NULL, payload TEXT NOT NULL,
    active INTEGER NOT NULL DEFAULT 1, loaded_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_person ON tasks (person_id, active, position);
CREATE TABLE IF NOT EXISTS contexts (item_id TEXT PRIMARY KEY, context TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS serves (
    nonce TEXT PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks(task_id),
    person_id TEXT NOT NULL, served_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    task_id TEXT PRIMARY KEY REFERENCES tasks(task_id), person_id TEXT NOT NULL, kind TEXT NOT NULL,
    answer TEXT NOT NULL, seconds REAL NOT NULL, served_at REAL NOT NULL, answered_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS adjudications (
    completion TEXT PRIMARY KEY, present TEXT NOT NULL, decided_at REAL NOT NULL);
-- schema 2: a page view reuses its open serve; voids, people's study state, crowd entry and the audit log
CREATE INDEX IF NOT EXISTS serves_task ON serves (person_id, task_id, served_at);
CREATE TABLE IF NOT EXISTS voided (
    task_id TEXT NOT NULL, person_id TEXT NOT NULL, kind TEXT NOT NULL, answer TEXT NOT NULL,
    seconds REAL NOT NULL, served_at REAL NOT NULL, answered_at REAL NOT NULL, voided_at REAL NOT NULL,
    reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS person_state (
    person_id TEXT PRIMARY KEY REFERENCES people(person_id), consented_at REAL,
    practice_step INTEGER NOT NULL DEFAULT 0, practice_correct INTEGER NOT NULL DEFAULT 0,
    practice_done_at REAL, stopped_at REAL, stop_reason TEXT);
CREATE TABLE IF NOT EXISTS participants (
    role TEXT NOT NULL, participant TEXT NOT NULL, person_id TEXT NOT NULL UNIQUE REFERENCES people(person_id),
    study TEXT, session TEXT, provisioned_at REAL NOT NULL, PRIMARY KEY (role, participant));
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, event TEXT NOT NULL, person_id TEXT,
    task_id TEXT, detail TEXT NOT NULL DEFAULT '{}');
-- schema 3: places given back (a participant who declined, went idle, or was freed or blocked by the
-- coordinator), the person who took over a released place's unanswered tasks, and blocked platform ids
CREATE TABLE IF NOT EXISTS released (
    role TEXT NOT NULL, participant TEXT NOT NULL, person_id TEXT NOT NULL, study TEXT, session TEXT,
    provisioned_at REAL NOT NULL, released_at REAL NOT NULL, reason TEXT NOT NULL, answered INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS succession (
    person_id TEXT PRIMARY KEY REFERENCES people(person_id), successor TEXT NOT NULL REFERENCES people(person_id));
CREATE TABLE IF NOT EXISTS blocked (
    role TEXT NOT NULL, participant TEXT NOT NULL, blocked_at REAL NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (role, participant));
"""
#: a page open longer than this is served again with a fresh clock (time on task must stay meaningful)
PAGE_MAX_AGE_S = 12 * 3600


def create(db_path) -> None:
    """Create the database and its link key if absent (the key file is readable by its owner only)."""
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    links.create_key(db_path)
    conn = connect(db_path)
    try:
        conn.executescript(_SCHEMA)
        with transaction(conn):
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute("INSERT OR IGNORE INTO people (person_id, role) VALUES (?, ?)", (COORDINATOR, COORDINATOR))
        found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if int(found) in (1, 2):  # the tables of the later schemas were just created beside the old ones
            with transaction(conn):
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            found = SCHEMA_VERSION
        if int(found) != SCHEMA_VERSION:
            raise StoreError(f"{db_path} has store schema {found}; this heart reads {SCHEMA_VERSION}")
    finally:
        conn.close()


def void(conn: sqlite3.Connection, task_id: str, reason: str) -> dict:
    """Withdraw one answer: it moves to table ``voided`` (kept, never deleted), the task is served to its
    person again, and the audit log records why. Returns the voided answer's row."""
    if not str(reason).strip():
        raise StoreError("say why the answer is voided (--reason): the audit log records it")
    with transaction(conn):
        row = conn.execute("SELECT * FROM answers WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            raise StoreError(f"task {task_id!r} has no answer to void; `python -m heart.annotation answers` lists them")
        at = db.now()
        conn.execute("INSERT INTO voided VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*tuple(row), at, reason))
        conn.execute("DELETE FROM answers WHERE task_id = ?", (task_id,))
        conn.execute("DELETE FROM serves WHERE task_id = ?", (task_id,))  # its page is served afresh
        audit.log(conn, "void", row["person_id"], task_id, at=at, kind=row["kind"], reason=str(reason))
    return dict(row)


def load_tasks(conn: sqlite3.Connection, tasks: pd.DataFrame, source: str = "tasks") -> dict:
    """Bring the store's tasks in line with ``tasks`` (the table of :mod:`heart.annotation.tasks`).

    New tasks are added, a task already present keeps its row (and any answer), and an unanswered task
    that the table no longer holds is retired (``active = 0``: not served; it comes back should a later
    table hold it again). An answered task is never retired: work done stays exported even when a newer
    sample (e.g. spot checks stratified over a new system) no longer draws it; nor is the second label of
    a spot-checked completion that one labeller has done. Returns counts
    {added, kept, retired, reactivated}.
    """
    required = {"task_id", "kind", "person_id", "position", "item_id"}
    missing = required - set(tasks.columns)
    if missing:
        raise StoreError(f"{source}: columns {sorted(missing)} are missing; regenerate it with "
                         "`snakemake annotation_tasks`")
    bad = tasks[~tasks["kind"].isin(list(ROLES))]
    if len(bad):
        raise StoreError(f"{source}, task {bad.iloc[0]['task_id']}: field 'kind' is {bad.iloc[0]['kind']!r}; "
                         f"expected one of {sorted(ROLES)}")
    loaded_at = db.now()
    records = tasks.astype(object).where(tasks.notna(), None).to_dict("records")
    counts = {"added": 0, "kept": 0, "retired": 0, "reactivated": 0}
    with transaction(conn):
        roles = {r["person_id"]: r["role"] for r in conn.execute("SELECT person_id, role FROM people")}
        after = dict(conn.execute("SELECT person_id, successor FROM succession").fetchall())
        for rec in records:
            role = roles.setdefault(rec["person_id"], ROLES[rec["kind"]])
            if role != ROLES[rec["kind"]]:
                raise StoreError(f"{source}, task {rec['task_id']}: person {rec['person_id']!r} is a {role} in "
                                 f"the store and a {ROLES[rec['kind']]} here; give each role its own ids")
        conn.executemany("INSERT OR IGNORE INTO people (person_id, role) VALUES (?, ?)", roles.items())
        contexts = {rec["item_id"]: rec.get("context") for rec in records if rec.get("context") is not None}
        conn.executemany("INSERT OR REPLACE INTO contexts VALUES (?, ?)", contexts.items())
        existing = {r["task_id"]: r["active"] for r in conn.execute("SELECT task_id, active FROM tasks")}
        answered = {r[0] for r in conn.execute("SELECT task_id FROM answers")}
        fresh, kept = [], []
        for rec in records:
            payload = json.dumps({k: v for k, v in rec.items() if k != "context"}, ensure_ascii=False, default=str)
            if rec["task_id"] in existing:
                # an unanswered task shows the table's current texts; an answered one keeps what was shown
                kept.append((int(rec["position"]), payload, rec["task_id"]))
                counts["reactivated"] += not existing[rec["task_id"]]
            else:  # a new task of a released place goes to the person who took the place over
                holder = rec["person_id"]
                while holder in after:
                    holder = after[holder]
                fresh.append((rec["task_id"], rec["kind"], holder, int(rec["position"]), rec["item_id"],
                              payload, loaded_at))
        conn.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, 1, ?)", fresh)
        conn.executemany("UPDATE tasks SET active = 1, position = ?, payload = CASE WHEN task_id IN "
                         "(SELECT task_id FROM answers) THEN payload ELSE ? END WHERE task_id = ?", kept)
        counts["added"], counts["kept"] = len(fresh), len(kept)
        listed = {rec["task_id"] for rec in records}
        begun = spot_labels.begun(conn)
        gone = [(t,) for t, active in existing.items() if active and t not in listed and t not in answered
                and t not in begun]
        conn.executemany("UPDATE tasks SET active = 0 WHERE task_id = ?", gone)
        counts["retired"] = len(gone)
    return counts


def context(conn: sqlite3.Connection, item_id: str) -> list[dict]:
    """An item's dialogue context as a list of {role, text} ([] if the store has none)."""
    row = conn.execute("SELECT context FROM contexts WHERE item_id = ?", (item_id,)).fetchone()
    return json.loads(row["context"]) if row else []


def _with_context(conn: sqlite3.Connection, payload: str) -> dict:
    out = json.loads(payload)
    out["context"] = context(conn, out["item_id"])
    return out


def task(conn: sqlite3.Connection, task_id: str) -> dict:
    """A task as its table row, with its dialogue context as a list of {role, text}."""
    row = conn.execute("SELECT payload FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return _with_context(conn, row["payload"])


def progress(conn: sqlite3.Connection, person_id: str) -> tuple[int, int]:
    """(answered, assigned) of a person's active tasks."""
    row = conn.execute(
        "SELECT COUNT(*) AS n, COUNT(a.task_id) AS done FROM tasks t LEFT JOIN answers a USING (task_id) "
        "WHERE t.person_id = ? AND t.active = 1", (person_id,)).fetchone()
    return row["done"], row["n"]


def next_task(conn: sqlite3.Connection, person_id: str) -> dict | None:
    """The person's first unanswered active task (by position), or None when all are done."""
    row = conn.execute(
        "SELECT t.payload FROM tasks t LEFT JOIN answers a USING (task_id) "
        "WHERE t.person_id = ? AND t.active = 1 AND a.task_id IS NULL "
        "ORDER BY t.position, t.task_id LIMIT 1", (person_id,)).fetchone()
    return _with_context(conn, row["payload"]) if row else None


def is_active(conn: sqlite3.Connection, task_id: str) -> bool:
    row = conn.execute("SELECT active FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return bool(row and row["active"])


def serve(conn: sqlite3.Connection, person_id: str, task_id: str, at: float | None = None) -> str:
    """The nonce (also the CSRF token) of the person's page of a task, served at ``at`` (default now:
    simulated people keep their own clock).

    A page already served to this person and open less than :data:`PAGE_MAX_AGE_S` keeps its nonce and its
    serve time: a reload neither restarts the clock on the task nor writes to the disk. Only a first view
    (or one after that age) records a serve."""
    at = db.now() if at is None else at
    row = conn.execute("SELECT nonce, served_at FROM serves WHERE person_id = ? AND task_id = ? "
                       "ORDER BY served_at DESC LIMIT 1", (person_id, task_id)).fetchone()
    if row is not None and at - row["served_at"] <= PAGE_MAX_AGE_S:
        return row["nonce"]
    nonce = secrets.token_urlsafe(24)
    with transaction(conn):
        conn.execute("INSERT INTO serves VALUES (?, ?, ?, ?)", (nonce, task_id, person_id, at))
    return nonce


def served(conn: sqlite3.Connection, nonce: str, person_id: str) -> sqlite3.Row | None:
    """The serve record of ``nonce`` if it belongs to ``person_id``, else None."""
    row = conn.execute("SELECT * FROM serves WHERE nonce = ?", (nonce,)).fetchone()
    if row is None or not hmac.compare_digest(row["person_id"], person_id):
        return None
    return row


def answer(conn: sqlite3.Connection, serve_row: sqlite3.Row, kind: str, value: dict, at: float | None = None) -> bool:
    """Store an answer to the served task, timed from the serve to now by the server's clock (or to ``at``:
    simulated people keep their own clock).

    Returns False (and stores nothing) when the task was already answered: a resubmitted form is not
    a second answer. The commit is durable when this returns.
    """
    at = db.now() if at is None else at
    with transaction(conn):
        cur = conn.execute(
            "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
            (serve_row["task_id"], serve_row["person_id"], kind, json.dumps(value, ensure_ascii=False),
             round(max(0.0, at - serve_row["served_at"]), 3), serve_row["served_at"], at))
        stored = cur.rowcount == 1
        if stored:
            audit.log(conn, "answer", serve_row["person_id"], serve_row["task_id"], at=at, kind=kind)
    return stored  # (the commit happened when the ``with`` block closed)


def adjudicate(conn: sqlite3.Connection, completion: str, present: list[str]) -> None:
    with transaction(conn):
        conn.execute("INSERT OR REPLACE INTO adjudications VALUES (?, ?, ?)",
                     (completion, json.dumps(sorted(present)), db.now()))


def fingerprint(db_path) -> str:
    """What the export depends on, read-only: the number and the last time of answers and adjudications, and
    the last audit event (a void, a revocation, a stop).
    Rule export_annotations reruns when this changes, not when the file's mtime does (a page view writes
    to the store too)."""
    conn = sqlite3.connect(f"file:{Path(db_path).resolve()}?mode=ro", uri=True, timeout=10)
    try:
        a = conn.execute("SELECT COUNT(*), MAX(answered_at) FROM answers").fetchone()
        d = conn.execute("SELECT COUNT(*), MAX(decided_at) FROM adjudications").fetchone()
        has_audit = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'audit'").fetchone()
        e = conn.execute("SELECT MAX(seq) FROM audit").fetchone() if has_audit else (None,)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{db_path}: cannot read the annotation store ({exc}); is it a heart annotation "
                         "store? Set config annotation.db to one, or move the file away") from None
    finally:
        conn.close()
    return f"answers={a[0]}@{a[1]};adjudications={d[0]}@{d[1]};audit={e[0]}"


def answers_frame(conn: sqlite3.Connection, active_only: bool = True) -> pd.DataFrame:
    """Every answer with its task: task_id, kind, person_id, item_id, task (dict), answer (dict), seconds."""
    rows = conn.execute(
        "SELECT a.task_id, t.kind, a.person_id, t.item_id, t.payload, a.answer, a.seconds, a.answered_at, "
        "t.active FROM answers a JOIN tasks t USING (task_id) ORDER BY a.answered_at, a.task_id").fetchall()
    out = pd.DataFrame([{"task_id": r["task_id"], "kind": r["kind"], "person_id": r["person_id"],
                         "item_id": r["item_id"], "task": json.loads(r["payload"]),
                         "answer": json.loads(r["answer"]), "seconds": r["seconds"],
                         "answered_at": r["answered_at"], "active": bool(r["active"])} for r in rows],
                       columns=["task_id", "kind", "person_id", "item_id", "task", "answer", "seconds",
                                "answered_at", "active"])
    return out.loc[out["active"].astype(bool)].reset_index(drop=True) if active_only else out


def adjudications(conn: sqlite3.Connection) -> dict[str, list[str]]:
    return {r["completion"]: json.loads(r["present"]) for r in conn.execute("SELECT * FROM adjudications")}
