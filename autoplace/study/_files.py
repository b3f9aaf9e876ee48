"""A study file checked before anything is measured, and opened as its use needs: a
SQLite file refused in one line when it is damaged, read-only or on a full disk, a Journal
file on a full disk (rather than in a long traceback mid-run; a cut Journal file is mended:
:mod:`._journal`); a reader's connections that cannot write; the lock under which a new
SQLite file gets its tables."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoplace._atomic import probe_room
from autoplace.errors import StorageError
from autoplace.host import lock_dir
from autoplace.study._faults import fault_error, transient


def read_only(path: Path) -> Callable[[], Any]:
    """Connections to the SQLite file ``path`` that can only read: nothing a reader does
    reaches the file (SQLAlchemy would create a missing one, Optuna its missing tables)."""
    import sqlite3

    uri = f"{path.resolve().as_uri()}?mode=ro"
    return lambda: sqlite3.connect(uri, uri=True, check_same_thread=False)


def creating(path: Path) -> Any:
    """A lock held while a SQLite study file is opened (its tables created if new), under
    the temporary directory, named after the file's path."""
    from filelock import FileLock

    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return FileLock(lock_dir() / f"sqlite-{digest}.lock")


def check_room(path: Path) -> None:
    """Refuse, before anything is measured, a study file on a disk with no room left."""
    try:
        probe_room(path.parent)
    except OSError as exc:
        raise fault_error(str(path), exc, str, opened=False, place=str(path)) from None


def check_sqlite(path: Path, *, reading: bool = False) -> None:
    """Refuse, before SQLAlchemy turns it into a long traceback and before anything is
    measured: a file that is not SQLite or is damaged, and, unless only ``reading``, one
    in a folder autoplace may not write (SQLite writes a journal beside it), one on a disk
    with no room left."""
    for place in () if reading else (path.parent, path if path.exists() else None):
        if place is not None and not os.access(place, os.W_OK):
            raise StorageError(
                f"cannot write the study database {path} ({place} is read-only, and SQLite "
                "writes beside it): pass a --storage in a folder you can write"
            )
    if not path.exists() or path.stat().st_size == 0:
        check_room(path)
        return
    with open(path, "rb") as fh:
        header = fh.read(16)
    if header != b"SQLite format 3\x00":
        raise StorageError(
            f"{path} is not a SQLite database (damaged, or another kind of file): "
            "move it away or pass another --storage"
        )
    check_pages(path)
    if not reading:
        check_room(path)


def check_pages(path: Path) -> None:
    """Refuse a SQLite file whose pages are damaged (``PRAGMA quick_check``: a few ms per
    MB), which would otherwise fail mid-run. A file another process holds locked is left
    to the retries."""
    import sqlite3
    from urllib.parse import quote

    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        ) as db:
            problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as exc:
        if transient(exc):
            return
        problems = [str(exc)]
    if problems != ["ok"]:
        raise StorageError(
            f"the study database {path} is damaged ({'; '.join(problems)[:200]}): restore it "
            "from a copy, or move it away and pass another --storage"
        )
