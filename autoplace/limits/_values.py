"""The machine's limits as typed values: what one probe measured, with its spread."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

#: The layout of a limits entry; another is measured again.
LIMITS_SCHEMA = 1


@dataclasses.dataclass(frozen=True)
class Figure:
    """One limit over several timed windows: their median, smallest and largest."""

    median: float
    low: float
    high: float
    windows: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Figure:
        return cls(statistics.median(values), min(values), max(values), len(values))

    @property
    def spread(self) -> float:
        """(high - low) / median: 0.1 is a spread of 10% between windows."""
        return (self.high - self.low) / self.median if self.median else 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Figure:
        return cls(float(data["median"]), float(data["low"]), float(data["high"]),
                   int(data["windows"]))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class DeviceLimits:
    """What one device can do at best, measured.

    Attributes:
        device: its name (``cpu:0``, ``gpu:0``).
        kind: what JAX calls it (its ``device_kind``).
        peak_flops: FLOP/s of a large matrix product, per precision.
        matmul_size: ``n`` of the ``n x n`` product timed.
        memory_bandwidth: bytes/s of a large elementwise copy (read and write).
        host_to_device: bytes/s of putting a large host array on the device (on a CPU
            a copy in host memory, or none at all).
        dispatch_floor: seconds per call of a trivial jitted step, called back to back:
            the least a step can cost, whatever it computes.
        all_reduce: where the device's kind has several devices, the bus bandwidth
            (bytes/s) of all-reducing a large array over ``all_reduce_devices`` of them, as
            NCCL's tests count it (the bytes times ``2(n-1)/n`` over the time): what a
            data-parallel step's reduction of its gradients runs at. ``None`` elsewhere.
    """

    device: str
    kind: str
    peak_flops: Mapping[str, Figure]
    matmul_size: int
    memory_bandwidth: Figure
    host_to_device: Figure
    dispatch_floor: Figure
    all_reduce: Figure | None = None
    all_reduce_devices: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "kind": self.kind,
            "peak_flops": {p: f.as_dict() for p, f in self.peak_flops.items()},
            "matmul_size": self.matmul_size,
            "memory_bandwidth": self.memory_bandwidth.as_dict(),
            "host_to_device": self.host_to_device.as_dict(),
            "dispatch_floor": self.dispatch_floor.as_dict(),
            "all_reduce": self.all_reduce.as_dict() if self.all_reduce else None,
            "all_reduce_devices": self.all_reduce_devices,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeviceLimits:
        return cls(
            device=str(data["device"]),
            kind=str(data["kind"]),
            peak_flops={p: Figure.from_dict(f) for p, f in data["peak_flops"].items()},
            matmul_size=int(data["matmul_size"]),
            memory_bandwidth=Figure.from_dict(data["memory_bandwidth"]),
            host_to_device=Figure.from_dict(data["host_to_device"]),
            dispatch_floor=Figure.from_dict(data["dispatch_floor"]),
            all_reduce=Figure.from_dict(data["all_reduce"]) if data.get("all_reduce") else None,
            all_reduce_devices=data.get("all_reduce_devices"),
        )


@dataclasses.dataclass(frozen=True)
class MachineLimits:
    """Every device's limits, with what they hold for and when they were measured.

    ``key`` is the hardware and software they were measured under (the key
    ``recommend()`` looks answers up by); ``load`` the machine's load average then.
    """

    devices: tuple[DeviceLimits, ...]
    key: Mapping[str, Any]
    measured: str
    load: float | None = None
    cached: bool = False

    def lines(self) -> list[str]:
        """The limits in words, one device a line block (what ``autoplace limits`` prints)."""
        from autoplace.units import rate, seconds

        said = "cached" if self.cached else "measured now"
        load = "" if self.load is None else f", load average {self.load:.2f}"
        out = [f"limits of this machine ({said}; measured {self.measured}{load}):"]
        for d in self.devices:
            peaks = ", ".join(
                f"{p} {rate(f.median, 'FLOP/s')} (±{f.spread / 2:.0%})"
                for p, f in d.peak_flops.items()
            )
            out += [
                f"  {d.device} ({d.kind}): peak {peaks} [{d.matmul_size}x{d.matmul_size} matmul]",
                f"    memory bandwidth {rate(d.memory_bandwidth.median, 'B/s')} "
                f"(±{d.memory_bandwidth.spread / 2:.0%}); host to device "
                f"{rate(d.host_to_device.median, 'B/s')} (±{d.host_to_device.spread / 2:.0%})",
                f"    dispatch floor {seconds(d.dispatch_floor.median)} a call "
                f"({seconds(d.dispatch_floor.low)}-{seconds(d.dispatch_floor.high)} over "
                f"{d.dispatch_floor.windows} windows)",
            ]
            if d.all_reduce is not None:
                out.append(
                    f"    all-reduce over {d.all_reduce_devices} devices "
                    f"{rate(d.all_reduce.median, 'B/s')} (±{d.all_reduce.spread / 2:.0%}, bus "
                    "bandwidth)"
                )
        return out

    def of(self, device: str) -> DeviceLimits | None:
        return next((d for d in self.devices if d.device == device), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "limits_schema": LIMITS_SCHEMA,
            "measured": self.measured,
            "load": self.load,
            "key": dict(self.key),
            "devices": [d.as_dict() for d in self.devices],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], cached: bool = False) -> MachineLimits:
        """The limits ``as_dict`` wrote; ``ValueError`` for anything else."""
        try:
            if data.get("limits_schema") != LIMITS_SCHEMA:
                raise ValueError(f"limits of another layout ({data.get('limits_schema')!r})")
            return cls(
                devices=tuple(DeviceLimits.from_dict(d) for d in data["devices"]),
                key=dict(data["key"]),
                measured=str(data["measured"]),
                load=None if data.get("load") is None else float(data["load"]),
                cached=cached,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a limits entry: {exc!r}") from None
