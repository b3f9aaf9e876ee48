"""One study's storage reached with patience: the one place a storage's failure becomes
a :class:`~autoplace.errors.StorageError`.

Every storage call is retried while its fault may pass (see :mod:`._faults`), the
``on_wait`` callback told "waiting for the storage (N s)"; once the patience is spent the
run ends with one :class:`~autoplace.errors.StorageFaultError` line, and later calls of
the same study try once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from autoplace._interrupt import Interrupt
from autoplace.errors import AutoplaceError, StorageError
from autoplace.study import _faults
from autoplace.study._faults import (
    bounded,
    fault_error,
    from_storage,
    retry,
    transient,
    waiting_line,
)
from autoplace.study._storage import reset_session
from autoplace.study._url import file_path, mask_url, scrub

_T = TypeVar("_T")


class Access:
    """An opened Optuna storage, its URL, and the fault that outlasted the patience.

    Args:
        storage: an opened Optuna storage (see :func:`autoplace.study.open_storage`).
        url: its URL (shown and kept without credentials).
        on_wait: hears a line while a storage fault is waited for, and the notes a reader
            of the run should see (trials reclaimed).
        interrupt: a Ctrl-C taken cuts a wait for a fault short (see :func:`retry`).
    """

    def __init__(
        self,
        storage: Any,
        url: str,
        on_wait: Callable[[str], None] | None,
        interrupt: Interrupt | None = None,
    ) -> None:
        self.storage, self.url, self._on_wait = storage, url, on_wait
        self._interrupt = interrupt
        #: The fault that outlasted the patience, once one has: the run is ending, and later
        #: calls raise it at once rather than wait again (a silent server costs a timeout
        #: per call); what they would have stored goes to the spill file.
        self._fault: StorageError | None = None
        #: Whether the study is open: a failure before cannot open (2); after, a fault (1).
        self.opened = False
        #: Seconds spent in the slow calls (:data:`SLOW_S` or longer) just before the next:
        #: a storage answering too slowly, call after call, has that much less of the
        #: minute left (:data:`CALL_LIMIT_S`) as though it were one call; a quick call
        #: ends the count.
        self._slow_s = 0.0

    def do(self, action: Callable[[], _T], *, patient: bool = True) -> _T:
        """``action()`` on the storage: retried while its fault may pass (:func:`retry`;
        tried once when not ``patient``; not at all once a fault outlasted the patience),
        its failure turned into one :class:`StorageError` line."""
        if self._fault is not None:
            raise type(self._fault)(str(self._fault))
        begun = time.monotonic()
        start = begun - self._slow_s
        try:
            done = retry(
                action,
                on_wait=self._waiting if self._on_wait is not None else None,
                before_retry=lambda: reset_session(self.storage),
                patience_s=None if patient else 0.0,
                interrupt=self._interrupt,
                since=start,
            )
        except (AutoplaceError, KeyboardInterrupt):
            raise
        except Exception as exc:
            if not from_storage(exc):
                raise
            waited = time.monotonic() - start
            with bounded(_faults.CALL_LIMIT_S - waited):  # not another slow exchange
                reset_session(self.storage)
            place = file_path(self.url)
            error = fault_error(
                mask_url(self.url),
                exc,
                self._scrub,
                opened=self.opened,
                waited_s=waited if transient(exc) and waited >= 1.0 else None,
                place=str(place) if place is not None else None,
            )
            if patient and transient(exc) and self.opened:
                self._fault = error
            # The driver's message may hold a credential: not even in a traceback.
            raise error from None
        took = time.monotonic() - begun
        self._slow_s = self._slow_s + took if took >= _faults.SLOW_S else 0.0
        return done

    def once(self, action: Callable[[], None]) -> bool:
        """``action()`` tried once, where a failure costs nothing (the next try will do),
        :func:`bounded` as every storage call is: whether the storage answered (a trial
        another worker ended first counts)."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            with bounded():
                action()
        except UpdateFinishedTrialError:
            pass
        except Exception as exc:
            if not from_storage(exc):
                raise
            reset_session(self.storage)
            return False
        return True

    def say(self, line: str) -> None:
        """Tell ``on_wait`` a note of the run, where one listens."""
        if self._on_wait is not None:
            self._on_wait(line)

    def _waiting(self, waited: float, exc: BaseException | None) -> None:
        self.say(waiting_line(waited, exc, self._scrub, mask_url(self.url)))

    def _scrub(self, text: str) -> str:
        return scrub(text, self.url)
