"""Storage faults that pass: a lock another process holds, a server restarting.

A call that meets one is tried again with backoff for up to :data:`LOCK_PATIENCE_S`;
then the run ends with one :class:`~autoplace.errors.StorageFaultError` line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from autoplace.errors import StorageFaultError, first_line

#: How long a storage call is retried, with backoff, while the storage is busy (SQLite's
#: lock held by another process) or its server unreachable, before the run ends.
LOCK_PATIENCE_S = 60.0  # each try of SQLite also waits up to 5 s for the lock itself
_T = TypeVar("_T")


def retry(action: Callable[[], _T]) -> _T:
    """``action()``, tried again with backoff (0.1 s doubling to 8 s) while the storage
    is busy or its server unreachable (:func:`transient`), for up to
    :data:`LOCK_PATIENCE_S`; its last failure is raised as it came."""
    delay, deadline = 0.1, time.monotonic() + LOCK_PATIENCE_S
    while True:
        try:
            return action()
        except Exception as exc:
            if not transient(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 8.0)


def busy_error(shown_url: str, exc: BaseException) -> StorageFaultError:
    """The one line for a storage that stayed busy or unreachable past the retries."""
    return StorageFaultError(
        f"study storage {shown_url} stayed busy or unreachable for {LOCK_PATIENCE_S:g} s "
        f"({first_line(exc)}): free it (another process holding its lock?) or check the "
        "server, then run the same command again to resume"
    )


#: What a driver's message says when another process holds the lock autoplace waits for.
_BUSY = ("database is locked", "database is busy", "lock wait", "deadlock")


def transient(exc: BaseException) -> bool:
    """Whether a storage's failure may pass if tried again: a lock held by another process
    (SQLite's "database is locked", a server's lock wait or deadlock) or a connection
    lost or refused (a server restarting)."""
    for cause in causes(exc):
        text = str(cause).lower()
        if any(s in text for s in _BUSY):
            return True
        if getattr(cause, "connection_invalidated", False):
            return True
        module, name = type(cause).__module__, type(cause).__name__
        if "redis" in module and name in ("ConnectionError", "TimeoutError"):
            return True
    return False


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from (Optuna wraps a driver's error in its own)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
