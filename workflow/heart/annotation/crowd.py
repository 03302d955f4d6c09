"""People recruited on a crowd platform (Prolific, MTurk, ...): entry, consent, practice, attention, completion.

A study link, ``/s/<study token>?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``, is the one link a coordinator
posts on the platform: its token is an HMAC of the role under the store's key, so it names the role and
nothing else, and it gives no one's tasks. Opening it provisions the platform participant once (the next
person of the role who has not started; the same person on every later visit) and sends them on to their
own secret link. Participant ids stay in the store (table ``participants``) and on the coordinator's page,
for paying and approving; they are never exported.

A person then meets, in order and as the study's settings ask (:data:`DEFAULTS`, config ``annotation.crowd``):
the consent text, the instructions and practice items with feedback (``resources/annotation/study.yaml``;
practice answers are not data), their tasks, and a done page with the platform's completion code. A rater
who fails ``stop_after_qc_failures`` quality checks *and* at least ``max_qc_fail_share`` of the checks so far
is stopped: no more tasks, a page that says so (with the platform's "screened out" code if one is set),
flagged on the coordinator's page and in the audit log. The statistics exclude that rater by the same share
(rule ``human_judgments``), so a stop never disagrees with the analysis.

A place is given back (:func:`release`) when its participant declines the consent (at once), stays idle
longer than ``release_idle_minutes`` (checked whenever someone enters), or the coordinator frees it or
revokes its person (``python -m heart.annotation free`` / ``revoke``; a revoke also blocks the platform id
from entering again). The place's unanswered tasks go to the next participant -- under the same person id
when nothing was answered, else under a successor's (``rater-05.2``), so that every answer stays the answer
of one human. "This study is full" then means every place is held by someone who is still active.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import sqlite3

from heart.annotation import audit, db, store
from heart.judging.human_judgments import qc_passed

#: the study settings and their defaults (config ``annotation.crowd``; schema: workflow/schemas/config.schema.yaml)
DEFAULTS = {
    "consent": False,                # consent (study.yaml) before any task
    "practice": False,               # instructions and practice items with feedback before real tasks
    "completion_code": None,         # shown on the done page
    "completion_url": None,          # the done page's link; "{code}" is replaced by completion_code
    "stopped_code": None,            # shown to a person stopped by the attention checks
    "stop_after_qc_failures": None,  # a number: stop a rater failing that many checks (and the share below)
    "max_qc_fail_share": 0.5,        # ... and at least this share of the checks so far (human_judgments')
    # faster answers are flagged "fast"
    "min_seconds": {"writing": 20, "rating": 8, "spot_check": 5, "safety_review": 5},
    "max_chars_per_second": 12,      # text that arrived faster cannot have been typed: flagged "pasted"
    "release_idle_minutes": 120,     # a place idle this long is given back to the next participant (None: never)
}
#: query parameters that carry the platform's ids (Prolific's, MTurk's, and plain names), first found wins
PLATFORM_PARAMS = {"participant": ("PROLIFIC_PID", "workerId", "participant"),
                   "study": ("STUDY_ID", "hitId", "study"),
                   "session": ("SESSION_ID", "assignmentId", "session")}
PLATFORM_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def settings(conn: sqlite3.Connection) -> dict:
    """The study settings stored with the tasks (:func:`save_settings`), over :data:`DEFAULTS`."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'crowd'").fetchone()
    saved = json.loads(row["value"]) if row else {}
    return {**DEFAULTS, **saved, "min_seconds": {**DEFAULTS["min_seconds"], **saved.get("min_seconds", {})}}


def save_settings(conn: sqlite3.Connection, values: dict | None) -> dict:
    """Store the study settings (unknown keys are an error naming them); returns them over the defaults."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(DEFAULTS))
    if unknown:
        raise db.StoreError(f"annotation.crowd: unknown settings {unknown}; known: {sorted(DEFAULTS)}")
    with db.transaction(conn):
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('crowd', ?)", (json.dumps(values, sort_keys=True),))
    return settings(conn)


def study_token(key: bytes, role: str) -> str:
    """The study link's secret for one role: 128 bits of HMAC-SHA256(key, "study" role)."""
    mac = hmac.new(key, f"study\x1f{role}".encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def study_links(key: bytes) -> dict[str, str]:
    """role -> the path of its study link (``/s/<token>``), for every role that does tasks."""
    return {role: f"/s/{study_token(key, role)}" for role in store.ROLES.values()}


def role_of(key: bytes, token: str) -> str | None:
    """The role a study token is for, else None (compared in constant time)."""
    for role in store.ROLES.values():
        if hmac.compare_digest(study_token(key, role), token):
            return role
    return None


def platform_ids(query) -> tuple[dict | None, str | None]:
    """({participant, study, session}, None) from a study link's query, or (None, what is wrong)."""
    out = {}
    for field, names in PLATFORM_PARAMS.items():
        value = next((query[n] for n in names if query.get(n)), None)
        if value is not None and not PLATFORM_ID.fullmatch(value):
            return None, f"the link's {field} id is not one a platform gives (letters, digits, _ . : -, at most 64)"
        out[field] = value
    if out["participant"] is None:
        return None, ("this study link lacks the platform's participant id (PROLIFIC_PID, workerId or "
                      "participant): open it from the study's page on your platform")
    return out, None


def provision(conn: sqlite3.Connection, role: str, ids: dict) -> tuple[str | None, str | None]:
    """(the person a platform participant works as, None) -- theirs if provisioned before, else the first free
    place of ``role`` (by id): a person with unanswered active tasks who is nobody's and has never been
    served a page (a place given back is such a person again, :func:`release`). Places idle longer than the
    study's ``release_idle_minutes`` are given back first. (None, why) when the participant may not enter (their
    place was released after they answered, or the coordinator blocked them), or (None, None) when every place
    is in use."""
    study = settings(conn)
    if study.get("release_idle_minutes"):
        release_idle(conn, 60.0 * float(study["release_idle_minutes"]))
    with db.transaction(conn):
        row = conn.execute("SELECT person_id FROM participants WHERE role = ? AND participant = ?",
                           (role, ids["participant"])).fetchone()
        if row:
            return row["person_id"], None
        if conn.execute("SELECT 1 FROM blocked WHERE role = ? AND participant = ?",
                        (role, ids["participant"])).fetchone():
            return None, "The coordinator of this study has ended your participation."
        gone = conn.execute("SELECT reason FROM released WHERE role = ? AND participant = ? AND answered > 0 "
                            "ORDER BY released_at DESC LIMIT 1", (role, ids["participant"])).fetchone()
        if gone:  # their answers stay theirs; a second place would let them answer the same pairs again
            return None, f"Your place in this study was given back ({gone['reason']}); your answers are kept."
        free = conn.execute(
            "SELECT p.person_id FROM people p WHERE p.role = ? "
            "AND EXISTS (SELECT 1 FROM tasks t WHERE t.person_id = p.person_id AND t.active = 1 "
            "            AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.task_id = t.task_id)) "
            "AND NOT EXISTS (SELECT 1 FROM participants x WHERE x.person_id = p.person_id) "
            "AND NOT EXISTS (SELECT 1 FROM serves s WHERE s.person_id = p.person_id) "
            "ORDER BY p.person_id LIMIT 1", (role,)).fetchone()
        if free is None:
            return None, None
        conn.execute("INSERT INTO participants VALUES (?, ?, ?, ?, ?, ?)",
                     (role, ids["participant"], free["person_id"], ids["study"], ids["session"], db.now()))
        audit.log(conn, "provision", free["person_id"], role=role)
    return free["person_id"], None


def holds_place(conn: sqlite3.Connection, person_id: str) -> bool:
    """Whether a platform participant holds ``person_id``'s place now (they came through the study link)."""
    return conn.execute("SELECT 1 FROM participants WHERE person_id = ?", (person_id,)).fetchone() is not None


def release(conn: sqlite3.Connection, person_id: str, reason: str, block: bool = False) -> str:
    """Give back the place a platform participant holds as ``person_id`` (see the module's text); returns the
    person who holds the place's unanswered tasks now.

    The participant's row moves to table ``released`` (kept, with the reason and how many answers they gave),
    the person's link stops working, and the audit log records it. Nothing answered: the same person id is
    a free place again (its consent and practice state cleared). Some answered: the unanswered active tasks
    move to a successor (``<person>.2``, ``.3`` ...), a place never served; later tasks of the person go there
    too (:func:`heart.annotation.store.load_tasks`). ``block``: the platform id may not enter again."""
    with db.transaction(conn):
        held = conn.execute("SELECT * FROM participants WHERE person_id = ?", (person_id,)).fetchone()
        if held is None:
            raise db.StoreError(f"{person_id!r} holds no platform participant's place (only places taken "
                                "through the study link can be given back); `python -m heart.annotation revoke` "
                                "gives a person a new link")
        answered = conn.execute("SELECT COUNT(*) FROM answers WHERE person_id = ?", (person_id,)).fetchone()[0]
        at = db.now()
        conn.execute("INSERT INTO released VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (held["role"], held["participant"], person_id, held["study"], held["session"],
                      held["provisioned_at"], at, reason, answered))
        conn.execute("DELETE FROM participants WHERE person_id = ?", (person_id,))
        conn.execute("UPDATE people SET epoch = epoch + 1 WHERE person_id = ?", (person_id,))
        if block:
            conn.execute("INSERT OR REPLACE INTO blocked VALUES (?, ?, ?, ?)",
                         (held["role"], held["participant"], at, reason))
        holder = person_id
        if not answered:
            conn.execute("DELETE FROM person_state WHERE person_id = ?", (person_id,))
            conn.execute("DELETE FROM serves WHERE person_id = ?", (person_id,))
        else:
            taken = {r[0] for r in conn.execute("SELECT person_id FROM people")}
            holder = next(f"{person_id}.{k}" for k in range(2, 10**6) if f"{person_id}.{k}" not in taken)
            conn.execute("INSERT INTO people (person_id, role) VALUES (?, ?)", (holder, held["role"]))
            conn.execute("INSERT INTO succession VALUES (?, ?)", (person_id, holder))
            conn.execute("UPDATE tasks SET person_id = ? WHERE person_id = ? AND active = 1 AND task_id NOT IN "
                         "(SELECT task_id FROM answers)", (holder, person_id))
            conn.execute("DELETE FROM serves WHERE person_id = ? AND task_id NOT IN (SELECT task_id FROM answers)",
                         (person_id,))
        audit.log(conn, "release", person_id, reason=reason, answered=answered, successor=holder, blocked=block)
    return holder


def release_idle(conn: sqlite3.Connection, idle_s: float) -> list[str]:
    """Give back every place whose participant has unanswered tasks, is not stopped and has done nothing for
    ``idle_s`` seconds (no page served, no answer, consent or practice; counted from entering). Returns the
    persons released."""
    rows = conn.execute(
        "SELECT x.person_id, MAX(x.provisioned_at, "
        "  COALESCE((SELECT MAX(served_at) FROM serves s WHERE s.person_id = x.person_id), 0), "
        "  COALESCE((SELECT MAX(at) FROM audit u WHERE u.person_id = x.person_id), 0)) AS last "
        "FROM participants x LEFT JOIN person_state st USING (person_id) WHERE st.stopped_at IS NULL "
        "AND EXISTS (SELECT 1 FROM tasks t WHERE t.person_id = x.person_id AND t.active = 1 "
        "            AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.task_id = t.task_id))").fetchall()
    now, out = db.now(), []
    for r in rows:
        if now - r["last"] > idle_s:
            release(conn, r["person_id"], f"idle for more than {idle_s / 60:g} minutes")
            out.append(r["person_id"])
    return out


def participants(conn: sqlite3.Connection) -> dict[str, str]:
    """person_id -> platform participant id, for the coordinator's page."""
    return {r["person_id"]: r["participant"] for r in conn.execute("SELECT person_id, participant FROM participants")}


def state(conn: sqlite3.Connection, person_id: str) -> dict:
    """A person's study state: consented_at, practice_step (items answered), practice_done_at, stopped_at,
    stop_reason (None: not yet)."""
    row = conn.execute("SELECT * FROM person_state WHERE person_id = ?", (person_id,)).fetchone()
    keys = ("consented_at", "practice_step", "practice_done_at", "stopped_at", "stop_reason")
    return {k: (row[k] if row else (0 if k == "practice_step" else None)) for k in keys}


def _set(conn, person_id: str, column: str, value, event: str, **detail) -> None:
    with db.transaction(conn):
        conn.execute("INSERT OR IGNORE INTO person_state (person_id) VALUES (?)", (person_id,))
        conn.execute(f"UPDATE person_state SET {column} = ? WHERE person_id = ? AND {column} IS NULL",
                     (value, person_id))
        audit.log(conn, event, person_id, **detail)


def consent(conn: sqlite3.Connection, person_id: str) -> None:
    _set(conn, person_id, "consented_at", db.now(), "consent")


def practice_answered(conn: sqlite3.Connection, person_id: str, step: int, correct: bool, total: int) -> bool:
    """Count practice item ``step`` as answered (once: a resubmitted form is not counted again); the last
    one ends the practice (audit: how many were right). Returns False when ``step`` is not the next item."""
    with db.transaction(conn):
        conn.execute("INSERT OR IGNORE INTO person_state (person_id) VALUES (?)", (person_id,))
        moved = conn.execute("UPDATE person_state SET practice_step = practice_step + 1, practice_correct = "
                             "practice_correct + ? WHERE person_id = ? AND practice_step = ?",
                             (int(correct), person_id, step)).rowcount
        if moved and step + 1 >= total:
            conn.execute("UPDATE person_state SET practice_done_at = ? WHERE person_id = ?", (db.now(), person_id))
            right = conn.execute("SELECT practice_correct FROM person_state WHERE person_id = ?",
                                 (person_id,)).fetchone()[0]
            audit.log(conn, "practice", person_id, correct=right, total=total)
    return bool(moved)


def stop(conn: sqlite3.Connection, person_id: str, reason: str) -> None:
    with db.transaction(conn):
        conn.execute("INSERT OR IGNORE INTO person_state (person_id) VALUES (?)", (person_id,))
        conn.execute("UPDATE person_state SET stopped_at = ?, stop_reason = ? WHERE person_id = ? "
                     "AND stopped_at IS NULL", (db.now(), reason, person_id))
        audit.log(conn, "stop", person_id, reason=reason)


def qc_record(conn: sqlite3.Connection, person_id: str) -> tuple[int, int]:
    """(failed, checked) quality checks of a rater so far."""
    rows = conn.execute("SELECT t.payload, a.answer FROM answers a JOIN tasks t USING (task_id) "
                        "WHERE a.person_id = ? AND a.kind = 'rating'", (person_id,)).fetchall()
    checks = [(json.loads(r["payload"]).get("qc_expected"), json.loads(r["answer"])["choice"]) for r in rows]
    checks = [(e, c) for e, c in checks if e]
    return sum(not qc_passed(e, c) for e, c in checks), len(checks)


def attention(conn: sqlite3.Connection, person_id: str, study: dict) -> str | None:
    """Stop the rater if their quality checks call for it (see the module's text); returns the reason when
    stopped now, else None."""
    limit = study.get("stop_after_qc_failures")
    if not limit:
        return None
    failed, checked = qc_record(conn, person_id)
    if failed >= limit and failed / checked >= study["max_qc_fail_share"]:
        reason = f"failed {failed} of {checked} attention checks"
        stop(conn, person_id, reason)
        return reason
    return None


def flags(kind: str, answer: dict, seconds: float, study: dict) -> dict:
    """What the server flags on an answer: ``fast`` (under the kind's minimum seconds) and ``pasted_rate``
    (its text arrived faster than anyone types since the page was served)."""
    text = answer.get("text") or answer.get("rationale") or ""
    fast = seconds < float(study["min_seconds"].get(kind, 0))
    typed_too_fast = bool(text) and len(text) / max(seconds, 1e-3) > float(study["max_chars_per_second"])
    return {"fast": fast, "pasted_rate": typed_too_fast}
