"""The result of measuring one configuration: every cost kept apart, by concept.

A :class:`Measurement` holds its configuration (a :class:`~autoplace.config.Config`), its
timed loops (a mapping from :data:`Loop` to one :class:`LoopFigures` each), its one-off
costs (build, lowering, compile, first call), what XLA says of the program, what the
machine did while it was timed (:class:`MachineFigures`) and how it was measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from autoplace.config import Config

Status = Literal["ok", "nonfinite", "oom", "too_big", "crash", "timeout", "error"]

#: Statuses that mean the configuration ran and its timings are real.
MEASURED: frozenset[str] = frozenset({"ok", "nonfinite"})

#: The timed loops: the batch resident on the device (``step``), a host batch put each
#: step (``fed``), two puts kept in flight by a thread (``prefetch``).
Loop = Literal["step", "fed", "prefetch"]
LOOPS: tuple[Loop, ...] = ("step", "fed", "prefetch")


@dataclasses.dataclass(frozen=True)
class LoopFigures:
    """One timed loop of one configuration.

    Attributes:
        step_s: the median seconds per step over its chunks (``None``: not timed).
        spread: the chunks' relative spread (interquartile range over the median).
        chunks: the seconds per step of each chunk, in the order timed (a chunk ``i`` of
            each loop timed in one call ran in one turn: comparable chunk by chunk).
        samples: how many chunks were timed (one: a glance, not a timing).
    """

    step_s: float | None = None
    spread: float | None = None
    chunks: tuple[float, ...] = ()
    samples: int | None = None

    def rate(self, batch_size: int) -> float | None:
        """Samples per second at ``batch_size`` a step."""
        return batch_size / self.step_s if self.step_s else None

    @property
    def timed(self) -> int:
        """The chunks timed (the samples, or the chunks kept)."""
        return self.samples if self.samples is not None else len(self.chunks)


@dataclasses.dataclass(frozen=True)
class MachineFigures:
    """What the machine and the measuring process did while a configuration was timed.

    Attributes:
        others_running: other runnable tasks, on average at the end of the timed chunks.
        cpu_pressure: the share of the timed chunks' wall time some task waited for a CPU
            (Linux's pressure stall information; ``None`` where the kernel does not say).
        cpu_share: CPU time the measuring process got over wall time x its cores.
        page_faults_per_step: page faults a step over the later half of the chunks (a step
            whose temporaries are mapped afresh every step faults thousands of times).
        resident_bytes: the process's resident memory after the timed chunks.
        resident_growth_per_step: how resident memory grew a step once settled (a leak).
        lock_waiters: other autoplace processes waiting for the device's timing lock when
            its timing ended (``uptime``'s load counts them; they do not run meanwhile).
    """

    others_running: float | None = None
    cpu_pressure: float | None = None
    cpu_share: float | None = None
    page_faults_per_step: float | None = None
    resident_bytes: int | None = None
    resident_growth_per_step: float | None = None
    lock_waiters: int | None = None


#: A loop never timed.
UNTIMED = LoopFigures()


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Figures for one configuration of one workload. Times are in seconds.

    ``status`` says how it ended: ``ok``; ``nonfinite`` (ran, but produced NaN or inf);
    ``oom`` (the device ran out of memory at compile or run time); ``too_big`` (XLA's memory
    analysis predicted more than the memory limit, so it was not run); ``crash`` (the
    worker process died of the configuration's own doing, e.g. a segfault); ``timeout`` (it
    ran past the per-measurement limit and was killed); ``error`` (the workload's own code
    raised). ``reason`` is one line saying why. Figures a failure never reached are
    ``None``.

    The one-off costs: ``device_init_s`` (the process's first use of the device, as a
    user's fresh process pays it: once a process, not a configuration), ``build_s`` (the
    workload function; ``build_cached``: the worker's cache served it), ``batch_s`` (the
    slower of the two host batches a process makes), ``lower_s`` (tracing and lowering),
    ``compile_s`` (XLA's compile; ``compile_cached``: this worker's own executable reused,
    ``compile_cache``: JAX's persistent cache ``off``, ``miss`` or ``hit``;
    ``compiled_beside``: the other steps for its accelerator compiled side by side with
    the compile ``compile_s`` reports, each slowing the others', as autoplace did before it
    compiled them one at a time, set when a study it wrote then is read back, ``None``
    otherwise; ``compile_alone_s``: that configuration's compile alone, where the study
    has one: see :mod:`autoplace.study._side_by_side`), ``first_call_s`` (the first
    execution, the batch on the device). The program: ``flops`` and ``bytes_accessed`` a step (XLA's
    cost analysis, all the devices' together; ``None`` for a fused call, whose loop body
    it counts once), ``reduced_bytes`` (on several devices, the bytes each all-reduces a
    step: a training step's gradients),
    ``predicted_bytes`` (XLA's memory analysis), ``peak_bytes`` (measured where the
    device says, else predicted: ``peak_bytes_source``), ``compute_dtypes`` (of its dots
    and convolutions), ``finite``, ``deviation_vs_float32`` (relative L2 of the first
    output against float32's on the same inputs). How it was measured: ``fresh_process``
    (a process of its own, as the training run will be, or a shared worker),
    ``environment`` (``NAME=value`` set for its process), ``steps_per_call`` (``K`` steps
    fused in one call: every per-step figure is per step all the same, ``peak_bytes``,
    ``compile_s`` and ``first_call_s`` the call's), ``interleaved_with`` and
    ``interleave_id`` (the call that timed several configurations in turns, its window),
    ``timing_s`` (seconds in its timed loops), ``reference_s`` (computing float32's
    output), ``timing_compiles`` (compiles seen while timing: must be 0),
    ``worker_start_s`` and ``wall_s``.
    """

    status: Status
    reason: str
    config: Config
    workload: str = ""
    device_kind: str | None = None
    loops: Mapping[Loop, LoopFigures] = dataclasses.field(default_factory=dict)
    transfer_s: float | None = None
    batch_bytes: int | None = None
    device_init_s: float | None = None
    build_s: float | None = None
    batch_s: float | None = None
    build_cached: bool | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    compile_cached: bool | None = None
    compile_cache: str | None = None
    compiled_beside: int | None = None
    compile_alone_s: float | None = None
    first_call_s: float | None = None
    flops: float | None = None
    bytes_accessed: float | None = None
    reduced_bytes: int | None = None
    predicted_bytes: int | None = None
    peak_bytes: int | None = None
    peak_bytes_source: Literal["measured", "predicted"] | None = None
    finite: bool | None = None
    compute_dtypes: tuple[str, ...] = ()
    deviation_vs_float32: float | None = None
    machine: MachineFigures = MachineFigures()
    fresh_process: bool | None = None
    environment: tuple[str, ...] = ()
    steps_per_call: int = 1
    interleaved_with: int | None = None
    interleave_id: str | None = None
    timing_s: float | None = None
    reference_s: float | None = None
    timing_compiles: int | None = None
    worker_start_s: float | None = None
    wall_s: float | None = None

    @property
    def device(self) -> str:
        return self.config.device

    @property
    def batch_size(self) -> int:
        return self.config.batch_size

    @property
    def precision(self) -> str:
        return self.config.precision

    @property
    def width(self) -> int | None:
        return self.config.width

    def loop(self, loop: Loop) -> LoopFigures:
        """``loop``'s figures (:data:`UNTIMED` where it was not timed)."""
        return self.loops.get(loop, UNTIMED)

    @property
    def step(self) -> LoopFigures:
        """The step with its batch on the device."""
        return self.loop("step")

    @property
    def fed(self) -> LoopFigures:
        """The step fed a host batch put before it."""
        return self.loop("fed")

    @property
    def flops_per_s(self) -> float | None:
        step = self.step.step_s
        return self.flops / step if self.flops is not None and step else None

    def with_loop(self, loop: Loop, figures: LoopFigures) -> Measurement:
        """This measurement with ``loop``'s figures replaced."""
        return dataclasses.replace(self, loops={**self.loops, loop: figures})

    @property
    def measured(self) -> bool:
        """True when the configuration ran and its timings can be compared."""
        return self.status in MEASURED

    def label(self) -> str:
        return self.config.label()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a study keeps (read back by :meth:`from_dict`)."""
        data = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("config", "loops", "machine")
        }
        return {
            **data,
            "config": dataclasses.asdict(self.config),
            "loops": {
                k: {**dataclasses.asdict(v), "chunks": list(v.chunks)}
                for k, v in self.loops.items()
            },
            "machine": dataclasses.asdict(self.machine),
            "compute_dtypes": list(self.compute_dtypes),
            "environment": list(self.environment),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """A measurement from :meth:`to_dict`'s form, or from the flat one studies kept
        before (``fed_step_s``, ``step_chunk_s``, ``others_running``, ...)."""
        data = dict(data) if "config" in data else _nested(data)
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["config"] = Config(**data["config"])
        kwargs["loops"] = {
            k: LoopFigures(**{**v, "chunks": tuple(v.get("chunks") or ())})
            for k, v in (data.get("loops") or {}).items()
        }
        kwargs["machine"] = MachineFigures(**(data.get("machine") or {}))
        for name in ("compute_dtypes", "environment"):
            kwargs[name] = tuple(kwargs.get(name) or ())
        return cls(**kwargs)

    @classmethod
    def failed(cls, status: Status, reason: str, config: Config, **figures: Any) -> Measurement:
        return cls(status=status, reason=reason, config=config, **figures)


_MACHINE = tuple(f.name for f in dataclasses.fields(MachineFigures))
#: How the flat form spelt each loop's figures: a prefix before its field's name.
_PREFIX = {"step": "step", "fed": "fed_step", "prefetch": "prefetch_step"}


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The flat form of studies written before measurements were kept by concept."""
    out = {k: v for k, v in flat.items() if k not in _MACHINE}
    out["config"] = {k: flat.get(k) for k in ("device", "batch_size", "precision", "width")}
    out["machine"] = {k: flat[k] for k in _MACHINE if flat.get(k) is not None}
    loops = {}
    for loop, prefix in _PREFIX.items():
        step = flat.get(f"{prefix}_s")
        if step is None:
            continue
        loops[loop] = {
            "step_s": step,
            "spread": flat.get(f"{prefix}_spread"),
            "chunks": flat.get(f"{prefix}_chunk_s") or (),
            "samples": flat.get("step_samples") if loop == "step" else None,
        }
    out["loops"] = loops
    return out
