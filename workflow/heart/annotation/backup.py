"""Online backup of the store and its link key, and restore from one (recorded in the audit log)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from heart.annotation import audit, db
from heart.annotation.links import key_path


def backup(db_path, dest_dir) -> Path:
    """An online backup of the store into ``dest_dir`` (SQLite's backup API: consistent while the server goes on
    answering), with its link key (mode 0600, or every link changes on restore). The copy is checked
    (``PRAGMA integrity_check``) and moved into place whole. Returns the copy's path."""
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / Path(db_path).name
    tmp = target.with_name(f".{target.name}.partial")
    tmp.unlink(missing_ok=True)
    src = db.connect(db_path)
    try:
        dst = sqlite3.connect(tmp)
        os.chmod(tmp, 0o600)  # participants' platform ids: readable by the owner only, as the store
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
        raise db.StoreError(f"the backup of {db_path} failed its integrity check ({ok}); nothing was written")
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
    """Put a backup (and its key) in place of the store at ``db_path``. Refused while a server holds the store
    (:func:`.db.exclusive`: answers written to a replaced file would be acknowledged and lost); an existing store
    is replaced only with ``force`` (its WAL files go with it); the restore is recorded in the audit log."""
    backup_path, db_path = Path(backup_path), Path(db_path)
    if not backup_path.is_file() or not key_path(backup_path).is_file():
        raise db.StoreError(f"{backup_path}: not a backup made by `python -m heart.annotation backup` (the store "
                            f"and its key {key_path(backup_path).name} must both be there)")
    check = sqlite3.connect(f"file:{backup_path.resolve()}?mode=ro", uri=True)
    try:
        ok = check.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        check.close()
    if ok != "ok":
        raise db.StoreError(f"{backup_path} fails its integrity check ({ok}); use another backup")
    if db_path.exists() and not force:
        raise db.StoreError(f"{db_path} exists; stop the server and pass --force to replace it with {backup_path}")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with db.exclusive(db_path, "restore a backup over it"):  # refused while a server holds the store
        tmp = db_path.with_name(f".{db_path.name}.restoring")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # participants' ids: owner only
        with os.fdopen(fd, "wb") as fh:
            fh.write(backup_path.read_bytes())
            fh.flush()
            os.fsync(fh.fileno())
        for suffix in ("-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        os.replace(tmp, db_path)
        _put_key(key_path(db_path), key_path(backup_path).read_text())
    conn = db.connect(db_path)
    try:
        with db.transaction(conn):
            audit.log(conn, "restore", source=backup_path.name)
    finally:
        conn.close()
