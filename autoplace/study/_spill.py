"""The spill file: finished measurements a storage would not take, kept for the resume.

When a storage stays away past the patience (or its disk is full), the study log writes
each measurement it could not store to a small JSON file beside the recommendation file
(``autoplace.toml`` → ``autoplace.unstored.json``), or beside a file storage, or in the
working folder; with it, the trials it left RUNNING, so that the resume ends them at once
wherever it runs. The next log opened on the same study and storage imports the records
and removes them from the file (the file goes when it is empty). Records carry the study's
name and the storage without user info, so one file may serve several studies.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from autoplace._atomic import write_atomic
from autoplace.errors import StorageError
from autoplace.host import lock_dir
from autoplace.study._url import file_path

#: The version of the spill file's layout; a file of another is left alone, with a line.
SPILL_SCHEMA = 1
SUFFIX = ".unstored.json"


def spill_path(url: str, beside: Path | None) -> Path:
    """Where a log on ``url`` spills: beside ``beside`` (the recommendation file), else
    beside a file storage, else in the working folder."""
    anchor = beside or file_path(url) or Path.cwd() / "autoplace.toml"
    return anchor.with_name(f"{anchor.stem}{SUFFIX}")


def add(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """Append ``records`` to the spill file at ``path`` (whole, atomically; an ``OSError``
    or :class:`~autoplace.AutoplaceError` if it cannot be written)."""
    with _locked(path):
        write_atomic(path, _dump([*_load(path), *records]), what="the unstored measurements")


def take(path: Path, mine: Callable[[dict[str, Any]], bool], store: Callable[[dict], None]) -> int:
    """``store`` each record of the spill file at ``path`` that ``mine`` accepts, then
    remove those from the file (the file, once empty); how many were stored. A record
    whose ``store`` raises stays, with those after it."""
    if not path.exists():
        return 0
    with _locked(path):
        records = _load(path)
        kept = [r for r in records if not mine(r)]
        done = 0
        try:
            for record in (r for r in records if mine(r)):
                store(record)
                done += 1
        finally:
            left = kept + [r for r in records if mine(r)][done:]
            if not left:
                path.unlink(missing_ok=True)
            elif len(left) != len(records):
                write_atomic(path, _dump(left), what="the unstored measurements")
    return done


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise StorageError(
            f"the unstored measurements in {path} cannot be read ({exc}): move the file "
            "aside to go on without them"
        ) from None
    if not isinstance(doc, dict) or doc.get("spill_schema") != SPILL_SCHEMA:
        raise StorageError(
            f"{path} holds unstored measurements of another autoplace version: use that "
            "version to resume, or move the file aside"
        )
    return [r for r in doc.get("records", []) if isinstance(r, dict)]


def _dump(records: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"spill_schema": SPILL_SCHEMA, "records": list(records)}, indent=1)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Workers on one machine take turns reading and rewriting one spill file."""
    from filelock import FileLock

    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    with FileLock(lock_dir() / f"spill-{digest}.lock"):
        yield
