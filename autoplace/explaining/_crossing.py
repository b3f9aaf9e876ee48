"""Where two arms' lines cross: the batch above which one arm's step beats another's
(:func:`crossover`), checked against what was measured there (:func:`against_figures`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from autoplace.config import Arm, Config
from autoplace.costs import ArmModel
from autoplace.measurement import Loop, Measurement


@dataclasses.dataclass(frozen=True)
class Crossover:
    """Where ``faster``'s line (the smaller cost per sample) drops below ``slower``'s: above
    batch ``above`` within ``low..high``, the batches both lines hold for (``above == low``:
    at every one; ``None``: at none). ``measured_against`` and ``best_against`` say, in
    words, where the measurements disagree (:func:`against_figures`)."""

    faster: str
    slower: str
    above: float | None
    low: int
    high: int
    measured_against: str = ""
    best_against: str = ""
    faster_arm: Arm | None = dataclasses.field(default=None, repr=False)
    slower_arm: Arm | None = dataclasses.field(default=None, repr=False)

    def as_dict(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        for name in ("faster_arm", "slower_arm"):
            out.pop(name)
        return out


def crossover(a: ArmModel, b: ArmModel, loop: str, largest: int) -> Crossover | None:
    """Above which batch the arm with the smaller per-sample cost beats the other, within the
    batches both lines hold for (up to ``largest``); ``None`` where they share none."""
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


def against_figures(x: Crossover, figures: Mapping[Config, Measurement], loop: Loop) -> Crossover:
    """``x`` checked against its arms' measurements: where both ran between ``x.low`` and
    ``x.high``, is the one the lines put ahead ahead beyond the spread? Is the arm behind
    ahead at its own best batch? What disagrees is kept in words."""

    def per_sample_of(arm: Arm | None) -> dict[int, tuple[float, float]]:
        out = {}
        for c, m in figures.items():
            seconds, spread = m.loop(loop).step_s, m.loop(loop).spread
            if c.arm == arm and m.status == "ok" and seconds:
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
