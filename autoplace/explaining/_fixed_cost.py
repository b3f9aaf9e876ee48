"""What the fixed cost of a step is: the put, dispatch, or neither (:func:`fixed_cost`)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from autoplace.costs import ArmModel
from autoplace.limits import DeviceLimits

#: The fixed cost of a step is named dispatch only within this many times the device's
#: measured dispatch floor. The floor is one trivial jitted call back to back; a real step
#: launches several kernels and hands over several arguments, so its own fixed cost sits
#: a little above it: on the H200 of ``../shared/gpu-reference/h200-2026-11-26/``, the
#: README MLP's step with its batch on the device took 45-86 µs against the 41.6 µs floor
#: (1.1-2.1x), while the fed loop's fixed 451 µs (10.8x) was mostly the put.
DISPATCH_MULTIPLE = 3.0
#: The put is named the fixed cost's cause where it accounts for at least this share.
PUT_SHARE = 0.5


Cause = Literal["put", "dispatch", "step", "unattributed"]


@dataclasses.dataclass(frozen=True)
class FixedCost:
    """What the fixed cost ``a`` of an arm's line is, from the figures.

    Attributes:
        fixed_s: ``a``.
        loop: the line's loop: ``fed`` (a host batch put each step) or ``step`` (the batch
            on the device: no put in it).
        cause: ``put`` (the put accounts for :data:`PUT_SHARE` of it at least);
            ``dispatch`` (within :data:`DISPATCH_MULTIPLE` of the device's measured
            dispatch floor); ``step`` (neither: launches, the loop's own work; only
            where the step with the batch on the device was timed);
            ``unattributed`` (what would tell was not measured).
        put_s: how much of ``a`` the put accounts for (``None``: not known). Its
            ``put_basis`` is ``loops`` (``a`` less the step's own fixed cost with the batch
            on the device, a lower bound where that is bounded by the fastest such step)
            or ``put alone`` (the fixed cost of the put timed alone, ``transfer_s``).
        step_fixed_s: the step's own fixed cost with the batch on the device (its line's),
            or a bound on it (``step_bound``: its fastest step, fixed cost and samples).
        floor_s: the device's measured dispatch floor (``None``: not measured).
    """

    fixed_s: float
    loop: str
    cause: Cause
    put_s: float | None = None
    put_basis: Literal["loops", "put alone"] | None = None
    step_fixed_s: float | None = None
    step_bound: bool = False
    floor_s: float | None = None

    @property
    def floors(self) -> float | None:
        """``a`` in dispatch floors."""
        return None if self.floor_s is None else self.fixed_s / self.floor_s

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def fixed_cost(model: ArmModel, loop: str, device: DeviceLimits | None) -> FixedCost | None:
    """What the fixed cost of ``model``'s ``loop`` line is (see :class:`FixedCost`), from
    the arm's own figures and its ``device``'s measured limits; ``None`` without a line
    or a fixed cost.

    The put's part: on the fed line, ``a`` less the step's own fixed cost, where the step
    with the batch on the device was timed (its line's fixed cost, else its fastest step:
    a whole step bounds its own fixed cost from above); else the fixed cost of the put
    timed alone at two batch sizes or more. The put is named where its part is at least
    :data:`PUT_SHARE` of ``a``; else dispatch where ``a`` is within
    :data:`DISPATCH_MULTIPLE` of the floor; else ``step`` only where the step with the
    batch on the device was timed: a put timed alone tells its own cost, not what it adds
    to a step it overlaps. On the H200 (``benchmarks/results/gpu_check-a18716df89-
    20261126-1911.json``) the README MLP's put alone cost a fixed 200 µs of a fed line's
    570 µs, yet a plain loop took 1.18 ms a step put first and 89 µs with the batch on
    the device: the put was most of it, not launches. Else what is known is said."""
    line = model.line(loop)
    if line is None or line.fixed <= 0:
        return None
    a = line.fixed
    floor = device.dispatch_floor.median if device is not None else None
    put = basis = bound = None
    step_bound = False
    if loop in ("fed", "prefetch"):  # a put in each step's time, overlapped or not
        if model.step is not None:
            bound = model.step.fixed
        elif model.least_step_s is not None:
            bound, step_bound = model.least_step_s, True
        if bound is not None:
            put, basis = max(0.0, a - bound), "loops"
        elif model.put is not None:
            put, basis = min(a, model.put.fixed), "put alone"
    if put is not None and put >= PUT_SHARE * a:
        cause: Cause = "put"
    elif floor is not None and a <= DISPATCH_MULTIPLE * floor:
        cause = "dispatch"
    elif basis == "loops" or (loop == "step" and floor is not None):
        cause = "step"  # known not to be the put (or no put in the loop), nor dispatch
    else:
        cause = "unattributed"
    return FixedCost(a, loop, cause, put, basis, bound, step_bound, floor)  # type: ignore[arg-type]
