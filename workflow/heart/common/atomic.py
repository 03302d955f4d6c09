"""Atomic file output and hashing: the leaf helpers every module may use (imports nothing of ``heart``).

A job's output appears complete or not at all: :func:`atomic_path` writes beside the destination and moves
the file on success only; :func:`move_all` moves several files in order and takes them all back should one
move fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(dest):
    """Yield a temporary path beside ``dest``; move it onto ``dest`` only if the block succeeds."""
    dest = Path(dest)
    tmp = temp_beside(dest)
    try:
        yield tmp
        ordinary_permissions(tmp)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def sha256_file(path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def temp_beside(dest: Path) -> str:
    """A new empty temporary file in ``dest``'s folder (made if need be), to be moved onto ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    return tmp


def ordinary_permissions(path) -> None:
    """mkstemp makes 0600; give the file the permissions of any file this process creates."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _keep_previous(dest: Path, backup: str) -> str | None:
    """Keep what ``dest`` holds (a file or a symbolic link) as ``backup``; None when it holds nothing."""
    if not os.path.lexists(dest):
        return None
    try:
        os.link(dest, backup, follow_symlinks=False)
    except OSError:  # a filesystem without hard links
        try:
            shutil.copy2(dest, backup, follow_symlinks=False)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(backup)
            raise
    return backup


def move_all(moves) -> None:
    """``os.replace`` each (temporary, destination) in order; on a failure, undo the ones done and re-raise.

    What a destination held (a file or a symbolic link, dangling or not) is kept as a hard link beside
    it until the end; if putting it back fails, that copy is left in place and named in the error.
    """
    done = []  # (destination, backup of what it held or None), for each one moved
    try:
        for tmp, dest in moves:
            backup = _keep_previous(dest, f"{tmp}.previous")
            try:
                os.replace(tmp, dest)
            except BaseException:
                if backup:  # the destination is unchanged
                    os.unlink(backup)
                raise
            done.append((dest, backup))
    except BaseException as exc:
        for dest, backup in reversed(done):
            try:
                if backup:
                    os.replace(backup, dest)
                else:
                    os.unlink(dest)
            except OSError as undo:
                exc.add_note(f"while undoing: {dest} could not be restored ({undo})"
                             + (f"; its previous content is kept in {backup}" if backup else ""))
                done = [d for d in done if d[0] != dest]
        raise
    finally:
        for _, backup in done:
            if backup:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(backup)
