"""The study log: the loop's one seam for persistence.

The tuning loop reads what a study holds and writes what it measures through a
:class:`StudyLog`; :class:`OptunaStudyLog` is the implementation over Optuna's
storages, and the only place that calls Optuna while tuning. It is three parts over one
study: its identity check (:mod:`._identity`: a study made for another workload,
hardware or objective is refused before anything is measured), its reader
(:mod:`._reading`: what the study holds) and its writer (:mod:`._writing`: trials begun,
recorded and ended, with this worker's claims on them, :mod:`._claims`). Every storage
call goes through one :class:`~._access.Access`, which turns a storage's failure into a
:class:`~autoplace.errors.StorageError`.

Faults (see :mod:`._faults`): every storage call is retried while its fault may pass,
the ``on_wait`` callback told "waiting for the storage (N s)"; once the patience is spent
the run ends with one :class:`~autoplace.errors.StorageFaultError` line, and later calls
of the same log try once. A measurement the storage would not take is written to the
spill file (:mod:`._spill`) and stored by the next log opened on the study; a trial's
creation retried after its reply was lost is found again by its ``uid``, never made twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from autoplace._interrupt import Interrupt
from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.study import _spill
from autoplace.study._access import Access
from autoplace.study._claims import Claims
from autoplace.study._history import History
from autoplace.study._identity import StudyIdentity, adopt
from autoplace.study._owner import Owner
from autoplace.study._reading import StudyReader
from autoplace.study._storage import check_study_name
from autoplace.study._trials import StoredPhase, Ticket, TrialSpace, distributions
from autoplace.study._writing import StudyWriter


class StudyLog(Protocol):
    """Where the loop's measurements are kept. The contract every implementation keeps:

    * :meth:`history` returns everything finished (search measurements and
      confirmations, oldest first) and what is in flight; an interrupted trial is
      neither, so it is measured again on resume;
    * :meth:`begin` marks configurations as in flight, one ticket each in order,
      before they are measured; every ticket ends in exactly one :meth:`record` or
      one :meth:`abandon`;
    * :meth:`record` keeps a measurement for good: a later :meth:`history` (of this
      process or another sharing the study) holds it; when the storage will not take it,
      it is kept aside (the spill file) and stored by the next log opened on the study,
      and :meth:`record` raises :class:`~autoplace.errors.StorageFaultError` saying so
      (the loop records the rest of its group first: they are kept aside at once);
    * a trial whose owner finds it reclaimed by another worker (taken for dead) still
      gets its measurement: recorded as a new trial;
    * a storage failure raises :class:`~autoplace.errors.StorageError` (one line,
      with the fix, no credentials), never the driver's own exception;
    * calls come from one thread.
    """

    name: str

    def history(self) -> History: ...

    def begin(
        self, configs: Sequence[Config], phase: StoredPhase, reference: Config | None = None
    ) -> list[Ticket]: ...

    def record(self, ticket: Ticket, measurement: Measurement, score: float | None) -> None: ...

    def abandon(self, tickets: Sequence[Ticket], interrupted: bool) -> None: ...

    def claim(self, tickets: Sequence[Ticket], phase: StoredPhase) -> list[Ticket]:
        """The tickets this worker keeps after :meth:`begin`: a configuration begun by two
        workers at once is the earlier trial's (the storage numbers trials in order, so
        every worker agrees); the others are abandoned. In the search, a reference may be
        measured again and only the lost configurations go; in a confirmation or a remedy's
        window, a lost one loses the whole group (they are compared only when timed
        together)."""
        ...

    def keep_alive(self, tickets: Sequence[Ticket]) -> contextlib.AbstractContextManager[None]:
        """While the block runs, keep ``tickets`` marked alive, so that no other worker
        takes them for a dead one's and measures them again."""
        ...


class OptunaStudyLog:
    """A :class:`StudyLog` kept in an Optuna study (created if missing): the study opened
    and its identity checked (:func:`~._identity.adopt`), then read through
    :attr:`reader` and written through :attr:`writer`. To read a study without writing
    (``explain``, ``report``), open a :class:`~._reading.StudyReader` instead.

    Args:
        storage: an opened Optuna storage (see :func:`autoplace.study.open_storage`).
        url: its URL (shown and kept without credentials).
        name: the study's name.
        identity: what the study is made for; a study made for another is refused.
        space: the parameters its trials take.
        stale_after_s: a trial of an autoplace from before owners were recorded counts as
            dead after RUNNING this long.
        since: only measurements finished after this count (``--remeasure``).
        on_wait: hears a line while a storage fault is waited for.
        spill_beside: the spill file goes beside this file (the recommendation file; see
            :func:`autoplace.study._spill.spill_path`).
        interrupt: a Ctrl-C taken cuts a wait for a storage fault short (the next try is
            the last; see :func:`autoplace.study._faults.retry`).
    """

    def __init__(
        self,
        storage: Any,
        url: str,
        *,
        name: str,
        identity: StudyIdentity,
        space: TrialSpace,
        stale_after_s: float,
        since: dt.datetime | None = None,
        on_wait: Callable[[str], None] | None = None,
        spill_beside: Path | None = None,
        interrupt: Interrupt | None = None,
    ) -> None:
        import optuna

        self.name = check_study_name(name)
        access = Access(storage, url, on_wait, interrupt)
        spill = _spill.spill_path(url, spill_beside)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = access.do(
            lambda: optuna.create_study(
                study_name=name,
                storage=storage,
                direction=identity.direction,  # type: ignore[arg-type]
                sampler=optuna.samplers.RandomSampler(),  # never asked: see begin()
                load_if_exists=True,
            )
        )
        ranges = access.do(lambda: adopt(study, name, identity, space))
        #: What the study holds.
        self.reader = StudyReader(access, study, name, since)
        access.opened = True
        self._claims = Claims(access, stale_after_s)
        #: What this worker writes into it.
        self.writer = StudyWriter(self.reader, self._claims, distributions(space, ranges), spill)
        self.writer.import_spill()

    @property
    def owner(self) -> Owner:
        """This log's identity; a forked process makes its own (a fork is another worker)."""
        return self._claims.owner

    @property
    def spill(self) -> Path:
        """Where measurements the storage would not take are kept (see :mod:`._spill`)."""
        return self.writer.spill

    @property
    def reclaimed(self) -> int:
        """Trials of dead owners this log ended, to be measured again."""
        return self._claims.reclaimed

    @property
    def study_attrs(self) -> dict[str, Any]:
        """What the study was recorded with (workload, hardware, device memory, ...)."""
        return self.reader.study_attrs

    def history(self, *, upto: int | None = None, until: dt.datetime | None = None) -> History:
        """What the study holds (see :meth:`StudyReader.history`); the trials of owners
        found dead are ended, to be measured again."""
        history, stale = self.reader.scan(upto=upto, until=until, alive=self._claims.alive)
        self._claims.reclaim(stale)
        return history

    def begin(
        self, configs: Sequence[Config], phase: StoredPhase, reference: Config | None = None
    ) -> list[Ticket]:
        return self.writer.begin(configs, phase, reference)

    def claim(self, tickets: Sequence[Ticket], phase: StoredPhase) -> list[Ticket]:
        return self.writer.claim(tickets, phase)

    def keep_alive(self, tickets: Sequence[Ticket]) -> contextlib.AbstractContextManager[None]:
        return self._claims.keep_alive(tickets)

    def record(self, ticket: Ticket, measurement: Measurement, score: float | None) -> None:
        self.writer.record(ticket, measurement, score)

    def abandon(self, tickets: Sequence[Ticket], interrupted: bool) -> None:
        self.writer.abandon(tickets, interrupted)

    def annotate(self, note: str, figure: Callable[[], Any]) -> bool:
        return self.writer.annotate(note, figure)

    def mark_pick(self, config: Config, score: float) -> None:
        self.writer.mark_pick(config, score)

    def save_answer(self, answer: Mapping[str, Any]) -> None:
        self.writer.save_answer(answer)
