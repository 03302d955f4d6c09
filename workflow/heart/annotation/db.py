"""The store's SQLite file, opened the one way: WAL, full sync on commit, one writer at a time; and the
server's clock. Every module of the store (:mod:`.store`, :mod:`.links`, :mod:`.audit`, :mod:`.backup`)
works through these."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time


class StoreError(RuntimeError):
    """The store cannot be opened or loaded as asked; the message says what to do."""


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


def now() -> float:
    """The server's clock (one place, so tests can set it)."""
    return time.time()
