"""The store's SQLite file, opened the one way: WAL, full sync on commit, one writer at a time; and the
server's clock. Every module of the store (:mod:`.store`, :mod:`.links`, :mod:`.audit`, :mod:`.backup`)
works through these."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from pathlib import Path


class StoreError(RuntimeError):
    """The store cannot be opened or loaded as asked; the message says what to do."""


def connect(db_path) -> sqlite3.Connection:
    """A connection with the store's settings: WAL, full sync on commit, waits up to 10 s for a lock. A new store
    file is readable by its owner only (it holds participants' platform ids)."""
    fresh = not Path(db_path).exists()
    conn = sqlite3.connect(db_path, timeout=10, isolation_level=None, check_same_thread=False)
    if fresh:
        os.chmod(db_path, 0o600)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


#: one writer at a time within this process. SQLite's own lock makes a waiting writer sleep and retry with
#: growing pauses, so under load (100 raters posting at once) a write could wait seconds while others got
#: in first (p95 738 ms waiting for BEGIN IMMEDIATE, max 5.8 s); a lock taken in turn keeps the wait short
#: and fair. Other processes (the export, python -m heart.annotation void) still meet SQLite's lock.
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


def serving_path(db_path) -> Path:
    """The lock file a server holds while it serves a store: ``<db>.serving`` (its pid inside)."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".serving")


@contextlib.contextmanager
def exclusive(db_path, doing: str):
    """Hold the store's serving lock (``flock`` on :func:`serving_path`) for as long as the block runs:
    ``python -m heart.annotation serve`` holds it while it serves, ``restore`` while it replaces the file. A second
    holder is refused at once, naming the process that holds it; the lock goes with its process, however
    it ends (``kill -9`` too), so a stale lock file never blocks anyone."""
    path = serving_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise StoreError(f"{db_path} is in use by {holder}: cannot {doing} while it is. Stop the server "
                             "first (Ctrl-C where `python -m heart.annotation serve` runs, or kill that pid), then "
                             "run this again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({doing}, since {time.strftime('%Y-%m-%d %H:%M:%S')})".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
