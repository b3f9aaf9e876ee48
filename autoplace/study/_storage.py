"""Study storage: a URL turned into one of Optuna's storages, which do the sharing.

| URL | storage | for |
| --- | --- | --- |
| ``sqlite:///path.db`` (the default, ``./studies/autoplace.db``) | Optuna RDB | one machine |
| ``journal:///path.log`` (or a path ending .log) | Optuna Journal file | a shared file system |
| ``postgresql://user@host/db`` | Optuna RDB | many machines (needs ``psycopg``) |
| ``mysql://user@host/db`` | Optuna RDB, through PyMySQL | many machines (needs ``pymysql``) |
| ``redis://host:port/0`` | Optuna Journal on Redis | many machines (needs ``redis``) |

autoplace never writes a storage of its own: Optuna's are the distributed engine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autoplace.errors import StorageError, first_line

DEFAULT_DB = Path("studies") / "autoplace.db"

_DRIVERS = {
    "postgresql": ("psycopg", "'psycopg[binary]'"),
    "mysql": ("pymysql", "pymysql"),
    "redis": ("redis", "redis"),
}


def default_url(root: Path | None = None) -> str:
    return f"sqlite:///{(root or Path.cwd()) / DEFAULT_DB}"


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    return re.sub(r"(://[^/:@]*:)[^@/]*@", r"\1***@", url)


def normalize_url(url: str) -> str:
    """Accept the spellings people type: a bare ``.db``/``.log`` path, ``mysql://``, ``postgres://``."""
    if "://" not in url:
        if url.endswith((".log", ".jsonl", ".journal")):
            return f"journal:///{Path(url).resolve()}"
        return f"sqlite:///{Path(url).resolve()}"
    scheme, rest = url.split("://", 1)
    # Name the drivers we install, whatever SQLAlchemy's default for the dialect is.
    scheme = {
        "postgres": "postgresql+psycopg",
        "postgresql": "postgresql+psycopg",
        "mysql": "mysql+pymysql",
    }.get(scheme, scheme)
    return f"{scheme}://{rest}"


def _require(scheme: str) -> None:
    base = scheme.split("+")[0]
    if base in _DRIVERS:
        module, package = _DRIVERS[base]
        if importlib.util.find_spec(module) is None:
            raise StorageError(
                f"{base} storage needs the {module} driver: pip install {package} "
                f"(or pip install 'autoplace[{base}]')"
            )


def open_storage(url: str) -> Any:
    """An Optuna storage for ``url``. Raises :class:`StorageError` with the fix on failure."""
    from optuna.storages import JournalStorage, RDBStorage
    from optuna.storages.journal import JournalFileBackend, JournalRedisBackend

    url = normalize_url(url)
    scheme = url.split("://", 1)[0]
    _require(scheme)
    shown = mask_url(url)
    try:
        if scheme == "journal":
            path = Path(url.split("://", 1)[1])
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if scheme == "redis":
            return JournalStorage(JournalRedisBackend(url))
        if scheme == "sqlite":
            path = Path(url.split(":///", 1)[1]) if ":///" in url else None
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                _check_sqlite(path)
        return RDBStorage(url, engine_kwargs=_engine_kwargs(scheme))
    except StorageError:
        raise
    except Exception as exc:
        raise StorageError(
            f"cannot open study storage {shown}: {first_line(exc)}; check the URL, that the server "
            "is running, and that the file is an autoplace/Optuna study database"
        ) from exc


def close_storage(storage: Any) -> None:
    """Release the storage's connections (Optuna leaves them to the garbage collector)."""
    engine = getattr(storage, "engine", None)
    if engine is not None:
        storage.remove_session()
        engine.dispose()
    backend = getattr(storage, "_backend", None)
    client = getattr(backend, "_redis", None)
    if client is not None:
        client.close()


@contextlib.contextmanager
def storage_at(url: str) -> Iterator[Any]:
    """:func:`open_storage` as a context manager that closes the storage afterwards."""
    storage = open_storage(url)
    try:
        yield storage
    finally:
        close_storage(storage)


def _engine_kwargs(scheme: str) -> dict[str, Any]:
    if scheme.startswith(("mysql", "postgresql")):
        return {"pool_pre_ping": True}
    return {}


def _check_sqlite(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLAlchemy turns it into a long traceback."""
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            header = fh.read(16)
        if header != b"SQLite format 3\x00":
            raise StorageError(
                f"{path} is not a SQLite database (damaged, or another kind of file): "
                "move it away or pass another --storage"
            )
