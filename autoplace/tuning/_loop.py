"""The passes of a tune over one study, as Optuna's ``_optimize`` drives its trials.

Each pass:

1. reads what the study holds (:class:`~autoplace.study.StudyLog`: this process's
   measurements and those of other workers sharing the storage);
2. judges it once (:func:`._standing.standing`);
3. asks each phase in turn for its next group (:data:`._phases.PHASES`), or ends;
4. marks the group in flight in the study;
5. measures it (its timed loops taking turns, in the shared worker or a window of fresh
   processes), records each result, and tells the progress callback.

So a configuration is searched once per study (unless ``remeasure``); running the same
command again resumes; a failed configuration is stored with its status and reason and
never retried; an interrupt marks the group in flight as interrupted (it is measured
again on resume) and keeps every finished measurement. So does a measurement process
killed from outside every time the backend measured it again
(:class:`~autoplace.errors.KilledFromOutsideError`): that is no failure of a
configuration, so the run ends with it, and the group is measured again on resume. A Ctrl-C
is taken where stopping is safe (:class:`~autoplace._interrupt.Interrupt`): at the start of a
pass, in the waits (which wake at once), and in the measurement's progress (the group in
flight is abandoned), never while a finished group is recorded.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from autoplace._interrupt import Interrupt
from autoplace.errors import KilledFromOutsideError, StorageError
from autoplace.measurement import Measurement
from autoplace.measuring import Backend, Progress, timing_lock, waiting
from autoplace.settings import MeasureRequest
from autoplace.study import History, StudyLog, Ticket
from autoplace.tuning._phase import Context, Group, Want
from autoplace.tuning._phases import PHASES
from autoplace.tuning._plan import Plan
from autoplace.tuning._quiet import await_quiet
from autoplace.tuning._result import GroupEvent, TrialEvent
from autoplace.tuning._standing import Standing, standing

_NO_LIMIT = 2**40
#: How often a worker with nothing left but others' measurements in flight looks again.
PENDING_POLL_S = 1.0
#: How the loop turns a phase's want into a request to measure.
Requester = Callable[[Want, str], MeasureRequest]


@dataclasses.dataclass(frozen=True)
class Budget:
    """When the loop stops starting measurements: ``trials`` new ones, ``timeout`` s."""

    trials: int | None
    timeout: float | None
    started: float = dataclasses.field(default_factory=time.monotonic)

    def room(self, used: int) -> int:
        """How many more measurements may start (0: the budget is spent)."""
        if self.timeout is not None and time.monotonic() - self.started >= self.timeout:
            return 0
        return _NO_LIMIT if self.trials is None else max(0, self.trials - used)


@dataclasses.dataclass(frozen=True)
class Hears:
    """Who hears what a tune does: ``on_group`` of each group before it is measured,
    ``on_trial`` of each result, ``on_progress`` (a line) what a measurement is doing now,
    ``on_wait`` (a line) when the tune waits (for the storage, another process timing on
    the device, or quiet)."""

    on_trial: Callable[[TrialEvent], None] | None = None
    on_group: Callable[[GroupEvent], None] | None = None
    on_wait: Callable[[str], None] | None = None
    on_progress: Callable[[str], None] | None = None


def next_group(plan: Plan, now: Standing, history: History, room: int) -> Group | None:
    """The first group a phase asks for (see :mod:`._phase`), or none: nothing is left, or
    a phase cannot start what it needs now (another worker is measuring it)."""
    if room <= 0:
        return None
    ctx = Context(plan, history, now, room)
    for phase in PHASES:
        found = phase.next(ctx)
        if found is not None:
            return found if isinstance(found, Group) else None
    return None


@dataclasses.dataclass
class Loop:
    """The passes of a tune over one study (see the module docstring), and what the run
    saw that its table does not show (read by :mod:`._notes`)."""

    log: StudyLog
    backend: Backend
    requests: Requester
    plan: Plan
    hears: Hears = Hears()
    #: The newest trial number of the history the last standing was judged on.
    newest: int = -1
    #: What the loop is waiting for now (the line it said), ``None`` while it measures.
    waiting: str | None = None
    #: Seconds the user's ``make_batch`` took over this run's measurements (two batches
    #: each), and the measurement whose batch took longest.
    batch_s: float = 0.0
    slowest_batch: Measurement | None = None
    #: A Ctrl-C taken (see :mod:`autoplace._interrupt`): the loop stops at the next point
    #: where stopping keeps everything.
    interrupt: Interrupt = dataclasses.field(default_factory=Interrupt)
    _new: int = dataclasses.field(default=0, init=False, repr=False)

    @property
    def finished(self) -> int:
        """The measurements this run has recorded so far."""
        return self._new

    def run(self, budget: Budget) -> tuple[Standing, int, bool]:
        """Pass until nothing is left to measure or the budget is spent; return the final
        standing, the number of new measurements, and whether interrupted (a Ctrl-C taken,
        or a KeyboardInterrupt anywhere in the loop: the group in flight is marked
        interrupted, so that a resume measures it again, and everything finished is kept)."""
        self._new, self._looked = 0, False
        self._tickets: list[Ticket] = []
        now: Standing | None = None
        waiting = False
        try:
            while True:
                self.interrupt.check()
                history = self._read()
                now = self._judge(history)
                group = next_group(self.plan, now, history, budget.room(self._new))
                if group is None and history.pending and budget.room(self._new) > 0:
                    # Nothing left but what other workers are measuring right now: wait for
                    # their results (a dead worker's are reclaimed), then judge again.
                    if not waiting:
                        self._wait(
                            f"waiting: another worker is measuring {len(history.pending)} "
                            "configuration(s) of this study"
                        )
                    waiting = True
                    self.interrupt.sleep(PENDING_POLL_S)
                    continue
                waiting, self.waiting = False, None
                if group is None:
                    return now, self._new, False
                self._run_group(group, history, budget)
        except KeyboardInterrupt:
            self.interrupt.set()  # one raised elsewhere (a launcher's backend) stops it too
            if self.hears.on_wait is not None:
                self.hears.on_wait("interrupted: stopping, every finished measurement kept "
                                   "(Ctrl-C again stops at once)")  # fmt: skip
            self.backend.close()
            if self._tickets:
                self.log.abandon(self._tickets, interrupted=True)
            return self._standing_now(now), self._new, True
        except KilledFromOutsideError:
            if self._tickets:  # no configuration's failure: measured again on resume
                self.log.abandon(self._tickets, interrupted=True)
            raise
        except BaseException:
            if self._tickets:
                self.log.abandon(self._tickets, interrupted=False)
            raise

    def _run_group(self, group: Group, history: History, budget: Budget) -> None:
        """One group: a window waits for quiet (or refuses); claimed in the study; measured
        under the devices' timing lock; recorded; told."""
        if group.fresh or not self._looked:
            await_quiet(
                self.plan.if_busy, self.plan.quiet_wait, self._wait, interrupt=self.interrupt
            )
            self.waiting, self._looked = None, True
        begun = self.log.begin(group.configs, group.phase, group.reference)
        self._tickets = self.log.claim(begun, group.phase)
        wants = _claimed(group.wants, begun, self._tickets)
        if not wants:  # all of it claimed by other workers first: judge again shortly
            self.interrupt.sleep(PENDING_POLL_S)
            return
        configs = tuple(w.config for w in wants)
        if self.hears.on_group is not None:
            self.hears.on_group(GroupEvent(group.phase, configs, self._new, budget.trials))
        with (
            self.log.keep_alive(self._tickets),
            timing_lock([c.device for c in configs], self._wait, self.interrupt),
        ):
            self.waiting = None
            results = self._measure(group, wants, history)
            queued = waiting([c.device for c in configs])
            results = [
                dataclasses.replace(m, machine=dataclasses.replace(m.machine, lock_waiters=queued))
                for m in results
            ]
        try:
            self._record(results)
        finally:  # what the storage would not take, the log kept for the resume
            self._tickets = []
        self._new += len(results)
        self._count_batches(results)
        if self.hears.on_trial is not None:
            found = list(zip(configs, results, strict=True))
            self._tell(history.plus(group.phase, found), results, budget, group.phase)

    def _measure(self, group: Group, wants: Sequence[Want], history: History) -> list[Measurement]:
        """The wants measured as the group says: together in the shared worker, or each in a
        fresh process of a window. The float32 comparison is made once per configuration
        and phase: it does not change."""
        compared = {c for c, m in history.measured.get(group.phase, ())
                    if m.deviation_vs_float32 is not None}  # fmt: skip
        requests = []
        for want in wants:
            r = self.requests(want, group.phase)
            if want.config in compared:
                r = dataclasses.replace(
                    r, settings=dataclasses.replace(r.settings, deviation=False)
                )
            requests.append(r)

        def progress(p: Progress) -> None:
            # A Ctrl-C taken stops it here: the group is abandoned, measured again on resume.
            self.interrupt.check()
            if self.hears.on_progress is not None:
                self.hears.on_progress(p.what if p.index is None else f"{group.phase}: {p.what}")

        if group.fresh:
            return self.backend.measure_fresh(requests, progress)
        return self.backend.measure_together(requests, progress)

    def _record(self, results: Sequence[Measurement]) -> None:
        """Keep each result: in the study or, when the storage fails for good, where the log
        keeps what it could not store for the resume; then the last fault's line."""
        fault: StorageError | None = None
        for ticket, result in zip(self._tickets, results, strict=True):
            try:
                self.log.record(ticket, result, score_of(self.plan, result))
            except StorageError as exc:
                fault = exc
        if fault is not None:
            raise fault

    def _read(self) -> History:
        return self.log.history().only(self.plan.space.__contains__)

    def _judge(self, history: History) -> Standing:
        self.newest = history.newest
        return standing(history, self.plan)

    def _wait(self, line: str) -> None:
        """Say a wait (``on_wait``), and keep it: an interrupt during it is said so."""
        self.waiting = line
        if self.hears.on_wait is not None:
            self.hears.on_wait(line)

    def _count_batches(self, results: Sequence[Measurement]) -> None:
        """Add ``results``' batches (two made in each) to the run's make_batch seconds."""
        for m in results:
            if m.batch_s is None:
                continue
            self.batch_s += 2 * m.batch_s
            slowest = self.slowest_batch
            if slowest is None or m.batch_s > (slowest.batch_s or 0.0):
                self.slowest_batch = m

    def _standing_now(self, last: Standing | None) -> Standing:
        """The standing after an interrupt: of everything recorded (a group may have been
        recorded since ``last``), else ``last`` if the study cannot be read now."""
        try:
            return self._judge(self._read())
        except StorageError:
            return last or self._judge(History())

    def _tell(
        self, history: History, results: Sequence[Measurement], budget: Budget, phase: str
    ) -> None:
        """Tell the progress callback about each of ``results``, just measured and in
        ``history``, with the best configuration now."""
        assert self.hears.on_trial is not None
        best = standing(history, self.plan).best
        for m in results:
            event = TrialEvent(m, score_of(self.plan, m), best, self._new, budget.trials,
                               self.plan.objective, phase)  # fmt: skip
            self.hears.on_trial(event)


def score_of(plan: Plan, m: Measurement) -> float | None:
    """``m``'s score, ``None`` for a failure."""
    return plan.objective.score(m) if m.status == "ok" else None


def _claimed(wants: Sequence[Want], begun: Sequence[Ticket], kept: Sequence[Ticket]) -> list[Want]:
    """The wants whose trials this worker claimed (another may have taken some first)."""
    ids = {t.trial_id for t in kept}
    return [w for w, t in zip(wants, begun, strict=True) if t.trial_id in ids]
