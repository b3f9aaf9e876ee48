"""The result of measuring one configuration (:class:`Measurement`): every cost kept apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from autoplace.config import Config

Status = Literal["ok", "nonfinite", "oom", "too_big", "crash", "timeout", "error"]

#: Statuses that mean the configuration ran and its timings are real.
MEASURED: frozenset[str] = frozenset({"ok", "nonfinite"})

#: The timed loops: the batch on the device (``step``), a host batch put each step
#: (``fed``), two puts kept in flight by a thread (``prefetch``).
Loop = Literal["step", "fed", "prefetch"]


@dataclasses.dataclass(frozen=True)
class LoopFigures:
    """One timed loop: ``step_s`` the median seconds per step over its chunks (``None``: not
    timed), ``spread`` their IQR over the median, ``chunks`` each chunk's seconds per step in
    the order timed (chunk ``i`` of loops timed in one call ran in one turn), ``samples``
    how many were timed (one: a glance)."""

    step_s: float | None = None
    spread: float | None = None
    chunks: tuple[float, ...] = ()
    samples: int | None = None

    def rate(self, batch_size: int) -> float | None:
        return batch_size / self.step_s if self.step_s else None

    @property
    def timed(self) -> int:
        """The chunks timed (the samples, or the chunks kept)."""
        return self.samples if self.samples is not None else len(self.chunks)


@dataclasses.dataclass(frozen=True)
class MachineFigures:
    """What the machine and the measuring process did while a configuration was timed
    (:mod:`autoplace.machine` samples them): other runnable tasks, CPU pressure, this
    process's CPU share, page faults a step, resident memory and its growth a step, and
    other autoplace processes waiting for the timing lock."""

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
    """Figures for one configuration of one workload, in seconds and bytes.

    ``status``: ``ok``, ``nonfinite`` (NaN or inf), ``oom``, ``too_big`` (XLA predicted
    more than the memory limit: not run), ``crash`` (the worker died of it), ``timeout`` or
    ``error`` (the workload's code raised); ``reason`` says why in one line. Figures a
    failure never reached are ``None``.

    One-off costs: ``device_init_s`` (once a process, as a fresh process pays it),
    ``build_s``, ``batch_s``, ``lower_s``, ``compile_s`` (``compile_cache``: JAX's persistent
    cache ``off``, ``miss`` or ``hit``; ``compiled_beside``: steps compiled side by side
    with it on an accelerator, as an older autoplace did, read back from its studies;
    ``compile_alone_s``: that configuration's compile alone, where the study has one),
    ``first_call_s``. The program: ``flops`` and ``bytes_accessed`` a step
    (every device's; ``None`` for a fused call), ``reduced_bytes`` (all-reduced by each
    device a step), ``peak_bytes`` (measured, else predicted: ``peak_bytes_source``),
    ``compute_dtypes`` (of its dots and convolutions), ``deviation_vs_float32`` (relative
    L2 of the first output). How it was measured: ``fresh_process``, ``environment``,
    ``steps_per_call`` (K fused steps: figures stay per step, but ``peak_bytes``,
    ``compile_s`` and ``first_call_s`` are the call's), ``interleave_id`` (the window of
    loops timed in turns), ``timing_compiles`` (must be 0).
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
        return self.loops.get(loop, UNTIMED)

    @property
    def step(self) -> LoopFigures:
        return self.loop("step")

    @property
    def fed(self) -> LoopFigures:
        return self.loop("fed")

    @property
    def flops_per_s(self) -> float | None:
        step = self.step.step_s
        return self.flops / step if self.flops is not None and step else None

    def with_loop(self, loop: Loop, figures: LoopFigures) -> Measurement:
        return dataclasses.replace(self, loops={**self.loops, loop: figures})

    @property
    def measured(self) -> bool:
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
        """A measurement from :meth:`to_dict`'s form, or the flat one older studies kept."""
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
#: How the flat form spelt each loop's figures: a prefix to its field's name.
_PREFIX = {"step": "step", "fed": "fed_step", "prefetch": "prefetch_step"}


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
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
