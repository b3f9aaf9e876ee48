"""Answers derived from the arms' cost models, each a number with its basis.

* :func:`crossover`: the batch above which one arm's step beats another's;
* :func:`break_even`: after how many samples a configuration with the slower one-off
  cost but the faster step overtakes another;
* :func:`run_length_picks`: what time-to-finish would pick for short, medium, long runs;
* :func:`transfer_share`: how much of the fed step is moving the batch to the device;
* :func:`emulated`: lower precisions slower than float32 on a device;
* :func:`memory_limit_batch`: the largest batch that fits under a device's memory with
  a margin left free.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from autoplace.config import Config
from autoplace.explaining._model import TIMED_CHUNKS, ArmModel, one_off
from autoplace.measurement import Measurement

#: Run lengths, in samples, that "short", "medium" and "long" runs stand for.
RUN_LENGTHS = {"short": 1_000, "medium": 100_000, "long": 10_000_000}
#: A lower precision whose time per sample exceeds float32's by more than this is emulated.
EMULATED = 0.10


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
            seconds = m.fed_step_s if loop == "fed" else m.step_s
            spread = m.fed_step_spread if loop == "fed" else m.step_spread
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
    after ``samples`` samples (``steps`` of ``slow_start``'s batch)."""

    slow_start: str
    fast_start: str
    samples: float
    steps: float
    one_off_s: tuple[float, float]
    per_sample_s: tuple[float, float]

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def label(m: Measurement) -> str:
    """The configuration ``m`` measured, as ``Config.label`` writes it."""
    return Config(m.device, m.batch_size, m.precision, m.width).label()


def per_sample(m: Measurement) -> float | None:
    return m.fed_step_s / m.batch_size if m.fed_step_s else None


def break_even(x: Measurement, y: Measurement) -> BreakEven | None:
    """When the configuration with the larger one-off cost but the faster fed step
    catches up with the other; ``None`` when one is better at both (no break-even)."""
    ox, oy, px, py = one_off(x), one_off(y), per_sample(x), per_sample(y)
    if None in (ox, oy, px, py):
        return None
    if (ox - oy) * (px - py) >= 0:  # type: ignore[operator]
        return None
    if ox < oy:  # type: ignore[operator]
        x, y, ox, oy, px, py = y, x, oy, ox, py, px
    samples = (ox - oy) / (py - px)  # type: ignore[operator]
    return BreakEven(
        slow_start=label(x),
        fast_start=label(y),
        samples=samples,
        steps=samples / x.batch_size,
        one_off_s=(ox, oy),  # type: ignore[arg-type]
        per_sample_s=(px, py),  # type: ignore[arg-type]
    )


def finish_s(m: Measurement, samples: int) -> float | None:
    """Seconds to run ``samples`` samples from a fresh process: the one-off costs, then
    ``ceil(samples/b)`` fed steps (the first is the first call)."""
    o = one_off(m)
    if o is None or not m.fed_step_s:
        return None
    return o + (math.ceil(samples / m.batch_size) - 1) * m.fed_step_s


def run_length_picks(figures: Mapping[Config, Measurement]) -> dict[str, dict[str, object]]:
    """For each of :data:`RUN_LENGTHS`, the measured configuration that finishes first
    (of those whose batch is no larger than the run)."""
    out = {}
    for name, samples in RUN_LENGTHS.items():
        timed = [
            (t, m)
            for m in figures.values()
            if m.batch_size <= samples and (t := finish_s(m, samples)) is not None
        ]
        if timed:
            t, m = min(timed, key=lambda x: x[0])
            out[name] = {"samples": samples, "pick": label(m), "seconds": t}
    return out


def transfer_share(m: Measurement) -> dict[str, Any] | None:
    """How much of ``m``'s fed step is feeding the batch, and what keeping the data on the
    device would gain. The basis is the fed loop against the steady loop when both were
    timed (``loops``: their difference is the put and the input handling); else the
    measured put of one batch (``put``: a median of at least three), which bounds the
    share from above only (timed alone, the put cannot overlap a step as it does in the
    loop: a 98 KiB put alone took 141 µs of a 142 µs fed step), so no gain is claimed on
    it."""
    if not m.fed_step_s:
        return None
    out: dict[str, Any] = {
        "fed_step_s": m.fed_step_s,
        "transfer_s": m.transfer_s,
        "batch_bytes": float(m.batch_bytes or 0),
    }
    if m.step_s and (m.step_samples or 0) >= TIMED_CHUNKS:
        share = max(0.0, m.fed_step_s - m.step_s) / m.fed_step_s
        out.update(basis="loops", step_s=m.step_s)
    elif m.transfer_s is not None:
        share = min(1.0, m.transfer_s / m.fed_step_s)
        out.update(basis="put")
    else:
        return None
    gain = share / (1.0 - share) if share < 1 and out["basis"] == "loops" else None
    out.update(share=share, gain_on_device=gain)
    return out


@dataclasses.dataclass(frozen=True)
class Emulated:
    """A lower precision slower than float32 on a device: ``ratio`` times float32's time
    per sample (best against best), compiled to ``compute_dtypes``."""

    device: str
    precision: str
    width: int | None
    ratio: float
    compute_dtypes: tuple[str, ...]
    deviation: float | None

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def emulated(figures: Mapping[Config, Measurement], models: Iterable[ArmModel]) -> list[Emulated]:
    """The lower precisions whose best time per sample exceeds float32's best on the same
    device and width by more than :data:`EMULATED`."""
    best: dict[tuple[str, str, int | None], float] = {}
    for c, m in figures.items():
        p = per_sample(m) if m.status == "ok" else None
        if p is not None:
            arm = (c.device, c.precision, c.width)
            best[arm] = min(best.get(arm, math.inf), p)
    out = []
    for model in models:
        device, precision, width = model.arm
        f32 = best.get((device, "float32", width))
        mine = best.get(model.arm)
        if precision == "float32" or f32 is None or mine is None:
            continue
        if mine / f32 - 1.0 > EMULATED:
            out.append(
                Emulated(
                    device, precision, width, mine / f32, model.compute_dtypes, model.deviation
                )
            )
    return out


def memory_limit_batch(
    model: ArmModel, limit: int | None, margin: float
) -> dict[str, float] | None:
    """The largest batch whose predicted peak memory leaves ``margin`` of ``limit`` free,
    from the arm's memory line ``m0 + m1·b``; ``None`` without a line or a limit."""
    if model.memory is None or not limit:
        return None
    fixed, each = model.memory
    room = (1.0 - margin) * limit - fixed
    if each <= 0:
        return None
    largest = room / each
    return {
        "limit_bytes": float(limit),
        "margin": margin,
        "fixed_bytes": fixed,
        "per_sample_bytes": each,
        "largest_batch": largest,
        "largest_power_of_two": float(2 ** math.floor(math.log2(largest))) if largest >= 1 else 0.0,
    }
