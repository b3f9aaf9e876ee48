"""Where an arm's cost line says a batch cannot reach the leader: the search's pruning.

A step's time is close to a line in the batch size, ``t(b) = a + c·b`` (a fixed cost per
step, then a cost per sample), wherever the device is busy enough and nothing else
(caches, memory) bends it. Its throughput ``b/(a + c·b)`` then only rises with the batch.
Where an arm's measured batches hold such a line, a batch between them is predicted by
it, and is worth measuring only if the prediction, with its error (16% a batch step from
the nearest batch measured, compounding: the explain benchmark's worst), could reach the
best score so far. Where they do not hold one (a peak that fits the caches, a
dip, a cliff), nothing is predicted and the search covers the arm as it would without a
model. A line holds where each measured batch is predicted by the line through the others
within that error: one batch off it (a peak, a dip) fails it, however many others agree.
That test is what keeps the curves the search was proven on: every one of them bends away
from a line somewhere among the batches the search measures first (its smallest, its
screen, and above).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

#: How far the line's prediction one batch step beyond the batches it holds over may be
#: off (the explain benchmark's worst, 16%, in the README).
PREDICTION_ERROR = 0.16
#: Batches a line must hold over for its error one step beyond to be the measured one;
#: a line through fewer (two) counts one step further.
MIN_POINTS = 3


@dataclasses.dataclass(frozen=True)
class CostLine:
    """``t(b) = fixed + per_sample·b``, seconds (or any unit) per step, fitted over the
    batches from ``low`` to ``high``."""

    fixed: float
    per_sample: float
    low: int
    high: int

    def throughput(self, batch: int) -> float:
        return batch / (self.fixed + self.per_sample * batch)

    def spans(self, batch: int) -> bool:
        """Whether ``batch`` lies between the batches the line holds over (interpolation)."""
        return self.low < batch < self.high


def cost_line(throughputs: Mapping[int, float]) -> CostLine | None:
    """The line through ``throughputs`` (samples per unit time, by batch size), if it holds:
    at least :data:`MIN_POINTS` batches, and each of them predicted within
    :data:`PREDICTION_ERROR` by the line through the others (so one batch off the line, a
    peak or a dip, is not averaged away by the rest); ``None`` otherwise, or where no rising
    line holds (a fixed cost or a cost per sample below zero)."""
    points = [(b, b / s) for b, s in sorted(throughputs.items()) if s > 0]
    if len(points) < MIN_POINTS:
        return None
    for k, (b, t) in enumerate(points):
        others = _fit(points[:k] + points[k + 1 :])
        if others is None or abs((others[0] + others[1] * b) / t - 1) > PREDICTION_ERROR:
            return None
    fitted = _fit(points)
    if fitted is None:
        return None
    return CostLine(*fitted, points[0][0], points[-1][0])


def _fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """``(fixed, per_sample)`` by least squares on each point's relative error,
    ``(a + c·b)/t - 1``; ``None`` where either is below zero (no rising line)."""
    s11 = sum(1 / t**2 for _, t in points)
    s12 = sum(b / t**2 for b, t in points)
    s22 = sum(b * b / t**2 for b, t in points)
    r1 = sum(1 / t for _, t in points)
    r2 = sum(b / t for b, t in points)
    det = s11 * s22 - s12 * s12
    if det <= 0:
        return None
    fixed = (r1 * s22 - r2 * s12) / det
    per_sample = (s11 * r2 - s12 * r1) / det
    if fixed < 0 or per_sample <= 0:
        return None
    return fixed, per_sample


def could_reach(line: CostLine | None, batch: int, steps: int, best: float) -> bool:
    """Whether ``batch``, ``steps`` batch steps from the nearest batch measured, could score
    ``best`` (a throughput), by the arm's :func:`cost_line`: true unless the line holds
    (not ``None``) over batches on both sides of it and predicts it short of ``best`` by more
    than its error, :data:`PREDICTION_ERROR` a batch step, compounding."""
    if line is None or not line.spans(batch):
        return True
    return line.throughput(batch) * (1 + PREDICTION_ERROR) ** max(steps, 1) >= best
