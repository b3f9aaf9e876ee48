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
curves leave the line at both ends: at small batches the device is not yet filled (a
matrix-vector product costs more per sample than a matrix-matrix one), at large ones
caches are outgrown. The fit keeps the longest run of consecutive batch sizes that one
line holds with every point within ``DEPARTURE`` of it (or three times the uncertainty
of the point's median) and the median point within half that, the run at the largest
batches on a tie; the first batch above it is where the measurements depart
(``departs_at``), the last below it ``below_at``.
The model never claims what it could not fit.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from typing import Literal

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
        departs_at: the smallest measured batch above the fitted ones, where the
            measurements leave the line (``None``: none was measured above them).
        departure: how much slower than the line that batch ran (0.4: 40% slower;
            negative: faster, the cost per sample still falling).
        below_at: the largest measured batch below the fitted ones (``None``: none).
        below: how much slower than the line that batch ran (positive: small batches
            cost more than the line says, the device not yet filled).
    """

    fixed: float
    per_sample: float
    batches: tuple[int, ...]
    error: float
    worst: float
    departs_at: int | None = None
    departure: float | None = None
    below_at: int | None = None
    below: float | None = None

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

    def as_dict(self) -> dict[str, object]:
        return {
            "fixed_s": self.fixed,
            "per_sample_s": self.per_sample,
            "batches": list(self.batches),
            "median_error": self.error,
            "worst_error": self.worst,
            "departs_at": self.departs_at,
            "departure": self.departure,
            "below_at": self.below_at,
            "below": self.below,
        }


def fit_line(points: Sequence[Point]) -> Line | None:
    """The line through ``points`` (see the module docstring); ``None`` without two
    distinct batch sizes, where no line is determined."""
    everything = sorted((p for p in points if p.seconds > 0), key=lambda p: p.batch)
    batches = sorted({p.batch for p in everything})
    if len(batches) < 2:
        return None
    lo, hi, fixed, per_sample = _window(everything, batches)
    pts = [p for p in everything if lo <= p.batch <= hi]
    errors = [abs(_off(p, fixed, per_sample)) for p in pts]
    above = [p for p in everything if p.batch > hi]
    under = [p for p in everything if p.batch < lo]
    first = above[0] if above else None
    last = under[-1] if under else None
    return Line(
        fixed=fixed,
        per_sample=per_sample,
        batches=tuple(sorted({p.batch for p in pts})),
        error=statistics.median(errors),
        worst=max(errors),
        departs_at=first.batch if first else None,
        departure=_off(first, fixed, per_sample) if first else None,
        below_at=last.batch if last else None,
        below=_off(last, fixed, per_sample) if last else None,
    )


def _window(points: Sequence[Point], batches: Sequence[int]) -> tuple[int, int, float, float]:
    """The run of consecutive batch sizes that one line holds, every point within its
    tolerance and half of them within half of ``DEPARTURE``: the longest, and of those the
    one at the largest batches (where the throughput is); two batch sizes at least.
    Returns its ends and the line."""
    n = len(batches)
    for size in range(n, 2, -1):
        for start in range(n - size, -1, -1):
            lo, hi = batches[start], batches[start + size - 1]
            pts = [p for p in points if lo <= p.batch <= hi]
            fixed, per_sample = _solve(pts)
            off = [abs(_off(p, fixed, per_sample)) for p in pts]
            holds = all(x <= _tolerance(p) for x, p in zip(off, pts, strict=True))
            if holds and statistics.median(off) <= DEPARTURE / 2:
                return lo, hi, fixed, per_sample
    # No three batch sizes hold a line: the pair of neighbours it fits best (the larger
    # batches on a tie; a line with a, c >= 0 need not pass through both points).
    pairs = []
    for start in range(n - 1):
        lo, hi = batches[start], batches[start + 1]
        pts = [p for p in points if lo <= p.batch <= hi]
        fixed, per_sample = _solve(pts)
        worst = max(abs(_off(p, fixed, per_sample)) for p in pts)
        pairs.append((worst, -start, lo, hi, fixed, per_sample))
    _, _, lo, hi, fixed, per_sample = min(pairs)
    return lo, hi, fixed, per_sample


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


#: A fixed part of a memory line this close to zero (relative to the largest peak) is zero
#: rounded: a line through zero itself, not a fit to hold at zero.
ROUNDING = 1e-9
#: How a memory line was fitted (see :func:`fit_memory`).
MemoryFit = Literal["least squares", "through zero", "flat"]


@dataclasses.dataclass(frozen=True)
class MemoryLine:
    """Peak bytes ``= fixed + per_sample·b``.

    Attributes:
        fixed: ``m0``, bytes whatever the batch (never negative).
        per_sample: ``m1``, bytes per sample (never negative).
        fit: ``least squares`` (the plain fit, both parts at least 0); ``through zero``
            (the plain fit put the fixed part below zero, which no program has: fitted
            again with it held at 0, the least squares of the slope alone); ``flat`` (the
            peak fell with the batch: their mean, nothing per sample).
    """

    fixed: float
    per_sample: float
    fit: MemoryFit = "least squares"

    def at(self, batch: float) -> float:
        return self.fixed + self.per_sample * batch


def fit_memory(points: Sequence[tuple[int, float]]) -> MemoryLine | None:
    """The memory line through ``points`` (batch, peak bytes) by least squares with both
    parts at least 0 (see :class:`MemoryLine`: where the plain fit gives a negative part,
    the constrained one holds it at 0 and fits the other alone), or ``None`` without two
    distinct batch sizes."""
    if len({b for b, _ in points}) < 2:
        return None
    b = np.array([b for b, _ in points], dtype=float)
    m = np.array([m for _, m in points], dtype=float)
    per_sample, fixed = np.polyfit(b, m, 1)
    if per_sample < 0:
        return MemoryLine(float(np.mean(m)), 0.0, "flat")
    if fixed < -ROUNDING * np.max(np.abs(m)):  # the least squares of m = m1·b
        return MemoryLine(0.0, float(np.sum(b * m) / np.sum(b * b)), "through zero")
    return MemoryLine(max(0.0, float(fixed)), float(per_sample))
