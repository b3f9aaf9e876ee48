"""What the fixed cost of a step is: the put, dispatch, or neither (:func:`fixed_cost`)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from autoplace.costs import ArmModel
from autoplace.limits import DeviceLimits

#: The fixed cost is named dispatch only within this many times the measured dispatch floor
#: (a trivial call; a real step launches more: the H200's README MLP took 1.1-2.1x it).
DISPATCH_MULTIPLE = 3.0
#: The put is named the fixed cost's cause where it accounts for at least this share.
PUT_SHARE = 0.5


Cause = Literal["put", "dispatch", "step", "unattributed"]


@dataclasses.dataclass(frozen=True)
class FixedCost:
    """What the fixed cost ``a`` (``fixed_s``) of an arm's ``loop`` line is.

    ``cause``: ``put`` (the put is :data:`PUT_SHARE` of it at least), ``dispatch`` (within
    :data:`DISPATCH_MULTIPLE` of the measured floor ``floor_s``), ``step`` (neither) or
    ``unattributed`` (not measured). ``put_s``: the put's part, on ``put_basis`` ``loops``
    (``a`` less the step's own fixed cost ``step_fixed_s``, or a bound on it:
    ``step_bound``) or ``put alone`` (the put timed alone).
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
    """What the fixed cost of ``model``'s ``loop`` line is (:class:`FixedCost`); ``None``
    without one.

    The put's part is ``a`` less the step's own fixed cost (its line's, else its fastest
    step, which bounds it), else the put timed alone. ``step`` is named only where the
    step with the batch on the device was timed: a put alone tells its own cost, not
    what it adds to a step it overlaps (on the H200, 200 µs alone, yet 1.18 ms put first
    against 89 µs resident)."""
    line = model.line(loop)
    if line is None or line.fixed <= 0:
        return None
    a = line.fixed
    floor = device.dispatch_floor.median if device is not None else None
    put: float | None = None
    bound: float | None = None
    basis: Literal["loops", "put alone"] | None = None
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
    return FixedCost(a, loop, cause, put, basis, bound, step_bound, floor)
