"""How throughput grows with the devices used together, and what holds it back
(:func:`scaling`): the answer to "how many of my devices should this use?"."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

from autoplace import units
from autoplace.config import Config
from autoplace.costs import ArmModel
from autoplace.devices import device_names
from autoplace.limits import MachineLimits
from autoplace.measurement import Loop, Measurement

#: What holds the scaling back. ``shared``: the devices are one processor split (several
#: CPU devices are emulated, ``JAX_NUM_CPU_DEVICES``), so more of them add no compute;
#: ``put``: one host puts the whole batch, every device's share, and that put is at least
#: half the step the pick ranks on; ``reduction``: all-reducing the gradients at the
#: measured device-to-device bandwidth takes at least half of what the split adds to a
#: step; ``fixed``: each device still pays the step's fixed cost, at least half of its
#: step at its share of the batch; ``unattributed``: none of these shows in the figures.
Cause = Literal["shared", "put", "reduction", "fixed", "unattributed"]
#: A cause is named where it accounts for at least this share of what it explains.
NAMED_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Count:
    """One device count's best configuration on the pick's kind, precision and width.

    ``speedup``: its samples per second over one device's best; ``efficiency``: that over
    the count. ``added_s``: what the split adds to a step over one device's step at the
    same per-device batch (``None``: that one was not measured). ``reduced_bytes``: what
    each device all-reduces a step; ``reduce_s``: that at the measured device-to-device
    bandwidth (a ring's ``2(n-1)/n`` of the bytes; ``None``: not measured)."""

    count: int
    label: str
    rate: float
    speedup: float
    added_s: float | None = None
    reduced_bytes: int | None = None
    reduce_s: float | None = None

    @property
    def efficiency(self) -> float:
        return self.speedup / self.count

    def as_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "efficiency": self.efficiency}


@dataclasses.dataclass(frozen=True)
class Scaling:
    """The pick's kind, precision and width at each device count measured, and the cause
    that holds it back (see :data:`Cause`) with the figures that name it."""

    platform: str
    counts: tuple[Count, ...]
    cause: Cause
    fixed_s: float | None = None
    step_s: float | None = None
    put_s: float | None = None
    #: The pick's device count: where another count reads more here (these are each
    #: count's figures as the table shows them), the pick rests on its windows.
    pick_count: int = 1

    def sentence(self) -> str:
        steps = "; ".join(
            f"{c.count} devices: {c.speedup:.2f}x one ({c.efficiency:.0%})"
            for c in self.counts
            if c.count > 1
        )
        best = max(self.counts, key=lambda c: c.rate)
        use = "one device" if best.count == 1 else f"{best.count} devices"
        gave = f"{use} gave the most"
        if best.count != self.pick_count:
            picked = "one device" if self.pick_count == 1 else f"{self.pick_count} devices"
            gave = (
                f"{use} read the most in these figures, and the pick, on {picked}, rests on "
                "its windows in fresh processes (the verdict above)"
            )
        return f"Scaling on {self.platform}: {steps}; {gave}. {self._why()}"

    def _why(self) -> str:
        top = self.counts[-1]
        if self.cause == "shared":
            return (
                f"These {self.platform} devices are one processor split "
                "(JAX_NUM_CPU_DEVICES): they share its cores and memory, so a split gains "
                "only where one device left cores idle, and past the cores it adds only the "
                "split and the reduction."
            )
        if self.cause == "put":
            return (
                f"Held back by the put: one process puts the whole batch, every device's "
                f"share, {units.seconds(self.put_s or 0)} of the {units.seconds(self.step_s or 0)}"
                f" step on {top.count} devices; prefetching (autoplace.prefetch) overlaps it "
                "with the step."
            )
        if self.cause == "reduction":
            return (
                f"Held back by the reduction: each device all-reduces "
                f"{units.size(top.reduced_bytes or 0)} of gradients a step, "
                f"{units.seconds(top.reduce_s or 0)} at the measured device-to-device "
                f"bandwidth, of the {units.seconds(top.added_s or 0)} that {top.count} devices "
                "add to a step over one at the same batch a device."
            )
        if self.cause == "fixed":
            return (
                f"Held back by the fixed cost of a step: each device still pays "
                f"{units.seconds(self.fixed_s or 0)} a step whatever its share of the batch "
                f"(of {units.seconds(self.step_s or 0)}); splitting the batch shares out only "
                "the cost per sample."
            )
        parts = []
        if top.added_s is not None:
            parts.append(
                f"{top.count} devices add {units.seconds(top.added_s)} to a step over one at "
                "the same batch a device"
            )
        if top.reduced_bytes:
            bandwidth = (
                f", {units.seconds(top.reduce_s)} at the measured bandwidth"
                if top.reduce_s is not None
                else " (device-to-device bandwidth not measured: `autoplace limits`)"
            )
            parts.append(f"the gradients' reduction moves {units.size(top.reduced_bytes)}"
                         f"{bandwidth}")  # fmt: skip
        said = "; ".join(parts) or "what the split adds was not measured"
        return f"No single cause holds it back in these figures: {said}."

    def as_dict(self) -> dict[str, object]:
        return {
            "platform": self.platform,
            "cause": self.cause,
            "fixed_s": self.fixed_s,
            "step_s": self.step_s,
            "put_s": self.put_s,
            "pick_count": self.pick_count,
            "counts": [c.as_dict() for c in self.counts],
        }


def scaling(
    ok: Mapping[Config, Measurement],
    winner: Measurement,
    models: Mapping[tuple, ArmModel],
    loop: str,
    limits: MachineLimits | None,
    rates: Mapping[Config, float] | None = None,
) -> Scaling | None:
    """How the winner's kind, precision and width scale over the device counts measured
    (``None``: one count only). ``rates``: each configuration's samples per second as the
    verdict's table shows them (else each one's ``loop``'s own)."""
    platform = winner.device.split(":")[0]
    timed: Loop = "step" if loop == "step" else "prefetch" if loop == "prefetch" else "fed"

    def rate(c: Config, m: Measurement) -> float | None:
        return (rates or {}).get(c) or m.loop(timed).rate(c.batch_size)

    same = {
        c: (m, r)
        for c, m in ok.items()
        if c.device.split(":")[0] == platform
        and (c.precision, c.width) == (winner.precision, winner.width)
        and (r := rate(c, m))
    }
    best: dict[int, tuple[Config, Measurement, float]] = {}
    for c, (m, r) in same.items():
        if c.device_count not in best or r > best[c.device_count][2]:
            best[c.device_count] = (c, m, r)
    if len(best) < 2 or 1 not in best:
        return None
    one = best[1][2]
    by_batch = {c.batch_size: m for c, (m, _) in same.items() if c.device_count == 1}
    bandwidth = _bandwidth(limits, best[1][0].device)
    counts = []
    for n in sorted(best):
        c, m, r = best[n]
        alone = by_batch.get(c.per_device_batch)
        step, single = m.loop(timed).step_s, alone.loop(timed).step_s if alone else None
        added = step - single if n > 1 and step and single else None
        reduced = m.reduced_bytes if n > 1 else None
        reduce_s = reduced * 2 * (n - 1) / n / bandwidth if reduced and bandwidth else None
        counts.append(Count(n, c.label(), r, r / one, added, reduced, reduce_s))
    top = counts[-1]
    model = models.get((best[1][0].device, winner.precision, winner.width))
    line = model.line(loop) if model is not None else None
    _, top_m, _ = best[max(best)]
    step_s = top_m.loop(timed).step_s
    fixed = line.fixed if line is not None else None
    put = top_m.transfer_s if loop == "fed" else None
    cause: Cause = "unattributed"
    if platform == "cpu":
        cause = "shared"
    elif put and step_s and put >= NAMED_SHARE * step_s:
        cause = "put"
    elif top.reduce_s is not None and top.added_s and top.reduce_s >= NAMED_SHARE * top.added_s:
        cause = "reduction"
    elif fixed is not None and step_s and fixed >= NAMED_SHARE * step_s:
        cause = "fixed"
    return Scaling(platform, tuple(counts), cause, fixed, step_s, put, winner.config.device_count)


def _bandwidth(limits: MachineLimits | None, device: str) -> float | None:
    """The measured all-reduce (bus) bandwidth between ``device``'s kind, bytes/s."""
    if limits is None:
        return None
    found = limits.of(device_names(device)[0])
    figure = found.all_reduce if found is not None else None
    return figure.median if figure is not None else None
