"""Climb, the default search: screen every arm, climb the leader, then try the rest where it peaked.

An *arm* is a (device, precision, width). For a fixed arm the score as a function
of log2(batch size) is usually unimodal (per-step overheads dominate small batches,
memory and cache pressure large ones), and arms on one device tend to peak at
similar batch sizes. The *leader* is the arm with the best score; its *anchor* is
its smallest batch scoring within ``noise`` of its best (as good, and cheaper). Only
one arm per device, the one measured most, *explores*: steps marked (explores) skip
a leader that does not. :meth:`Climb.propose` runs the steps in order and returns the
first non-empty group (at most :data:`MAX_GROUP`, measured together); none: done.

1. :func:`screen`: measure every arm at one start batch, together (for throughput,
   a third of the way down from the largest batch); an arm whose screen failed
   then tries the largest batch below its failures.
2. :func:`bracket` (explores): measure the leader two batch steps (x4) above and
   below its best, together, on each side where it has measured nothing yet (one
   step where two is not free).
3. :func:`jump` (explores): while the leader's anchor is the largest (or the
   smallest) batch it has measured, jump on from it by two batch steps.
4. :func:`neighbours`: measure the leader one batch step either side of its best.
5. :func:`sweep` (explores): step the leader down one batch at a time while its
   smallest measured batch scores within ``sweep`` of its best (small batches are
   cheap, and a CPU can peak again at a batch small enough for its caches).
6. :func:`at_anchor`: measure every other arm at the leader's anchor, together,
   unless the leader beats it by more than ``drop`` at every batch both have
   measured (emulated precisions on a CPU can run at half speed or less).
7. :func:`refine`: measure one step either side of the best batch of every other
   arm within ``reach`` of the leader. One that overtakes the leader leads.

A failure (``None``: out of memory, too big) at a batch rules out that batch and
every larger one for that arm. Which score is better is the objective's business
(:meth:`Objective.key`, :meth:`Objective.gain`), so no step depends on the direction.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping

from autoplace.config import Config
from autoplace.tuning._objectives import Objective
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores

#: (device, precision, width): the axes other than the batch size.
Arm = tuple[str, str, int | None]
Group = tuple[Config, ...]


@dataclasses.dataclass(frozen=True)
class Climb:
    """Screen every arm, climb the leader coarse-to-fine, then try the rest where it peaked.

    Args:
        start_batch: the batch size arms are screened at (the nearest in the space).
            ``None``: a third of the way down from the largest batch (in log2) for
            throughput, which usually rises with batch size; the middle otherwise.
        noise: relative score difference treated as measurement noise.
        reach: an arm whose score at the leader's best batch is further than this
            behind the best is not refined.
        sweep: the leader is measured at ever smaller batches while its smallest
            measured batch scores within this of its best.
        drop: an arm the leader beats by more than this at every batch both have
            measured is not tried at the leader's anchor (0.5: at 1.5 times the speed).
    """

    start_batch: int | None = None
    noise: float = 0.05
    reach: float = 0.10
    sweep: float = 1 / 3
    drop: float = 0.5

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> Group:
        view = _View.of(self, space, objective, scores, pending)
        group = screen(view)
        if group:
            return group
        ranked = view.ranked()
        if not ranked:
            return ()  # nothing ran at any batch size
        leader = _Leader.of(view, ranked)
        for step in (bracket, jump, neighbours, sweep, at_anchor, refine):
            group = step(view, leader)
            if group:
                return group
        return ()


def _start_index(start_batch: int | None, batches: tuple[int, ...], objective: Objective) -> int:
    """The index of the batch arms are screened at (see :class:`Climb`'s ``start_batch``)."""
    if start_batch is not None:
        target = math.log2(start_batch)
    else:
        low, high = math.log2(batches[0]), math.log2(batches[-1])
        fraction = 2 / 3 if objective.name == "throughput" else 1 / 2
        target = low + fraction * (high - low)
    return min(range(len(batches)), key=lambda i: abs(math.log2(batches[i]) - target))


def _group(configs: Iterable[Config]) -> Group:
    """The distinct ``configs``, in order, at most :data:`MAX_GROUP` of them."""
    return tuple(itertools.islice(dict.fromkeys(configs), MAX_GROUP))


@dataclasses.dataclass(frozen=True)
class _View:
    """What is known, per arm, with batch sizes as indices into ``batches``. Read-only.

    ``table[arm]`` holds the arm's scores by batch index (in the order measured);
    ``ceiling[arm]`` is the index of its smallest failed batch (``len(batches)`` if
    none failed); ``taken`` is every configuration measured or being measured.
    """

    settings: Climb
    objective: Objective
    batches: tuple[int, ...]
    start: int
    arms: tuple[Arm, ...]
    table: Mapping[Arm, Mapping[int, float]]
    ceiling: Mapping[Arm, int]
    taken: frozenset[Config]

    @classmethod
    def of(
        cls,
        settings: Climb,
        space: Space,
        objective: Objective,
        scores: Scores,
        pending: frozenset[Config],
    ) -> _View:
        batches = space.batch_sizes
        start = _start_index(settings.start_batch, batches, objective)
        arms = tuple(space.arms())
        table: dict[Arm, dict[int, float]] = {arm: {} for arm in arms}
        ceiling = dict.fromkeys(arms, len(batches))
        for c, s in scores.items():
            arm = (c.device, c.precision, c.width)
            if arm not in table or c.batch_size not in batches:
                continue
            i = batches.index(c.batch_size)
            if s is None:
                ceiling[arm] = min(ceiling[arm], i)
            else:
                table[arm][i] = s
        taken = frozenset(scores) | pending  # measured, or being measured
        return cls(settings, objective, batches, start, arms, table, ceiling, taken)

    def config(self, arm: Arm, i: int) -> Config:
        return Config(device=arm[0], batch_size=self.batches[i], precision=arm[1], width=arm[2])

    def free(self, arm: Arm, i: int) -> bool:
        """Whether batch ``i`` exists, is below the arm's failures, and is not taken."""
        return 0 <= i < self.ceiling[arm] and self.config(arm, i) not in self.taken

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

    def around_best(self, arm: Arm) -> list[Config]:
        """The free batches one step above and below the arm's best, in that order."""
        i, _ = self.best(arm)
        return [self.config(arm, j) for j in (i + 1, i - 1) if self.free(arm, j)]

    def trails(self, arm: Arm, leader: Arm) -> bool:
        """Whether ``leader`` beats ``arm`` by more than ``drop`` at every batch both measured."""
        common = self.table[leader].keys() & self.table[arm].keys()
        gains = [self.objective.gain(self.table[leader][i], self.table[arm][i]) for i in common]
        return bool(gains) and min(gains) > self.settings.drop


@dataclasses.dataclass(frozen=True)
class _Leader:
    """The arm with the best score, and what the steps need to know about it. ``explores``: it
    was measured at least as often as every other arm on its device (arms on one device peak
    at similar batches, so only such an arm is bracketed, jumped and swept)."""

    arm: Arm
    best: int  # the batch index of its best score
    score: float  # its best score: the best of all
    anchor: int  # its smallest batch within noise of its best
    explores: bool
    others: tuple[Arm, ...]  # the other arms with a score, best first

    @classmethod
    def of(cls, view: _View, ranked: list[Arm]) -> _Leader:
        arm = ranked[0]
        best, score = view.best(arm)
        anchor = view.anchor(arm)
        most = max(len(view.table[a]) for a in ranked if a[0] == arm[0])
        explores = len(view.table[arm]) >= most
        return cls(arm, best, score, anchor, explores, tuple(ranked[1:]))


def screen(view: _View) -> Group:
    """Measure every arm with no score at the start batch, together; once none is left
    to screen, each arm still without a score tries the batch below its smallest failure."""
    first = _group(
        view.config(arm, view.start)
        for arm in view.arms
        if not view.table[arm] and view.free(arm, view.start)
    )
    if first:
        return first
    return _group(
        view.config(arm, view.ceiling[arm] - 1)
        for arm in view.arms
        if not view.table[arm] and view.free(arm, view.ceiling[arm] - 1)
    )


def bracket(view: _View, leader: _Leader) -> Group:
    """Measure the exploring leader two batch steps above and below its best (one if two is
    not free), together, on each side where nothing has been measured yet."""
    if not leader.explores:
        return ()
    measured, i = view.table[leader.arm], leader.best
    sides = ((max(measured) > i, (i + 2, i + 1)), (min(measured) < i, (i - 2, i - 1)))
    found = []
    for seen, jumps in sides:
        j = next((j for j in jumps if view.free(leader.arm, j)), None)
        if not seen and j is not None:
            found.append(view.config(leader.arm, j))
    return _group(found)


def jump(view: _View, leader: _Leader) -> Group:
    """While the exploring leader's anchor is its largest measured batch, measure two batch steps
    above it (one if two is not free); else, while it is its smallest, below it."""
    if not leader.explores:
        return ()
    measured, i = view.table[leader.arm], leader.anchor
    # Upward this cannot fire after bracket (an anchor at the top is the best); kept for symmetry.
    for edge, steps in ((max(measured), (2, 1)), (min(measured), (-2, -1))):
        if i == edge:
            for step in steps:
                if view.free(leader.arm, i + step):
                    return (view.config(leader.arm, i + step),)
    return ()


def neighbours(view: _View, leader: _Leader) -> Group:
    """Measure the leader one batch step above and below its best, together."""
    return _group(view.around_best(leader.arm))


def sweep(view: _View, leader: _Leader) -> Group:
    """Measure the exploring leader one batch below its smallest measured one while that
    scores within ``sweep`` of its best: cheap, and a CPU can peak again once batches fit its
    caches."""
    if not leader.explores:
        return ()
    measured = view.table[leader.arm]
    low = min(measured)
    close = view.objective.gain(leader.score, measured[low]) <= view.settings.sweep
    if close and view.free(leader.arm, low - 1):
        return (view.config(leader.arm, low - 1),)
    return ()


def at_anchor(view: _View, leader: _Leader) -> Group:
    """Measure every other arm at the leader's anchor, together, unless the leader beats it by
    more than ``drop`` at every batch both have measured."""
    i = leader.anchor
    return _group(
        view.config(arm, i)
        for arm in leader.others
        if i not in view.table[arm] and view.free(arm, i) and not view.trails(arm, leader.arm)
    )


def refine(view: _View, leader: _Leader) -> Group:
    """Measure one batch step above and below the best of every other arm whose best is within
    ``reach`` of the leader's, together (best arms first)."""
    reach, gain = view.settings.reach, view.objective.gain
    return _group(
        c
        for arm in leader.others
        if gain(leader.score, view.best(arm)[1]) <= reach
        for c in view.around_best(arm)
    )
