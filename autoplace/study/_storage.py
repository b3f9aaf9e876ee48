"""Study storage: a URL turned into one of Optuna's storages, which do the sharing.

| URL | storage | for |
| --- | --- | --- |
| ``sqlite:///path.db`` (the default, ``./studies/autoplace.db``) | Optuna RDB | one machine |
| ``journal:///path.log`` (or a path ending .log) | Optuna Journal file | a shared file system |
| ``postgresql://user@host/db`` | Optuna RDB | many machines (needs ``psycopg``) |
| ``mysql://user@host/db`` | Optuna RDB, through PyMySQL | many machines (needs ``pymysql``) |
| ``redis://host:port/0`` | Optuna Journal on Redis | many machines (needs ``redis``) |

autoplace never writes a storage of its own: Optuna's are the distributed engine. What it
adds is at the edges: a server that does not answer is a fault, not a hang (every
connection waits at most :data:`CONNECT_TIMEOUT_S` to open and :data:`STATEMENT_TIMEOUT_S`
for an answer, on every server), each fault is retried by :mod:`._faults`, and a file
storage is checked before anything is measured (a disk with no room, a damaged file).

What cannot be a study storage at all ends at once, in one line, before anything is
measured: an in-memory SQLite database (the study would end with the process), a study
name longer than the storages keep, a server address that leads nowhere when the storage
is opened (nothing listens there, no host has that name: a typo far more often than an
outage, which a run that has begun waits for). A command that only reads (``explain``,
``report``, a launcher's look-up) opens with ``reading=True``: it never creates a study
file, nor the tables in one, and a SQLite file is opened read-only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from autoplace._interrupt import Interrupt
from autoplace._paths import shown as shown_path
from autoplace.errors import BadInputError, StorageError
from autoplace.study._faults import (
    Unreachable,
    cause,
    fault_error,
    from_storage,
    kind,
    overdue,
    remaining,
    retry,
    transient,
    unreachable,
    waiting_line,
)
from autoplace.study._files import check_room, check_sqlite, creating, read_only
from autoplace.study._foreign import refuse_foreign_tables, sqlite_tables
from autoplace.study._journal import journal_backend
from autoplace.study._url import file_path, mask_url, normalize_url, scrub

DEFAULT_DB = Path("studies") / "autoplace.db"
#: Seconds a connection to a server may take to open, and a server may take to answer a
#: statement (Optuna's are milliseconds), before the call counts as a fault: a server that
#: accepts connections and never answers is retried, then reported, never waited on forever.
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_S = 20.0
#: The longest study name a storage keeps: Optuna's RDB schema stores it in a
#: ``VARCHAR(512)`` column (``studies.study_name``, ``MAX_INDEXED_STRING_LENGTH`` in
#: ``optuna/storages/_rdb/models.py``), which PostgreSQL and MySQL enforce. SQLite, Journal
#: files and Redis would keep a longer one, but a study must fit any storage it may be
#: copied to (``optuna copy-study``), so one limit holds for all.
MAX_STUDY_NAME = 512
#: How long :func:`refuse_unreachable` waits for a connection to open or be refused.
_PROBE_S = 1.0
#: The port each server listens at when its URL names none.
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "redis": 6379}

_T = TypeVar("_T")
_DRIVERS = {
    "postgresql": ("psycopg", "'psycopg[binary]'"),
    "mysql": ("pymysql", "pymysql"),
    "redis": ("redis", "redis"),
}


def default_url(root: Path | None = None) -> str:
    return f"sqlite:///{(root or Path.cwd()) / DEFAULT_DB}"


def _require(scheme: str) -> None:
    base = scheme.split("+")[0]
    if base in _DRIVERS:
        module, package = _DRIVERS[base]
        if importlib.util.find_spec(module) is None:
            raise StorageError(
                f"{base} storage needs the {module} driver: pip install {package} "
                f"(or pip install 'autoplace[{base}]')"
            )


def check_storage_url(url: str) -> str:
    """``url`` normalised, or :class:`StorageError` for a storage no study can live in,
    before anything is opened or measured: an in-memory SQLite database (``sqlite://``,
    ``sqlite:///:memory:``), a server whose driver is not installed."""
    url = normalize_url(url)
    scheme = url.split("://", 1)[0]
    if scheme.startswith("sqlite") and file_path(url) is None:
        raise StorageError(
            f"{mask_url(url)} is an in-memory SQLite database: the study would be lost when "
            "autoplace ends, and every measurement with it; pass a file path, e.g. --storage "
            "sqlite:///studies/autoplace.db (four slashes for an absolute path)"
        )
    _require(scheme)
    return url


def refuse_unreachable(url: str) -> None:
    """Refuse at once a server URL whose address leads nowhere (nothing listens there, no
    host has that name: see :func:`unreachable`), for a caller about to start a worker
    before it waits for the storage to open: one TCP connection, closed unused. Only a
    definite answer within :data:`_PROBE_S` counts. A URL that is not a plain
    ``host[:port]`` (a socket path, several hosts, a query) is not looked at here:
    :func:`open_storage` tells the same apart, later."""
    import socket

    url = normalize_url(url)
    scheme = url.split("://", 1)[0].split("+")[0]
    host, port = _address(url)
    if scheme not in _DEFAULT_PORTS or "?" in url or "," in url or not host or not port:
        return
    try:
        socket.create_connection((host.strip("[]"), port), timeout=_PROBE_S).close()
    except OSError as exc:
        found = unreachable(exc)
        if found is not None:  # the resolver's words, not "[Errno -2] Name or service..."
            raise StorageError(_nowhere(url, found, exc.strerror or cause(exc))) from None


def check_usable(url: str) -> str:
    """``url`` checked as a place a study can live (:func:`check_storage_url`), not another
    program's SQLite file, at an address that leads somewhere (:func:`refuse_unreachable`):
    what a command about to start a worker checks first. The URL as checked."""
    url = check_storage_url(url)
    refuse_foreign_tables(url)
    refuse_unreachable(url)
    return url


def check_study_name(name: str) -> str:
    """``name``, or :class:`BadInputError` when it is longer than a storage keeps (see
    :data:`MAX_STUDY_NAME`), before anything is stored under it."""
    if len(name) > MAX_STUDY_NAME:
        raise BadInputError(
            f"the study name {name[:20]}... is {len(name)} characters: study names are at "
            f"most {MAX_STUDY_NAME} characters in this storage and every other (Optuna's "
            "database schema); pass a shorter --study"
        )
    return name


def missing_study_file(url: str) -> Path | None:
    """The SQLite or Journal file ``url`` names when a reader would find no study in it:
    it is not there, or it is a SQLite file without Optuna's tables (empty). Opening it
    would create it, or its tables: a reader says so instead. ``None`` for a file that
    holds a study storage, and for a server."""
    path = file_path(url)
    if path is None or not path.is_file():
        return path
    if normalize_url(url).startswith("sqlite"):
        tables = sqlite_tables(path)
        if tables is not None and "version_info" not in tables:
            return path
    return None


def open_storage(
    url: str,
    *,
    on_wait: Callable[[str], None] | None = None,
    reading: bool = False,
    interrupt: Interrupt | None = None,
) -> Any:
    """An Optuna storage for ``url``; a server that is away is waited for as
    :func:`autoplace.study._faults.retry` says, ``on_wait`` hearing a line meanwhile (a
    Ctrl-C taken, ``interrupt``, cuts the wait short), but one whose address leads nowhere
    is refused at once (:func:`unreachable`). Raises :class:`StorageError` with the fix on
    failure, in one line without credentials.

    ``reading``: for a command that only reads; a study file it would have to create (see
    :func:`missing_study_file`) is refused, and a SQLite file is opened read-only."""
    from optuna.storages import JournalStorage

    url = check_storage_url(url)
    scheme = url.split("://", 1)[0]
    path = file_path(url)
    if reading:
        _check_readable(url)
    start = time.monotonic()
    shown = mask_url(url)

    def tell(waited: float, exc: BaseException | None) -> None:
        assert on_wait is not None
        on_wait(waiting_line(waited, exc, lambda text: scrub(text, url), shown))

    def opened(make: Callable[[], Any]) -> Any:
        return retry(
            make,
            on_wait=tell if on_wait is not None else None,
            give_up=unreachable,
            interrupt=interrupt,
        )

    try:
        if scheme == "journal":
            assert path is not None
            if not reading:
                path.parent.mkdir(parents=True, exist_ok=True)
                check_room(path)
            return JournalStorage(journal_backend(path, say=on_wait, reading=reading))
        if scheme == "redis":
            return opened(lambda: JournalStorage(_redis_backend(url)))
        kwargs = _engine_kwargs(url)
        if path is not None and reading:
            check_sqlite(path, reading=True)
            kwargs = {"creator": read_only(path)}
            return opened(lambda: _rdb_storage(url, kwargs))
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            check_sqlite(path)
            # Workers started together on a new file would each create its tables.
            with creating(path):
                return opened(lambda: _rdb_storage(url, kwargs))
        return opened(lambda: _rdb_storage(url, kwargs))
    except StorageError:
        raise
    except Exception as exc:
        found = unreachable(exc)
        if found is not None:
            why = scrub(cause(exc), url)
            raise StorageError(_nowhere(url, found, why)) from None
        if kind(exc) == "other" and path is None and _misread(exc):
            raise StorageError(
                f"cannot read the storage URL {shown} ({scrub(str(exc).splitlines()[0], url)}): "
                "percent-encode special characters in the password (/ as %2F, @ as %40, "
                "? as %3F, # as %23, % as %25)"
            ) from None
        waited = time.monotonic() - start if transient(exc) else None
        place = str(path) if path is not None else None
        raise fault_error(
            shown, exc, lambda text: scrub(text, url), opened=False, waited_s=waited, place=place
        ) from None


def _rdb_storage(url: str, engine_kwargs: dict[str, Any]) -> Any:
    """Optuna's RDB storage on ``url``; when it cannot be made (a fault, or the call's
    bound, midway through its first statements), its engine's connections closed rather
    than left to the garbage collector."""
    from optuna.storages import RDBStorage

    class Storage(RDBStorage):
        def __init__(self) -> None:
            try:
                super().__init__(url, engine_kwargs=engine_kwargs)
            except BaseException:
                engine = self.__dict__.get("engine")
                if engine is not None:
                    engine.dispose()
                raise

    return Storage()


def _nowhere(url: str, found: Unreachable, why: str) -> str:
    """The line for a server address that leads nowhere (``url`` normalised)."""
    shown = mask_url(url)
    host, port = _address(url)
    if found == "unknown host":
        where = f"no host is named {host}" if host else "its host name is known to no DNS"
        return f"study storage {shown}: {where} ({why}): check the host in --storage"
    at = f" at {host}:{port}" if host and port else ""
    return (
        f"study storage {shown}: nothing listens{at} ({why}): check the host and port in "
        "--storage, or start the server"
    )


def _address(url: str) -> tuple[str | None, int | None]:
    """The host and port a server URL names (the scheme's port when it names none), read
    without its credentials; ``None`` for what cannot be read."""
    from urllib.parse import urlsplit

    scheme = url.split("://", 1)[0].split("+")[0]
    try:
        parts = urlsplit(mask_url(url))
        host, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number
        return None, None
    if host and ":" in host:
        host = f"[{host}]"
    return host, port


def _check_readable(url: str) -> None:
    """Refuse, for a reader, a study file it would have to create (or create tables in)."""
    path = missing_study_file(url)
    if path is None:
        return
    if not path.exists():
        raise StorageError(
            f"no study storage at {shown_path(path)}: run `autoplace tune` first, or pass "
            "--storage where the study is"
        )
    raise StorageError(
        f"{shown_path(path)} holds no study (no Optuna tables in it): run `autoplace tune` "
        "first, or pass --storage where the study is"
    )


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


def reset_session(storage: Any) -> None:
    """Drop the calling thread's session of an RDB storage (a fault may have left it
    needing a rollback that can no longer reach the server); the next call opens another."""
    remove = getattr(storage, "remove_session", None)
    if remove is not None:
        with contextlib.suppress(Exception):  # a session that cannot even close: left to gc
            remove()


def ask_storage(storage: Any, url: str, question: Callable[[Any], _T]) -> _T:
    """``question(storage)``, a read outside a study log (a list of studies, an answer):
    retried while its fault may pass, its failure one :class:`StorageError` line."""
    start = time.monotonic()
    try:
        return retry(lambda: question(storage), before_retry=lambda: reset_session(storage))
    except Exception as exc:
        if isinstance(exc, StorageError) or not from_storage(exc):
            raise
        waited = time.monotonic() - start if transient(exc) else None
        raise fault_error(
            mask_url(url), exc, lambda text: scrub(text, url), opened=False, waited_s=waited
        ) from None


@contextlib.contextmanager
def storage_at(
    url: str, *, on_wait: Callable[[str], None] | None = None, reading: bool = False
) -> Iterator[Any]:
    """:func:`open_storage` as a context manager that closes the storage afterwards."""
    storage = open_storage(url, on_wait=on_wait, reading=reading)
    try:
        yield storage
    finally:
        close_storage(storage)


def _misread(exc: BaseException) -> bool:
    """Whether the driver could not parse the URL (an unencoded password is the usual cause)."""
    names = {k.__name__ for k in type(exc).__mro__}
    return isinstance(exc, ValueError) or "ArgumentError" in names


def _engine_kwargs(url: str) -> dict[str, Any]:
    """How SQLAlchemy connects: a pinged pool, and connections that give up on a server
    silent for :data:`STATEMENT_TIMEOUT_S`, or still answering when the storage call's
    bound has passed (:func:`~autoplace.study._faults.remaining`)."""
    scheme = url.split("://", 1)[0]
    if scheme.startswith("mysql"):
        return {"pool_pre_ping": True, "creator": _mysql_creator(url)}
    if scheme.startswith("postgresql"):
        return {"pool_pre_ping": True, "creator": _postgres_creator(url)}
    return {}


def _connect_args(url: str) -> tuple[Any, dict[str, Any]]:
    """What SQLAlchemy's dialect for ``url`` would pass its driver's ``connect``."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    cargs, cparams = parsed.get_dialect()().create_connect_args(parsed)
    return cargs, dict(cparams)


def _limit(timeout: float) -> tuple[float, bool]:
    """How long the next exchange with a server may wait: ``timeout``, or what is left of
    the storage call if less; and whether that bound is the call's (then ``<= 0``: it has
    passed)."""
    left = remaining()
    if left is not None and left < timeout:
        return left, True
    return timeout, False


def _postgres_creator(url: str) -> Callable[[], Any]:
    """Connections to PostgreSQL that give up on a server silent for
    :data:`STATEMENT_TIMEOUT_S` (libpq has no such timeout of its own; TCP keepalives do
    not see a server whose host still acknowledges packets), and on one still answering
    when the storage call's bound has passed."""
    import psycopg

    cargs, cparams = _connect_args(url)
    cparams.setdefault("connect_timeout", CONNECT_TIMEOUT_S)

    class TimedConnection(psycopg.Connection):
        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            limit, bound = _limit(STATEMENT_TIMEOUT_S if timeout is None else timeout)
            if limit <= 0:
                self.pgconn.finish()  # mid-call: unusable; SQLAlchemy sees it closed
                raise psycopg.OperationalError(overdue())
            start = time.monotonic()
            try:
                return super().wait(gen, interval, limit)
            except psycopg.OperationalError as exc:
                if time.monotonic() - start < limit:
                    raise
                self.pgconn.finish()  # mid-statement: unusable; SQLAlchemy sees it closed
                why = overdue() if bound else f"the server did not answer for {limit:g} s"
                raise psycopg.OperationalError(why) from exc

    def connect() -> Any:
        # libpq's connect timeout: whole seconds, 2 at least
        limit, bound = _limit(cparams.get("connect_timeout", CONNECT_TIMEOUT_S))
        if bound and limit <= 0:
            raise psycopg.OperationalError(overdue())
        timeout = max(2, math.ceil(limit)) if bound else cparams.get("connect_timeout")
        return TimedConnection.connect(*cargs, **{**cparams, "connect_timeout": timeout})

    return connect


def _mysql_creator(url: str) -> Callable[[], Any]:
    """Connections to MySQL through PyMySQL: its connect, read and write timeouts, each
    read cut to what is left of the storage call, and none begun once it has passed."""
    import pymysql
    from pymysql.connections import MysqlPacket
    from pymysql.constants import CR

    cargs, cparams = _connect_args(url)
    cparams.update(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=STATEMENT_TIMEOUT_S,
        write_timeout=STATEMENT_TIMEOUT_S,
    )

    class TimedConnection(pymysql.connections.Connection):
        def _read_packet(self, packet_type: Any = MysqlPacket) -> Any:
            self._read_timeout, bound = _limit(STATEMENT_TIMEOUT_S)
            if self._read_timeout <= 0:
                self._force_close()
                raise pymysql.err.OperationalError(CR.CR_SERVER_LOST, overdue())
            try:
                return super()._read_packet(packet_type)
            except pymysql.err.OperationalError as exc:
                if bound and (remaining() or 0.0) <= 0:
                    self._force_close()
                    raise pymysql.err.OperationalError(CR.CR_SERVER_LOST, overdue()) from exc
                raise

    return lambda: TimedConnection(*cargs, **cparams)


def _redis_backend(url: str) -> Any:
    """Optuna's Journal backend on Redis, its client with timeouts and without retries of
    its own (:mod:`._faults` retries every storage alike; a client retrying an append whose
    reply was lost would append it twice), its reads cut to what is left of the storage
    call, and no command sent once it has passed."""
    import redis
    from optuna.storages.journal import JournalRedisBackend
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    with warnings.catch_warnings():  # "experimental" in Optuna 4: not the user's news
        warnings.simplefilter("ignore")
        backend = JournalRedisBackend(url)
    backend._redis.close()
    client = redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=STATEMENT_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
    )
    pool = client.connection_pool
    pool.connection_class = _timed_redis(pool.connection_class)  # before any connects
    backend._redis = client
    return backend


def _timed_redis(base: type) -> type:
    """``base``, redis-py's connection class for the URL (TCP, TLS or a socket), whose
    commands end once the storage call's bound has passed."""
    import redis.exceptions

    class TimedConnection(base):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            if _limit(STATEMENT_TIMEOUT_S)[0] <= 0:
                self.disconnect()
                raise redis.exceptions.TimeoutError(overdue())
            super().send_packed_command(command, check_health)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            limit, bound = _limit(STATEMENT_TIMEOUT_S)
            if limit <= 0:
                self.disconnect()
                raise redis.exceptions.TimeoutError(overdue())
            if bound and self._sock is not None:
                self._sock.settimeout(limit)
            try:
                return super().read_response(*args, **kwargs)
            except redis.exceptions.TimeoutError as exc:
                if bound:
                    self.disconnect()
                    raise redis.exceptions.TimeoutError(overdue()) from exc
                raise
            finally:
                if bound and self._sock is not None:
                    self._sock.settimeout(self.socket_timeout)

    return TimedConnection
