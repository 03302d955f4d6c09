"""The store of human answers: one SQLite file in WAL mode.

Every answer is committed (``synchronous=FULL``) before the page that received it answers, so a
refresh, a closed tab or a server killed with ``kill -9`` loses nothing already submitted. Tasks come
from the task table that rule ``annotation_tasks`` writes (:mod:`heart.annotation.tasks`); loading a
newer table adds its new tasks and retires the unanswered ones it no longer holds, and never touches an
answer.

People are known by a secret link. A person's token is an HMAC of their id (and a revocation epoch)
under a random key kept in a file beside the database (mode 0600), so the coordinator page can show
every link again, the database alone does not hold a usable token, and bumping the epoch revokes one.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

import pandas as pd

from heart.annotation.tasks import KINDS

SCHEMA_VERSION = 2  # 1 -> 2 adds tables only: an older store is upgraded in place by create()
ROLES = KINDS  # task kind -> the role of the people who do it
COORDINATOR = "coordinator"

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
"""
#: what the audit log records (:func:`log`)
AUDIT_EVENTS = ("answer", "void", "revoke", "provision", "consent", "practice", "stop", "restore")
#: a page open longer than this is served again with a fresh clock (time on task must stay meaningful)
PAGE_MAX_AGE_S = 12 * 3600


class StoreError(RuntimeError):
    """The store cannot be opened or loaded as asked; the message says what to do."""


def key_path(db_path) -> Path:
    """Where the link key of a database lives: beside it, ``<db>.key``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".key")


def connect(db_path) -> sqlite3.Connection:
    """A connection with the store's settings: WAL, full sync on commit, waits up to 10 s for a lock."""
    conn = sqlite3.connect(db_path, timeout=10, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


#: one writer at a time within this process. SQLite's own lock makes a waiting writer sleep and retry with
#: growing pauses, so under load (100 raters posting at once) a write could wait seconds while others got
#: in first (p95 738 ms waiting for BEGIN IMMEDIATE, max 5.8 s); a lock taken in turn keeps the wait short
#: and fair. Other processes (the export, heart-annotate void) still meet SQLite's lock.
_WRITE_LOCK = threading.Lock()


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection):
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): one writer at a time, nothing half-written."""
    with _WRITE_LOCK:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def create(db_path) -> None:
    """Create the database and its link key if absent (the key file is readable by its owner only)."""
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    kp = key_path(db_path)
    if db_path.exists() and not kp.exists():
        raise StoreError(f"{db_path} exists but its link key {kp} does not: every link would change. "
                         "Restore the key file from your backup, or start a new database elsewhere")
    if not kp.exists():
        fd = os.open(kp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
    conn = connect(db_path)
    try:
        conn.executescript(_SCHEMA)
        with transaction(conn):
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute("INSERT OR IGNORE INTO people (person_id, role) VALUES (?, ?)", (COORDINATOR, COORDINATOR))
        found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if int(found) == 1:  # the tables of schema 2 were just created beside the old ones
            with transaction(conn):
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            found = SCHEMA_VERSION
        if int(found) != SCHEMA_VERSION:
            raise StoreError(f"{db_path} has store schema {found}; this heart reads {SCHEMA_VERSION}")
    finally:
        conn.close()


def read_key(db_path) -> bytes:
    kp = key_path(db_path)
    try:
        return bytes.fromhex(kp.read_text().strip())
    except FileNotFoundError:
        raise StoreError(f"the link key {kp} is missing; run `heart-annotate init` first") from None


def token(key: bytes, person_id: str, epoch: int) -> str:
    """A person's secret: 128 bits of HMAC-SHA256(key, "person:epoch"), URL-safe."""
    mac = hmac.new(key, f"{person_id}\x1f{epoch}".encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def link_path(key: bytes, person_id: str, role: str, epoch: int) -> str:
    """A person's page, ``/p/<token>`` (the coordinator's: ``/c/<token>``)."""
    return f"/{'c' if role == COORDINATOR else 'p'}/{token(key, person_id, epoch)}"


def tokens(conn: sqlite3.Connection, key: bytes) -> dict[str, tuple[str, str]]:
    """token -> (person_id, role) for everyone in the store."""
    return {token(key, r["person_id"], r["epoch"]): (r["person_id"], r["role"])
            for r in conn.execute("SELECT person_id, role, epoch FROM people")}


def role(conn: sqlite3.Connection, person_id: str) -> str:
    """A person's role (writer, rater, labeller, coordinator)."""
    return conn.execute("SELECT role FROM people WHERE person_id = ?", (person_id,)).fetchone()["role"]


def people_version(conn: sqlite3.Connection) -> tuple:
    """What the links depend on, cheaply: the number of people, their last rowid and the sum of their epochs
    (a new person or a revocation changes it)."""
    return tuple(conn.execute("SELECT COUNT(*), MAX(rowid), TOTAL(epoch) FROM people").fetchone())


def revoke(conn: sqlite3.Connection, person_id: str) -> None:
    """Give a person a new link; the old one stops working at once (recorded in the audit log)."""
    with transaction(conn):
        if conn.execute("UPDATE people SET epoch = epoch + 1 WHERE person_id = ?", (person_id,)).rowcount != 1:
            raise StoreError(f"no person {person_id!r} in the store")
        log(conn, "revoke", person_id)


def log(conn: sqlite3.Connection, event: str, person_id: str | None = None, task_id: str | None = None,
        at: float | None = None, **detail) -> None:
    """Append to the audit log (inside the caller's transaction, so the event and its record commit together)."""
    if event not in AUDIT_EVENTS:
        raise ValueError(f"unknown audit event {event!r}; one of {AUDIT_EVENTS}")
    conn.execute("INSERT INTO audit (at, event, person_id, task_id, detail) VALUES (?, ?, ?, ?, ?)",
                 (now() if at is None else at, event, person_id, task_id, json.dumps(detail, sort_keys=True)))


def audit_frame(conn: sqlite3.Connection) -> pd.DataFrame:
    """The audit log, oldest first: seq, at, event, person_id, task_id, detail (JSON text)."""
    return pd.read_sql_query("SELECT seq, at, event, person_id, task_id, detail FROM audit ORDER BY seq", conn)


def void(conn: sqlite3.Connection, task_id: str, reason: str) -> dict:
    """Withdraw one answer: it moves to table ``voided`` (kept, never deleted), the task is served to its
    person again, and the audit log records why. Returns the voided answer's row."""
    if not str(reason).strip():
        raise StoreError("say why the answer is voided (--reason): the audit log records it")
    with transaction(conn):
        row = conn.execute("SELECT * FROM answers WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            raise StoreError(f"task {task_id!r} has no answer to void; `heart-annotate answers` lists them")
        at = now()
        conn.execute("INSERT INTO voided VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*tuple(row), at, reason))
        conn.execute("DELETE FROM answers WHERE task_id = ?", (task_id,))
        conn.execute("DELETE FROM serves WHERE task_id = ?", (task_id,))  # its page is served afresh
        log(conn, "void", row["person_id"], task_id, at=at, kind=row["kind"], reason=str(reason))
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
    loaded_at = now()
    records = tasks.astype(object).where(tasks.notna(), None).to_dict("records")
    counts = {"added": 0, "kept": 0, "retired": 0, "reactivated": 0}
    with transaction(conn):
        roles = {r["person_id"]: r["role"] for r in conn.execute("SELECT person_id, role FROM people")}
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
            else:
                fresh.append((rec["task_id"], rec["kind"], rec["person_id"], int(rec["position"]), rec["item_id"],
                              payload, loaded_at))
        conn.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, 1, ?)", fresh)
        conn.executemany("UPDATE tasks SET active = 1, position = ?, payload = CASE WHEN task_id IN "
                         "(SELECT task_id FROM answers) THEN payload ELSE ? END WHERE task_id = ?", kept)
        counts["added"], counts["kept"] = len(fresh), len(kept)
        listed = {rec["task_id"] for rec in records}
        begun = _begun_spot_checks(conn)
        gone = [(t,) for t, active in existing.items() if active and t not in listed and t not in answered
                and t not in begun]
        conn.executemany("UPDATE tasks SET active = 0 WHERE task_id = ?", gone)
        counts["retired"] = len(gone)
    return counts


def spot_key(task: dict) -> str:
    """The completion a spot-check task labels, as text: item, system and contributor ("" for none)."""
    return "\x1f".join([task["item_id"], task["system"], task.get("contributor_id") or ""])


def _begun_spot_checks(conn: sqlite3.Connection) -> set[str]:
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


def now() -> float:
    """The server's clock (one place, so tests can set it)."""
    return time.time()


def is_active(conn: sqlite3.Connection, task_id: str) -> bool:
    row = conn.execute("SELECT active FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return bool(row and row["active"])


def serve(conn: sqlite3.Connection, person_id: str, task_id: str, at: float | None = None) -> str:
    """The nonce (also the CSRF token) of the person's page of a task, served at ``at`` (default now:
    simulated people keep their own clock).

    A page already served to this person and open less than :data:`PAGE_MAX_AGE_S` keeps its nonce and its
    serve time: a reload neither restarts the clock on the task nor writes to the disk. Only a first view
    (or one after that age) records a serve."""
    at = now() if at is None else at
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
    at = now() if at is None else at
    with transaction(conn):
        cur = conn.execute(
            "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
            (serve_row["task_id"], serve_row["person_id"], kind, json.dumps(value, ensure_ascii=False),
             round(max(0.0, at - serve_row["served_at"]), 3), serve_row["served_at"], at))
        stored = cur.rowcount == 1
        if stored:
            log(conn, "answer", serve_row["person_id"], serve_row["task_id"], at=at, kind=kind)
    return stored  # (the commit happened when the ``with`` block closed)


def adjudicate(conn: sqlite3.Connection, completion: str, present: list[str]) -> None:
    with transaction(conn):
        conn.execute("INSERT OR REPLACE INTO adjudications VALUES (?, ?, ?)",
                     (completion, json.dumps(sorted(present)), now()))


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


def backup(db_path, dest_dir) -> Path:
    """An online backup of the store into ``dest_dir`` (SQLite's backup API: consistent while the server goes on
    answering), with its link key (mode 0600, or every link changes on restore). The copy is checked
    (``PRAGMA integrity_check``) and moved into place whole. Returns the copy's path."""
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / Path(db_path).name
    tmp = target.with_name(f".{target.name}.partial")
    tmp.unlink(missing_ok=True)
    src = connect(db_path)
    try:
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)
            ok = dst.execute("PRAGMA integrity_check").fetchone()[0]
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        finally:
            dst.close()
    finally:
        src.close()
    if ok != "ok":
        tmp.unlink(missing_ok=True)
        raise StoreError(f"the backup of {db_path} failed its integrity check ({ok}); nothing was written")
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    _put_key(key_path(target), key_path(db_path).read_text())
    os.replace(tmp, target)
    return target


def _put_key(path: Path, text: str) -> None:
    """Write a link key atomically, readable by its owner only (mode 0600), synced to disk."""
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, path)


def restore(backup_path, db_path, force: bool = False) -> None:
    """Put a backup (and its key) in place of the store at ``db_path``; stop the server first. An existing store
    is replaced only with ``force`` (its WAL files go with it); the restore is recorded in the audit log."""
    backup_path, db_path = Path(backup_path), Path(db_path)
    if not backup_path.is_file() or not key_path(backup_path).is_file():
        raise StoreError(f"{backup_path}: not a backup made by `heart-annotate backup` (the store and its "
                         f"key {key_path(backup_path).name} must both be there)")
    check = sqlite3.connect(f"file:{backup_path.resolve()}?mode=ro", uri=True)
    try:
        ok = check.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        check.close()
    if ok != "ok":
        raise StoreError(f"{backup_path} fails its integrity check ({ok}); use another backup")
    if db_path.exists() and not force:
        raise StoreError(f"{db_path} exists; stop the server and pass --force to replace it with {backup_path}")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_name(f".{db_path.name}.restoring")
    tmp.write_bytes(backup_path.read_bytes())
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, db_path)
    _put_key(key_path(db_path), key_path(backup_path).read_text())
    conn = connect(db_path)
    try:
        with transaction(conn):
            log(conn, "restore", source=backup_path.name)
    finally:
        conn.close()
