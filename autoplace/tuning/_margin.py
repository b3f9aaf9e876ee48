"""How far one configuration beats another, and whether that is real: scores with their
votes (:class:`Scored`), and the comparison, paired turn by turn where the two were
timed in turns (:func:`margin`: a sign test on the per-turn ratios, which cancels drift).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from typing import Any

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.objectives import Objective

#: The one-sided level at which a finalist must beat another to count as faster.
SIGNIFICANCE = 0.05
#: Turns (chunks timed in turns) needed before two finalists are compared turn by turn.
MIN_TURNS = 5


@dataclasses.dataclass(frozen=True)
class Scored:
    """A measured configuration and its objective score."""

    measurement: Measurement
    score: float
    #: For a confirmed configuration, the scores of its confirmations (usually one: the
    #: finalists measured together; two after a duel), oldest first; empty when not
    #: confirmed. ``score`` is then theirs with the drift between them fitted out.
    votes: tuple[float, ...] = ()
    #: The confirmations themselves, oldest first (``measurement`` is the latest).
    rounds: tuple[Measurement, ...] = ()

    @property
    def confirmed(self) -> bool:
        return bool(self.votes)

    @property
    def config(self) -> Config:
        m = self.measurement
        return Config(m.device, m.batch_size, m.precision, m.width)

    @property
    def group(self) -> tuple[str, str]:
        """Its (device, precision)."""
        return (self.measurement.device, self.measurement.precision)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How far one configuration beats another, and whether that is real.

    Attributes:
        margin: how much better the first scores, as a fraction (negative: worse).
        noise: how far the margin may be off: below it, the difference is noise.
        significant: whether the first beats the second beyond the noise.
        basis: what the comparison rests on (``paired over N turns`` or ``scores``).
    """

    margin: float
    noise: float
    significant: bool
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def lower_bound(values: Sequence[float], alpha: float) -> float:
    """A one-sided ``1 - alpha`` lower confidence bound for the median of ``values``
    (the sign test's order statistic: assumes nothing about their distribution);
    ``-inf`` when there are too few values for one."""
    n, ordered = len(values), sorted(values)
    k, below = 0, 0.0
    while k < n and below + math.comb(n, k) / 2**n <= alpha:  # P(Binomial(n, 1/2) <= k)
        below += math.comb(n, k) / 2**n
        k += 1
    return ordered[k - 1] if k else -math.inf


def margin(objective: Objective, best: Scored, other: Scored) -> Comparison:
    """How far ``best`` beats ``other``, the noise of that figure, and whether the
    difference is real.

    For two configurations timed in turns (finalists measured together), the
    comparison is paired, turn by turn, which cancels drift: ``margin`` is the
    median of the per-turn ratios less one, ``noise`` how far below it their
    ``1 - SIGNIFICANCE`` lower confidence bound lies, and the difference is real
    when that bound is above 1. Otherwise ``margin`` compares the two scores and
    ``noise`` is the larger of their own (see :func:`_noise`).
    """
    ratios = _paired_ratios(objective, best, other)
    if ratios is None:
        gain = objective.gain(best.score, other.score)
        noise = max(_noise(best, objective), _noise(other, objective))
        return Comparison(gain, noise, gain > noise, "scores")
    middle, low = statistics.median(ratios), lower_bound(ratios, SIGNIFICANCE)
    return Comparison(middle - 1.0, middle - low, low > 1.0, f"paired over {len(ratios)} turns")


def _noise(s: Scored, objective: Objective) -> float:
    """A score's relative noise: its loop's spread, or, when confirmed, how far its
    measurements' scores lie apart (relative range), whichever is larger."""
    spread = objective.spread(s.measurement)
    if len(s.votes) >= 2:
        spread = max(spread, (max(s.votes) - min(s.votes)) / abs(s.score))
    return spread


def _paired_ratios(objective: Objective, a: Scored, b: Scored) -> list[float] | None:
    """Turn by turn, over every call that timed the two in turns, how many times better
    ``a`` scored than ``b`` (1.0: equal), when those turns number at least
    ``MIN_TURNS``; else ``None``."""
    ours = {m.interleave_id: m for m in a.rounds or (a.measurement,) if m.interleave_id}
    out: list[float] = []
    for mb in b.rounds or (b.measurement,):
        ma = ours.get(mb.interleave_id)
        if ma is None:
            continue
        sa, sb = objective.chunk_scores(ma), objective.chunk_scores(mb)
        if len(sa) == len(sb):
            out += [1.0 + objective.gain(x, y) for x, y in zip(sa, sb, strict=True)]
    return out if len(out) >= MIN_TURNS else None
