"""The cost model of one arm, fitted from the study's own measurements.

A step of an arm (device, precision, width) costs ``t(b) = a + c·b`` seconds at batch
``b``: ``a`` is the fixed per-step cost (dispatch, kernel launches, the loop's own
overhead) that small batches cannot amortise, ``c`` the cost of each sample. The line
is fitted to the steady loop (batch on the device) and to the fed loop (a fresh host
batch each step); the fed loop's extra per-sample cost ``h`` is moving and handling
the input. Compile and first call are one-off costs; memory is ``m0 + m1·b`` bytes.

The fit minimises *relative* squared errors (a 1 ms step and a 1 s step count alike),
each point weighted by the uncertainty of its median (its chunks' spread over the root
of their number), so a noisy point moves the line less. Real
curves leave the line: caches outgrown, memory pressure. The fit keeps the most batch
sizes, smallest first, that one line holds with every point within ``DEPARTURE`` of
it (or three times the uncertainty of the point's median); the first batch left out is where the
measurements depart (``departs_at``). The model never claims what it could not fit.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

import numpy as np

#: A point slower than the line through the points below it by more than this (or three
#: times its own spread, if larger) departs from the line.
DEPARTURE = 0.15
#: The smallest relative spread a point is weighted with: timings closer than this are
#: not to be trusted on this kind of machine anyway.
SPREAD_FLOOR = 0.02


@dataclasses.dataclass(frozen=True)
class Point:
    """One measured configuration of an arm: batch size, seconds per step (a median over
    ``samples`` timed chunks) and the chunks' relative spread (interquartile range/median)."""

    batch: int
    seconds: float
    spread: float = 0.0
    samples: int = 1

    @property
    def uncertainty(self) -> float:
        """How far the median may be off, relatively: the spread over sqrt(samples)."""
        return self.spread / math.sqrt(max(1, self.samples))


@dataclasses.dataclass(frozen=True)
class Line:
    """``t(b) = fixed + per_sample·b``, fitted to ``batches``.

    Attributes:
        fixed: ``a``, seconds per step whatever the batch (0 when the fit put it below).
        per_sample: ``c``, seconds per sample.
        batches: the batch sizes the line was fitted to.
        error: the median relative deviation of those points from the line (its quality).
        worst: the largest such deviation.
        departs_at: the smallest measured batch, above every fitted one, from which the
            measurements run slower than the line (``None``: none does).
        departure: how much slower than the line that batch ran (0.4: 40%).
    """

    fixed: float
    per_sample: float
    batches: tuple[int, ...]
    error: float
    worst: float
    departs_at: int | None = None
    departure: float | None = None

    def at(self, batch: float) -> float:
        """Predicted seconds per step at ``batch``."""
        return self.fixed + self.per_sample * batch

    @property
    def balance(self) -> float | None:
        """``a/c``: the batch at which the fixed cost equals the per-sample cost of the
        whole batch (half the line's peak throughput); below it the fixed cost dominates."""
        return self.fixed / self.per_sample if self.per_sample > 0 else None

    def batch_for(self, share: float) -> float | None:
        """The batch whose throughput reaches ``share`` of the line's peak (``1/c``):
        ``b/(a + c·b) = share/c`` gives ``b = share/(1 - share)·a/c``."""
        balance = self.balance
        return None if balance is None else share / (1.0 - share) * balance

    @property
    def determined(self) -> bool:
        """Whether the line rests on at least two batch sizes (a unique fit)."""
        return len(self.batches) >= 2

    def as_dict(self) -> dict[str, object]:
        return {
            "fixed_s": self.fixed,
            "per_sample_s": self.per_sample,
            "batches": list(self.batches),
            "median_error": self.error,
            "worst_error": self.worst,
            "departs_at": self.departs_at,
            "departure": self.departure,
        }


def fit_line(points: Sequence[Point]) -> Line | None:
    """The line through ``points`` (see the module docstring); ``None`` without two
    distinct batch sizes, where no line is determined."""
    everything = sorted((p for p in points if p.seconds > 0), key=lambda p: p.batch)
    batches = sorted({p.batch for p in everything})
    if len(batches) < 2:
        return None
    # The most batch sizes, smallest first, that one line holds within each point's
    # tolerance; at least two (a line through two batch sizes always holds).
    for keep in range(len(batches), 1, -1):
        pts = [p for p in everything if p.batch <= batches[keep - 1]]
        fixed, per_sample = _solve(pts)
        if keep == 2 or all(abs(_off(p, fixed, per_sample)) <= _tolerance(p) for p in pts):
            break
    errors = [abs(_off(p, fixed, per_sample)) for p in pts]
    rest = [p for p in everything if p.batch > batches[keep - 1]]
    first = rest[0] if rest else None
    return Line(
        fixed=fixed,
        per_sample=per_sample,
        batches=tuple(sorted({p.batch for p in pts})),
        error=statistics.median(errors),
        worst=max(errors),
        departs_at=first.batch if first else None,
        departure=_off(first, fixed, per_sample) if first else None,
    )


def _off(p: Point, fixed: float, per_sample: float) -> float:
    """How much slower than the line ``p`` ran (negative: faster)."""
    return p.seconds / (fixed + per_sample * p.batch) - 1.0


def _tolerance(p: Point) -> float:
    return max(DEPARTURE, 3 * p.uncertainty)


def _solve(points: Sequence[Point]) -> tuple[float, float]:
    """Weighted least squares of relative errors, ``a, c >= 0``: minimise
    ``sum(w²·((a + c·b)/t - 1)^2)``, ``w = 1/max(uncertainty, SPREAD_FLOOR)``."""
    b = np.array([p.batch for p in points], dtype=float)
    t = np.array([p.seconds for p in points], dtype=float)
    w = 1.0 / np.maximum([p.uncertainty for p in points], SPREAD_FLOOR)
    # Rows scaled by sqrt(w)/t: the residual of each row is the weighted relative error.
    scale = w / t
    design = np.stack([scale, scale * b], axis=1)
    (fixed, per_sample), *_ = np.linalg.lstsq(design, w, rcond=None)
    if fixed < 0:  # the fixed cost is too small to see: a line through the origin
        fixed, per_sample = 0.0, float(np.sum(w**2 * b / t) / np.sum(w**2 * b**2 / t**2))
    if per_sample < 0:  # time falls with the batch: all of it is fixed cost
        fixed, per_sample = float(np.sum(w**2 / t) / np.sum(w**2 / t**2)), 0.0
    return float(fixed), float(per_sample)


def fit_memory(points: Sequence[tuple[int, float]]) -> tuple[float, float] | None:
    """``(m0, m1)``: peak bytes ``= m0 + m1·b`` by least squares (``m1 >= 0``), or ``None``
    without two distinct batch sizes."""
    if len({b for b, _ in points}) < 2:
        return None
    b = np.array([b for b, _ in points], dtype=float)
    m = np.array([m for _, m in points], dtype=float)
    per_sample, fixed = np.polyfit(b, m, 1)
    if per_sample < 0:
        return float(np.mean(m)), 0.0
    return float(fixed), float(per_sample)
