"""``autoplace.tune``: search device x batch size x precision x width, write a recommendation.

Each pass of the loop:

1. reads what the study holds (:class:`~autoplace.study.StudyLog`: this process's
   measurements and those of other workers sharing the storage);
2. judges it once (:func:`._verdict.standing`);
3. chooses the next group: what the strategy proposes, with the best configuration
   so far as the group's reference (search); else the finalists, measured together
   (confirm); else the winner and its closest challenger when the confirmation
   could not tell them apart (duel); else the pick and each other device's best fed three
   ways (feeding); else, when the pick maps fresh memory every step,
   it as it is and with each setting that may remedy that (remedy); else, when the
   pick's fixed cost matters, it at one step a call and at several (fuse); else it stops;
4. marks the group in flight in the study;
5. measures it, the group's timed loops taking turns (see :mod:`autoplace.measuring`);
6. records every result, and tells the progress callback.

So a configuration is searched once per study (unless ``remeasure``); running the
same command again resumes; a failed configuration is stored with its status and
reason and never retried; an interrupt marks the group in flight as interrupted (it
is measured again on resume) and keeps every finished measurement.

Optuna is imported when :func:`tune` runs, never at ``import autoplace``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from autoplace import fingerprint, recommendation, units
from autoplace._atomic import check_writable
from autoplace._calls import build
from autoplace.config import Config
from autoplace.devices import DeviceInfo
from autoplace.errors import BadInputError, StorageError
from autoplace.explaining import Explanation, throughput_figure
from autoplace.limits import cached_limits
from autoplace.measurement import Measurement
from autoplace.measuring import (
    Backend,
    Progress,
    SubprocessBackend,
    resolve_workload,
    timing_lock,
)
from autoplace.objectives import Objective
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.study import (
    History,
    OptunaStudyLog,
    StudyLog,
    Ticket,
    check_storage_url,
    close_storage,
    default_url,
    mask_url,
    open_storage,
    refuse_foreign_tables,
    refuse_unreachable,
)
from autoplace.tuning._answer import build_answer
from autoplace.tuning._climb import Climb
from autoplace.tuning._document import build_document
from autoplace.tuning._explain import explained
from autoplace.tuning._feeding import feeding_window
from autoplace.tuning._fusing import fusing_window, steps_tried
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space
from autoplace.tuning._phases import Phase, phase_settings
from autoplace.tuning._quiet import QUIET_WAIT_S, BusyPolicy, await_quiet
from autoplace.tuning._remedy import candidates, remedy_window
from autoplace.tuning._request import TuneRequest
from autoplace.tuning._result import GroupEvent, TrialEvent, TuneResult
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import Strategy
from autoplace.tuning._verdict import (
    Standing,
    confirmation_window,
    duel,
    incumbent,
    standing,
)
from autoplace.workload import ModelFile, WorkloadInfo

_NO_LIMIT = 2**40
#: How often a worker with nothing left but others' measurements in flight looks again.
PENDING_POLL_S = 1.0


@dataclasses.dataclass(frozen=True)
class _Budget:
    """When the loop stops starting measurements: ``trials`` new ones, ``timeout`` s."""

    trials: int | None
    timeout: float | None
    started: float = dataclasses.field(default_factory=time.monotonic)

    def room(self, used: int) -> int:
        """How many more measurements may start (0: the budget is spent)."""
        if self.timeout is not None and time.monotonic() - self.started >= self.timeout:
            return 0
        return _NO_LIMIT if self.trials is None else max(0, self.trials - used)


def tune(
    request: TuneRequest | str | Path,
    /,
    *,
    backend: Backend | None = None,
    on_trial: Callable[[TrialEvent], None] | None = None,
    on_group: Callable[[GroupEvent], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
    **options: Any,
) -> TuneResult:
    """Search placements of a model file's workload and write the recommendation.

    ``request`` is a :class:`TuneRequest`, or a model file whose ``options`` build one:
    ``tune("model.py", workload="mlp")`` is ``tune(TuneRequest("model.py", workload="mlp"))``.
    Runs until the strategy has nothing worth measuring and the finalists are judged, or
    the request's ``trials`` new measurements, or its ``timeout`` seconds (a measurement
    in flight finishes). The search measures quickly (see :mod:`._phases`), each group
    with the best configuration so far, and scores every configuration on all those
    groups with the drift between them fitted out (:mod:`._drift`). Then up to
    ``confirm`` finalists are confirmed in windows, each in a fresh process of its own,
    and the verdict rests on those windows (:mod:`._verdict`). ``on_group`` hears of each
    group before it is measured, ``on_trial`` of each result, ``on_progress`` (a line)
    what a measurement is doing now (setting up which configuration, which turn),
    ``on_wait`` (a line) when the tune waits: for the storage, for another process timing
    on the same device (:func:`autoplace.measuring.timing_lock`) or for quiet.
    ``backend`` measures (default: a worker process of its own). A KeyboardInterrupt,
    wherever it lands, ends the search early: the result has ``interrupted=True``,
    everything measured is in the study, and the pick so far goes next to ``out`` (see
    :func:`partial_path`), never over a finished one.
    """
    if isinstance(request, TuneRequest):
        if options:
            raise BadInputError(
                f"tune(TuneRequest(...)) takes no options ({', '.join(sorted(options))}): put "
                "them in the TuneRequest"
            )
    else:
        request = build(TuneRequest, request, **options)
    r = request
    obj = r.objective_value
    out = r.out
    if out is not None:  # before any measurement: a late failure would waste them
        check_writable(out, "the recommendation (--out)")
        check_writable(partial_path(out), "the recommendation (--out)")
    # Before the worker starts: a storage no study can live in, another program's SQLite
    # file (never made a study's), a server address that leads nowhere.
    url = check_storage_url(r.storage) if r.storage else default_url()
    refuse_foreign_tables(url)
    refuse_unreachable(url)
    settings = r.measure_settings
    started, clock = dt.datetime.now(dt.timezone.utc), time.monotonic()
    with contextlib.ExitStack() as stack:
        if backend is None:
            backend = stack.enter_context(SubprocessBackend())
        # Open the storage (import Optuna, create its tables) while the worker starts.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            opening = pool.submit(open_storage, url, on_wait=on_wait)
            stack.callback(_close_opened, opening)
            mf, info = resolve_workload(backend, r.model_file, r.workload)
            available = backend.devices()
        default_batches = (1,) if obj.name == "latency" else info.batch_sizes or DEFAULT_BATCH_SIZES
        space = build_space(
            r.devices,
            r.batch_sizes,
            r.precisions,
            r.widths,
            available=available,
            declared_widths=info.widths,
            default_width=info.default_width,
            default_batches=default_batches,
            max_memory=r.max_memory,
        )
        identity = _identity(mf, info, available, obj, space)
        name = r.study or _study_name(identity)
        memory = {d.name: d.memory_bytes for d in available}
        log = OptunaStudyLog(
            opening.result(),
            url,
            name=name,
            direction=obj.direction,
            objective=obj.name,
            attrs={**identity, "device_memory": memory},
            devices=[d.name for d in available],
            with_width=space.widths != (None,),
            stale_after_s=settings.timeout_s + 120.0,
            since=_local(started) if r.remeasure else None,
            batch_sizes=space.batch_sizes,
            widths=[w for w in space.widths if w is not None],
            metric=f"{obj.name} ({obj.unit})",
            on_wait=on_wait,
            spill_beside=Path(out) if out is not None else None,
        )
        requests = _requester(mf, info, phase_settings(settings, obj))
        loop = _Loop(
            log,
            backend,
            requests,
            space,
            obj,
            r.strategy or Climb(),
            r.confirm,
            on_trial,
            on_group,
            r.max_deviation,
            on_wait,
            on_progress,
            r.if_busy,
            r.quiet_wait,
            tuple(r.steps_per_call),
        )
        final, new_trials, interrupted = loop.run(_Budget(r.trials, r.timeout))
        notes = _notes(loop, log, final, new_trials, interrupted, time.monotonic() - clock)

        def written_up() -> tuple[Explanation, dict[str, Any]]:
            limits = cached_limits(None, backend)
            explanation = explained(final, space, memory, r.if_busy, limits, r.steps_per_call)
            return explanation, build_document(
                objective=obj,
                space=space,
                standing=final,
                study_name=name,
                storage_url=url,
                workload=identity["workload"],
                hw=identity["hardware"],
                sw=identity["software"],
                device_memory=memory,
                explanation=explanation,
                if_busy=r.if_busy,
                judged={
                    "if_busy": r.if_busy,
                    "max_deviation": "off" if r.max_deviation is None else r.max_deviation,
                    "steps_per_call": list(r.steps_per_call),
                    "since": started.isoformat() if r.remeasure else None,
                    "newest_trial": loop.newest,
                },
            )

        try:
            explanation, document = written_up()
            answer = None
            if final.best is not None and not interrupted:
                # What autoplace picked and why, for people reading the study in Optuna's
                # tools, and the compact answer a launcher's autoplace.recommend() finds there.
                log.mark_pick(final.best.config, final.best.score)
                log.annotate(
                    _note(explanation),
                    lambda: throughput_figure(explanation, list(final.figures.values())),
                )
                answer = build_answer(document, final, explanation.sentences)
                log.save_answer(answer.as_dict())
        except KeyboardInterrupt:
            # After the measuring: the study has them all; the pick so far is still written.
            interrupted, answer = True, None
            explanation, document = written_up()
    written = _write(out, document, interrupted) if out is not None and final.best else None
    return TuneResult(
        name,
        mask_url(url),
        obj,
        space,
        final,
        new_trials,
        interrupted,
        written,
        document,
        explanation,
        answer,
        tuple(available),
        notes,
    )


def _notes(
    loop: _Loop,
    log: OptunaStudyLog,
    final: Standing,
    new_trials: int,
    interrupted: bool,
    wall_s: float,
) -> tuple[str, ...]:
    """What the run did that its table does not show, one line each: an interrupt during a
    wait, a run that measured nothing new, earlier runs' trials taken for dead, batches
    that took long to make."""
    notes = []
    if interrupted and loop.waiting is not None:
        notes.append(
            f"interrupted while {loop.waiting.removeprefix('waiting: ')}: nothing was "
            "measured during that wait"
        )
    elif not interrupted and new_trials == 0 and final.best is not None:
        notes.append(
            f"nothing new to measure: study {log.name!r} already held every measurement this "
            f"tune needs ({len(final.figures)} configurations, from earlier runs), so this is "
            "its verdict again; --remeasure measures again"
        )
    if log.reclaimed:
        notes.append(
            f"{log.reclaimed} measurement(s) left running by an earlier run that stopped "
            "without ending them (killed?) were marked failed and measured again: nothing "
            "they had finished was lost"
        )
    slow = loop.slowest_batch
    if slow is not None and slow.batch_s is not None and slow.batch_s >= 1.0:
        notes.append(
            f"make_batch took {units.seconds(slow.batch_s)} to make one batch of "
            f"{slow.batch_size} ({slow.device}, {slow.precision}): "
            f"{units.seconds(loop.batch_s)} of this {units.seconds(wall_s)} tune went to "
            "making batches, two for each "
            "configuration in each process that measured it; make them cheaper (draw them "
            "with the rng given, or build the arrays once and slice them)"
        )
    return tuple(notes)


@dataclasses.dataclass
class _Loop:
    """The passes of :func:`tune` over one study (see the module docstring)."""

    log: StudyLog
    backend: Backend
    requests: Callable[[Sequence[Config], Phase], list[MeasureRequest]]
    space: Space
    objective: Objective
    strategy: Strategy
    confirm: int
    on_trial: Callable[[TrialEvent], None] | None
    on_group: Callable[[GroupEvent], None] | None = None
    max_deviation: float | None = None
    on_wait: Callable[[str], None] | None = None
    on_progress: Callable[[str], None] | None = None
    if_busy: BusyPolicy = "warn"
    quiet_wait: float = QUIET_WAIT_S
    steps_per_call: tuple[int, ...] = ()
    #: The newest trial number of the history the last standing was judged on.
    newest: int = -1
    #: What the loop is waiting for now (the line it said), ``None`` while it measures.
    waiting: str | None = None
    #: Seconds the user's ``make_batch`` took over this run's measurements (two batches
    #: each), and the measurement whose batch took longest.
    batch_s: float = 0.0
    slowest_batch: Measurement | None = None

    def _wait(self, line: str) -> None:
        """Say a wait (``on_wait``), and keep it: an interrupt during it is said so."""
        self.waiting = line
        if self.on_wait is not None:
            self.on_wait(line)

    def run(self, budget: _Budget) -> tuple[Standing, int, bool]:
        """Pass until nothing is left to measure or the budget is spent; return the
        final standing, the number of new measurements, and whether interrupted (a
        KeyboardInterrupt anywhere in the loop: the group in flight is marked interrupted,
        so that a resume measures it again, and everything finished is kept)."""
        new, waiting, now = 0, False, None
        tickets: list[Ticket] = []
        looked = False
        try:
            while True:
                history = self.log.history().only(self.space.__contains__)
                now = standing(history, self.objective, self.space, self.max_deviation)
                self.newest = history.newest
                phase, group, reference = self.next_group(now, history, budget.room(new))
                if not group and history.pending and budget.room(new) > 0:
                    # Nothing left but what other workers are measuring right now: wait for
                    # their results (a dead worker's are reclaimed), then judge again.
                    if not waiting:
                        self._wait(
                            f"waiting: another worker is measuring {len(history.pending)} "
                            "configuration(s) of this study"
                        )
                    waiting = True
                    time.sleep(PENDING_POLL_S)
                    continue
                waiting, self.waiting = False, None
                if not group:
                    return now, new, False
                if phase is not Phase.SEARCH or not looked:
                    # The verdict's windows (and the tune's start) wait for quiet, or refuse.
                    await_quiet(self.if_busy, self.quiet_wait, self._wait)
                    self.waiting = None
                    looked = True
                tickets = self.log.claim(
                    self.log.begin(group, phase.stored, reference), phase.stored
                )
                group = [t.config for t in tickets]
                if not group:  # all of it claimed by other workers first: judge again shortly
                    time.sleep(PENDING_POLL_S)
                    continue
                if self.on_group is not None:
                    self.on_group(GroupEvent(phase, tuple(group), new, budget.trials))
                with (
                    self.log.keep_alive(tickets),
                    timing_lock([c.device for c in group], self._wait),
                ):
                    self.waiting = None
                    results = self._measure(group, phase, history)
                try:
                    self._record(tickets, results)
                except StorageError:
                    tickets = []  # what the storage would not take, the log kept for resume
                    raise
                tickets = []
                new += len(results)
                self._count_batches(results)
                if self.on_trial is not None:
                    found = list(zip(group, results, strict=True))
                    self._tell(history.plus(phase.stored, found), results, new, budget, phase)
        except KeyboardInterrupt:
            self.backend.close()
            if tickets:
                self.log.abandon(tickets, interrupted=True)
            return self._standing_now(now), new, True
        except BaseException:
            if tickets:
                self.log.abandon(tickets, interrupted=False)
            raise

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
            history = self.log.history().only(self.space.__contains__)
        except StorageError:
            history = None
        if history is None:
            return last or standing(History(), self.objective, self.space, self.max_deviation)
        self.newest = history.newest
        return standing(history, self.objective, self.space, self.max_deviation)

    def _measure(
        self, group: Sequence[Config], phase: Phase, history: History
    ) -> list[Measurement]:
        """The group measured as its phase asks: the search in the shared worker, a
        confirmation or a duel window each configuration in a fresh process of its own (the
        float32 comparison only in a configuration's first window: it does not change)."""
        requests = self.requests(group, phase)
        compared = {
            c for c, ms in history.confirmed.items() if any(m.deviation_vs_float32 is not None
                                                           for m in ms)
        }  # fmt: skip
        requests = [
            dataclasses.replace(r, settings=dataclasses.replace(r.settings, deviation=False))
            if r.config in compared
            else r
            for r in requests
        ]

        def progress(p: Progress) -> None:
            if self.on_progress is not None:
                shown = p.what if p.index is None else f"{phase.value}: {p.what}"
                self.on_progress(shown)

        if phase is Phase.SEARCH:
            return self.backend.measure_together(requests, progress)
        if phase is Phase.REMEDY:  # the pick as it is, then with each candidate setting
            envs = [(), *candidates()]
            requests = [dataclasses.replace(r, env=e) for r, e in zip(requests, envs, strict=True)]
        if phase is Phase.FUSE:  # the pick at one step a call, then at each K tried
            ks = steps_tried(self.steps_per_call)
            requests = [
                dataclasses.replace(r, steps_per_call=k) for r, k in zip(requests, ks, strict=True)
            ]
        return self.backend.measure_fresh(requests, progress)

    def _record(self, tickets: Sequence[Ticket], results: Sequence[Measurement]) -> None:
        """Keep each result: in the study or, when the storage fails for good, where the log
        keeps what it could not store for the resume; then the last fault's line (it counts
        them all)."""
        fault: StorageError | None = None
        for ticket, result in zip(tickets, results, strict=True):
            try:
                self.log.record(ticket, result, self._score(result))
            except StorageError as exc:
                fault = exc
        if fault is not None:
            raise fault

    def next_group(
        self, now: Standing, history: History, room: int
    ) -> tuple[Phase, list[Config], Config | None]:
        """The phase, the group to measure (at most ``room``), and the search group's
        reference: the best so far, measured again with the group so that every new
        score is anchored to it (the drift between groups is fitted out)."""
        if room <= 0:
            return Phase.SEARCH, [], None
        pending, open_space = history.pending, self.space.without(now.ended)
        group = list(self.strategy.propose(open_space, self.objective, now.estimates, pending))
        reference = incumbent(now) if group and room >= 2 else None
        if reference is not None and reference not in group:
            return Phase.SEARCH, [reference, *group][:room], reference
        if group:
            return Phase.SEARCH, group[:room], None
        group = confirmation_window(now, history.confirmed, self.confirm, pending)
        if group:
            return Phase.CONFIRM, group[:room], None
        if self.confirm <= 0:
            return Phase.DUEL, [], None
        group = duel(now)
        if pending.intersection(group):
            return Phase.DUEL, [], None  # another worker is dueling them: wait for its result
        if group:
            return Phase.DUEL, group[:room], None
        best = now.best
        fed = feeding_window(
            best.config if best else None, now.device_bests, history.feeding, self.objective
        )
        if fed:
            if len(fed) > room or pending.intersection(fed):
                return Phase.FEED, [], None
            return Phase.FEED, fed, None
        settings = remedy_window(
            best.config if best else None, best.measurement if best else None, history.remedies
        )
        if settings:
            if len(settings) > room or (best and best.config in pending):
                return Phase.REMEDY, [], None
            assert best is not None
            return Phase.REMEDY, [best.config] * len(settings), None
        ks = fusing_window(
            best.config if best else None,
            now.figures,
            history.fused,
            self.objective,
            self.steps_per_call,
            fixed_batch=len(self.space.batch_sizes) == 1,
            judged=now.fusing,
            noise=now.noise,
        )
        if not ks or len(ks) > room or (best and best.config in pending):
            return Phase.FUSE, [], None
        assert best is not None
        return Phase.FUSE, [best.config] * len(ks), None

    def _tell(
        self,
        history: History,
        results: Sequence[Measurement],
        new: int,
        budget: _Budget,
        phase: Phase,
    ) -> None:
        """Tell the progress callback about each of ``results``, just measured and in
        ``history``, with the best configuration now."""
        assert self.on_trial is not None
        best = standing(history, self.objective, self.space, self.max_deviation).best
        for m in results:
            event = TrialEvent(m, self._score(m), best, new, budget.trials, self.objective, phase)
            self.on_trial(event)

    def _score(self, m: Measurement) -> float | None:
        return self.objective.score(m) if m.status == "ok" else None


def _note(explanation: Explanation) -> str:
    """The study's note for optuna-dashboard: why the winner wins, in Markdown."""
    lines = ["## Why the winner wins (autoplace)", ""]
    lines += [f"* {s}" for s in explanation.sentences]
    lines += ["", "The figure beside this note: throughput against batch size, per arm."]
    return "\n".join(lines)


def partial_path(out: str | Path) -> Path:
    """Where an interrupted tune writes its pick so far: beside ``out``, as
    ``NAME.partial.toml``, so that a finished recommendation is never overwritten by a
    partial one."""
    out = Path(out)
    return out.with_name(f"{out.stem}.partial{out.suffix or '.toml'}")


def _write(out: str | Path, document: dict[str, Any], interrupted: bool) -> Path:
    """Write the recommendation: to ``out`` when the tune finished (a partial file left
    by an earlier interrupted run is then out of date, and removed), else beside it."""
    if interrupted:
        return recommendation.write(partial_path(out), document)
    written = recommendation.write(out, document)
    partial_path(out).unlink(missing_ok=True)
    return written


def _requester(
    mf: ModelFile, info: WorkloadInfo, settings: dict[Phase, MeasureSettings]
) -> Callable[[Sequence[Config], Phase], list[MeasureRequest]]:
    """How the loop asks for a group's measurements in a phase."""

    def requests(group: Sequence[Config], phase: Phase) -> list[MeasureRequest]:
        return [
            MeasureRequest(str(mf.path), mf.sha256, info.name, config, settings[phase])
            for config in group
        ]

    return requests


def _identity(
    mf: ModelFile,
    info: WorkloadInfo,
    devices: Sequence[DeviceInfo],
    obj: Objective,
    space: Space,
) -> dict[str, Any]:
    """What a study measures, where and for what: recorded with the study. The widths
    searched and the file's default are part of it: a pick holds for those widths, and a
    look-up without widths asks for the default's."""
    return {
        "workload": {
            "path": str(mf.path),
            "sha256": mf.sha256,
            "name": info.name,
            "widths": [w for w in space.widths if w is not None],
            "default_width": info.default_width,
        },
        "hardware": fingerprint.hardware(list(devices)),
        "software": fingerprint.software(),
        "objective": {"name": obj.name, **obj.run},
    }


def _study_name(identity: dict[str, Any]) -> str:
    """The default study name: the workload's, the widths searched unless the default
    alone (:func:`fingerprint.widths_label`), then :func:`fingerprint.study_suffix`."""
    wl = identity["workload"]
    hw, sw = identity["hardware"], identity["software"]
    widths = fingerprint.widths_label(wl["widths"], wl["default_width"])
    suffix = fingerprint.study_suffix(identity["objective"], wl["sha256"], hw, sw)
    return wl["name"] + widths + suffix


def _local(when: dt.datetime) -> dt.datetime:
    """``when`` as Optuna stamps a trial: the local time, naive."""
    return when.astimezone().replace(tzinfo=None)


def _close_opened(opening: concurrent.futures.Future) -> None:
    if opening.done() and opening.exception() is None:
        close_storage(opening.result())
