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
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from autoplace._host import process_alive
from autoplace.config import PRECISIONS, Config
from autoplace.errors import BadInputError, StorageError, StorageFaultError, first_line
from autoplace.measurement import Measurement
from autoplace.study._faults import busy_error, causes, retry, transient
from autoplace.study._storage import mask_url

#: How a phase is stored: the search's quick measurements, or a confirmation (a duel
#: is a confirmation too: finalists timed in turns at a longer cap).
StoredPhase = Literal["search", "confirm"]
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
class History:
    """What a study holds, oldest first.

    Attributes:
        searches: every finished search measurement, with its configuration: the
            groups the drift fit rests on.
        confirmed: every confirmation per configuration.
        pending: the configurations being measured right now, by this process or by
            another worker sharing the study.
    """

    searches: tuple[tuple[Config, Measurement], ...] = ()
    confirmed: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    pending: frozenset[Config] = frozenset()

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
        )

    def plus(self, phase: StoredPhase, found: Sequence[tuple[Config, Measurement]]) -> History:
        """This history with ``found`` (configurations just measured in ``phase``) added."""
        if phase == "search":
            return History((*self.searches, *found), self.confirmed, self.pending)
        confirmed = dict(self.confirmed)
        for c, m in found:
            confirmed[c] = (*confirmed.get(c, ()), m)
        return History(self.searches, confirmed, self.pending)


class StudyLog(Protocol):
    """Where the loop's measurements are kept. The contract every implementation keeps:

    * :meth:`history` returns everything finished (search measurements and
      confirmations, oldest first) and what is in flight; an interrupted trial is
      neither, so it is measured again on resume;
    * :meth:`begin` marks configurations as in flight, one ticket each in order,
      before they are measured; every ticket ends in exactly one :meth:`record` or
      one :meth:`abandon`;
    * :meth:`record` keeps a measurement for good: a later :meth:`history` (of this
      process or another sharing the study) holds it;
    * a storage failure raises :class:`~autoplace.errors.StorageError` (one line,
      with the fix), never the driver's own exception;
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
        measured again and only the lost configurations go; in a confirmation, a lost one
        loses the whole group (finalists are compared only when timed together)."""
        ...

    def keep_alive(self, tickets: Sequence[Ticket]) -> contextlib.AbstractContextManager[None]:
        """While the block runs, keep ``tickets`` marked alive, so that no other worker
        takes them for a dead one's and measures them again."""
        ...


class OptunaStudyLog:
    """A :class:`StudyLog` kept in an Optuna study (created if missing).

    Args:
        storage: an opened Optuna storage (see :func:`autoplace.study.open_storage`).
        url: its URL, for error messages (shown with the password masked).
        name: the study's name.
        direction: the objective's direction; a study made for the other is refused.
        objective: the objective's name, for that refusal.
        attrs: attributes recorded with a new study (workload, hardware, ...).
        devices: every device name of the machine (the ``device`` parameter's choices).
        with_width: whether configurations carry a width.
        stale_after_s: a trial RUNNING for longer than this is taken for dead.
        since: only measurements finished after this count (``--remeasure``).
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
    ) -> None:
        import optuna

        self.name, self._storage, self._url = name, storage, url
        self._stale_after_s, self._since = stale_after_s, since
        self._opened = False  # a failure before: cannot open (2); after: a fault (1)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with self._errors():
            self._study = retry(
                lambda: optuna.create_study(
                    study_name=name,
                    storage=storage,
                    direction=direction,
                    sampler=optuna.samplers.RandomSampler(),  # never asked: see begin()
                    load_if_exists=True,
                )
            )
            self._study_id = storage.get_study_id_from_name(name)
            made_for = self._study.direction.name.lower()
            if made_for != direction:
                raise BadInputError(
                    f"study {name!r} was made for an objective to {made_for}, "
                    f"not {objective}: pass another --study"
                )
            held = self._study.user_attrs
            _check_identity(name, held, attrs, self._study)
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
        self._dists = _distributions(devices, with_width, bounds)
        self._opened = True

    def annotate(self, note: str, figure: Callable[[], Any]) -> bool:
        """Where optuna-dashboard is installed, save ``note`` (Markdown) as the study's
        note and ``figure()`` (a plotly figure, drawn only then) beside it; whether it was.
        The figure replaces the one an earlier tune of the study saved."""
        try:
            import optuna_dashboard
        except ImportError:
            return False
        with self._errors():
            optuna_dashboard.save_note(self._study, note)
            optuna_dashboard.save_plotly_graph_object(
                self._study, figure(), graph_object_id="autoplace-throughput"
            )
        return True

    def mark_pick(self, config: Config, score: float) -> None:
        """Record in the study what autoplace picks, its score and the trials that measured
        it (optuna-dashboard's "best trial" is one lucky measurement, not the pick)."""
        from optuna.trial import TrialState

        with self._errors():
            trials = [
                t.number
                for t in self._study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if t.user_attrs.get("config") == config.label()
            ]
            pick = {"config": config.label(), "score": score, "trials": trials}
            self._study.set_user_attr("autoplace_pick", pick)

    def save_answer(self, answer: Mapping[str, Any]) -> None:
        """Keep the tune's compact answer with the study (see :data:`ANSWER_ATTR`), where a
        launcher on an identical machine finds it without measuring."""
        self._do(lambda: self._study.set_user_attr(ANSWER_ATTR, dict(answer)))

    @property
    def study_attrs(self) -> dict[str, Any]:
        """What the study was recorded with (workload, hardware, device memory, ...)."""
        with self._errors():
            return dict(self._study.user_attrs)

    def history(self) -> History:
        from optuna.trial import TrialState

        stale: list[Any] = []
        finished: list[tuple[dt.datetime, int, str, Config, Measurement]] = []
        pending: set[Config] = set()
        now = dt.datetime.now()
        trials = self._do(lambda: self._study.get_trials(deepcopy=False))
        for t in trials:
            if not set(t.params) >= _PARAMS:
                continue
            config = _config_of(t.params)
            if t.state == TrialState.RUNNING:
                if self._alive(t, now):
                    pending.add(config)
                else:
                    stale.append(t)
                continue
            data = t.system_attrs.get(_SYSTEM_ATTR) or t.user_attrs.get(_ATTR)
            if data is None or t.user_attrs.get("interrupted"):
                continue
            when = t.datetime_complete or t.datetime_start or now
            if self._since is not None and when < self._since:
                continue
            phase = t.user_attrs.get("phase", "search")
            finished.append((when, t.number, phase, config, Measurement.from_dict(data)))
        self._reclaim(stale)
        finished.sort(key=lambda f: f[:2])
        confirmed: dict[Config, tuple[Measurement, ...]] = {}
        for _, _, phase, c, m in finished:
            if phase == "confirm":
                confirmed[c] = (*confirmed.get(c, ()), m)
        searches = tuple((c, m) for _, _, phase, c, m in finished if phase != "confirm")
        return History(searches, confirmed, frozenset(pending))

    def _alive(self, t: Any, now: dt.datetime) -> bool:
        """Whether a RUNNING trial's owner still measures it: on this host, its process must
        exist; anywhere, its heartbeat must be younger than :data:`STALE_AFTER_S`. A trial
        of an autoplace from before owners were recorded is alive for ``stale_after_s``."""
        owner, beat = t.user_attrs.get("owner"), t.user_attrs.get(_HEARTBEAT)
        if owner is None or beat is None:
            started = t.datetime_start or now
            return (now - started).total_seconds() < self._stale_after_s
        if owner == _OWNER:  # this process's: alive unless it gave it up
            return (self._url, t._trial_id) not in _GIVEN_UP
        if owner.get("host") == _OWNER["host"] and not process_alive(int(owner.get("pid", 0))):
            return False
        return time.time() - float(beat) < STALE_AFTER_S

    def _reclaim(self, stale: Sequence[Any]) -> None:
        """End the trials of dead owners as failed, marked reclaimed, so that they are
        measured again at once (by whichever worker gets there: one that finds a trial
        already ended by another leaves it)."""
        from optuna.trial import TrialState

        for t in stale:
            with contextlib.suppress(Exception):
                self._storage.set_trial_user_attr(t._trial_id, "reclaimed_by", _OWNER)
                self._storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)

    def claim(self, tickets: Sequence[Ticket], phase: StoredPhase) -> list[Ticket]:
        from optuna.trial import TrialState

        trials = self._do(
            lambda: self._study.get_trials(
                deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE)
            )
        )
        mine = {t.trial_id for t in tickets}
        lost = []
        for ticket in tickets:
            attrs = self._storage.get_trial(ticket.trial_id).user_attrs
            if attrs.get("reference"):
                continue  # the best so far, measured again with the group on purpose
            rivals = [
                t
                for t in trials
                if t._trial_id not in mine
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
        gone = list(tickets) if phase == "confirm" else lost
        for ticket in gone:
            self._do(lambda t=ticket: self._end(t, "lost_claim"))
        return [t for t in tickets if t not in gone]

    def _counts(self, t: Any) -> bool:
        """Whether a finished trial counts in this worker's history (``--remeasure``
        leaves out what finished before it started)."""
        when = t.datetime_complete or t.datetime_start
        return self._since is None or when is None or when >= self._since

    @contextlib.contextmanager
    def keep_alive(self, tickets: Sequence[Ticket]) -> Iterator[None]:
        """Refresh the tickets' heartbeat every :data:`HEARTBEAT_S` while the block runs."""
        done = threading.Event()

        def beat() -> None:
            while not done.wait(HEARTBEAT_S):
                with contextlib.suppress(Exception):  # a missed beat is retried next time
                    for ticket in tickets:
                        self._storage.set_trial_user_attr(ticket.trial_id, _HEARTBEAT, time.time())

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
        tickets = []
        with self._errors():
            for config in configs:
                attrs: dict[str, Any] = {
                    "config": config.label(),
                    "phase": phase,
                    "owner": _OWNER,
                    _HEARTBEAT: time.time(),
                }
                if config == reference:
                    attrs["reference"] = True
                trial_id = retry(lambda c=config, a=attrs: self._start_trial(c, a))
                number = retry(lambda i=trial_id: self._storage.get_trial_number_from_id(i))
                tickets.append(Ticket(trial_id, number, config))
        return tickets

    def record(self, ticket: Ticket, measurement: Measurement, score: float | None) -> None:
        from optuna.trial import TrialState

        def write() -> None:
            self._storage.set_trial_system_attr(
                ticket.trial_id, _SYSTEM_ATTR, measurement.to_dict()
            )
            for key in _SCALARS:
                value = getattr(measurement, key)
                if value is not None:
                    self._storage.set_trial_user_attr(ticket.trial_id, key, value)
            if score is not None:
                self._study.tell(ticket.number, score)
            elif measurement.status == "too_big":
                self._study.tell(ticket.number, state=TrialState.PRUNED)
            else:
                self._study.tell(ticket.number, state=TrialState.FAIL)

        self._do(write)

    def abandon(self, tickets: Sequence[Ticket], interrupted: bool) -> None:
        """End ``tickets`` as failed; ``interrupted`` ones are measured again on resume.

        Without ``interrupted`` (autoplace is failing anyway), storage errors are
        swallowed so that they do not hide the error that brought us here.
        """
        guard = self._errors() if interrupted else contextlib.suppress(Exception)
        try:
            with guard:
                mark = "interrupted" if interrupted else None
                for ticket in tickets:
                    retry(lambda t=ticket, m=mark: self._end(t, m))
        finally:  # ended, or left RUNNING by a failing storage: dead either way
            _GIVEN_UP.update((self._url, t.trial_id) for t in tickets)

    def _end(self, ticket: Ticket, mark: str | None) -> None:
        """End ``ticket``'s trial as failed, with the user attribute ``mark`` set (unless
        another worker ended it first: a trial is ended once)."""
        from optuna.trial import TrialState

        if self._storage.get_trial(ticket.trial_id).state.is_finished():
            return
        if mark is not None:
            self._storage.set_trial_user_attr(ticket.trial_id, mark, True)
        self._study.tell(ticket.number, state=TrialState.FAIL)

    def _start_trial(self, config: Config, attrs: dict[str, Any]) -> int:
        """Start a trial of ``config``, its parameters and user attributes written in one
        storage call (``Study.ask`` commits each parameter on its own: 50 ms a trial on
        SQLite). The strategy, not a sampler, chose ``config``."""
        from optuna.trial import FrozenTrial, TrialState

        params = _params(config)
        template = FrozenTrial(
            number=-1,
            state=TrialState.RUNNING,
            value=None,
            datetime_start=dt.datetime.now(),
            datetime_complete=None,
            params=params,
            distributions={k: self._dists[k] for k in params},
            user_attrs=attrs,
            system_attrs={},
            intermediate_values={},
            trial_id=-1,
        )
        return self._storage.create_new_trial(self._study_id, template_trial=template)

    def _do(self, action: Callable[[], _T]) -> _T:
        """``action()`` on the storage: retried while the storage is busy (:func:`retry`),
        its failure turned into one :class:`StorageError` (:meth:`_errors`)."""
        with self._errors():
            return retry(action)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn a storage's failure (a driver's exception) into one :class:`StorageError`:
        while opening, the storage cannot be used (exit 2); once open, a fault during the
        run (:class:`StorageFaultError`, exit 1)."""
        try:
            yield
        except (StorageError, BadInputError, KeyboardInterrupt):
            raise
        except Exception as exc:
            import sqlalchemy.exc
            from optuna.exceptions import StorageInternalError

            kinds = (sqlalchemy.exc.SQLAlchemyError, OSError, ValueError, StorageInternalError)
            if not any(isinstance(c, kinds) or "redis" in type(c).__module__ for c in causes(exc)):
                raise
            shown = mask_url(self._url)
            if transient(exc):
                raise busy_error(shown, exc) from exc
            kind = StorageFaultError if self._opened else StorageError
            raise kind(
                f"study storage {shown} failed: {first_line(exc)}; check that "
                "the server is up and the database is an autoplace/Optuna study "
                "(or pass another --storage)"
            ) from exc


#: How often a worker refreshes the heartbeat of the trials it is measuring, and after how
#: long without one a trial counts as its owner's death (another host's: on this host a
#: dead process is seen at once).
HEARTBEAT_S = 10.0
STALE_AFTER_S = 60.0
_HEARTBEAT = "heartbeat"
#: Who measures: recorded with every trial begun, so that a trial left RUNNING by a killed
#: worker is told from one in flight.
_OWNER = {"host": socket.gethostname(), "pid": os.getpid()}
#: The trials this process abandoned, by storage URL and trial id: one still RUNNING in
#: the storage was left so by a failing storage, and is dead (this process's others live).
_GIVEN_UP: set[tuple[str, int]] = set()


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
