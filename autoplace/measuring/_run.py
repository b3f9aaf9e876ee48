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
from autoplace.measurement import Loop, Measurement, Status
from autoplace.measuring._setup import ConfigFailure, Executable, user_phase
from autoplace.measuring._timing import LoopTiming
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
    device: Any
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
    steps: LoopTiming | None = None
    fed: LoopTiming | None = None
    prefetch: LoopTiming | None = None
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
                t0 = time.perf_counter()
                for i in range(k):
                    o = self.compiled(st, batches(i))
                    if self.train:
                        st = o
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
            return lambda i: jax.device_put(self.host[i % 2], self.device)
        if self.prefetched is None:
            self.prefetched = prefetch(itertools.cycle(self.host), self.device, depth=2)
        return lambda i: next(self.prefetched)

    def warm(self, loop: Loop) -> float:
        """Warm-up steps (before the first loop only: the later loops run the same warm
        executable), then one timed step of ``loop``: the guess that sizes the chunks."""
        if loop == "step":
            self.chunk(self.request.settings.warmup_steps)
        return self.chunk(1, loop)

    def timed(self, loop: Loop, timing: LoopTiming) -> None:
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
        steps, fed = per_step(self.steps, k), per_step(self.fed, k)
        prefetched = per_step(self.prefetch, k)
        samples_per_s, fed_samples_per_s, flops_per_s = self._throughputs()
        return Measurement(
            status=status,
            reason=reason,
            device=config.device,
            batch_size=config.batch_size,
            precision=config.precision,
            width=self.width,
            workload=self.request.workload,
            device_kind=self.device.device_kind,
            device_init_s=self.device_init_s,
            build_s=self.build_s,
            build_cached=self.build_cached,
            batch_s=self.batch_s,
            lower_s=None if exe is None else exe.lower_s,
            compile_s=None if exe is None else exe.compile_s,
            compile_cached=self.compile_cached,
            first_call_s=self.first_call_s,
            step_s=None if steps is None else steps.step_s,
            step_spread=None if steps is None else steps.spread,
            step_samples=None if steps is None else steps.samples,
            step_chunk_s=() if steps is None else steps.chunk_s,
            fed_step_s=None if fed is None else fed.step_s,
            fed_step_spread=None if fed is None else fed.spread,
            fed_step_chunk_s=() if fed is None else fed.chunk_s,
            prefetch_step_s=None if prefetched is None else prefetched.step_s,
            prefetch_step_spread=None if prefetched is None else prefetched.spread,
            prefetch_step_chunk_s=() if prefetched is None else prefetched.chunk_s,
            transfer_s=None if self.transfer_s is None else self.transfer_s / k,
            batch_bytes=None if self.batch_bytes is None else self.batch_bytes // k,
            samples_per_s=samples_per_s,
            fed_samples_per_s=fed_samples_per_s,
            # XLA's cost analysis counts a loop's body once, whatever its trip count: a
            # fused call's figures are neither the call's nor surely a step's, so none.
            flops=None if exe is None or k > 1 else exe.flops,
            flops_per_s=flops_per_s,
            bytes_accessed=None if exe is None or k > 1 else exe.bytes_accessed,
            predicted_bytes=None if exe is None else exe.predicted_bytes,
            peak_bytes=self.peak_bytes,
            peak_bytes_source=self.peak_bytes_source,
            finite=self.finite,
            compute_dtypes=() if exe is None else exe.compute_dtypes,
            deviation_vs_float32=self.deviation_vs_float32,
            timing_s=self.timing_s,
            reference_s=self.reference_s,
            timing_compiles=self.timing_compiles,
            compile_cache=None if exe is None else exe.cache,
            fresh_process=self.fresh_process,
            environment=tuple(f"{name}={v}" for name, v in self.request.env),
            steps_per_call=k,
            interleaved_with=self.interleaved_with,
            interleave_id=self.interleave_id,
            worker_start_s=None,
            wall_s=None,
            **(self.stats.figures() if self.steps is not None else {}),
        )

    def _status(self) -> tuple[Status, str]:
        if self.failure is not None:
            return self.failure.status, self.failure.reason
        if self.finite:
            return "ok", ""
        return "nonfinite", "the step produced NaN or inf"

    def _throughputs(self) -> tuple[float | None, float | None, float | None]:
        """Samples per second (step and fed) and FLOPs per second. Figured once both loops
        are timed: a run whose loops both ran goes on to the checks, which they open."""
        if self.steps is None or self.fed is None or self.executable is None:
            return None, None, None
        # Per call: K steps of batch_size samples (a fused call's FLOPs are not known).
        k = self.request.steps_per_call
        batch_size = self.request.config.batch_size * k
        flops = self.executable.flops if k == 1 else None
        samples_per_s = batch_size / self.steps.step_s
        fed_samples_per_s = batch_size / self.fed.step_s
        flops_per_s = None if flops is None else flops / self.steps.step_s
        return samples_per_s, fed_samples_per_s, flops_per_s


def per_step(loop: LoopTiming | None, k: int) -> LoopTiming | None:
    """A loop timed in calls of ``k`` steps, per step (the spread, relative, is the same)."""
    if loop is None or k == 1:
        return loop
    return dataclasses.replace(
        loop, step_s=loop.step_s / k, chunk_s=tuple(c / k for c in loop.chunk_s)
    )
