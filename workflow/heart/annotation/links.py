"""People's secret links. A person's token is an HMAC of their id (and a revocation epoch) under a random key
kept in a file beside the database (mode 0600), so the coordinator page can show every link again, the
database alone does not hold a usable token, and bumping the epoch revokes one."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import sqlite3
from pathlib import Path

from heart.annotation import audit, db

COORDINATOR = "coordinator"


def key_path(db_path) -> Path:
    """Where the link key of a database lives: beside it, ``<db>.key``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".key")


def create_key(db_path) -> None:
    """Create the link key beside a new database (readable by its owner only); a database without its key is
    refused: every link would change."""
    db_path = Path(db_path)
    kp = key_path(db_path)
    if db_path.exists() and not kp.exists():
        raise db.StoreError(f"{db_path} exists but its link key {kp} does not: every link would change. "
                            "Restore the key file from your backup, or start a new database elsewhere")
    if not kp.exists():
        fd = os.open(kp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")


def read_key(db_path) -> bytes:
    kp = key_path(db_path)
    try:
        return bytes.fromhex(kp.read_text().strip())
    except FileNotFoundError:
        raise db.StoreError(f"the link key {kp} is missing; run `python -m heart.annotation init` first") from None


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
    with db.transaction(conn):
        if conn.execute("UPDATE people SET epoch = epoch + 1 WHERE person_id = ?", (person_id,)).rowcount != 1:
            raise db.StoreError(f"no person {person_id!r} in the store")
        audit.log(conn, "revoke", person_id)
