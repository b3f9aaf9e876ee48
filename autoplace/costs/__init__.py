"""What a step costs: each arm's cost model, fitted from a study's own measurements.

One pure package that the search (where a batch could still reach the leader), the
verdict and the explanation (crossovers, break-evens, the fixed cost and its cause) all
read, so that each sees the same lines:

* ``_fit``: a line ``t(b) = a + c·b`` through an arm's step times, robust to the
  machine's noise, with where the measurements leave it; memory as ``m0 + m1·b``;
* ``_arms``: each arm's lines (steady and fed loop), one-off costs and memory;
* ``_reach``: the search's cheaper line through throughputs, and whether a batch it did
  not measure could reach the best, with the line's measured prediction error.

Nothing here measures, imports JAX or Optuna, or reads a study: values in, values out.
"""

from autoplace.costs._arms import (
    TIMED_CHUNKS,
    Arm,
    ArmModel,
    arm_models,
    device_starts,
    one_off,
)
from autoplace.costs._fit import DEPARTURE, Line, MemoryLine, Point, fit_line, fit_memory
from autoplace.costs._reach import (
    MIN_POINTS,
    PREDICTION_ERROR,
    CostLine,
    cost_line,
    could_reach,
)

__all__ = [
    "DEPARTURE",
    "MIN_POINTS",
    "PREDICTION_ERROR",
    "TIMED_CHUNKS",
    "Arm",
    "ArmModel",
    "CostLine",
    "Line",
    "MemoryLine",
    "Point",
    "arm_models",
    "cost_line",
    "could_reach",
    "device_starts",
    "fit_line",
    "fit_memory",
    "one_off",
]
