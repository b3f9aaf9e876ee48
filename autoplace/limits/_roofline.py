"""Each arm's step against the machine's limits: the roofline, and the regime it names.

The roofline bounds what a program can reach: ``min(peak, intensity × bandwidth)`` FLOP/s,
its *intensity* being the FLOPs it does per byte it moves (XLA's cost analysis gives both
for one step). A step far under its roof is held back by something else: on small models,
the fixed cost of each step. The regime is named from the measurements, in this order:

* **overhead-bound**: the step takes under :data:`FLOOR_MULTIPLE` times the dispatch
  floor (the time of a trivial jitted call), or its fixed cost (the cost model's ``a``,
  the part no batch size changes) is at least :data:`FIXED_SHARE` of it;
* else, where it uses under :data:`ROOF_SHARE` of both the peak and the bandwidth,
  **overhead-bound** too: neither roof holds it back;
* else **compute-bound** or **memory-bound**: whichever of the peak and the bandwidth the
  step uses the larger share of;
* else nothing: without XLA's FLOPs and bytes the roofline cannot be drawn, and it says so.

XLA counts the bytes every operation reads and writes, not what reaches memory: a
step whose data stay in the caches can move more bytes a second than the copy that
measured the bandwidth, and its share of the bandwidth reads over 100%.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from autoplace.config import Config
from autoplace.limits._values import DeviceLimits
from autoplace.measurement import Measurement
from autoplace.units import rate, seconds

Regime = Literal["overhead-bound", "memory-bound", "compute-bound"]

#: A step within this many dispatch floors is overhead-bound.
FLOOR_MULTIPLE = 4.0
#: A step whose fixed cost is at least this share of it is overhead-bound.
FIXED_SHARE = 0.5
#: A step using less than this share of both the peak and the bandwidth is held back by
#: neither roof: overhead-bound.
ROOF_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class Roofline:
    """One configuration's step against its device's limits.

    Attributes:
        config: the configuration (an arm at its best batch).
        step_s: its steady step (the batch on the device).
        flops, bytes_accessed: one step's, by XLA's cost analysis (``None``: not given).
        peak_flops: the device's measured peak in this precision.
        bandwidth: the device's measured memory bandwidth.
        dispatch_floor: the device's measured floor per call.
        fixed_s: the fixed cost of a step, by the arm's cost model (``None``: no line).
        fixed_of_s: the step that fixed cost is part of: the steady step where the steady
            loop was timed, else the fed step (its line's fixed cost then includes the
            put's); ``None``: ``step_s``.
        peak_range: the lowest and highest peak the probe's windows measured (the roof is
            their median): a point above the roof within it is within the probe's spread.
    """

    config: Config
    step_s: float
    flops: float | None
    bytes_accessed: float | None
    peak_flops: float
    bandwidth: float
    dispatch_floor: float
    fixed_s: float | None = None
    fixed_of_s: float | None = None
    peak_range: tuple[float, float] | None = None

    @property
    def flops_per_s(self) -> float | None:
        return None if self.flops is None else self.flops / self.step_s

    @property
    def bytes_per_s(self) -> float | None:
        return None if self.bytes_accessed is None else self.bytes_accessed / self.step_s

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte accessed."""
        if self.flops is None or not self.bytes_accessed:
            return None
        return self.flops / self.bytes_accessed

    @property
    def roof(self) -> float | None:
        """The most FLOP/s a step of this intensity can reach here."""
        i = self.intensity
        return None if i is None else min(self.peak_flops, i * self.bandwidth)

    @property
    def of_peak(self) -> float | None:
        f = self.flops_per_s
        return None if f is None else f / self.peak_flops

    @property
    def of_roof(self) -> float | None:
        f, roof = self.flops_per_s, self.roof
        return None if f is None or not roof else f / roof

    @property
    def of_bandwidth(self) -> float | None:
        b = self.bytes_per_s
        return None if b is None else b / self.bandwidth

    @property
    def fixed_share(self) -> float | None:
        whole = self.fixed_of_s or self.step_s
        return None if self.fixed_s is None else min(1.0, self.fixed_s / whole)

    @property
    def regime(self) -> Regime | None:
        share = self.fixed_share
        if self.step_s <= FLOOR_MULTIPLE * self.dispatch_floor or (
            share is not None and share >= FIXED_SHARE
        ):
            return "overhead-bound"
        compute, memory = self.of_peak, self.of_bandwidth
        if compute is None or memory is None:
            return None
        if max(compute, memory) < ROOF_SHARE:
            return "overhead-bound"
        return "compute-bound" if compute >= memory else "memory-bound"

    def why(self) -> str:
        """The regime's figures, in words."""
        regime = self.regime
        if regime == "overhead-bound":
            if self.fixed_s is not None and (self.fixed_share or 0) >= FIXED_SHARE:
                whole = self.fixed_of_s or self.step_s
                return (f"overhead-bound (the fixed {seconds(self.fixed_s)} of a "
                        f"{seconds(whole)} step)")  # fmt: skip
            if self.step_s <= FLOOR_MULTIPLE * self.dispatch_floor:
                return (f"overhead-bound (the step takes {self.step_s / self.dispatch_floor:.1f}"
                        f" times the {seconds(self.dispatch_floor)} dispatch floor)")  # fmt: skip
            return (f"overhead-bound (it uses {_pct(self.of_peak)} of the peak and "
                    f"{_pct(self.of_bandwidth)} of the memory bandwidth: neither roof holds "
                    "it back)")  # fmt: skip
        if regime is None:
            return "XLA gave no FLOPs or bytes for this step: its place on the roofline is unknown"
        return (f"{regime} ({_pct(self.of_peak)} of the peak, {_pct(self.of_bandwidth)} of the "
                f"memory bandwidth)")  # fmt: skip

    def sentence(self, device_kind: str = "device") -> str:
        c = self.config
        if self.flops_per_s is None:
            return f"At batch {c.batch_size} ({c.precision}): {self.why()}."
        kind = device_kind.upper() if device_kind == "cpu" else device_kind
        achieved, peak = rate(self.flops_per_s, "FLOP/s"), rate(self.peak_flops, "FLOP/s")
        return (
            f"At batch {c.batch_size} the step reaches {_pct(self.of_peak)} of this {kind}'s "
            f"{c.precision} peak ({achieved} of {peak}): {self.why()}."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.config.device,
            "batch_size": self.config.batch_size,
            "precision": self.config.precision,
            "width": self.config.width,
            "step_s": self.step_s,
            "flops": self.flops,
            "bytes_accessed": self.bytes_accessed,
            "flops_per_s": self.flops_per_s,
            "bytes_per_s": self.bytes_per_s,
            "intensity": self.intensity,
            "peak_flops": self.peak_flops,
            "bandwidth": self.bandwidth,
            "dispatch_floor_s": self.dispatch_floor,
            "fixed_s": self.fixed_s,
            "of_peak": self.of_peak,
            "of_roof": self.of_roof,
            "regime": self.regime,
        }


def roofline(
    m: Measurement,
    limits: DeviceLimits,
    fixed_s: float | None = None,
    fixed_of_s: float | None = None,
) -> Roofline | None:
    """``m``'s step against ``limits`` (its device's); ``None`` without a steady step, or
    for a precision the probe did not measure. ``fixed_s`` is the fixed cost of the step
    ``fixed_of_s`` (default: the steady step)."""
    peak = limits.peak_flops.get(m.precision)
    step = m.step.step_s
    if step is None or step <= 0 or peak is None:
        return None
    return Roofline(
        config=m.config,
        step_s=step,
        flops=m.flops,
        bytes_accessed=m.bytes_accessed,
        peak_flops=peak.median,
        peak_range=(peak.low, peak.high),
        bandwidth=limits.memory_bandwidth.median,
        dispatch_floor=limits.dispatch_floor.median,
        fixed_s=fixed_s,
        fixed_of_s=fixed_of_s,
    )


def _pct(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{100 * x:.1f}%" if x < 0.1 else f"{100 * x:.0f}%"
