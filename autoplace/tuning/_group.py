"""One group's run, as Optuna's ``_run_trial`` is one trial's: its measurements asked of
the backend as its phase says, timed, then recorded in the study, and told."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from autoplace.config import Config
from autoplace.errors import StorageError
from autoplace.measurement import Measurement
from autoplace.measuring import Backend, Progress
from autoplace.objectives import Objective
from autoplace.settings import MeasureRequest
from autoplace.study import History, StudyLog, Ticket
from autoplace.tuning._fusing import steps_tried
from autoplace.tuning._phases import Phase
from autoplace.tuning._remedy import candidates

#: How the loop asks for a group's measurements in a phase.
Requester = Callable[[Sequence[Config], Phase], list[MeasureRequest]]


def measure_group(
    backend: Backend,
    requests: list[MeasureRequest],
    phase: Phase,
    history: History,
    steps_per_call: Sequence[int],
    on_progress: Callable[[str], None] | None,
) -> list[Measurement]:
    """The group measured as its phase asks: the search in the shared worker, a
    confirmation or a duel window each configuration in a fresh process of its own (the
    float32 comparison only in a configuration's first window: it does not change); a
    remedy's window the pick as it is, then with each candidate setting; a steps-per-call
    window the pick at one step a call, then at each K tried."""
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
        if on_progress is not None:
            on_progress(p.what if p.index is None else f"{phase.value}: {p.what}")

    if phase is Phase.SEARCH:
        return backend.measure_together(requests, progress)
    if phase is Phase.REMEDY:
        envs = [(), *candidates()]
        requests = [dataclasses.replace(r, env=e) for r, e in zip(requests, envs, strict=True)]
    if phase is Phase.FUSE:
        ks = steps_tried(steps_per_call)
        requests = [
            dataclasses.replace(r, steps_per_call=k) for r, k in zip(requests, ks, strict=True)
        ]
    return backend.measure_fresh(requests, progress)


def record_group(
    log: StudyLog,
    tickets: Sequence[Ticket],
    results: Sequence[Measurement],
    objective: Objective,
) -> None:
    """Keep each result: in the study or, when the storage fails for good, where the log
    keeps what it could not store for the resume; then the last fault's line (it counts
    them all)."""
    fault: StorageError | None = None
    for ticket, result in zip(tickets, results, strict=True):
        try:
            log.record(ticket, result, score(objective, result))
        except StorageError as exc:
            fault = exc
    if fault is not None:
        raise fault


def score(objective: Objective, m: Measurement) -> float | None:
    """``m``'s score, ``None`` for a failure."""
    return objective.score(m) if m.status == "ok" else None
