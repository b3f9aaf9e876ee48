"""Answers derived from the arms' cost models, each a number with its basis.

* :func:`crossover`: the batch above which one arm's step beats another's;
* :func:`break_even`: after how many samples a configuration with the slower one-off
  cost but the faster step overtakes another;
* :func:`run_length_picks`: what time-to-finish would pick for short, medium, long runs;
* :func:`fixed_cost`: what the fixed cost of a step is: the put, dispatch, or neither;
* :func:`feeding`: how much of the fed step is moving the batch to the device, and what
  keeping two batches in flight, or the data on the device, gains where they were timed;
* :func:`emulated`: lower precisions with no faster kernels on a device;
* :func:`memory_limit_batch`: the largest batch that fits under a device's memory with
  a margin left free.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from autoplace.config import Config
from autoplace.costs import TIMED_CHUNKS, ArmModel, one_off
from autoplace.limits import DeviceLimits, MachineLimits
from autoplace.measurement import Measurement

#: Run lengths, in samples, that "short", "medium" and "long" runs stand for.
RUN_LENGTHS = {"short": 1_000, "medium": 100_000, "long": 10_000_000}
#: A lower precision is emulated where its measured peak is under ``1 + EMULATED`` times
#: float32's (no faster kernels for it); without the peaks, where its time per sample
#: exceeds float32's by more than this.
EMULATED = 0.10
#: The fixed cost of a step is named dispatch only within this many times the device's
#: measured dispatch floor. The floor is one trivial jitted call back to back; a real step
#: launches several kernels and hands over several arguments, so its own fixed cost sits
#: a little above it: on the H200 of ``../shared/gpu-reference/h200-2026-11-26/``, the
#: README MLP's step with its batch on the device took 45-86 µs against the 41.6 µs floor
#: (1.1-2.1x), while the fed loop's fixed 451 µs (10.8x) was mostly the put.
DISPATCH_MULTIPLE = 3.0
#: The put is named the fixed cost's cause where it accounts for at least this share.
PUT_SHARE = 0.5
#: A remedy that gains less than this (1.05: 5%) gains nothing to speak of.
NO_GAIN = 1.05


@dataclasses.dataclass(frozen=True)
class Crossover:
    """Where ``faster``'s line (the smaller cost per sample) drops below ``slower``'s:
    above batch ``above``, within ``low..high``, the batches both lines hold for;
    ``above == low``: at every one of them; ``None``: at none."""

    faster: str
    slower: str
    above: float | None
    low: int
    high: int
    #: Where the measurements disagree with what the lines say, in words (see
    #: :func:`against_figures`); empty when they agree.
    measured_against: str = ""
    #: When the arm behind where both lines hold is ahead at its own best batch, the two
    #: bests in words (a reader sees those in the table of bests).
    best_against: str = ""
    faster_arm: tuple[str, str, int | None] | None = dataclasses.field(default=None, repr=False)
    slower_arm: tuple[str, str, int | None] | None = dataclasses.field(default=None, repr=False)

    def as_dict(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        for name in ("faster_arm", "slower_arm"):
            out.pop(name)
        return out


def crossover(a: ArmModel, b: ArmModel, loop: str, largest: int) -> Crossover | None:
    """Above which batch the arm with the smaller per-sample cost beats the other, within
    the batches both lines hold for (up to ``largest``); ``None`` without lines, or when
    the batches they hold for do not overlap."""
    la, lb = a.line(loop), b.line(loop)
    if la is None or lb is None:
        return None
    low = max(min(la.batches), min(lb.batches))
    high = min(largest, max(la.batches), max(lb.batches))
    if low > high:
        return None
    if la.per_sample > lb.per_sample:
        a, b, la, lb = b, a, lb, la
    # a has the smaller per-sample cost: it wins above b* = (a_a - a_b)/(c_b - c_a).
    if la.per_sample == lb.per_sample:
        above: float | None = low if la.fixed <= lb.fixed else None
    else:
        above = max(low, (la.fixed - lb.fixed) / (lb.per_sample - la.per_sample))
        if above > high:
            above = None
    return Crossover(
        faster=a.label,
        slower=b.label,
        above=above,
        low=low,
        high=high,
        faster_arm=a.arm,
        slower_arm=b.arm,
    )


def against_figures(x: Crossover, figures: Mapping[Config, Measurement], loop: str) -> Crossover:
    """``x`` checked against the measurements of its two arms: at every batch from
    ``x.low`` to ``x.high`` both measured, is the one the lines put ahead measured ahead
    (beyond both points' spread)? And is the arm behind there ahead at its own best
    batch? What disagrees is kept in words, for the sentence to say."""

    def per_sample_of(arm: Any) -> dict[int, tuple[float, float]]:
        out = {}
        for c, m in figures.items():
            seconds, spread = m.step_time(loop), m.spread_of(loop)  # type: ignore[arg-type]
            if (c.device, c.precision, c.width) == arm and m.status == "ok" and seconds:
                out[c.batch_size] = (seconds / c.batch_size, spread or 0.0)
        return out

    fast, slow = per_sample_of(x.faster_arm), per_sample_of(x.slower_arm)
    ahead, behind = (x.faster, x.slower) if x.above is not None else (x.slower, x.faster)
    first, second = (fast, slow) if x.above is not None else (slow, fast)
    lo = x.low if x.above is None else max(x.low, x.above)
    wrong = [
        b
        for b in sorted(set(first) & set(second))
        if lo <= b <= x.high
        and first[b][0] > second[b][0] * (1.0 + max(first[b][1], second[b][1], 0.02))
    ]
    measured = f"{behind} ran ahead at batch {', '.join(map(str, wrong))}" if wrong else ""
    best = ""
    b_ahead = min(first, key=lambda b: first[b][0], default=None)
    b_behind = min(second, key=lambda b: second[b][0], default=None)
    if b_ahead is not None and b_behind is not None:
        (best_ahead, spread_a), (best_behind, spread_b) = first[b_ahead], second[b_behind]
        if best_ahead > best_behind * (1.0 + max(spread_a, spread_b, 0.02)):
            best = (
                f"{behind} (batch {b_behind}) runs {best_ahead / best_behind:.2f}x as fast "
                f"as {ahead} (batch {b_ahead})"
            )
    return dataclasses.replace(x, measured_against=measured, best_against=best)


@dataclasses.dataclass(frozen=True)
class BreakEven:
    """``slow_start`` (more one-off cost, cheaper per sample) overtakes ``fast_start``
    after ``samples`` samples (``steps`` of ``slow_start``'s batch). ``one_off_s`` is each
    one's whole start from a fresh process, its device's start-up (``device_start_s``,
    once a process) included."""

    slow_start: str
    fast_start: str
    samples: float
    steps: float
    one_off_s: tuple[float, float]
    per_sample_s: tuple[float, float]
    device_start_s: tuple[float, float] = (0.0, 0.0)

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def label(m: Measurement) -> str:
    """The configuration ``m`` measured, as ``Config.label`` writes it."""
    return Config(m.device, m.batch_size, m.precision, m.width).label()


def per_sample(m: Measurement) -> float | None:
    return m.fed_step_s / m.batch_size if m.fed_step_s else None


def break_even(
    x: Measurement, y: Measurement, starts: Mapping[str, float] | None = None
) -> BreakEven | None:
    """When the configuration with the larger start from a fresh process (its one-off
    costs, and its device's start-up from ``starts`` once) but the faster fed step
    catches up with the other; ``None`` when one is better at both (no break-even)."""
    starts = starts or {}
    ox, oy, px, py = one_off(x), one_off(y), per_sample(x), per_sample(y)
    if ox is None or oy is None or px is None or py is None:
        return None
    sx, sy = starts.get(x.device, 0.0), starts.get(y.device, 0.0)
    ox, oy = ox + sx, oy + sy
    if (ox - oy) * (px - py) >= 0:
        return None
    if ox < oy:
        x, y, ox, oy, px, py, sx, sy = y, x, oy, ox, py, px, sy, sx
    samples = (ox - oy) / (py - px)
    return BreakEven(
        slow_start=label(x),
        fast_start=label(y),
        samples=samples,
        steps=samples / x.batch_size,
        one_off_s=(ox, oy),
        per_sample_s=(px, py),
        device_start_s=(sx, sy),
    )


def finish_s(m: Measurement, samples: int, start: float = 0.0) -> float | None:
    """Seconds to run ``samples`` samples from a fresh process: its device's ``start``
    (once a process), the one-off costs, then ``ceil(samples/b)`` fed steps (the first is
    the first call)."""
    o = one_off(m)
    if o is None or not m.fed_step_s:
        return None
    return start + o + (math.ceil(samples / m.batch_size) - 1) * m.fed_step_s


def run_length_picks(
    figures: Mapping[Config, Measurement], starts: Mapping[str, float] | None = None
) -> dict[str, dict[str, object]]:
    """For each of :data:`RUN_LENGTHS`, the measured configuration that finishes first
    (of those whose batch is no larger than the run), each from a fresh process that
    starts its device once (``starts``: each device's start-up)."""
    starts = starts or {}
    out = {}
    for name, samples in RUN_LENGTHS.items():
        timed = [
            (t, m)
            for m in figures.values()
            if m.batch_size <= samples
            and (t := finish_s(m, samples, starts.get(m.device, 0.0))) is not None
        ]
        if timed:
            t, m = min(timed, key=lambda x: x[0])
            out[name] = {"samples": samples, "pick": label(m), "seconds": t}
    return out


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
            dispatch floor); ``step`` (neither: launches, the loop's own work);
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
    :data:`DISPATCH_MULTIPLE` of the floor; else what is known is said."""
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
    elif put is not None or (loop == "step" and floor is not None):
        cause = "step"  # known not to be the put (or no put in the loop), nor dispatch
    else:
        cause = "unattributed"
    return FixedCost(a, loop, cause, put, basis, bound, step_bound, floor)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class Feeding:
    """What feeding a fresh host batch each step costs ``m``, and what the remedies gain.

    Attributes:
        fed_step_s: the step with a host batch put each step (what a plain loop does).
        step_s: the step with the batch on the device, where it was timed
            (``TIMED_CHUNKS`` chunks at least; a glance is too rough to subtract).
        prefetch_step_s: the step with a thread keeping two puts in flight, where timed.
        transfer_s: one batch's put, timed alone.
        batch_bytes: one batch's bytes.
        basis: what ``share`` rests on: ``loops`` (the fed step less the step with the
            batch on the device: the put and the input's handling) or ``put`` (the put
            timed alone, which bounds the share from above only: timed alone, it cannot
            overlap a step as it does in the loop); ``None``: neither was measured.
        share: the feeding's share of the fed step (``None``: not known).
    """

    fed_step_s: float
    step_s: float | None
    prefetch_step_s: float | None
    transfer_s: float | None
    batch_bytes: float
    basis: Literal["loops", "put"] | None
    share: float | None

    @property
    def prefetch_gain(self) -> float | None:
        """How many times as fast a step runs with two batches in flight."""
        return self.fed_step_s / self.prefetch_step_s if self.prefetch_step_s else None

    @property
    def resident_gain(self) -> float | None:
        """How many times as fast a step runs with its batch on the device."""
        return self.fed_step_s / self.step_s if self.step_s else None

    @property
    def notable(self) -> bool:
        """Worth a sentence near the top: a fifth of the step or more is feeding, or a
        remedy measured gains a quarter or more."""
        gains = [g for g in (self.prefetch_gain, self.resident_gain) if g is not None]
        return (self.share or 0.0) >= 0.20 or any(g >= 1.25 for g in gains)

    def as_dict(self) -> dict[str, object]:
        return {
            **dataclasses.asdict(self),
            "prefetch_gain": self.prefetch_gain,
            "resident_gain": self.resident_gain,
        }


def feeding(m: Measurement) -> Feeding | None:
    """How much of ``m``'s fed step is feeding the batch (see :class:`Feeding`); ``None``
    without a fed step, or with nothing to set against it."""
    if not m.fed_step_s:
        return None
    step = m.step_s if m.step_s and (m.step_samples or 0) >= TIMED_CHUNKS else None
    share: float | None = None
    basis: Literal["loops", "put"] | None = None
    if step is not None:
        share, basis = max(0.0, m.fed_step_s - step) / m.fed_step_s, "loops"
    elif m.transfer_s is not None:
        share, basis = min(1.0, m.transfer_s / m.fed_step_s), "put"
    elif not m.prefetch_step_s:
        return None
    return Feeding(
        fed_step_s=m.fed_step_s,
        step_s=step,
        prefetch_step_s=m.prefetch_step_s or None,
        transfer_s=m.transfer_s,
        batch_bytes=float(m.batch_bytes or 0),
        basis=basis,
        share=share,
    )


@dataclasses.dataclass(frozen=True)
class Emulated:
    """A lower precision with no faster kernels on a device, or one slower than float32
    where that cannot be told.

    Attributes:
        basis: what it rests on: ``peak`` (the device's measured peak in this precision
            is ``peak_ratio`` times float32's, under ``1 + EMULATED``: ``autoplace
            limits``); ``step`` (no peaks: its time per sample with the batch on the
            device is ``ratio`` times float32's, best against best); ``fed`` (neither: its
            fed time per sample is ``ratio`` times float32's, which includes the feeding,
            so whether it is emulated is not told).
        width: ``None`` for ``peak``: the device's, whatever the width.
        ratio: time per sample against float32's (``None``: not measured beside it);
            ``ratio_basis`` says which loop (``step`` or ``fed``).
        peaks: its measured peak and float32's, FLOP/s (``peak`` only).
    """

    device: str
    precision: str
    width: int | None
    ratio: float | None
    compute_dtypes: tuple[str, ...]
    deviation: float | None
    basis: Literal["peak", "step", "fed"] = "fed"
    ratio_basis: Literal["step", "fed"] | None = None
    peaks: tuple[float, float] | None = None

    @property
    def peak_ratio(self) -> float | None:
        return None if self.peaks is None else self.peaks[0] / self.peaks[1]

    def as_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "peak_ratio": self.peak_ratio}


def emulated(
    figures: Mapping[Config, Measurement],
    models: Iterable[ArmModel],
    limits: MachineLimits | None = None,
) -> list[Emulated]:
    """The lower precisions with no faster kernels: judged from each device's measured
    peak per precision (``limits``) where it was measured; else from the best time per
    sample with the batch on the device against float32's (same device and width), where
    both were timed; else the fed step's is said, without a judgement (see
    :class:`Emulated`)."""
    best = {loop: _best_per_sample(figures, loop) for loop in ("step", "fed")}
    out: list[Emulated] = []
    judged: set[tuple[str, str]] = set()
    for model in models:
        device, precision, width = model.arm
        if precision == "float32":
            continue
        ratio = ratio_basis = None
        for loop in ("step", "fed"):
            f32, mine = best[loop].get((device, "float32", width)), best[loop].get(model.arm)
            if f32 is not None and mine is not None:
                ratio, ratio_basis = mine / f32, loop
                break
        peaks = _peaks(limits, device, precision)
        found = functools.partial(
            Emulated, device, precision, ratio=ratio, compute_dtypes=model.compute_dtypes,
            deviation=model.deviation, ratio_basis=ratio_basis,
        )  # fmt: skip
        if peaks is not None:
            if peaks[0] < (1.0 + EMULATED) * peaks[1] and (device, precision) not in judged:
                judged.add((device, precision))
                out.append(found(width=None, basis="peak", peaks=peaks))
        elif ratio is not None and ratio - 1.0 > EMULATED:
            out.append(found(width=width, basis=ratio_basis))
    return out


def _peaks(limits: MachineLimits | None, device: str, precision: str) -> tuple[float, float] | None:
    """``device``'s measured peak in ``precision`` and in float32, where both were."""
    limit = limits.of(device) if limits is not None else None
    if limit is None or precision not in limit.peak_flops or "float32" not in limit.peak_flops:
        return None
    return limit.peak_flops[precision].median, limit.peak_flops["float32"].median


def _best_per_sample(
    figures: Mapping[Config, Measurement], loop: str
) -> dict[tuple[str, str, int | None], float]:
    """Each arm's best time per sample in ``loop``: ``step`` (the batch on the device,
    timed: ``TIMED_CHUNKS`` chunks at least) or ``fed``."""
    best: dict[tuple[str, str, int | None], float] = {}
    for c, m in figures.items():
        if m.status != "ok":
            continue
        if loop == "step":
            timed = m.step_s and (m.step_samples or 0) >= TIMED_CHUNKS
            p = m.step_s / m.batch_size if timed else None  # type: ignore[operator]
        else:
            p = per_sample(m)
        if p is not None:
            arm = (c.device, c.precision, c.width)
            best[arm] = min(best.get(arm, math.inf), p)
    return best


def memory_limit_batch(model: ArmModel, limit: int | None, margin: float) -> dict[str, Any] | None:
    """The largest batch whose predicted peak memory leaves ``margin`` of ``limit`` free,
    from the arm's memory line ``m0 + m1·b``; ``None`` without a line or a limit."""
    if model.memory is None or not limit:
        return None
    fixed, each = model.memory.fixed, model.memory.per_sample
    room = (1.0 - margin) * limit - fixed
    if each <= 0:
        return None
    largest = room / each
    return {
        "limit_bytes": float(limit),
        "margin": margin,
        "fixed_bytes": fixed,
        "per_sample_bytes": each,
        "fit": model.memory.fit,
        "largest_batch": largest,
        "largest_power_of_two": float(2 ** math.floor(math.log2(largest))) if largest >= 1 else 0.0,
    }
