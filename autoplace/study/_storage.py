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
import hashlib
import importlib.util
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autoplace._host import lock_dir
from autoplace.errors import StorageError, first_line
from autoplace.study._faults import busy_error, retry, transient

DEFAULT_DB = Path("studies") / "autoplace.db"

_DRIVERS = {
    "postgresql": ("psycopg", "'psycopg[binary]'"),
    "mysql": ("pymysql", "pymysql"),
    "redis": ("redis", "redis"),
}


def default_url(root: Path | None = None) -> str:
    return f"sqlite:///{(root or Path.cwd()) / DEFAULT_DB}"


#: Query parameters that carry a secret (``?password=...``), masked like the password.
_SECRET_PARAMS = frozenset({"password", "passwd", "pwd", "secret", "token", "sslpassword"})


def mask_url(url: str) -> str:
    """The URL with its password, and any query parameter that carries a secret, replaced
    by ``***``. Parsed, not matched: the password is everything between the user's ``:``
    and the *last* ``@`` before the query, so a password holding ``/`` or ``@`` (which
    people paste unencoded) is masked whole."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    head, question, query = rest.partition("?")
    userinfo, at, host = head.rpartition("@")
    if at and ":" in userinfo:
        head = f"{userinfo.split(':', 1)[0]}:***@{host}"
    if question:
        params = []
        for param in query.split("&"):
            key, equals, _ = param.partition("=")
            secret = equals and key.lower() in _SECRET_PARAMS
            params.append(f"{key}=***" if secret else param)
        query = "&".join(params)
    return f"{scheme}://{head}{question}{query}"


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
            _check_journal(path)
            return JournalStorage(JournalFileBackend(str(path)))
        if scheme == "redis":
            with warnings.catch_warnings():  # "experimental" in Optuna 4: not the user's news
                warnings.simplefilter("ignore")
                return JournalStorage(JournalRedisBackend(url))
        if scheme == "sqlite":
            path = Path(url.split(":///", 1)[1]) if ":///" in url else None
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                _check_sqlite(path)
                # Workers started together on a new file would each create its tables.
                with _creating(path):
                    return retry(lambda: RDBStorage(url, engine_kwargs=_engine_kwargs(scheme)))
        return retry(lambda: RDBStorage(url, engine_kwargs=_engine_kwargs(scheme)))
    except StorageError:
        raise
    except Exception as exc:
        if transient(exc):
            raise busy_error(shown, exc) from exc
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


def _creating(path: Path) -> Any:
    """A lock held while a SQLite study file is opened (its tables created if new), under
    the temporary directory, named after the file's path."""
    from filelock import FileLock

    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return FileLock(lock_dir() / f"sqlite-{digest}.lock")


def _check_journal(path: Path) -> None:
    """Refuse a Journal file whose last record is cut or damaged, before anything is
    appended to it: Optuna would append after the broken line, and then could no longer
    read the file at all."""
    import json

    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - 65536))
        tail = fh.read()
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        ok = tail.endswith(b"\n") and isinstance(json.loads(last), dict)
    except ValueError:
        ok = False
    if not ok:
        raise StorageError(
            f"the study journal {path} ends in a cut or damaged record (a writer killed "
            "mid-write?): copy it aside, delete its last line, and run again"
        )


def _check_sqlite(path: Path) -> None:
    """Refuse a file that is not SQLite, or one in a folder autoplace may not write (SQLite
    writes a journal beside it), before SQLAlchemy turns it into a long traceback."""
    for place in (path.parent, path if path.exists() else None):
        if place is not None and not os.access(place, os.W_OK):
            raise StorageError(
                f"cannot write the study database {path} ({place} is read-only, and SQLite "
                "writes beside it): pass a --storage in a folder you can write"
            )
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            header = fh.read(16)
        if header != b"SQLite format 3\x00":
            raise StorageError(
                f"{path} is not a SQLite database (damaged, or another kind of file): "
                "move it away or pass another --storage"
            )
