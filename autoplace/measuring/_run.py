"""One configuration on its way through ``Engine.measure_together``: what it holds, its
timed chunks of steps, and the one place its :class:`Measurement` is assembled."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import jax

from autoplace.machine import ChunkStats
from autoplace.measurement import Loop, LoopFigures, MachineFigures, Measurement, Status
from autoplace.measuring._placement import Placement
from autoplace.measuring._setup import ConfigFailure, Executable, user_phase
from autoplace.prefetching import prefetch
from autoplace.settings import MeasureRequest


@dataclasses.dataclass(slots=True)
class Run:
    """One configuration: set up, then timed, then checked.

    Each phase fills in its own figures; those a failed run never reached stay ``None``.
    Slotted, so that a misspelt name raises at once.
    """

    request: MeasureRequest
    fn: Callable
    width: int | None
    placement: Placement
    failure: ConfigFailure | None = None
    # --- figures, in the order the phases set them ---
    device_init_s: float | None = None
    build_s: float | None = None
    build_cached: bool | None = None
    batch_s: float | None = None
    batch_bytes: int | None = None
    transfer_s: float | None = None
    #: The transfer's timing, then each timed loop's share of its group's seconds.
    timing_s: float | None = None
    compile_cached: bool | None = None
    executable: Executable | None = None
    #: XLA's prediction once compiled, replaced by the device's figure when it has one.
    peak_bytes: int | None = None
    peak_bytes_source: Literal["measured", "predicted"] | None = None
    first_call_s: float | None = None
    steps: LoopFigures | None = None
    fed: LoopFigures | None = None
    prefetch: LoopFigures | None = None
    finite: bool | None = None
    deviation_vs_float32: float | None = None
    reference_s: float | None = None
    interleaved_with: int | None = None
    interleave_id: str | None = None
    timing_compiles: int | None = None
    # --- what the loops and checks work on, set once the first call has run ---
    compiled: Any = None
    host: list[Any] = dataclasses.field(default_factory=list)
    batch: Any = None
    state: Any = None
    out: Any = None
    train: bool = False
    first_out: Any = None
    #: Between set-up phases: the built workload and its lowered step (then dropped).
    workload: Any = None
    lowered: Any = None
    #: What the machine and this process did over the run's own chunks.
    stats: ChunkStats = dataclasses.field(default_factory=ChunkStats)
    #: Whether the run is the only one its process measures (a fresh worker's).
    fresh_process: bool = False
    #: The engine's compile count when the run's timing began (see ``Engine``).
    compiles_before_timing: int | None = None
    #: The prefetch loop's source of batches on the device (made when that loop is first
    #: run, closed by :meth:`close`), and how many host batches it has taken.
    prefetched: Any = None

    def chunk(self, k: int, loop: Loop = "step") -> float:
        """Run ``k`` steps of ``loop`` (see :data:`Loop`), block until done, return the
        seconds. Marks the run failed on a failure of the user's program, and raises it."""
        what = {"step": "the steady-state loop", "fed": "the fed steady-state loop",
                "prefetch": "the prefetched steady-state loop"}[loop]  # fmt: skip
        try:
            steps = k * self.request.steps_per_call
            with (
                self.stats.around(steps),
                user_phase(f"running {what}", Path(self.request.model_file)),
            ):
                batches = self._batches(loop)
                st, o = self.state, self.out
                paced = self.placement.paced
                t0 = time.perf_counter()
                for i in range(k):
                    o = self.compiled(st, batches(i))
                    if self.train:
                        st = o
                    if paced and i % 2:
                        jax.block_until_ready(o)  # two calls in flight at most
                jax.block_until_ready(o)
                elapsed = time.perf_counter() - t0
        except ConfigFailure as failure:
            self.failure = failure
            raise
        self.state, self.out = st, o
        return elapsed

    def _batches(self, loop: Loop) -> Callable[[int], Any]:
        """The ``i``-th step's batch on the device, as ``loop`` gets it."""
        if loop == "step":
            return lambda i: self.batch
        if loop == "fed":
            return lambda i: jax.device_put(self.host[i % 2], self.placement.batch)
        if self.prefetched is None:
            self.prefetched = prefetch(itertools.cycle(self.host), self.placement.batch, depth=2)
        return lambda i: next(self.prefetched)

    def warm(self, loop: Loop) -> float:
        """Warm-up steps (before the first loop only: the later loops run the same warm
        executable), then one timed step of ``loop``: the guess that sizes the chunks."""
        if loop == "step":
            self.chunk(self.request.settings.warmup_steps)
        return self.chunk(1, loop)

    def timed(self, loop: Loop, timing: LoopFigures) -> None:
        """Keep ``loop``'s timing."""
        if loop == "step":
            self.steps = timing
        elif loop == "fed":
            self.fed = timing
        else:
            self.prefetch = timing

    def close(self) -> None:
        """Stop the prefetch loop's thread, if it ran."""
        if self.prefetched is not None:
            self.prefetched.close()
            self.prefetched = None

    def result(self) -> Measurement:
        """The measurement, every field named here; a figure never reached stays ``None``
        (a sequence, empty). The backend adds ``worker_start_s`` and ``wall_s``."""
        status, reason = self._status()
        config, exe = self.request.config, self.executable
        k = self.request.steps_per_call  # the loops timed calls: each figure is per step
        n = len(self.placement.devices)
        timed = {"step": self.steps, "fed": self.fed, "prefetch": self.prefetch}
        loops = {name: per_step(t, k) for name, t in timed.items() if t is not None}
        return Measurement(
            status=status,
            reason=reason,
            config=dataclasses.replace(config, width=self.width),
            workload=self.request.workload,
            device_kind=self.placement.device.device_kind,
            loops=loops,  # type: ignore[arg-type]
            transfer_s=None if self.transfer_s is None else self.transfer_s / k,
            batch_bytes=None if self.batch_bytes is None else self.batch_bytes // k,
            device_init_s=self.device_init_s,
            build_s=self.build_s,
            batch_s=self.batch_s,
            build_cached=self.build_cached,
            lower_s=None if exe is None else exe.lower_s,
            compile_s=None if exe is None else exe.compile_s,
            compile_cached=self.compile_cached,
            compile_cache=None if exe is None else exe.cache,
            first_call_s=self.first_call_s,
            # XLA's cost analysis counts a loop's body once, whatever its trip count: a
            # fused call's figures are neither the call's nor surely a step's, so none.
            # Several devices: XLA analyses one device's program; the step is all of them.
            flops=None if exe is None or k > 1 else exe.flops * n if exe.flops else exe.flops,
            bytes_accessed=(
                None
                if exe is None or k > 1 or exe.bytes_accessed is None
                else exe.bytes_accessed * n
            ),
            reduced_bytes=None if exe is None or n == 1 else exe.reduced_bytes,
            predicted_bytes=None if exe is None else exe.predicted_bytes,
            peak_bytes=self.peak_bytes,
            peak_bytes_source=self.peak_bytes_source,
            finite=self.finite,
            compute_dtypes=() if exe is None else exe.compute_dtypes,
            deviation_vs_float32=self.deviation_vs_float32,
            machine=self.stats.figures() if self.steps is not None else MachineFigures(),
            fresh_process=self.fresh_process,
            environment=tuple(f"{name}={v}" for name, v in self.request.env),
            steps_per_call=k,
            interleaved_with=self.interleaved_with,
            interleave_id=self.interleave_id,
            timing_s=self.timing_s,
            reference_s=self.reference_s,
            timing_compiles=self.timing_compiles,
        )

    def _status(self) -> tuple[Status, str]:
        if self.failure is not None:
            return self.failure.status, self.failure.reason
        if self.finite:
            return "ok", ""
        return "nonfinite", "the step produced NaN or inf"


def per_step(loop: LoopFigures, k: int) -> LoopFigures:
    """A loop timed in calls of ``k`` steps, per step (the spread, relative, is the same)."""
    if k == 1 or loop.step_s is None:
        return loop
    return dataclasses.replace(
        loop, step_s=loop.step_s / k, chunks=tuple(c / k for c in loop.chunks)
    )
