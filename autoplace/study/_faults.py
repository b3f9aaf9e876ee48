"""Storage faults: which pass, how long autoplace waits for them, and the line a user reads.

Every fault of a storage in use that may pass is *transient*, the same on all five
storages: a connection refused, reset, dropped or timed out (a server restarting, gone,
or silent past the timeouts of :mod:`._storage`), a lock another process holds, a lock
wait or a deadlock. A call that meets one is tried again with backoff for up to
:data:`PATIENCE_S` (:func:`retry`), its ``on_wait`` told meanwhile. The call as a whole,
tries and waits together, is bounded by the same minute (:data:`CALL_LIMIT_S`,
:func:`bounded`): a server that answers every exchange, only too slowly, passes each
timeout of the drivers, so the drivers' hooks in :mod:`._storage` read what is left of
the call (:func:`remaining`) and end a try that runs past it, as though the server had
not answered (:func:`overdue`). A fault that no wait mends ends at once: a full disk, a
damaged database file, refused credentials, a missing database. So does, while a storage
is being opened (before a run has stored anything), an address that is
:func:`unreachable`: nothing listens there, or no host has that name, a typo far more
often than an outage. Either way the user reads one line
(:func:`fault_error`) naming the storage, without its credentials, and the driver's own
cause, never Optuna's wrapper around it ("invalid data ... e.g. exceeding max length",
which blames the data).
"""

from __future__ import annotations

import contextlib
import errno
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Literal, TypeVar

from autoplace._interrupt import Interrupt
from autoplace.errors import StorageError, StorageFaultError, first_line

#: How long a storage call is tried again, with backoff (0.1 s doubling to 2 s), while its
#: fault may pass, before the run ends.
PATIENCE_S = 60.0
#: How long a storage call may take in all, its tries and waits together (:func:`bounded`):
#: the same minute, so that a server answering too slowly ends a run as one that does not
#: answer does. Calls slow one after another share it (``since`` of :func:`retry`).
CALL_LIMIT_S = 60.0
#: A call that takes this long or longer is slow (autoplace says by then that it waits;
#: a call takes milliseconds): slow calls one after another are one wait.
SLOW_S = 5.0
#: The longest pause between two tries: a server back is used again within this (a try
#: costs little: a refused connection is answered at once).
MAX_DELAY_S = 2.0
#: A wait shorter than this is not worth a line (a lock held for a moment).
_QUIET_S = 1.0
_T = TypeVar("_T")

Kind = Literal["locked", "away", "full", "damaged", "credentials", "other"]


def retry(
    action: Callable[[], _T],
    *,
    on_wait: Callable[[float, BaseException | None], None] | None = None,
    before_retry: Callable[[], None] | None = None,
    patience_s: float | None = None,
    give_up: Callable[[BaseException], object] | None = None,
    interrupt: Interrupt | None = None,
    since: float | None = None,
) -> _T:
    """``action()``, tried again with backoff (0.1 s doubling to :data:`MAX_DELAY_S`) while
    its failure is :func:`transient`, for up to ``patience_s`` (default and at most
    :data:`PATIENCE_S`), and :func:`bounded` as a whole, tries and waits together (a try
    still under way then is ended by the drivers' hooks); its last failure is raised as it
    came (or, when the bound cut the last try, the failure before, if any: what kept the
    call from its answer), at once where ``give_up(failure)`` is true.
    ``on_wait(seconds waited, last failure)`` hears of each wait past the first second, and
    every :data:`TICK_S` while one try hangs (the failure is then the last one, or
    ``None``: a server silent up to its timeout); ``before_retry()`` runs before each new
    try (a session reset). A Ctrl-C taken (``interrupt``) cuts the wait short: the next
    try is the last (a measurement the storage then will not take goes to the spill file).
    ``since`` (``time.monotonic()``): when the wait began, if
    before this call (the slow calls just before it: see :data:`SLOW_S`); the patience,
    the bound and the seconds said count from then."""
    patience = PATIENCE_S if patience_s is None else min(patience_s, PATIENCE_S)
    start, delay = time.monotonic() if since is None else since, 0.1
    before: Exception | None = None  # the last failure that was not a try cut by the bound
    ends = False
    with bounded(CALL_LIMIT_S - (time.monotonic() - start)), _Ticker(start, on_wait) as ticker:
        while True:
            try:
                return action()
            except Exception as exc:
                waited, left = time.monotonic() - start, remaining() or 0.0
                ends = (
                    not transient(exc)
                    or waited >= patience
                    or left <= 0
                    or (interrupt is not None and interrupt.is_set())
                    or bool(give_up and give_up(exc))
                )
                if not cut_short(exc):
                    before = exc
                if ends and before in (None, exc):
                    raise
                if not ends and waited >= _QUIET_S:
                    ticker.tell(waited, exc)
            if ends:
                assert before is not None
                raise before
            pause = min(delay, max(0.0, patience - waited), left)
            if interrupt is None:
                time.sleep(pause)
            else:
                interrupt.wait(pause)
            delay = min(2 * delay, MAX_DELAY_S)
            if before_retry is not None:
                before_retry()


#: When the storage call under way in this context must end (``time.monotonic()``), or
#: ``None`` outside one. Each thread has its own context, so nothing here is shared: the
#: drivers' hooks of :mod:`._storage` read the bound of the call their own thread makes.
_DEADLINE: ContextVar[float | None] = ContextVar("autoplace_storage_deadline", default=None)


@contextlib.contextmanager
def bounded(seconds: float | None = None) -> Iterator[None]:
    """Within it, the storage calls of this thread end ``seconds`` (default
    :data:`CALL_LIMIT_S`) from now, or by the bound around it if that comes first: a try
    the drivers are still making then raises :func:`overdue`'s fault at its next exchange
    with the server (the drivers' own timeouts are cut to what is left)."""
    limit = time.monotonic() + (CALL_LIMIT_S if seconds is None else seconds)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(limit if outer is None else min(outer, limit))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left to the storage call under way in this thread (zero or less: it is
    overdue), ``None`` outside :func:`bounded`."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def overdue() -> str:
    """What a driver's hook says when it ends a try past the call's bound: the cause of
    the one line a user reads (``did not answer for 60 s (<this>)``)."""
    return f"it answers too slowly: the storage call was still unfinished after {CALL_LIMIT_S:g} s"


def cut_short(exc: BaseException) -> bool:
    """Whether ``exc`` is a try a driver's hook ended past the call's bound."""
    return any(overdue() in str(c) for c in causes(exc))


#: How often a line says that a try still hangs.
TICK_S = 5.0


class _Ticker:
    """Tells ``on_wait`` of a wait: each retry's, and every :data:`TICK_S` without one
    (from a thread of its own: the caller's is blocked in the driver)."""

    def __init__(
        self, start: float, on_wait: Callable[[float, BaseException | None], None] | None
    ) -> None:
        self._start, self._on_wait = start, on_wait
        self._last = time.monotonic()  # a tick after TICK_S of this call
        self._exc: BaseException | None = None
        self._lock, self._done = threading.Lock(), threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Ticker:
        if self._on_wait is not None:
            self._thread = threading.Thread(target=self._tick, name="autoplace-wait", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def tell(self, waited: float, exc: BaseException | None) -> None:
        if self._on_wait is None:
            return
        with self._lock:
            self._last, self._exc = time.monotonic(), exc
            self._on_wait(waited, exc)

    def _tick(self) -> None:
        while not self._done.wait(TICK_S / 5):
            now = time.monotonic()
            if now - self._last >= TICK_S and not self._done.is_set():
                self.tell(now - self._start, self._exc)


Unreachable = Literal["refused", "unknown host"]
#: What the drivers say of an address nothing listens at (libpq, for psycopg, says it in
#: words only; PyMySQL and redis-py keep the OSError) and of a host name no DNS knows.
_REFUSED_TEXT = "connection refused"
_UNKNOWN_HOST_TEXT = (
    "name or service not known",
    "no address associated with hostname",
    "nodename nor servname provided",
)
_UNKNOWN_HOST_ERRNOS = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)


def unreachable(exc: BaseException) -> Unreachable | None:
    """Whether ``exc`` says that a server's address leads nowhere: ``"refused"`` (nothing
    listens at that host and port: ECONNREFUSED) or ``"unknown host"`` (no host has that
    name: the resolver's definite no, not its "try again"). ``None`` for everything else,
    a timeout, a reset or a server that accepted and then failed included."""
    for c in causes(exc):
        if isinstance(c, ConnectionRefusedError) or (
            isinstance(c, OSError) and c.errno == errno.ECONNREFUSED
        ):
            return "refused"
        if isinstance(c, socket.gaierror) and c.errno in _UNKNOWN_HOST_ERRNOS:
            return "unknown host"
        if _module(c) == "psycopg":  # libpq's message: no errno, no SQLSTATE
            text = str(c).lower()
            if _REFUSED_TEXT in text:
                return "refused"
            if any(s in text for s in _UNKNOWN_HOST_TEXT):
                return "unknown host"
    return None


def transient(exc: BaseException) -> bool:
    """Whether a storage's failure may pass if tried again (see the module docstring)."""
    return kind(exc) in ("locked", "away")


def kind(exc: BaseException) -> Kind:
    """What a storage's failure is: a lock held elsewhere, a server away, a full disk, a
    damaged file, refused credentials, or something else (not retried)."""
    chain = list(causes(exc))
    for cause in chain:  # what no wait mends first: an auth error is a ConnectionError too
        found = _lasting(cause)
        if found is not None:
            return found
    for cause in chain:
        found = _passing(cause)
        if found is not None:
            return found
    return "other"


#: What a driver's message says when another process holds the lock autoplace waits for.
_LOCKED = (
    "database is locked",
    "database is busy",
    "lock wait",
    "deadlock",
    "could not obtain lock",
    "could not serialize",
)
#: MySQL/MariaDB error codes of a fault that passes: too many connections, shutdown, lock
#: wait, deadlock, interrupted, killed, can't connect, gone away, lost, idle disconnect.
_MYSQL_AWAY = frozenset({0, 1040, 1053, 1205, 1213, 1317, 1927, 2002, 2003, 2006, 2013, 2055, 4031})
#: ... and of refused credentials or a missing database.
_MYSQL_CREDENTIALS = frozenset({1044, 1045, 1049, 1698})
#: PostgreSQL SQLSTATE classes of a fault that passes: connection exception, transaction
#: rollback (deadlock, serialization), insufficient resources, operator intervention.
_PG_AWAY = ("08", "40", "53", "57")
_CREDENTIALS = (
    "authentication failed",
    "no password supplied",
    "access denied",
    "wrongpass",
    "noauth",
    "invalid password",
    "without any password configured",
    "invalid username-password",
)
#: PostgreSQL refusing a connection to a database or a role it does not have.
_PG_MISSING = re.compile(r'\b(?:database|role) "[^"]*" does not exist')
_FULL = ("database or disk is full", "no space left on device", "disk quota exceeded")
_DAMAGED = ("database disk image is malformed", "file is not a database", "file is encrypted")


def _lasting(cause: BaseException) -> Kind | None:
    text = str(cause).lower()
    if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
        return "full"
    if any(s in text for s in _FULL):
        return "full"
    if any(s in text for s in _DAMAGED):
        return "damaged"
    names = _class_names(cause)
    if "AuthenticationError" in names or "AuthorizationError" in names:
        return "credentials"
    if _module(cause) == "pymysql" and _mysql_code(cause) in _MYSQL_CREDENTIALS:
        return "credentials"
    sqlstate = str(getattr(cause, "sqlstate", None) or "")
    missing = _PG_MISSING.search(text) is not None  # PostgreSQL's, at connect: no SQLSTATE
    if sqlstate.startswith("28") or missing or any(s in text for s in _CREDENTIALS):
        return "credentials"
    return None


def _passing(cause: BaseException) -> Kind | None:
    text = str(cause).lower()
    if any(s in text for s in _LOCKED):
        return "locked"
    if getattr(cause, "connection_invalidated", False) or isinstance(
        cause, (ConnectionError, TimeoutError)
    ):
        return "away"
    module, names = _module(cause), _class_names(cause)
    if module == "redis" and names & {"ConnectionError", "TimeoutError"}:
        return "away"
    if module == "pymysql" and ("InterfaceError" in names or _mysql_code(cause) in _MYSQL_AWAY):
        return "away"
    if module == "psycopg":
        sqlstate = getattr(cause, "sqlstate", None)
        if sqlstate is None and names & {"OperationalError", "InterfaceError"}:
            return "away"  # lost before the server said why: refused, reset, timed out
        if sqlstate is not None and sqlstate[:2] in _PG_AWAY:
            return "away"
    if module == "sqlalchemy" and names & {"TimeoutError", "PendingRollbackError"}:
        return "away"  # no connection free in the pool; a session a fault left to roll back
    return None


def waiting_line(
    waited: float, exc: BaseException | None, scrub: Callable[[str], str], shown: str
) -> str:
    """The progress line while a fault is waited for, saying until when:
    ``waiting for the storage (12 s, trying until 60 s): <the driver's cause>``, or ``no
    answer yet from <shown>`` while a try hangs (``shown``: the URL, no credentials); past
    the patience, the try under way is the last (it ends by its timeout)."""
    why = scrub(cause(exc)) if exc is not None else f"no answer yet from {shown}"
    until = f"trying until {PATIENCE_S:.0f} s" if waited < PATIENCE_S else "the last try"
    return f"waiting for the storage ({waited:.0f} s, {until}): {why}"


def cause(exc: BaseException) -> str:
    """The first line of what the driver said (PostgreSQL's, MySQL's, Redis's, SQLite's,
    the file system's), under the wrappers Optuna and SQLAlchemy put around it."""
    for c in causes(exc):
        if _module(c) in ("optuna", "sqlalchemy", "autoplace"):
            continue
        if _module(c) == "pymysql" and len(c.args) == 2 and isinstance(c.args[1], str):
            return first_line(ValueError(c.args[1]))  # not the tuple: (2003, "Can't ...")
        if isinstance(c, OSError) and c.strerror and type(c).__module__ == "builtins":
            return c.strerror  # not "[Errno 28] No space left on device"
        return first_line(c)
    return first_line(exc)


def fault_error(
    shown: str,
    exc: BaseException,
    scrub: Callable[[str], str],
    *,
    opened: bool,
    waited_s: float | None = None,
    place: str | None = None,
) -> StorageError:
    """The one line for a storage's failure: ``shown`` is the storage's URL without
    credentials, ``scrub`` blanks them out of the driver's message, ``opened`` whether the
    run had begun (a fault then: exit code 1), ``waited_s`` how long autoplace waited for
    it to pass, ``place`` the file or folder a full disk or a damage is in."""
    why = scrub(cause(exc))
    found = kind(exc)
    again = "then run the same command again to resume"
    waited = f" for {waited_s:.0f} s" if waited_s is not None else ""
    if found == "locked":
        return StorageFaultError(
            f"study storage {shown} stayed locked by another process{waited} ({why}): "
            f"let it finish or stop it, {again}"
        )
    if found == "away":
        return StorageFaultError(
            f"study storage {shown} did not answer{waited} ({why}): check that its server "
            f"is up and reachable, {again}"
        )
    if found == "full":
        where = place or shown
        return StorageFaultError(
            f"the disk holding {where} is full ({why}): free some space there, {again}"
        )
    if found == "damaged":
        where = place or shown
        return StorageError(
            f"the study database {where} is damaged ({why}): restore it from a copy, or move "
            "it away and pass another --storage"
        )
    if found == "credentials":
        return StorageError(
            f"study storage {shown} refused the connection ({why}): check the user, the "
            "password (percent-encoded: / as %2F, @ as %40) and the database in --storage"
        )
    error = StorageFaultError if opened else StorageError
    return error(
        f"study storage {shown} failed ({why}): check that the server is up and the database "
        "is an autoplace/Optuna study (or pass another --storage)"
    )


def from_storage(exc: BaseException) -> bool:
    """Whether ``exc`` came from a storage (a driver, SQLAlchemy, Optuna's storage, the
    file system), not from a bug of autoplace's."""
    for c in causes(exc):
        if isinstance(c, OSError) or _module(c) in ("sqlalchemy", "psycopg", "pymysql", "redis"):
            return True
        if _module(c) in ("sqlite3", "_sqlite3") or "StorageInternalError" in _class_names(c):
            return True
    return False


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from (Optuna wraps a driver's error in its own)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _module(exc: BaseException) -> str:
    return type(exc).__module__.split(".")[0]


def _class_names(exc: BaseException) -> set[str]:
    return {k.__name__ for k in type(exc).__mro__}


def _mysql_code(exc: BaseException) -> int | None:
    return exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
