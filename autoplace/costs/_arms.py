"""Each arm's cost model, built from the figures of a study (see ``_fit``)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping

from autoplace.config import Arm, Config
from autoplace.costs._fit import Line, MemoryLine, Point, fit_line, fit_memory
from autoplace.measurement import Loop, Measurement

#: Chunks a loop needs to count as timed: fewer is a glance (one chunk, right after the
#: first call), too rough for a line or to subtract from another loop.
TIMED_CHUNKS = 3


@dataclasses.dataclass(frozen=True)
class ArmModel:
    """What one arm costs, fitted from its measured configurations.

    Attributes:
        arm: (device, precision, width).
        step: the steady loop's line (batch on the device), if determined (glances, one
            chunk, are left out).
        fed: the fed loop's line (a fresh host batch each step), if determined.
        prefetch: the prefetched loop's line (two puts in flight), if determined.
        put: the line of one batch's put on the device (a median of at least three).
        one_off_s: lowering + compile + first call, median over its configurations (the
            device's start-up, once a process, is not in it: :func:`device_starts`).
        memory: peak bytes ``= m0 + m1·b`` (both at least 0), if determined.
        measured: the batch sizes that ran.
        fails_from: the smallest batch that did not fit or timed out, if any.
        compute_dtypes: the dtypes its compiled step computes in (from XLA).
        deviation: its output's deviation from float32 (largest measured), if known.
        least_step_s: its fastest step with the batch on the device, of those timed
            (``TIMED_CHUNKS`` chunks at least): a bound on that step's own fixed cost,
            where too few were timed for a line.
    """

    arm: Arm
    step: Line | None
    fed: Line | None
    put: Line | None
    prefetch: Line | None
    one_off_s: float | None
    memory: MemoryLine | None
    measured: tuple[int, ...]
    fails_from: int | None = None
    compute_dtypes: tuple[str, ...] = ()
    deviation: float | None = None
    least_step_s: float | None = None

    @property
    def label(self) -> str:
        device, precision, width = self.arm
        return f"{device} {precision}" + (f" width {width}" if width is not None else "")

    @property
    def transfer_per_sample(self) -> float | None:
        """``h``: the fed loop's extra seconds per sample (moving and handling the input):
        the fed line's cost per sample less the steady line's where both were timed, else
        the put's cost per sample."""
        if self.fed is not None and self.step is not None:
            return max(0.0, self.fed.per_sample - self.step.per_sample)
        return self.put.per_sample if self.put is not None else None

    def line(self, loop: str) -> Line | None:
        """The line of ``loop`` (``step``, ``fed`` or ``prefetch``)."""
        return {"step": self.step, "fed": self.fed, "prefetch": self.prefetch}[loop]

    def as_dict(self) -> dict[str, object]:
        device, precision, width = self.arm
        return {
            "device": device,
            "precision": precision,
            "width": width,
            "measured": list(self.measured),
            "fails_from": self.fails_from,
            "step": self.step.as_dict() if self.step else None,
            "fed": self.fed.as_dict() if self.fed else None,
            "put": self.put.as_dict() if self.put else None,
            "prefetch": self.prefetch.as_dict() if self.prefetch else None,
            "transfer_per_sample_s": self.transfer_per_sample,
            "one_off_s": self.one_off_s,
            "memory_fixed_bytes": self.memory.fixed if self.memory else None,
            "memory_per_sample_bytes": self.memory.per_sample if self.memory else None,
            "memory_fit": self.memory.fit if self.memory else None,
            "compute_dtypes": list(self.compute_dtypes),
            "deviation_vs_float32": self.deviation,
        }


def one_off(m: Measurement) -> float | None:
    """Lowering + compile + first call: what a fresh process pays once for this
    configuration (its device's start-up, once a process whatever it runs, apart: see
    :func:`device_starts`)."""
    parts = (m.lower_s, m.compile_s, m.first_call_s)
    return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]


def device_starts(figures: Mapping[Config, Measurement]) -> dict[str, float]:
    """Each device's start-up as a fresh process pays it (``Measurement.device_init_s``:
    backend and context; on an accelerator its compiler's, libraries' and autotuner's
    start, compiled anew in every process, never read from the tune's compilation cache),
    the median of those measured: set only on the first configuration a process measures
    on a device, it is the device's, paid once a process, not a configuration's. A device
    none was measured for is left out."""
    by_device: dict[str, list[float]] = {}
    for m in figures.values():
        if m.device_init_s is not None:
            by_device.setdefault(m.device, []).append(m.device_init_s)
    return {d: statistics.median(xs) for d, xs in by_device.items()}


def arm_models(figures: Mapping[Config, Measurement]) -> dict[Arm, ArmModel]:
    """Every arm's model from ``figures`` (one measurement per configuration)."""
    by_arm: dict[Arm, list[Measurement]] = {}
    for c, m in figures.items():
        by_arm.setdefault((c.device, c.precision, c.width), []).append(m)
    return {arm: _model(arm, ms) for arm, ms in by_arm.items()}


def _model(arm: Arm, ms: list[Measurement]) -> ArmModel:
    ran = sorted((m for m in ms if m.status == "ok"), key=lambda m: m.batch_size)
    capped = [m.batch_size for m in ms if m.status in ("oom", "too_big", "timeout")]
    # A glance at the steady loop (one chunk right after the first call, what the search
    # takes of the loop it does not rank on) is too rough for a line.
    timed = [m for m in ran if m.step.step_s and (m.step.samples or 0) >= TIMED_CHUNKS]

    def points(loop: Loop, least: int) -> list[Point]:
        return [
            Point(m.batch_size, t.step_s, t.spread or 0.0, t.timed or 1)
            for m in ran
            if (t := m.loop(loop)).step_s is not None and t.timed >= least
        ]

    step = points("step", TIMED_CHUNKS)
    puts = [Point(m.batch_size, m.transfer_s) for m in ran if m.transfer_s]
    fed = points("fed", 0)
    prefetched = points("prefetch", TIMED_CHUNKS)
    one_offs = [x for m in ran if (x := one_off(m)) is not None]
    memory = [(m.batch_size, float(m.peak_bytes)) for m in ran if m.peak_bytes]
    deviations = [m.deviation_vs_float32 for m in ran if m.deviation_vs_float32 is not None]
    dtypes = tuple(dict.fromkeys(d for m in ran for d in m.compute_dtypes))
    return ArmModel(
        arm=arm,
        step=fit_line(step),
        fed=fit_line(fed),
        put=fit_line(puts),
        prefetch=fit_line(prefetched),
        one_off_s=statistics.median(one_offs) if one_offs else None,
        memory=fit_memory(memory),
        measured=tuple(m.batch_size for m in ran),
        fails_from=min(capped) if capped else None,
        compute_dtypes=dtypes,
        deviation=max(deviations) if deviations else None,
        least_step_s=min((m.step.step_s for m in timed if m.step.step_s), default=None),
    )
