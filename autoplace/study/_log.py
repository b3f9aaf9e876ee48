"""The study log: the loop's one seam for persistence.

The tuning loop reads what a study holds and writes what it measures through a
:class:`StudyLog`; :class:`OptunaStudyLog` is the implementation over Optuna's
storages, and the only place that calls Optuna while tuning or turns a storage's
failure into a :class:`~autoplace.errors.StorageError`.

A measurement is a trial: its parameters are the configuration, its system attribute
``autoplace:measurement`` the whole :class:`~autoplace.Measurement`, its user attributes
the figures a dashboard shows (``fed_samples_per_s``, ``compile_s``, ...), the phase that
measured it (``phase``: ``search`` or ``confirm``), whether it served as a group's
reference (``reference``) and whether an interrupt cut it short (``interrupted``).

Faults (see :mod:`._faults`): every storage call is retried while its fault may pass,
the ``on_wait`` callback told "waiting for the storage (N s)"; once the patience is spent
the run ends with one :class:`~autoplace.errors.StorageFaultError` line, and later calls
of the same log try once. A measurement the storage would not take is written to the
spill file (:mod:`._spill`) and stored by the next log opened on the study; a trial's
creation retried after its reply was lost is found again by its ``uid``, never made twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from autoplace.config import PRECISIONS, Config
from autoplace.errors import AutoplaceError, BadInputError, StorageError, StorageFaultError
from autoplace.measurement import Measurement
from autoplace.study import _spill
from autoplace.study._faults import fault_error, from_storage, retry, transient, waiting_line
from autoplace.study._owner import Owner
from autoplace.study._storage import check_study_name, reset_session
from autoplace.study._url import file_path, mask_url, scrub, storage_key

#: How a phase is stored: the search's quick measurements, a confirmation (a duel is a
#: confirmation too: finalists timed in turns at a longer cap), a remedy's window or a
#: window of the pick at several steps per call.
StoredPhase = Literal["search", "confirm", "remedy", "fuse", "feeding"]
#: Where a trial keeps its whole Measurement: a system attribute (out of the dashboard's
#: table, which shows the scalar figures below instead); studies written before kept it
#: in the user attribute of the same name, which is still read.
_ATTR = "measurement"
_SYSTEM_ATTR = "autoplace:measurement"
#: The figures each trial also carries as user attributes of their own, numbers (or the
#: status), so that optuna-dashboard's table shows, sorts and plots them.
_SCALARS = (
    "status",
    "fed_samples_per_s",
    "fed_step_s",
    "step_s",
    "transfer_s",
    "compile_s",
    "first_call_s",
    "peak_bytes",
    "deviation_vs_float32",
)
#: The study attribute holding the latest finished tune's answer (see
#: ``autoplace.tuning._answer``), which :func:`autoplace.recommend` reads.
ANSWER_ATTR = "autoplace_answer"
#: The study attribute holding its parameters' ranges (see :func:`_bounds`).
_BOUNDS = "param_ranges"
_MAX_INT = 2**40
_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class Ticket:
    """A trial in flight: begun, not yet recorded or abandoned."""

    trial_id: int
    number: int
    config: Config


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """A measurement on its way into the study: its ticket and the ticket's attributes,
    the state and value its trial ends in, and the id of the trial it gets instead should
    its own be gone (reclaimed by another worker)."""

    ticket: Ticket
    attrs: Mapping[str, Any]
    measurement: Measurement
    state: Any
    values: list[float] | None
    uid: str


@dataclasses.dataclass(frozen=True)
class History:
    """What a study holds, oldest first.

    Attributes:
        searches: every finished search measurement, with its configuration: the
            groups the drift fit rests on.
        confirmed: every confirmation per configuration.
        pending: the configurations being measured right now, by this process or by
            another worker sharing the study.
        remedies: every measurement of a remedy's windows per configuration: the pick
            timed as it is and with a setting that may remedy what it showed (e.g. an
            allocator setting; ``Measurement.environment`` says which).
        fused: every measurement of the steps-per-call windows per configuration: the
            pick timed at one step a call and at several (``Measurement.steps_per_call``).
        feeding: every measurement of the feeding windows per configuration: the pick and
            each other device's best, their steps fed three ways (``step_s`` resident,
            ``fed_step_s`` put, ``prefetch_step_s`` two puts in flight).
        newest: the highest trial number among those read (-1: none); a recommendation
            file records it, so that the measurements its verdict rested on can be read
            again (:meth:`OptunaStudyLog.history` ``upto``).
    """

    searches: tuple[tuple[Config, Measurement], ...] = ()
    confirmed: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    pending: frozenset[Config] = frozenset()
    remedies: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    fused: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    newest: int = -1
    feeding: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        """How many finished measurements it holds, in every phase."""
        return len(self.searches) + sum(
            len(ms)
            for held in (self.confirmed, self.remedies, self.fused, self.feeding)
            for ms in held.values()
        )

    def figures(self) -> dict[Config, Measurement]:
        """Each configuration's latest search measurement that ran (else its latest)."""
        out: dict[Config, Measurement] = {}
        for c, m in self.searches:
            if m.status == "ok" or c not in out or out[c].status != "ok":
                out[c] = m
        return out

    def only(self, keep: Callable[[Config], bool]) -> History:
        """The part of the history whose configurations ``keep`` accepts."""
        return History(
            tuple((c, m) for c, m in self.searches if keep(c)),
            {c: ms for c, ms in self.confirmed.items() if keep(c)},
            self.pending,
            {c: ms for c, ms in self.remedies.items() if keep(c)},
            {c: ms for c, ms in self.fused.items() if keep(c)},
            self.newest,
            {c: ms for c, ms in self.feeding.items() if keep(c)},
        )

    def plus(self, phase: StoredPhase, found: Sequence[tuple[Config, Measurement]]) -> History:
        """This history with ``found`` (configurations just measured in ``phase``) added."""
        if phase == "search":
            return dataclasses.replace(self, searches=(*self.searches, *found))
        key = {"confirm": "confirmed", "remedy": "remedies", "fuse": "fused", "feeding": "feeding"}[
            phase
        ]
        kept = dict(getattr(self, key))
        for c, m in found:
            kept[c] = (*kept.get(c, ()), m)
        return dataclasses.replace(self, **{key: kept})


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
    """A :class:`StudyLog` kept in an Optuna study (created if missing).

    Args:
        storage: an opened Optuna storage (see :func:`autoplace.study.open_storage`).
        url: its URL (shown and kept without credentials).
        name: the study's name.
        direction: the objective's direction; a study made for the other is refused.
        objective: the objective's name, for that refusal.
        attrs: attributes recorded with a new study (workload, hardware, ...).
        devices: every device name of the machine (the ``device`` parameter's choices).
        with_width: whether configurations carry a width.
        stale_after_s: a trial of an autoplace from before owners were recorded counts as
            dead after RUNNING this long.
        since: only measurements finished after this count (``--remeasure``).
        on_wait: hears a line while a storage fault is waited for.
        spill_beside: the spill file goes beside this file (the recommendation file; see
            :func:`autoplace.study._spill.spill_path`).
        read_only: read the study as it is (``explain``, ``report``): no study is created,
            nothing written, no trial reclaimed, nothing imported.
    """

    def __init__(
        self,
        storage: Any,
        url: str,
        *,
        name: str,
        direction: str,
        objective: str,
        attrs: Mapping[str, Any],
        devices: Sequence[str],
        with_width: bool,
        stale_after_s: float,
        since: dt.datetime | None = None,
        batch_sizes: Sequence[int] = (),
        widths: Sequence[int] = (),
        metric: str | None = None,
        on_wait: Callable[[str], None] | None = None,
        spill_beside: Path | None = None,
        read_only: bool = False,
    ) -> None:
        import optuna

        self.name, self._storage, self._url = check_study_name(name), storage, url
        self._stale_after_s, self._since = stale_after_s, since
        self._on_wait, self._read_only = on_wait, read_only
        self._owner = Owner.here()
        #: The trials this log began and has not yet ended, with their attributes.
        self._live: dict[int, dict[str, Any]] = {}
        #: The fault that outlasted the patience, once one has: the run is ending, and later
        #: calls raise it at once rather than wait again (a silent server costs a timeout
        #: per call); what they would have stored goes to the spill file.
        self._fault: StorageError | None = None
        self._opened = False  # a failure before: cannot open (2); after: a fault (1)
        #: Where measurements the storage would not take are kept (see :mod:`._spill`).
        self.spill = _spill.spill_path(url, spill_beside)
        self._spilled = 0
        #: Trials of dead owners this log ended, to be measured again (see :meth:`_reclaim`).
        self.reclaimed = 0
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if read_only:
            self._study = self._do(lambda: optuna.load_study(study_name=name, storage=storage))
            bounds = self._do(lambda: self._study.user_attrs.get(_BOUNDS)) or {}
        else:
            self._study = self._do(
                lambda: optuna.create_study(
                    study_name=name,
                    storage=storage,
                    direction=direction,
                    sampler=optuna.samplers.RandomSampler(),  # never asked: see begin()
                    load_if_exists=True,
                )
            )
            bounds = self._do(
                lambda: self._prepare(direction, objective, attrs, batch_sizes, widths, metric)
            )
        self._study_id = self._do(lambda: storage.get_study_id_from_name(name))
        self._dists = _distributions(devices, with_width, bounds)
        self._opened = True
        if not read_only:
            self._import_spill()

    @property
    def owner(self) -> Owner:
        """This log's identity; a forked process makes its own (a fork is another worker)."""
        if self._owner.pid != os.getpid():
            self._owner = Owner.here()
            self._live.clear()  # the parent's trials are the parent's
        return self._owner

    def _prepare(
        self,
        direction: str,
        objective: str,
        attrs: Mapping[str, Any],
        batch_sizes: Sequence[int],
        widths: Sequence[int],
        metric: str | None,
    ) -> dict[str, list[int]]:
        """Check that the study is this tune's (direction, workload, hardware, objective)
        and record what it lacks; return its parameter ranges. Idempotent: retried whole."""
        made_for = self._study.direction.name.lower()
        if made_for != direction:
            raise BadInputError(
                f"study {self.name!r} was made for an objective to {made_for}, "
                f"not {objective}: pass another --study"
            )
        held = self._study.user_attrs
        _check_identity(self.name, held, attrs, self._study)
        for key, value in attrs.items():
            if key not in held:
                self._study.set_user_attr(key, value)
        bounds = _bounds(held.get(_BOUNDS), batch_sizes, widths)
        if bounds != held.get(_BOUNDS):
            self._study.set_user_attr(_BOUNDS, bounds)
        if metric is not None and self._study.metric_names != [metric]:
            with warnings.catch_warnings():  # experimental in Optuna 4: used on purpose
                warnings.simplefilter("ignore")
                self._study.set_metric_names([metric])
        return bounds

    def annotate(self, note: str, figure: Callable[[], Any]) -> bool:
        """Where optuna-dashboard is installed, save ``note`` (Markdown) as the study's
        note and ``figure()`` (a plotly figure, drawn only then) beside it; whether it was.
        The figure replaces the one an earlier tune of the study saved."""
        try:
            import optuna_dashboard
        except ImportError:
            return False
        drawn = figure()
        self._do(lambda: optuna_dashboard.save_note(self._study, note))
        self._do(
            lambda: optuna_dashboard.save_plotly_graph_object(
                self._study, drawn, graph_object_id="autoplace-throughput"
            )
        )
        return True

    def mark_pick(self, config: Config, score: float) -> None:
        """Record in the study what autoplace picks, its score and the trials that measured
        it (optuna-dashboard's "best trial" is one lucky measurement, not the pick)."""
        from optuna.trial import TrialState

        def mark() -> None:
            trials = [
                t.number
                for t in self._study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if t.user_attrs.get("config") == config.label()
            ]
            pick = {"config": config.label(), "score": score, "trials": trials}
            self._study.set_user_attr("autoplace_pick", pick)

        self._do(mark)

    def save_answer(self, answer: Mapping[str, Any]) -> None:
        """Keep the tune's compact answer with the study (see :data:`ANSWER_ATTR`), where a
        launcher on an identical machine finds it without measuring."""
        self._do(lambda: self._study.set_user_attr(ANSWER_ATTR, dict(answer)))

    @property
    def study_attrs(self) -> dict[str, Any]:
        """What the study was recorded with (workload, hardware, device memory, ...)."""
        return self._do(lambda: dict(self._study.user_attrs))

    def history(self, *, upto: int | None = None, until: dt.datetime | None = None) -> History:
        """What the study holds; ``upto``: only its trials numbered up to that, ``until``:
        only what finished before then (what a recommendation file rested on: the newest
        trial number it records, else the time it was written)."""
        from optuna.trial import TrialState

        stale: list[Any] = []
        finished: list[tuple[dt.datetime, int, str, Config, Measurement]] = []
        pending: set[Config] = set()
        now = dt.datetime.now()
        trials = self._do(lambda: self._study.get_trials(deepcopy=False))
        newest = -1
        for t in trials:
            if not set(t.params) >= _PARAMS or (upto is not None and t.number > upto):
                continue
            config = _config_of(t.params)
            if t.state == TrialState.RUNNING:
                if self._read_only or self._alive(t, now):
                    pending.add(config)
                else:
                    stale.append(t)
                continue
            if _reclaimed(t):
                continue  # taken for dead: its owner, if alive, stored a new trial
            data = t.system_attrs.get(_SYSTEM_ATTR) or t.user_attrs.get(_ATTR)
            if data is None or t.user_attrs.get("interrupted"):
                continue
            when = t.datetime_complete or t.datetime_start or now
            if self._since is not None and when < self._since:
                continue
            if until is not None and when >= until:
                continue
            phase = t.user_attrs.get("phase", "search")
            newest = max(newest, t.number)
            finished.append((when, t.number, phase, config, Measurement.from_dict(data)))
        if not self._read_only:
            self._reclaim(stale)
        finished.sort(key=lambda f: f[:2])
        kept: dict[str, dict[Config, tuple[Measurement, ...]]] = {
            "confirm": {},
            "remedy": {},
            "fuse": {},
            "feeding": {},
        }
        for _, _, phase, c, m in finished:
            if phase in kept:
                kept[phase][c] = (*kept[phase].get(c, ()), m)
        searches = tuple((c, m) for _, _, phase, c, m in finished if phase not in kept)
        return History(
            searches,
            kept["confirm"],
            frozenset(pending),
            kept["remedy"],
            kept["fuse"],
            newest,
            kept["feeding"],
        )

    def _alive(self, t: Any, now: dt.datetime) -> bool:
        """Whether a RUNNING trial's owner still measures it. This log's own: while it has
        not ended it (one it gave up, or one a creation retried after a lost reply made, is
        dead). Another's: not if its process is known gone (:meth:`Owner.sees_gone`: same
        boot and pid namespace only), else while its heartbeat is younger than
        :data:`STALE_AFTER_S`. A trial of an autoplace from before owners were recorded is
        alive for ``stale_after_s``."""
        owner, beat = t.user_attrs.get("owner"), t.user_attrs.get(_HEARTBEAT)
        if not isinstance(owner, Mapping) or beat is None:
            started = t.datetime_start or now
            return (now - started).total_seconds() < self._stale_after_s
        if _token(t) == self.owner.token:
            return t._trial_id in self._live
        if self.owner.sees_gone(owner):
            return False
        return time.time() - float(beat) < STALE_AFTER_S

    def _reclaim(self, stale: Sequence[Any]) -> None:
        """End the trials of dead owners as failed, marked reclaimed, so that they are
        measured again at once (by whichever worker gets there: one that finds a trial
        already ended by another leaves it). Tried once each: a storage that fails leaves
        them to the next reader."""
        from optuna.trial import TrialState

        def reclaim(trial_id: int) -> None:
            self._storage.set_trial_user_attr(trial_id, "reclaimed_by", self.owner.as_dict())
            self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

        ended = 0
        for t in stale:
            if not self._once(lambda i=t._trial_id: reclaim(i)):
                break
            ended += 1
        if ended:
            self.reclaimed += ended
            if self._on_wait is not None:
                self._on_wait(
                    f"{ended} measurement(s) left running by a run that stopped without ending "
                    "them (killed?) were marked failed: they are measured again"
                )

    def _once(self, action: Callable[[], None]) -> bool:
        """``action()`` tried once, where a failure costs nothing (the next try will do):
        whether the storage answered (a trial another worker ended first counts)."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            action()
        except UpdateFinishedTrialError:
            pass
        except Exception as exc:
            if not from_storage(exc):
                raise
            reset_session(self._storage)
            return False
        return True

    def claim(self, tickets: Sequence[Ticket], phase: StoredPhase) -> list[Ticket]:
        from optuna.trial import TrialState

        try:
            trials = self._do(
                lambda: self._study.get_trials(
                    deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE)
                )
            )
        except StorageError:  # the run ends: the group is ended for the resume
            self._end_all([t.trial_id for t in tickets], "interrupted", patient=False)
            raise
        # A trial of this log that it holds no ticket for is a duplicate: Optuna's RDB
        # storage retries a creation whose commit happened but whose reply was lost.
        doubles = [
            t._trial_id
            for t in trials
            if t.state == TrialState.RUNNING
            and _token(t) == self.owner.token
            and t._trial_id not in self._live
        ]
        if doubles:
            self._end_all(doubles, "duplicate", patient=False)
        mine = {t.trial_id for t in tickets}
        lost = []
        for ticket in tickets:
            if self._live.get(ticket.trial_id, {}).get("reference"):
                continue  # the best so far, measured again with the group on purpose
            rivals = [
                t
                for t in trials
                if t._trial_id not in mine
                and t._trial_id not in doubles
                and t.number < ticket.number
                and t.user_attrs.get("config") == ticket.config.label()
                and t.user_attrs.get("phase", "search") == phase
                and not t.user_attrs.get("reference")
                and (phase == "search" or t.state == TrialState.RUNNING)
                and (t.state == TrialState.RUNNING or self._counts(t))
            ]
            if rivals:
                lost.append(ticket)
        if not lost:
            return list(tickets)
        gone = lost if phase == "search" else list(tickets)
        self._end_all([t.trial_id for t in gone], "lost_claim", patient=True)
        return [t for t in tickets if t not in gone]

    def _counts(self, t: Any) -> bool:
        """Whether a finished trial counts in this worker's history (``--remeasure``
        leaves out what finished before it started)."""
        when = t.datetime_complete or t.datetime_start
        return self._since is None or when is None or when >= self._since

    @contextlib.contextmanager
    def keep_alive(self, tickets: Sequence[Ticket]) -> Iterator[None]:
        """Refresh the tickets' heartbeat every :data:`HEARTBEAT_S` while the block runs.
        A beat the storage refuses is tried again at the next; one for a trial another
        worker reclaimed is left (:meth:`record` then stores a new trial)."""
        done = threading.Event()

        def beat() -> None:
            try:
                while not done.wait(HEARTBEAT_S):
                    for ticket in tickets:
                        self._once(
                            lambda i=ticket.trial_id: self._storage.set_trial_user_attr(
                                i, _HEARTBEAT, time.time()
                            )
                        )
            finally:
                reset_session(self._storage)  # this thread's session, if it opened one

        thread = threading.Thread(target=beat, name="autoplace-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def begin(
        self, configs: Sequence[Config], phase: StoredPhase, reference: Config | None = None
    ) -> list[Ticket]:
        from optuna.trial import TrialState

        tickets = []
        try:
            for config in configs:
                attrs: dict[str, Any] = {
                    "config": config.label(),
                    "phase": phase,
                    "owner": self.owner.as_dict(),
                    _HEARTBEAT: time.time(),
                    _UID: uuid.uuid4().hex,
                }
                if config == reference:
                    attrs["reference"] = True
                trial_id = self._create(self._template(config, attrs, TrialState.RUNNING))
                self._live[trial_id] = attrs
                number = self._do(lambda i=trial_id: self._storage.get_trial_number_from_id(i))
                tickets.append(Ticket(trial_id, number, config))
        except StorageError:  # the run ends: what this group began is ended for the resume
            self._end_all(list(self._live), "interrupted", patient=False)
            raise
        return tickets

    def record(self, ticket: Ticket, measurement: Measurement, score: float | None) -> None:
        from optuna.trial import TrialState

        if score is not None:
            state, values = TrialState.COMPLETE, [score]
        elif measurement.status == "too_big":
            state, values = TrialState.PRUNED, None
        else:
            state, values = TrialState.FAIL, None
        attrs = self._live.get(ticket.trial_id) or {"config": ticket.config.label()}
        outcome = _Outcome(ticket, attrs, measurement, state, values, uuid.uuid4().hex)
        try:
            self._do(lambda: self._store(outcome))
        except StorageError as exc:
            raise self._keep_aside(exc, outcome) from exc
        finally:
            self._live.pop(ticket.trial_id, None)

    def abandon(self, tickets: Sequence[Ticket], interrupted: bool) -> None:
        """End ``tickets`` as failed; ``interrupted`` ones are measured again on resume.

        Each is tried once (a Ctrl-C does not wait out a storage's patience): one the
        storage would not end goes in the spill file, so that the resume ends it at once,
        wherever it runs. Storage errors are not raised: autoplace is stopping anyway, and
        they must not hide why.
        """
        self._end_all(
            [t.trial_id for t in tickets], "interrupted" if interrupted else None, patient=False
        )

    def _end_all(self, trial_ids: Sequence[int], mark: str | None, *, patient: bool) -> None:
        """End this log's trials ``trial_ids`` (see :meth:`_end`); those the storage would
        not end go in the spill file, for the resume to end."""
        left = []
        for trial_id in trial_ids:
            try:
                self._do(lambda i=trial_id: self._end(i, mark), patient=patient)
            except StorageError:
                left.append(self._ending(trial_id, mark))
            self._live.pop(trial_id, None)
        if left:
            with contextlib.suppress(OSError, AutoplaceError):  # then reclaimed by heartbeat
                self._write_spill(left)

    def _end(self, trial_id: int, mark: str | None) -> None:
        """End trial ``trial_id`` as failed, with the user attribute ``mark`` set (unless
        another worker ended it first: a trial is ended once)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        if self._storage.get_trial(trial_id).state.is_finished():
            return
        with contextlib.suppress(UpdateFinishedTrialError):
            if mark is not None:
                self._storage.set_trial_user_attr(trial_id, mark, True)
            self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

    def _store(self, outcome: _Outcome) -> None:
        """Write a measurement into its trial; into a new trial (``outcome.uid``) if another
        worker reclaimed that one meanwhile. Retried whole: a finished trial is either this
        call's own earlier try, whose reply was lost, or a reclaimed one."""
        from optuna.exceptions import UpdateFinishedTrialError

        ticket, measurement = outcome.ticket, outcome.measurement
        trial_id = ticket.trial_id
        trial = self._storage.get_trial(trial_id)
        if trial.state.is_finished():
            if not _reclaimed(trial):
                return  # an earlier try's, its reply lost
        else:
            try:
                self._storage.set_trial_system_attr(trial_id, _SYSTEM_ATTR, measurement.to_dict())
                for key, value in _scalars(measurement).items():
                    self._storage.set_trial_user_attr(trial_id, key, value)
                self._storage.set_trial_state_values(
                    trial_id, state=outcome.state, values=outcome.values
                )
                return
            except UpdateFinishedTrialError:
                if not _reclaimed(self._storage.get_trial(trial_id)):
                    return
        if self._find(outcome.uid) is None:  # not made by an earlier try whose reply was lost
            self._storage.create_new_trial(self._study_id, template_trial=self._anew(outcome))

    def _anew(self, outcome: _Outcome) -> Any:
        """The trial ``outcome`` gets when its own is not there to take it."""
        attrs = {**outcome.attrs, _UID: outcome.uid, "recovered_from": outcome.ticket.number}
        return self._template(
            outcome.ticket.config, attrs, outcome.state, outcome.measurement, outcome.values
        )

    def _create(self, template: Any) -> int:
        """Create the trial ``template`` (see :meth:`_template`) in one storage call,
        retried as one: a try after a failure first looks for the trial by its ``uid``
        (the failure may have been a lost reply to a creation that happened)."""
        tried = False

        def create() -> int:
            nonlocal tried
            if tried:
                found = self._find(template.user_attrs[_UID])
                if found is not None:
                    return found
            tried = True
            return self._storage.create_new_trial(self._study_id, template_trial=template)

        return self._do(create)

    def _template(
        self,
        config: Config,
        attrs: Mapping[str, Any],
        state: Any,
        measurement: Measurement | None = None,
        values: list[float] | None = None,
    ) -> Any:
        """A trial of ``config`` whole: parameters, attributes, and a finished trial's
        measurement and state (``Study.ask`` commits each parameter on its own: 50 ms a
        trial on SQLite). The strategy, not a sampler, chose ``config``."""
        from optuna.trial import FrozenTrial

        params = _params(config)
        return FrozenTrial(
            number=-1,
            state=state,
            value=None,
            values=values,
            datetime_start=dt.datetime.now(),
            datetime_complete=dt.datetime.now() if state.is_finished() else None,
            params=params,
            distributions={k: self._dists[k] for k in params},
            user_attrs={**attrs, **(_scalars(measurement) if measurement else {})},
            system_attrs={_SYSTEM_ATTR: measurement.to_dict()} if measurement else {},
            intermediate_values={},
            trial_id=-1,
        )

    def _find(self, uid: str) -> int | None:
        """The trial whose ``uid`` attribute is ``uid``, if the storage holds one."""
        for t in self._storage.get_all_trials(self._study_id, deepcopy=False):
            if t.user_attrs.get(_UID) == uid:
                return t._trial_id
        return None

    # -- the spill file -------------------------------------------------------------------

    def _keep_aside(self, exc: StorageError, outcome: _Outcome) -> StorageError:
        """Write a measurement the storage would not take to the spill file; the error to
        raise, saying where it is (or that it could not be kept)."""
        record = {
            **self._ending(outcome.ticket.trial_id, None),
            "uid": outcome.uid,
            "number": outcome.ticket.number,
            "params": _params(outcome.ticket.config),
            "attrs": dict(outcome.attrs),
            "measurement": outcome.measurement.to_dict(),
            "state": outcome.state.name,
            "values": outcome.values,
        }
        try:
            self._write_spill([record])
        except (OSError, AutoplaceError) as failed:
            return StorageFaultError(
                f"{exc}; a finished measurement could not be kept in {self.spill} either "
                f"({failed}): it is measured again on resume"
            )
        self._spilled += 1
        return StorageFaultError(
            f"{exc}; {self._spilled} finished measurement(s) are kept in {self.spill} and "
            "go into the study when the same command runs again"
        )

    def _ending(self, trial_id: int, mark: str | None) -> dict[str, Any]:
        """A spill entry that ends trial ``trial_id`` (RUNNING, this log's) on resume."""
        return {
            "study": self.name,
            "storage": storage_key(self._url),
            "trial_id": trial_id,
            "ticket_uid": self._live.get(trial_id, {}).get(_UID),
            "mark": mark or "interrupted",
        }

    def _write_spill(self, records: Sequence[dict[str, Any]]) -> None:
        _spill.add(self.spill, records)

    def _import_spill(self) -> None:
        """Store what an earlier run on this study kept aside, then drop it from the file."""
        from optuna.trial import TrialState

        key = storage_key(self._url)

        def mine(record: dict[str, Any]) -> bool:
            return record.get("study") == self.name and record.get("storage") == key

        def store(record: dict[str, Any]) -> None:
            trial_id = int(record["trial_id"])
            ours = self._do(lambda: self._holds(trial_id, record.get("ticket_uid")))
            if "measurement" not in record:
                if ours:
                    self._do(lambda: self._end(trial_id, record.get("mark")))
                return
            ticket = Ticket(trial_id, int(record["number"]), _config_of(record["params"]))
            outcome = _Outcome(
                ticket,
                record["attrs"],
                Measurement.from_dict(record["measurement"]),
                TrialState[record["state"]],
                record["values"],
                record["uid"],
            )
            if ours:
                self._do(lambda: self._store(outcome))
            else:
                self._create(self._anew(outcome))

        _spill.take(self.spill, mine, store)

    def _holds(self, trial_id: int, uid: str | None) -> bool:
        """Whether trial ``trial_id`` of this study is the one a spill entry names (its
        ``uid`` the same: a recreated storage may number another trial so)."""
        try:
            trial = self._storage.get_trial(trial_id)
        except KeyError:
            return False
        return uid is not None and trial.user_attrs.get(_UID) == uid

    # -- faults ---------------------------------------------------------------------------

    def _do(self, action: Callable[[], _T], *, patient: bool = True) -> _T:
        """``action()`` on the storage: retried while its fault may pass (:func:`retry`;
        tried once when not ``patient``; not at all once a fault outlasted the patience),
        its failure turned into one :class:`StorageError` line."""
        if self._fault is not None:
            raise type(self._fault)(str(self._fault))
        start = time.monotonic()
        try:
            return retry(
                action,
                on_wait=self._waiting if self._on_wait is not None else None,
                before_retry=lambda: reset_session(self._storage),
                patience_s=None if patient else 0.0,
            )
        except (AutoplaceError, KeyboardInterrupt):
            raise
        except Exception as exc:
            if not from_storage(exc):
                raise
            reset_session(self._storage)
            waited = time.monotonic() - start
            place = file_path(self._url)
            error = fault_error(
                mask_url(self._url),
                exc,
                self._scrub,
                opened=self._opened,
                waited_s=waited if transient(exc) and waited >= 1.0 else None,
                place=str(place) if place is not None else None,
            )
            if patient and transient(exc) and self._opened:
                self._fault = error
            # The driver's message may hold a credential: not even in a traceback.
            raise error from None

    def _waiting(self, waited: float, exc: BaseException | None) -> None:
        if self._on_wait is not None:
            self._on_wait(waiting_line(waited, exc, self._scrub, mask_url(self._url)))

    def _scrub(self, text: str) -> str:
        return scrub(text, self._url)


#: How often a worker refreshes the heartbeat of the trials it is measuring, and after how
#: long without one a trial counts as its owner's death (where its process cannot be
#: seen: another machine, container or pid namespace; see :class:`Owner`).
HEARTBEAT_S = 10.0
STALE_AFTER_S = 60.0
_HEARTBEAT = "heartbeat"
#: Each trial's own id, made before it is created: a creation retried after its reply was
#: lost finds the trial instead of making a second.
_UID = "uid"


def _token(trial: Any) -> str | None:
    """The token of ``trial``'s owner (``None`` for a trial of an autoplace before owners)."""
    owner = trial.user_attrs.get("owner")
    return owner.get("token") if isinstance(owner, Mapping) else None


def _reclaimed(trial: Any) -> bool:
    """Whether another worker took ``trial`` for dead and ended it."""
    return trial.state.name == "FAIL" and "reclaimed_by" in trial.user_attrs


def _scalars(measurement: Measurement) -> dict[str, Any]:
    """The figures a trial carries as user attributes of their own (see :data:`_SCALARS`)."""
    return {k: getattr(measurement, k) for k in _SCALARS if getattr(measurement, k) is not None}


#: The parameters every autoplace trial has.
_PARAMS = frozenset({"device", "batch_size", "precision"})


def _check_identity(
    name: str, held: Mapping[str, Any], attrs: Mapping[str, Any], study: Any
) -> None:
    """Refuse a study made by something else, or for another model file or workload: its
    measurements are not of this model, and resuming it would mix them in."""
    foreign = [t for t in study.get_trials(deepcopy=False) if not set(t.params) >= _PARAMS]
    if foreign:
        params = ", ".join(sorted(foreign[0].params)) or "none"
        raise BadInputError(
            f"study {name!r} was not made by autoplace (trial {foreign[0].number} has the "
            f"parameters {params}): pass another --study"
        )
    _check_machine(name, held.get("hardware"), attrs.get("hardware"))
    _check_objective(name, held.get("objective"), attrs.get("objective"))
    mine, theirs = attrs.get("workload"), held.get("workload")
    if mine is None or theirs is None:
        return
    if (theirs.get("name"), theirs.get("sha256")) != (mine.get("name"), mine.get("sha256")):
        raise BadInputError(
            f"study {name!r} holds measurements of workload {theirs.get('name')!r} of "
            f"{theirs.get('path')} (sha256 {str(theirs.get('sha256'))[:8]}), not of "
            f"{mine.get('name')!r} of {mine.get('path')} (sha256 {str(mine.get('sha256'))[:8]}): "
            "pass another --study, or none (the default name is made from the file's hash)"
        )


def _check_machine(name: str, theirs: Any, mine: Any) -> None:
    """Refuse a study measured on other hardware (devices or CPU model; the host name may
    differ: identical machines share studies): its timings are not this machine's."""
    if not theirs or not mine:
        return
    for part, label in (("devices", "devices"), ("cpu", "CPU")):
        if theirs.get(part) != mine.get(part):
            raise BadInputError(
                f"study {name!r} was measured on other hardware ({label} "
                f"{_brief(theirs.get(part))}, here {_brief(mine.get(part))}): its timings are "
                "not this machine's; pass another --study, or none (the default name is "
                "made from the hardware)"
            )


def _check_objective(name: str, theirs: Any, mine: Any) -> None:
    """Refuse a study scored for another objective or run length: its scores (and so its
    pick) answer another question."""
    if not theirs or not mine or theirs == mine:
        return
    raise BadInputError(
        f"study {name!r} was scored for {_brief(theirs)}, not {_brief(mine)}: pass another "
        "--study, or none (the default name is made from the objective)"
    )


def _brief(value: Any) -> str:
    """A study attribute in a few words: ``throughput, steps=1000`` or ``2x cpu/cpu``."""
    if isinstance(value, Mapping):
        items = [str(value["name"])] if "name" in value else []
        items += [f"{k}={v}" for k, v in value.items() if k != "name" and v is not None]
        return ", ".join(items) or "none"
    if isinstance(value, list):
        return " + ".join(
            f"{d.get('count', 1)}x {d.get('platform')}/{d.get('kind')}"
            if isinstance(d, Mapping)
            else str(d)
            for d in value
        )
    return str(value)


def _bounds(held: Any, batch_sizes: Sequence[int], widths: Sequence[int]) -> dict[str, list[int]]:
    """The study's parameter ranges: those it holds, widened to take ``batch_sizes`` and
    ``widths`` (the same for every trial unless a later tune searches wider)."""
    out = {k: list(v) for k, v in (held or {}).items()}
    for key, values in (("batch_size", batch_sizes), ("width", widths)):
        if values:
            lo, hi = out.get(key, [min(values), max(values)])
            out[key] = [min(lo, *values), max(hi, *values)]
    return out


def _distributions(
    devices: Sequence[str], with_width: bool, bounds: Mapping[str, Sequence[int]]
) -> dict[str, Any]:
    """The trials' distributions: log-scaled over the study's ranges (a plot's axis and a
    parameter importance then spread the powers of two evenly)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    def ints(key: str) -> Any:
        lo, hi = bounds.get(key, (1, _MAX_INT))
        return IntDistribution(lo, max(hi, lo + 1), log=True)

    dists: dict[str, Any] = {
        "device": CategoricalDistribution(sorted(devices)),
        "batch_size": ints("batch_size"),
        "precision": CategoricalDistribution(list(PRECISIONS)),
    }
    if with_width:
        dists["width"] = ints("width")
    return dists


def _params(config: Config) -> dict[str, Any]:
    params: dict[str, Any] = {
        "device": config.device,
        "batch_size": config.batch_size,
        "precision": config.precision,
    }
    if config.width is not None:
        params["width"] = config.width
    return params


def _config_of(params: Mapping[str, Any]) -> Config:
    return Config(
        device=params["device"],
        batch_size=int(params["batch_size"]),
        precision=params["precision"],
        width=int(params["width"]) if "width" in params else None,
    )
