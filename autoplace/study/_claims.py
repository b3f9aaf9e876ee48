"""The trials a worker holds in flight, kept alive while measured; others' found dead.

Every trial a worker begins records its :class:`~._owner.Owner` and a heartbeat the
worker refreshes while measuring it (:meth:`Claims.keep_alive`). A running trial whose
owner is known gone, or whose heartbeat stopped, is ended as failed and marked reclaimed
(:meth:`Claims.reclaim`), so that it is measured again at once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from autoplace.study._access import Access
from autoplace.study._owner import Owner
from autoplace.study._storage import reset_session
from autoplace.study._trials import HEARTBEAT, Ticket, token

#: How often a worker refreshes the heartbeat of the trials it is measuring, and after how
#: long without one a trial counts as its owner's death (where its process cannot be
#: seen: another machine, container or pid namespace; see :class:`Owner`).
HEARTBEAT_S = 10.0
STALE_AFTER_S = 60.0


class Claims:
    """One worker's trials in flight, and its judgement of everyone else's.

    Args:
        access: the storage, reached with patience (see :class:`~._access.Access`).
        stale_after_s: a trial of an autoplace from before owners were recorded counts as
            dead after RUNNING this long.
    """

    def __init__(self, access: Access, stale_after_s: float) -> None:
        self._access, self._stale_after_s = access, stale_after_s
        self._owner = Owner.here()
        #: The trials this worker began and has not yet ended, with their attributes.
        self.live: dict[int, dict[str, Any]] = {}
        #: Trials of dead owners this worker ended, to be measured again (see :meth:`reclaim`).
        self.reclaimed = 0

    @property
    def owner(self) -> Owner:
        """This worker's identity; a forked process makes its own (a fork is another worker)."""
        if self._owner.pid != os.getpid():
            self._owner = Owner.here()
            self.live.clear()  # the parent's trials are the parent's
        return self._owner

    def alive(self, t: Any, now: dt.datetime) -> bool:
        """Whether a RUNNING trial's owner still measures it. This worker's own: while it
        has not ended it (one it gave up, or one a creation retried after a lost reply
        made, is dead). Another's: not if its process is known gone
        (:meth:`Owner.sees_gone`: same boot and pid namespace only), else while its
        heartbeat is younger than :data:`STALE_AFTER_S`. A trial of an autoplace from
        before owners were recorded is alive for ``stale_after_s``."""
        owner, beat = t.user_attrs.get("owner"), t.user_attrs.get(HEARTBEAT)
        if not isinstance(owner, Mapping) or beat is None:
            started = t.datetime_start or now
            return (now - started).total_seconds() < self._stale_after_s
        if token(t) == self.owner.token:
            return t._trial_id in self.live
        if self.owner.sees_gone(owner):
            return False
        return time.time() - float(beat) < STALE_AFTER_S

    def reclaim(self, stale: Sequence[Any]) -> None:
        """End the trials of dead owners as failed, marked reclaimed, so that they are
        measured again at once (by whichever worker gets there: one that finds a trial
        already ended by another leaves it). Tried once each: a storage that fails leaves
        them to the next reader."""
        from optuna.trial import TrialState

        storage = self._access.storage

        def reclaim(trial_id: int) -> None:
            storage.set_trial_user_attr(trial_id, "reclaimed_by", self.owner.as_dict())
            storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

        ended = 0
        for t in stale:
            if not self._access.once(functools.partial(reclaim, t._trial_id)):
                break
            ended += 1
        if ended:
            self.reclaimed += ended
            self._access.say(
                f"{ended} measurement(s) left running by a run that stopped without ending "
                "them (killed?) were marked failed: they are measured again"
            )

    @contextlib.contextmanager
    def keep_alive(self, tickets: Sequence[Ticket]) -> Iterator[None]:
        """Refresh the tickets' heartbeat every :data:`HEARTBEAT_S` while the block runs.
        A beat the storage refuses is tried again at the next; one for a trial another
        worker reclaimed is left (the writer then stores a new trial)."""
        done = threading.Event()
        storage = self._access.storage

        def beat() -> None:
            try:
                while not done.wait(HEARTBEAT_S):
                    for ticket in tickets:
                        self._access.once(
                            functools.partial(
                                storage.set_trial_user_attr,
                                ticket.trial_id,
                                HEARTBEAT,
                                time.time(),
                            )
                        )
            finally:
                reset_session(storage)  # this thread's session, if it opened one

        thread = threading.Thread(target=beat, name="autoplace-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
