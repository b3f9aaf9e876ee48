"""A SQLite file that holds another program's tables is not a study storage: refused before
Optuna adds its own tables to it.

Optuna's RDB storage creates its tables in whatever database it is given, so a
``--storage`` pointing at an application's SQLite file (a typo, a wrong folder) would
leave that file with a dozen study tables in it. :func:`refuse_foreign_tables` looks first,
read-only, and is called before a storage is opened for writing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from autoplace._paths import shown
from autoplace.errors import StorageError

#: The tables of an Optuna RDB storage (and of its schema migrations).
OPTUNA_TABLES = frozenset(
    {
        "alembic_version",
        "studies",
        "study_directions",
        "study_user_attributes",
        "study_system_attributes",
        "trials",
        "trial_params",
        "trial_values",
        "trial_intermediate_values",
        "trial_user_attributes",
        "trial_system_attributes",
        "trial_heartbeats",
        "version_info",
    }
)


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL (or of a bare path ending in ``.db``), else ``None``."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if "://" not in url and not url.endswith((".log", ".jsonl", ".journal")):
        return Path(url)
    return None


def sqlite_tables(path: Path) -> set[str] | None:
    """The tables of the SQLite file at ``path`` (SQLite's own left out), read-only;
    ``None`` when it is not a SQLite file or cannot be read now (held locked, unreadable:
    opening the storage says why, or waits for it)."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(16)
        if header not in (b"SQLite format 3\x00", b""):  # an empty file is an empty database
            return None
        # A file held locked is not waited for here (silently): opening the storage waits
        # for it, saying so.
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            return {name for (name,) in rows if not name.startswith("sqlite_")}
        finally:
            connection.close()
    except (OSError, sqlite3.Error):
        return None


def refuse_foreign_tables(url: str) -> None:
    """Raise :class:`StorageError` when ``url`` names an existing SQLite file holding tables
    but no Optuna storage (another program's database). Nothing is written to the file."""
    path = sqlite_path(url)
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return
    tables = sqlite_tables(path)
    if tables is None:
        return  # not SQLite at all, or unreadable: opening the storage says why
    foreign = sorted(tables - OPTUNA_TABLES)
    if foreign and "version_info" not in tables:  # an Optuna storage has it, whatever else
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        listed = ", ".join(foreign[:5]) + more
        raise StorageError(
            f"{shown(path)} holds tables of another program ({listed}), not only a study's: "
            "autoplace would add Optuna's tables to it; pass a --storage of its own (a new "
            "file, e.g. studies/autoplace.db)"
        )
