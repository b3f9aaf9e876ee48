"""A window of fresh workers: one call of ``SubprocessBackend.measure_fresh``.

Each configuration gets a fresh worker process of its own, started together with the
others; each sets its configuration up (alone where an accelerator is among them), then
the caller times their loops chunk by chunk, the chunks taking turns across the
processes (:func:`~._timing.time_interleaved`), and each worker ends its measurement
with the chunks timed. A configuration that fails drops out; the others are timed again
without it. A process killed from outside (see :class:`~._worker.Death`) fails no
configuration: the window ends with :class:`KilledFromOutside`, and its caller measures
it again in new processes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from autoplace.errors import WorkerError
from autoplace.measurement import Measurement
from autoplace.measuring._backend import with_figures
from autoplace.measuring._messages import Chunk, Done, Failed, Finish, Prepare, Request, Warm
from autoplace.measuring._progress import Progress
from autoplace.measuring._timing import compiles_alone, loops, time_interleaved
from autoplace.measuring._worker import Stop, Worker, why_not_started
from autoplace.settings import MeasureRequest


class _Dropped(Exception):
    """A fresh worker's configuration failed while its loops were timed."""

    def __init__(self, index: int, measurement: Measurement) -> None:
        super().__init__(measurement.reason)
        self.index, self.measurement = index, measurement


class KilledFromOutside(Exception):
    """A process of the window was killed from outside, or its fork server went (why:
    ``reason``): no configuration failed, and the window's figures are incomplete."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FreshWindow:
    """One call of ``SubprocessBackend.measure_fresh``: a fresh worker per request,
    started together, each set up alone, then their timed loops in turns from here.

    Args:
        workers: one worker per request, not yet launched (the caller stops them).
        requests: the configurations; the loop settings are the first one's.
        on_progress: hears what the window is doing, and what its workers say.
    """

    def __init__(
        self,
        workers: list[Worker],
        requests: list[MeasureRequest],
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        self.workers, self.requests, self.on_progress = workers, requests, on_progress
        self.results: dict[int, Measurement] = {}
        self.timeout = max(r.settings.timeout_s for r in requests)

    def _samples_per_call(self, live: list[int]) -> list[int] | None:
        """The samples each live worker's call takes (its batch times its steps a call), what
        the stop rules compare per sample against the first (the reference); none once the
        first has dropped out."""
        if not live or live[0] != 0:
            return None
        return [self.requests[i].samples_per_call for i in live]

    def _tell(self, i: int | None, what: str) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(i, what))

    def _ask(self, i: int, message: Request) -> Any:
        """A worker's answer to ``message``, or :class:`_Dropped` when it failed."""
        return self._answer(i, self.workers[i].call(message, self.timeout, self.on_progress))

    def _answer(self, i: int, reply: Done | Failed | Stop) -> Any:
        if isinstance(reply, Stop) and reply.outside:
            raise KilledFromOutside(reply.reason)
        if isinstance(reply, Stop):
            raise _Dropped(i, reply.measurement(self.requests[i]))
        if isinstance(reply, Failed):
            raise _Dropped(i, reply.measurement)
        return reply.value

    def run(self) -> list[Measurement]:
        """Each configuration's measurement; raises :class:`KilledFromOutside` when a
        process is killed from outside, a :class:`WorkerError` when one fails to start."""
        t = time.perf_counter()
        self._tell(None, f"starting {len(self.workers)} fresh worker process(es)")
        for worker in self.workers:
            worker.launch()
        for worker in self.workers:
            reply = worker.ready()
            if isinstance(reply, Stop) and reply.outside:
                raise KilledFromOutside(reply.reason)
            if not isinstance(reply, Done):
                raise WorkerError(
                    f"a fresh measurement worker failed to start: {why_not_started(reply)}"
                    f"{worker.log_hint()}"
                )
        live = self._prepare()
        settings = self.requests[0].settings
        timed: dict[int, dict[str, list[float]]] = {i: {} for i in live}
        start = time.perf_counter()
        for loop, cap in loops(settings):
            live = self._time(live, loop, cap, timed)
        share = (time.perf_counter() - start) / max(len(live), 1)
        together = uuid.uuid4().hex
        for i in live:
            finish = Finish(
                loops=timed[i],
                together=together,
                others=len(self.requests) - 1,
                timing_s=share,
            )
            try:
                self.results[i] = self._ask(i, finish)
            except _Dropped as dropped:
                self.results[i] = dropped.measurement
        wall = (time.perf_counter() - t) / len(self.requests)
        return [
            with_figures(self.results[i], worker_start_s=w.start_s, wall_s=wall)
            for i, w in enumerate(self.workers)
        ]

    def _prepare(self) -> list[int]:
        """Every worker sets its configuration up; the workers whose set-up ran. On CPUs
        together (no timing runs yet); where an accelerator is among them, one at a time
        (see :func:`~._timing.compiles_alone`: XLA's autotuner times kernels as it
        compiles)."""
        platforms = [r.config.device.split(":", 1)[0] for r in self.requests]
        pairs = list(zip(self.workers, self.requests, strict=True))
        live = []
        if compiles_alone(platforms):
            sent = []
            for w, r in pairs:  # each answers before the next is sent
                stop = w.send(Prepare(r))
                sent.append(stop or w.answer(self.timeout, self.on_progress))
        else:
            stops = [w.send(Prepare(r)) for w, r in pairs]
            sent = [
                stop or w.answer(self.timeout, self.on_progress)
                for (w, _), stop in zip(pairs, stops, strict=True)
            ]
        for i, reply in enumerate(sent):
            try:
                self._answer(i, reply)
                live.append(i)
            except _Dropped as dropped:
                self.results[i] = dropped.measurement
        return live

    def _time(
        self, live: list[int], loop: str, cap: float, timed: dict[int, dict[str, list[float]]]
    ) -> list[int]:
        """One loop of every live worker's configuration, interleaved across the workers; a
        configuration that fails drops out, and the others are timed again without it.
        Returns the workers still live."""
        settings = self.requests[0].settings
        while live:
            try:
                guesses = [self._ask(i, Warm(loop)) for i in live]

                def chunk(i: int) -> Callable[[int], float]:
                    return lambda k: self._ask(i, Chunk(loop, k))

                chunks = time_interleaved(
                    [chunk(i) for i in live],
                    guesses,
                    settings,
                    cap,
                    on_turn=lambda n: self._tell(None, f"timing in turns, turn {n + 1}"),
                    batch_sizes=self._samples_per_call(live),
                )
            except _Dropped as dropped:
                self.results[dropped.index] = dropped.measurement
                self.workers[dropped.index].stop(kill=True)
                live = [i for i in live if i != dropped.index]
                continue
            for i, c in zip(live, chunks, strict=True):
                timed[i][loop] = c
            return live
        return live
