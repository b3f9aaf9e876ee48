"""What the climb knows, per arm, at one pass: :class:`View` (scores by batch index, each
arm's floor and ceiling, what is taken) and the arm that leads (:class:`Leader`), read
by the climb's steps (:mod:`._climb`)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Protocol

from autoplace.config import PRECISION_BYTES, Arm, Config, config_at
from autoplace.costs import CostLine, cost_line, could_reach
from autoplace.objectives import Objective
from autoplace.tuning._failures import arm_bounds
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores

Group = tuple[Config, ...]


def _start_index(start_batch: int | None, batches: tuple[int, ...], objective: Objective) -> int:
    """The index of the batch arms are screened at (see :class:`Climb`'s ``start_batch``)."""
    if start_batch is not None:
        target = math.log2(start_batch)
    else:
        low, high = math.log2(batches[0]), math.log2(batches[-1])
        fraction = 2 / 3 if objective.rate else 1 / 2
        target = low + fraction * (high - low)
    return min(range(len(batches)), key=lambda i: abs(math.log2(batches[i]) - target))


def group_of(configs: Iterable[Config]) -> Group:
    """The distinct ``configs``, in order, at most :data:`MAX_GROUP` of them."""
    return tuple(itertools.islice(dict.fromkeys(configs), MAX_GROUP))


class ClimbSettings(Protocol):
    """What the view reads of the climb's settings (:class:`._climb.Climb` has them):
    the batch arms are screened at, the noise within which a score ties the arm's best,
    the reach beyond which a fall is more than noise (and the edge: an arm's reach at the end
    of its batches), and the drop at every common batch that leaves an arm behind the
    leader."""

    @property
    def start_batch(self) -> int | None: ...

    @property
    def noise(self) -> float: ...

    @property
    def reach(self) -> float: ...

    @property
    def edge(self) -> float: ...

    @property
    def drop(self) -> float: ...

    @property
    def gap(self) -> float: ...


@dataclasses.dataclass(frozen=True)
class View:
    """What is known, per arm, with batch sizes as indices into ``batches``. Read-only.

    ``table[arm]`` holds the arm's scores by batch index (in the order measured);
    ``floor[arm]`` and ``ceiling[arm]`` bound the batches worth trying (see
    :func:`._failures.arm_bounds`: a failure below a batch that ran is a floor, any other
    a ceiling; ``-1`` and ``len(batches)`` when none); ``taken`` is every configuration
    measured or being measured.
    """

    settings: ClimbSettings
    objective: Objective
    batches: tuple[int, ...]
    start: int
    arms: tuple[Arm, ...]
    table: Mapping[Arm, Mapping[int, float]]
    floor: Mapping[Arm, int]
    ceiling: Mapping[Arm, int]
    taken: frozenset[Config]

    @classmethod
    def of(
        cls,
        settings: ClimbSettings,
        space: Space,
        objective: Objective,
        scores: Scores,
        pending: frozenset[Config],
    ) -> View:
        batches = space.batch_sizes
        start = _start_index(settings.start_batch, batches, objective)
        arms = tuple(space.arms())
        table: dict[Arm, dict[int, float]] = {arm: {} for arm in arms}
        failed: dict[Arm, set[int]] = {arm: set() for arm in arms}
        for c, s in scores.items():
            arm = (c.device, c.precision, c.width)
            if arm not in table or c.per_device_batch not in batches:
                continue
            i = batches.index(c.per_device_batch)
            if s is None:
                failed[arm].add(i)
            else:
                table[arm][i] = s
        floor, ceiling = {}, {}
        for arm in arms:
            low, high = arm_bounds(table[arm].keys(), failed[arm])
            floor[arm] = -1 if low is None else low
            ceiling[arm] = len(batches) if high is None else high
        taken = frozenset(scores) | pending  # measured, or being measured
        return cls(settings, objective, batches, start, arms, table, floor, ceiling, taken)

    def taking(self, configs: Iterable[Config]) -> View:
        """The same view with ``configs`` taken too (proposed, so not proposed again)."""
        return dataclasses.replace(self, taken=self.taken | frozenset(configs))

    def config(self, arm: Arm, i: int) -> Config:
        return config_at(arm, self.batches[i])

    def free(self, arm: Arm, i: int) -> bool:
        """Whether batch ``i`` exists, lies between the arm's floor and ceiling, and is not
        taken."""
        return max(0, self.floor[arm] + 1) <= i < self.ceiling[arm] and (
            self.config(arm, i) not in self.taken
        )

    def best(self, arm: Arm) -> tuple[int, float]:
        """The arm's best score and its batch index (the first measured, on a tie)."""
        measured = self.table[arm]
        i = max(measured, key=lambda i: self.objective.key(measured[i]))
        return i, measured[i]

    def anchor(self, arm: Arm) -> int:
        """The smallest batch scoring within ``noise`` of the arm's best: as good, and cheaper."""
        _, top = self.best(arm)
        gain, noise = self.objective.gain, self.settings.noise
        return min(i for i, s in self.table[arm].items() if gain(top, s) <= noise)

    def ranked(self) -> list[Arm]:
        """The arms with a score, best first (ties in the space's order)."""
        scored = [arm for arm in self.arms if self.table[arm]]
        return sorted(scored, key=lambda arm: -self.objective.key(self.best(arm)[1]))

    def line(self, arm: Arm) -> CostLine | None:
        """The arm's cost line, where one holds over its measured batches (see
        :mod:`autoplace.costs`); none for an objective other than throughput (only its score is the
        line's own quantity)."""
        if not self.objective.rate:
            return None
        return cost_line({self.config(arm, j).batch_size: s for j, s in self.table[arm].items()})

    def could_reach(self, line: CostLine | None, arm: Arm, i: int, best: float) -> bool:
        """Whether the arm's batch ``i`` could score ``best``, by the arm's ``line``
        (:meth:`line`; none: it could)."""
        steps = min((abs(i - j) for j in self.table[arm]), default=0)
        return could_reach(line, self.config(arm, i).batch_size, steps, best)

    def falls_away(self, arm: Arm, best: float) -> bool:
        """Whether ``arm`` has fallen away at the top of what it measured: its largest
        measured batch trails ``best`` by more than ``drop`` and does not beat the batch
        measured next below it by more than ``reach`` (no climb towards a second peak). A
        larger batch would have to recover all of that to matter, and it is the costliest
        to measure: the held-out encoder's batch 4096, a step of 3.5 s and a first call of
        9 s after batch 1024 read a third of the best, took 32 s of a 67 s tune (issue 38)."""
        measured = self.table[arm]
        if len(measured) < 2:
            return False
        below, top = sorted(measured)[-2:]
        gain, settings = self.objective.gain, self.settings
        return (
            gain(best, measured[top]) > settings.drop
            and gain(measured[top], measured[below]) <= settings.reach
        )

    def around_best(self, arm: Arm) -> list[Config]:
        """The free batches one step above and below the arm's best, in that order."""
        i, _ = self.best(arm)
        return [self.config(arm, j) for j in (i + 1, i - 1) if self.free(arm, j)]

    def trails(self, arm: Arm, leader: Leader) -> bool:
        """Whether the leader beats ``arm``, an arm of its device, by more than ``drop`` at
        every batch both measured, one of them below the leader's anchor when ``arm`` is of
        a wider precision: its cliff comes a batch step earlier, so past the anchor it may
        only have fallen off first."""
        if arm[0] != leader.arm[0]:
            return False  # another device: a slow start can hide the faster sample
        common = self.table[leader.arm].keys() & self.table[arm].keys()
        if wider(arm, leader.arm) > 0 and not any(i < leader.anchor for i in common):
            return False
        gains = [self.objective.gain(self.table[leader.arm][i], self.table[arm][i]) for i in common]
        return bool(gains) and min(gains) > self.settings.drop


@dataclasses.dataclass(frozen=True)
class Leader:
    """The arm with the best score, and what the steps need to know about it. ``explores``: it
    was measured at least as often as every other arm on its device (arms on one device peak
    at similar batches, so only such an arm is covered across the whole range)."""

    arm: Arm
    best: int  # the batch index of its best score
    score: float  # its best score: the best of all
    anchor: int  # its smallest batch within noise of its best
    explores: bool
    others: tuple[Arm, ...]  # the other arms with a score, best first

    @classmethod
    def of(cls, view: View, ranked: list[Arm]) -> Leader:
        arm = ranked[0]
        best, score = view.best(arm)
        anchor = view.anchor(arm)
        most = max(len(view.table[a]) for a in ranked if a[0] == arm[0])
        explores = len(view.table[arm]) >= most
        return cls(arm, best, score, anchor, explores, tuple(ranked[1:]))


def wider(arm: Arm, other: Arm) -> int:
    """How many bytes per element wider ``arm``'s precision is than ``other``'s: a precision
    half as wide holds twice the batch in the same memory, so its cliffs (caches, memory
    pressure) come one batch step later."""
    return PRECISION_BYTES.get(arm[1], 4) - PRECISION_BYTES.get(other[1], 4)
