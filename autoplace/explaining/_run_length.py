"""What a run's length decides: when a slower start with a faster step overtakes
(:func:`break_even`), and what time-to-finish picks for short to long runs."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from autoplace.config import Config
from autoplace.costs import one_off
from autoplace.measurement import Measurement

#: Run lengths, in samples, that "short", "medium" and "long" runs stand for.
RUN_LENGTHS = {"short": 1_000, "medium": 100_000, "long": 10_000_000}


@dataclasses.dataclass(frozen=True)
class BreakEven:
    """``slow_start`` (more one-off cost, cheaper per sample) overtakes ``fast_start`` after
    ``samples`` samples; ``one_off_s`` each one's start from a fresh process, its device's
    (``device_start_s``) included."""

    slow_start: str
    fast_start: str
    samples: float
    steps: float
    one_off_s: tuple[float, float]
    per_sample_s: tuple[float, float]
    device_start_s: tuple[float, float] = (0.0, 0.0)

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def per_sample(m: Measurement) -> float | None:
    return m.fed.step_s / m.batch_size if m.fed.step_s else None


def break_even(
    x: Measurement, y: Measurement, starts: Mapping[str, float] | None = None
) -> BreakEven | None:
    """When the one with the larger start from a fresh process (``starts``: each device's)
    but the faster fed step catches up; ``None`` when one is better at both."""
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
        slow_start=x.label(),
        fast_start=y.label(),
        samples=samples,
        steps=samples / x.batch_size,
        one_off_s=(ox, oy),
        per_sample_s=(px, py),
        device_start_s=(sx, sy),
    )


def finish_s(m: Measurement, samples: int, start: float = 0.0) -> float | None:
    """Seconds to run ``samples`` samples from a fresh process: ``start``, the one-off costs,
    then ``ceil(samples/b)`` fed steps (the first is the first call)."""
    o = one_off(m)
    if o is None or not m.fed.step_s:
        return None
    return start + o + (math.ceil(samples / m.batch_size) - 1) * m.fed.step_s


def run_length_picks(
    figures: Mapping[Config, Measurement], starts: Mapping[str, float] | None = None
) -> dict[str, dict[str, object]]:
    """For each of :data:`RUN_LENGTHS`, the configuration that finishes first from a fresh
    process (of those whose batch is no larger than the run)."""
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
            out[name] = {"samples": samples, "pick": m.label(), "seconds": t}
    return out
