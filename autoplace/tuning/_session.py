"""``autoplace.tune``: one tune from start to end, as a session.

It opens what the tune needs (the request checked, the storage, a measurement worker,
the model file's workload, the space, the study), runs the passes over the study
(:class:`~._loop.Loop`), draws the verdict once (:func:`~._judge.judge`), and writes its
views: the recommendation file (:mod:`._document`), the answer and the note the study
keeps (:mod:`._answer`), the result the caller reads.

Optuna is imported when :func:`tune` runs, never at ``import autoplace``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autoplace import recommendation
from autoplace._atomic import check_writable
from autoplace._calls import build
from autoplace._interrupt import Interrupt, taking_ctrl_c
from autoplace.answer import Question
from autoplace.devices import DeviceInfo
from autoplace.errors import BadInputError, StorageError
from autoplace.explaining import throughput_figure
from autoplace.limits import cached_limits
from autoplace.measuring import Backend, SubprocessBackend, resolve_workload
from autoplace.study import (
    OptunaStudyLog,
    StudyIdentity,
    TrialSpace,
    check_usable,
    close_storage,
    default_url,
    mask_url,
    open_storage,
)
from autoplace.tuning._answer import build_answer
from autoplace.tuning._document import build_document
from autoplace.tuning._identity import identity, requester, study_name
from autoplace.tuning._judge import Judged, Tuned, Verdict, judge
from autoplace.tuning._loop import Budget, Hears, Loop
from autoplace.tuning._notes import notes
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space
from autoplace.tuning._plan import Plan
from autoplace.tuning._request import TuneRequest
from autoplace.tuning._result import GroupEvent, TrialEvent, TuneResult
from autoplace.tuning._standing import Standing
from autoplace.workload import WorkloadInfo

#: How often the tune, waiting for its storage to open, looks whether a Ctrl-C was taken.
_OPENING_POLL_S = 0.2


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
    in flight finishes). The tune runs in phases (:mod:`._phases`): the search measures
    quickly, each group with the best configuration so far (:mod:`._search`); then up to
    ``confirm`` finalists are confirmed in windows, each in a fresh process of its own,
    and the pick rests on those windows (:mod:`._confirm`). ``on_group`` hears of each
    group before it is measured, ``on_trial`` of each result, ``on_progress`` (a line)
    what a measurement is doing now (setting up which configuration, which turn),
    ``on_wait`` (a line) when the tune waits: for the storage, for another process timing
    on the same device (:func:`autoplace.measuring.timing_lock`) or for quiet.
    ``backend`` measures (default: a worker process of its own).

    A Ctrl-C (SIGINT), wherever it lands, ends the tune early: while it runs (in the main
    thread) SIGINT is taken by autoplace's own handler (:mod:`autoplace._interrupt`; the
    caller's handler is given back after), and the tune stops at the next point where
    stopping keeps everything: the measurement in flight is abandoned (measured again on
    resume), the result has ``interrupted=True``, everything finished is in the study, and
    the pick so far goes next to ``out`` (see :func:`partial_path`), never over a finished
    one. A KeyboardInterrupt raised in the loop (a launcher's own backend) does the same.
    A second Ctrl-C while the first is handled says what was kept and raises
    ``KeyboardInterrupt`` at once (the command line exits 130).
    """
    hears = Hears(on_trial, on_group, on_wait, on_progress)
    with taking_ctrl_c() as interrupt:
        return _tune(_request(request, options), backend, hears, interrupt)


def _tune(
    r: TuneRequest, backend: Backend | None, hears: Hears, interrupt: Interrupt
) -> TuneResult:
    """:func:`tune`, with SIGINT taken by ``interrupt``."""
    url = _checked(r)
    started, clock = dt.datetime.now(dt.timezone.utc), time.monotonic()
    with contextlib.ExitStack() as stack:
        if backend is None:
            backend = stack.enter_context(SubprocessBackend(interrupt=interrupt))
        session = _open(r, url, backend, stack, hears, started, interrupt)
        interrupt.kept = lambda: _kept(session)
        final, new_trials, interrupted = session.loop.run(Budget(r.trials, r.timeout))
        said = notes(session.loop, session.log.reclaimed, final, new_trials, interrupted,
                     time.monotonic() - clock)  # fmt: skip
        judged = Judged(r.if_busy, r.max_deviation, tuple(r.steps_per_call),
                        started if r.remeasure else None, session.loop.newest)  # fmt: skip
        verdict, document, answer, interrupted = _write_up(
            session, final, judged, backend, interrupted
        )
    if interrupt.is_set():  # taken since: the study has everything; the pick so far is kept
        answer, interrupted = None, True
    written = _write(r.out, document, interrupted) if r.out is not None and final.best else None
    # Taken while the file was written: it is whole, the tune done; the Ctrl-C is said.
    interrupted = interrupted or interrupt.is_set()
    tuned = session.tuned
    return TuneResult(tuned.study, tuned.storage, final.objective, tuned.space, verdict,
                      new_trials, interrupted, written, document, answer,
                      tuple(session.devices), said)  # fmt: skip


def _request(request: TuneRequest | str | Path, options: dict[str, Any]) -> TuneRequest:
    """The request, from a value or a model file and its keyword options."""
    if isinstance(request, TuneRequest):
        if options:
            raise BadInputError(
                f"tune(TuneRequest(...)) takes no options ({', '.join(sorted(options))}): put "
                "them in the TuneRequest"
            )
        return request
    return build(TuneRequest, request, **options)


def _checked(r: TuneRequest) -> str:
    """What must hold before any worker starts or any measurement is taken (a late failure
    would waste them): ``out`` writable; a storage a study can live in, not another
    program's SQLite file, at an address that leads somewhere. Its URL."""
    if r.out is not None:
        check_writable(r.out, "the recommendation (--out)")
        check_writable(partial_path(r.out), "the recommendation (--out)")
    return check_usable(r.storage or default_url())


@dataclasses.dataclass(frozen=True)
class _Session:
    """What one tune opened: its study (``tuned``), its log and its loop, the machine's
    devices."""

    tuned: Tuned
    log: OptunaStudyLog
    loop: Loop
    devices: list[DeviceInfo]


def _open(
    r: TuneRequest,
    url: str,
    backend: Backend,
    stack: contextlib.ExitStack,
    hears: Hears,
    started: dt.datetime,
    interrupt: Interrupt,
) -> _Session:
    """The storage (opened, importing Optuna and creating its tables, while the worker
    starts), the workload, the space, the study and the loop over it."""
    on_wait = hears.on_wait
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        opening = pool.submit(open_storage, url, on_wait=on_wait, interrupt=interrupt)
        stack.callback(_close_opened, opening)
        mf, info = resolve_workload(backend, r.model_file, r.workload)
        devices = backend.devices()
        storage = _opened(opening, interrupt)
    obj = r.objective_value
    default_batches = _default_batches(r, info)
    space = _space(r, info, devices, default_batches)
    ident = identity(mf, info, devices, obj, space)
    memory = {d.name: d.memory_bytes for d in devices}
    question = Question(space.devices, space.batch_sizes, space.precisions, space.widths,
                        tuple(r.steps_per_call), obj.feeding, r.max_memory)  # fmt: skip
    tuned = Tuned(r.study or study_name(ident), mask_url(url), ident, space, memory, question,
                  default_batches)  # fmt: skip
    settings = r.measure_settings
    log = OptunaStudyLog(
        storage,
        url,
        name=tuned.study,
        identity=StudyIdentity(
            direction=obj.direction,
            objective=obj.name,
            attrs={**ident, "device_memory": memory},
            metric=f"{obj.name} ({obj.unit})",
        ),
        space=TrialSpace(
            devices=[d.name for d in devices],
            with_width=space.widths != (None,),
            batch_sizes=sorted({c.batch_size for c in space.configs()}),
            widths=[w for w in space.widths if w is not None],
        ),
        stale_after_s=settings.timeout_s + 120.0,
        since=_local(started) if r.remeasure else None,
        on_wait=on_wait,
        spill_beside=Path(r.out) if r.out is not None else None,
        interrupt=interrupt,
    )
    requests = requester(mf, info, settings, obj)
    loop = Loop(log, backend, requests, Plan.of(r, space), hears, interrupt=interrupt)
    return _Session(tuned, log, loop, devices)


def _opened(opening: concurrent.futures.Future, interrupt: Interrupt) -> Any:
    """The storage being opened, once it is; a Ctrl-C taken meanwhile stops the wait (and
    cuts the opening's own wait for a fault short)."""
    while not concurrent.futures.wait([opening], timeout=_OPENING_POLL_S).done:
        interrupt.check()
    try:
        return opening.result()
    except StorageError:
        interrupt.check()  # its wait for a fault cut short by the Ctrl-C: that is why
        raise


def _kept(session: _Session) -> str:
    """What a tune has kept if its process ends now (said by a second Ctrl-C)."""
    return (
        f"the {session.loop.finished} measurement(s) this run finished are in study "
        f"{session.tuned.study!r} ({session.tuned.storage}); the measurement in flight, if "
        "any, is measured again when the same command runs again"
    )


def _default_batches(r: TuneRequest, info: WorkloadInfo) -> tuple[int, ...]:
    """The batch sizes a tune of this workload tries unless told: 1 for latency, else the
    file's, else autoplace's."""
    if r.objective_value.one_batch:
        return (1,)
    return tuple(info.batch_sizes or DEFAULT_BATCH_SIZES)


def _space(
    r: TuneRequest, info: WorkloadInfo, devices: list[DeviceInfo], default_batches: tuple[int, ...]
) -> Any:
    """The space the request asks for, on this machine's devices and the file's widths."""
    return build_space(
        r.devices,
        r.batch_sizes,
        r.precisions,
        r.widths,
        available=devices,
        declared_widths=info.widths,
        default_width=info.default_width,
        default_batches=default_batches,
        max_memory=r.max_memory,
    )


def _write_up(
    session: _Session,
    final: Standing,
    judged: Judged,
    backend: Backend,
    interrupted: bool,
) -> tuple[Verdict, dict[str, Any], Any, bool]:
    """The verdict drawn once, and its views: the document, and for a finished tune with a
    pick the answer and the note the study keeps (what autoplace picked and why, for people
    reading the study in Optuna's tools, and for a launcher's ``autoplace.recommend()``).
    An interrupt here, after the measuring, still writes the pick so far: a Ctrl-C taken
    stops it between the study's writes."""
    tuned, log, interrupt = session.tuned, session.log, session.loop.interrupt

    def views() -> tuple[Verdict, dict[str, Any]]:
        verdict = judge(final, tuned.space, tuned.memory, judged, cached_limits(None, backend))
        return verdict, build_document(verdict, tuned)

    try:
        verdict, document = views()
        if final.best is None or interrupted:
            return verdict, document, None, interrupted
        interrupt.check()
        log.mark_pick(final.best.config, final.best.score)
        figures = list(final.figures.values())
        interrupt.check()
        log.annotate(verdict.note(), lambda: throughput_figure(verdict.explanation, figures))
        answer = build_answer(verdict, tuned, document["created"])
        interrupt.check()
        log.save_answer(answer.as_dict())
        return verdict, document, answer, False
    except KeyboardInterrupt:  # the study has every measurement: the pick so far is written
        verdict, document = views()
        return verdict, document, None, True


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


def _local(when: dt.datetime) -> dt.datetime:
    """``when`` as Optuna stamps a trial: the local time, naive."""
    return when.astimezone().replace(tzinfo=None)


def _close_opened(opening: concurrent.futures.Future) -> None:
    if opening.done() and opening.exception() is None:
        close_storage(opening.result())
