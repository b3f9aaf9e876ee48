"""The result of measuring one configuration: every cost kept apart."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

Status = Literal["ok", "nonfinite", "oom", "too_big", "crash", "timeout", "error"]

#: Statuses that mean the configuration ran and its timings are real.
MEASURED: frozenset[str] = frozenset({"ok", "nonfinite"})


#: Fields holding sequences: tuples here, lists in JSON.
_TUPLES = (
    "compute_dtypes",
    "step_chunk_s",
    "fed_step_chunk_s",
    "prefetch_step_chunk_s",
    "environment",
)
#: The timed loops: the batch resident on the device (``step``), a host batch put each
#: step (``fed``), two puts kept in flight by a thread (``prefetch``).
Loop = Literal["step", "fed", "prefetch"]
LOOPS: tuple[Loop, ...] = ("step", "fed", "prefetch")


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Figures for one configuration of one workload. Times are in seconds.

    ``status`` says how it ended: ``ok``; ``nonfinite`` (ran, but produced NaN or
    inf); ``oom`` (the device ran out of memory at compile or run time);
    ``too_big`` (XLA's memory analysis predicted more than the memory limit, so
    it was not run); ``crash`` (the worker process died, e.g. by a signal);
    ``timeout`` (it ran past the per-measurement time limit and was killed);
    ``error`` (the workload's own code raised). ``reason`` is one line saying why.
    Figures a failure never reached are ``None``.
    """

    status: Status
    reason: str
    device: str
    batch_size: int
    precision: str
    width: int | None
    workload: str = ""
    device_kind: str | None = None
    #: The measuring process's first use of this configuration's device (its backend's
    #: and context's start, handles, an accelerator's autotuner): paid once a process, not
    #: once a configuration, so kept apart from ``compile_s``. Set on the first
    #: configuration a process measures on a device; ``None`` on the others.
    device_init_s: float | None = None
    #: Calling the user's workload function (building state and step).
    build_s: float | None = None
    #: The user's ``make_batch`` making one host batch (the slower of the two each process
    #: makes: the fed loop alternates them).
    batch_s: float | None = None
    #: True when the build came from the worker's cache (``build_s`` was paid earlier).
    build_cached: bool | None = None
    #: Tracing the step to a jaxpr and lowering it to StableHLO.
    lower_s: float | None = None
    #: XLA compiling the lowered program (persistent cache disabled, so never a hit).
    compile_s: float | None = None
    #: True when the worker reused the executable it compiled for this configuration
    #: earlier; ``lower_s`` and ``compile_s`` are then that compile's figures.
    compile_cached: bool | None = None
    #: The first execution of the compiled step, with its batch already on the device.
    first_call_s: float | None = None
    #: Steady-state time of one step, batch on device: median over timed samples.
    step_s: float | None = None
    #: Relative spread of the step samples: interquartile range / median.
    step_spread: float | None = None
    step_samples: int | None = None
    #: Seconds per step of each timed chunk of the steady-state loop, in the order timed.
    step_chunk_s: tuple[float, ...] = ()
    #: Steady-state time of one step including putting a fresh host batch on the device.
    fed_step_s: float | None = None
    fed_step_spread: float | None = None
    fed_step_chunk_s: tuple[float, ...] = ()
    #: The same loop again, a background thread keeping two host batches' puts in flight
    #: ahead of the step (Flax's ``prefetch_to_device``, Grain's device buffer): what a
    #: prefetching input pipeline gets. ``None``: not timed (``prefetch_time_cap_s`` 0).
    prefetch_step_s: float | None = None
    prefetch_step_spread: float | None = None
    prefetch_step_chunk_s: tuple[float, ...] = ()
    #: Host-to-device transfer of one batch, alone (median).
    transfer_s: float | None = None
    batch_bytes: int | None = None
    #: ``batch_size / step_s`` and ``batch_size / fed_step_s``.
    samples_per_s: float | None = None
    fed_samples_per_s: float | None = None
    #: FLOPs of one step from XLA's cost analysis, and ``flops / step_s``.
    flops: float | None = None
    flops_per_s: float | None = None
    #: Bytes one step reads and writes, from XLA's cost analysis (the roofline's other axis).
    bytes_accessed: float | None = None
    #: Bytes XLA's memory analysis predicts (arguments + outputs + temporaries - aliased).
    predicted_bytes: int | None = None
    #: Peak device memory: measured where the device reports it, else the prediction.
    peak_bytes: int | None = None
    peak_bytes_source: Literal["measured", "predicted"] | None = None
    finite: bool | None = None
    #: Element types of the lowered program's dot and convolution results.
    compute_dtypes: tuple[str, ...] = ()
    #: Relative L2 deviation of the first step's output from float32 on the same inputs.
    deviation_vs_float32: float | None = None
    #: Seconds spent in the timed loops (transfer, warm-up, steady state, fed).
    timing_s: float | None = None
    #: Seconds spent computing the float32 reference for ``deviation_vs_float32``.
    reference_s: float | None = None
    #: Compiles seen while timing; must be 0 (the loop calls one AOT-compiled executable).
    timing_compiles: int | None = None
    #: JAX's persistent compilation cache for this compile: ``off`` (not used), ``miss``
    #: (compiled, and stored for the fresh processes of this tune), ``hit`` (loaded: the
    #: lowering is this process's own, ``compile_s`` that of the compile that stored it).
    compile_cache: str | None = None
    #: Whether the figures come from a fresh process of its own that measured nothing else
    #: (as the user's training run will be), or from a worker shared with other
    #: configurations (whose allocator state can move a step by 2x).
    fresh_process: bool | None = None
    #: ``NAME=value`` settings the measuring process started with beside the user's own
    #: environment (an allocator setting autoplace timed as a remedy); empty: none.
    environment: tuple[str, ...] = ()
    #: Steps run in one call (``K``: the step fused over ``K`` stacked batches, one transfer
    #: a call; see :func:`autoplace.fuse`). Every per-step figure is per step all the same
    #: (``step_s``, the chunks, ``transfer_s``, ``batch_bytes``, page faults: the call's
    #: over ``K``); ``peak_bytes``, ``predicted_bytes``, ``compile_s`` and ``first_call_s``
    #: are the call's, its ``K`` batches included. ``flops`` and ``bytes_accessed`` are
    #: ``None``: XLA's cost analysis counts a loop's body once, whatever its trip count.
    steps_per_call: int = 1
    #: Other runnable tasks on the machine, on average at the end of the timed chunks.
    others_running: float | None = None
    #: The share of the timed chunks' wall time some task waited for a CPU (Linux's
    #: pressure stall information; ``None`` where the kernel does not say).
    cpu_pressure: float | None = None
    #: CPU time the measuring process got over wall time x the cores it may use.
    cpu_share: float | None = None
    #: Other autoplace processes waiting for this device's timing lock when its timing ended:
    #: ``uptime``'s load average counts them, though they do not run while it times.
    lock_waiters: int | None = None
    #: Page faults of the measuring process per step, over the later half of its timed
    #: chunks (the first fill the allocator's caches): a step whose temporaries are mapped
    #: afresh every step (too large for the allocator to keep) faults thousands of times.
    page_faults_per_step: float | None = None
    #: Resident memory of the measuring process after the timed chunks.
    resident_bytes: int | None = None
    #: How resident memory grew per step over the later timed chunks, once settled: a leak
    #: grows it without end (0: it levelled off; ``None``: too few steps to tell).
    resident_growth_per_step: float | None = None
    #: How many other configurations' timed loops took turns with this one's, chunk by
    #: chunk (see ``autoplace.Backend.measure_together``); 0 when measured alone.
    interleaved_with: int | None = None
    #: The same for every configuration of one ``measure_together`` call of several
    #: (``None`` alone): chunk ``i`` of each was timed in one turn, so two such
    #: measurements can be compared chunk by chunk, drift cancelled.
    interleave_id: str | None = None
    #: Seconds spent starting a fresh worker for this measurement (0 when reused).
    worker_start_s: float | None = None
    #: Wall time of the whole measurement as seen by the caller (for configurations
    #: measured together, an equal share of the call).
    wall_s: float | None = None

    def step_time(self, loop: Loop) -> float | None:
        """Seconds a step of ``loop`` took (see :data:`Loop`)."""
        return {"step": self.step_s, "fed": self.fed_step_s, "prefetch": self.prefetch_step_s}[loop]

    def spread_of(self, loop: Loop) -> float | None:
        """``loop``'s relative spread over its chunks."""
        return {
            "step": self.step_spread,
            "fed": self.fed_step_spread,
            "prefetch": self.prefetch_step_spread,
        }[loop]

    def chunks_of(self, loop: Loop) -> tuple[float, ...]:
        """Seconds per step of each of ``loop``'s timed chunks, in the order timed."""
        return {
            "step": self.step_chunk_s,
            "fed": self.fed_step_chunk_s,
            "prefetch": self.prefetch_step_chunk_s,
        }[loop]

    def with_step_time(self, loop: Loop, seconds: float) -> Measurement:
        """This measurement with ``loop``'s step at ``seconds`` (and its samples/s)."""
        if loop == "step":
            return dataclasses.replace(
                self, step_s=seconds, samples_per_s=self.batch_size / seconds
            )
        if loop == "fed":
            return dataclasses.replace(
                self, fed_step_s=seconds, fed_samples_per_s=self.batch_size / seconds
            )
        return dataclasses.replace(self, prefetch_step_s=seconds)

    @property
    def measured(self) -> bool:
        """True when the configuration ran and its timings can be compared."""
        return self.status in MEASURED

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for name in _TUPLES:
            data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        for name in _TUPLES:
            kwargs[name] = tuple(kwargs.get(name) or ())
        return cls(**kwargs)

    @classmethod
    def failed(cls, status: Status, reason: str, **config: Any) -> Measurement:
        return cls(status=status, reason=reason, **config)
