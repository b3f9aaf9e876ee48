"""Climb, the default search: screen every arm, cover the leader's whole range coarsely,
refine around every peak the noise cannot rule out, then try the rest where it peaked.

An *arm* is a (device, precision, width). A score need not be unimodal in the batch
size: per-step overheads dominate small batches and memory and cache pressure large
ones, but a CPU can peak at a batch small enough for its caches and again at a large
one, a transformer can peak early and fall away, a cliff can follow the best batch.
So the search assumes no shape: it looks at the whole range, coarsely, before it
refines. Arms on one device do tend to peak at similar batch sizes, so only one arm
per device, the one measured most, *explores* (steps marked so skip a leader that
does not). The *leader* is the arm with the best score; its *anchor* is its smallest
batch scoring within ``noise`` of its best (as good, and cheaper). :meth:`Climb.propose`
runs the steps in order and returns the first non-empty group (at most
:data:`MAX_GROUP`, measured together); none: done.

1. :func:`screen`: measure every arm at one start batch, together (for throughput,
   a third of the way down from the largest batch); an arm whose screen failed then
   tries its smallest batch (the cheapest; a failure that shows there too, at both ends
   of the range, ends the arm).
2. :func:`cover` (explores): measure the leader every second batch step (x4) across
   the whole range, and at both ends, smallest batches first (they are the cheapest).
   Not above a largest measured batch where the arm has fallen away (it trails the best by
   more than ``drop`` and beats the batch below it by no more than ``reach``:
   :meth:`View.falls_away`).
   For throughput, below the screen the smallest batch and the one midway come first:
   with them, the screen and the batches above, the arm's cost line is tested at both
   ends and in the middle, and any other batch inside is measured only where no line
   holds or the line says it could reach the best (:func:`._reach.could_reach`: measure
   only what could win).
3. :func:`peaks`: measure the leader one batch step either side of every local
   maximum of its scores within ``reach`` of its best: every peak the noise cannot
   rule out, until each is measured on both sides.
4. :func:`gaps` (explores): measure the leader between two batches of the cover
   where the better of them scores within ``gap`` of its best: a narrow peak (a
   batch that fits a CPU's caches) can hide there.
   :func:`predicted` (explores, throughput): where the leader's cost line holds, measure
   each batch between its smallest and largest measured that the line says could reach
   the best: the line tells a narrow peak too, where the cover's stride does not.
5. :func:`at_anchor`: measure every other arm at the leader's anchor, together,
   unless the leader beats it by more than ``drop`` at every batch both have
   measured (emulated precisions on a CPU can run at half speed or less) and, for a
   wider precision, at one below the leader's anchor (its cliff comes first); an arm of
   a wider precision also one batch step below, a narrower one above: half the bytes
   per sample, twice the batch before the same cliff. An arm of another device is
   never dropped, and is also tried at the leader's largest measured batch: a device
   with a larger fixed cost per step (an accelerator's launch) loses at small batches
   and can win at large ones (the seeds' GPU slower than the CPU on a tiny model).
6. :func:`refine`: measure one step either side of the best batch of every other
   arm within ``reach`` of the leader, or within ``edge`` where that batch is the last it
   measured on one side. One that overtakes the leader leads.
7. :func:`lines`: every arm still measured at one batch size gets a second, its
   neighbour below (else above), so that each arm of each device has a line before the
   search ends.

An arm other than the leader is never covered: it is measured at the leader's anchor,
and around its own best only where that is within ``reach`` of the leader's.

A failure (``None``: out of memory, too big, a timeout, NaN) bounds its arm: below a
batch that ran, it rules out that batch and every smaller one (tiny batches going
non-finite); otherwise that batch and every larger one (see ``_failures.arm_bounds``).
Arms that failed across their range never reach the strategy (``_failures.ended_arms``).
Which score is better is the objective's business (:meth:`Objective.key`,
:meth:`Objective.gain`), so no step depends on the direction.
"""

from __future__ import annotations

import dataclasses
import itertools

from autoplace.config import Config
from autoplace.objectives import Objective
from autoplace.tuning._climb_view import Arm, Group, Leader, View, group_of, wider
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores

#: (device, precision, width): the axes other than the batch size.


@dataclasses.dataclass(frozen=True)
class Climb:
    """Screen every arm, climb the leader coarse-to-fine, then try the rest where it peaked.

    Args:
        start_batch: the batch size arms are screened at (the nearest in the space).
            ``None``: a third of the way down from the largest batch (in log2) for
            throughput, which usually rises with batch size; the middle otherwise.
        noise: relative score difference treated as measurement noise (the anchor is
            the smallest batch within it of the best).
        reach: a peak (of the leader), or an arm, further than this behind the best
            is not refined: the noise rules it out.
        edge: an arm whose best is the last of the batches it measured on one side (its
            peak may lie past them) is refined while within this of the leader's best: the
            VGG's float32 peaks at batch 4 where float16, leading, peaks at 32, and rose
            to batch 8, the end of what it measured, 12-16% behind (issue 38).
        gap: a batch between two of the cover's is measured when the better of the two
            scores within this of the best: a narrow peak could hide there.
        drop: an arm the leader beats by more than this at every batch both have
            measured is not tried at the leader's anchor (0.5: at 1.5 times the speed);
            nor is the leader covered above a largest batch it trails by more than this,
            where that batch beats the one below it by no more than ``reach``.
    """

    start_batch: int | None = None
    noise: float = 0.05
    reach: float = 0.10
    edge: float = 0.20
    gap: float = 1 / 3
    drop: float = 0.5

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> Group:
        view = View.of(self, space, objective, scores, pending)
        group = screen(view)
        if group:
            return group
        ranked = view.ranked()
        if not ranked:
            return ()  # nothing ran at any batch size
        leader = Leader.of(view, ranked)
        chosen: Group = ()
        for step in _STEPS:
            found = step(view, leader)
            if found and step is cover and _framing(view, leader):
                return found  # what the frame finds decides what else is worth measuring
            if found and chosen and step not in _FILLERS:
                break
            chosen = group_of((*chosen, *found))
            view = view.taking(found)
            if len(chosen) >= MAX_GROUP:
                break
        return chosen


def screen(view: View) -> Group:
    """Measure every arm with no score at the start batch, together; once none is left to
    screen, each arm still without a score tries its smallest batch: the cheapest, and where
    a failure that does not depend on the batch size shows again and ends the arm."""
    first = group_of(
        view.config(arm, view.start)
        for arm in view.arms
        if not view.table[arm] and view.free(arm, view.start)
    )
    if first:
        return first
    return group_of(
        view.config(arm, 0) for arm in view.arms if not view.table[arm] and view.free(arm, 0)
    )


def cover(view: View, leader: Leader) -> Group:
    """Measure the exploring leader every second batch step across the whole range (counted
    from the start batch), and at the smallest and largest batch, smallest first; past its
    largest measured batch one at a time, so that none is tried above an unknown failure,
    and none above one where the arm falls away (:meth:`View.falls_away`).
    For throughput, below what it measured, first its smallest batch and the one midway
    (in batch steps), then only the batches its cost line leaves a chance
    (:meth:`View.could_reach`)."""
    if not leader.explores:
        return ()
    arm, last = leader.arm, len(view.batches) - 1
    coarse = {i for i in range(len(view.batches)) if (i - view.start) % 2 == 0} | {0, last}
    known = max(view.table[arm])
    below = [i for i in sorted(coarse) if i <= known and view.free(arm, i)]
    above = [i for i in sorted(coarse) if i > known and view.free(arm, i)][:1]
    if view.falls_away(arm, leader.score):
        above = []  # the costliest batches, past a fall that already rules them out
    if below and _framing(view, leader):
        # The line's low end and its middle first: they decide what lies between.
        middle = min(below, key=lambda i: abs(i - (below[0] + min(view.table[arm])) / 2))
        below = sorted({below[0], middle})
    else:
        line = view.line(arm)
        below = [i for i in below if view.could_reach(line, arm, i, leader.score)]
    return group_of(view.config(arm, i) for i in below + above)


def _framing(view: View, leader: Leader) -> bool:
    """Whether the cover, for throughput, has yet to measure the leader's smallest batch
    (below all it measured): then it measures that batch and the one midway, alone in
    their group, before it decides on any batch between."""
    arm = leader.arm
    lowest = max(0, view.floor[arm] + 1)
    return (
        view.objective.rate
        and leader.explores
        and lowest < min(view.table[arm])
        and view.free(arm, lowest)
    )


def peaks(view: View, leader: Leader) -> Group:
    """Measure the leader one batch step either side of each local maximum of its scores
    (no measured neighbour scores better) within ``reach`` of its best, best peaks first."""
    measured, key = view.table[leader.arm], view.objective.key
    order = sorted(measured)
    found = []
    for n, i in enumerate(order):
        beaten = any(key(measured[j]) > key(measured[i]) for j in order[max(0, n - 1) : n + 2])
        if not beaten and view.objective.gain(leader.score, measured[i]) <= view.settings.reach:
            found.append(i)
    found.sort(key=lambda i: -key(measured[i]))
    return group_of(
        view.config(leader.arm, j)
        for i in found
        for j in (i + 1, i - 1)
        if view.free(leader.arm, j)
    )


def gaps(view: View, leader: Leader) -> Group:
    """Measure the exploring leader at each batch left out between two measured ones, when
    the better of the two scores within ``gap`` of the best, best gaps first: a narrow peak
    (a CPU's caches) can hide between two batches of the cover."""
    if not leader.explores:
        return ()
    measured, arm, key = view.table[leader.arm], leader.arm, view.objective.key
    order = sorted(measured)
    found = []
    for lo, hi in itertools.pairwise(order):
        better = max(measured[lo], measured[hi], key=key)
        if hi - lo == 2 and view.objective.gain(leader.score, better) <= view.settings.gap:
            found.append((key(better), lo + 1))
    found.sort(reverse=True)
    return group_of(view.config(arm, i) for _, i in found if view.free(arm, i))


def predicted(view: View, leader: Leader) -> Group:
    """Measure the exploring leader, for throughput, at each batch between its smallest and
    largest measured that its cost line, where one holds, says could reach the best
    (:meth:`View.could_reach`; where none holds, nothing: :func:`gaps` does the work)."""
    if not leader.explores or not view.objective.rate:
        return ()
    measured, arm = view.table[leader.arm], leader.arm
    line = view.line(arm)
    if line is None:
        return ()
    inside = range(min(measured) + 1, max(measured))
    return group_of(
        view.config(arm, i)
        for i in inside
        if view.free(arm, i) and view.could_reach(line, arm, i, leader.score)
    )


def at_anchor(view: View, leader: Leader) -> Group:
    """Measure every other arm at the leader's anchor, together, unless it trails (the leader
    beats it by more than ``drop`` at every batch both have measured; see :meth:`View.trails`
    for a wider precision); an arm of a wider precision also one
    batch step below it, a narrower one above (its cliffs come a step earlier, or later)."""

    def batches(arm: Arm) -> list[int]:
        if arm[0] != leader.arm[0]:
            # Another device: a larger fixed cost per step (an accelerator's launch) loses
            # at small batches and can win at large ones, so also the leader's largest.
            return [leader.anchor, max(view.table[leader.arm])]
        width = wider(arm, leader.arm)
        shifted = leader.anchor - 1 if width > 0 else leader.anchor + 1
        return [leader.anchor] if width == 0 else [leader.anchor, shifted]

    return group_of(
        view.config(arm, i)
        for arm in leader.others
        if not view.trails(arm, leader)
        for i in batches(arm)
        if i not in view.table[arm] and view.free(arm, i)
    )


def refine(view: View, leader: Leader) -> Group:
    """Measure one batch step above and below the best of every other arm whose best is within
    ``reach`` of the leader's, or within ``edge`` where that best is the last of its batches
    on one side, so that its peak may lie past them, together (best arms first)."""
    gain, settings = view.objective.gain, view.settings

    def near(arm: Arm) -> bool:
        i, best = view.best(arm)
        at_end = i in (min(view.table[arm]), max(view.table[arm]))
        reach = max(settings.reach, settings.edge) if at_end else settings.reach
        return gain(leader.score, best) <= reach

    return group_of(c for arm in leader.others if near(arm) for c in view.around_best(arm))


def lines(view: View, leader: Leader) -> Group:
    """Measure every arm that ran at one batch size only at a second, one step below it
    (else above): each arm of each device gets a line before the search ends, so that no
    device or precision is written off on one point (the H200's float32 arm of the README
    MLP ran at one batch and was "not determined"; issue 37). The cheaper neighbour first."""
    found = []
    for arm in view.arms:
        measured = view.table[arm]
        if len(measured) != 1:
            continue
        (i,) = measured
        nxt = next((j for j in (i - 1, i + 1) if view.free(arm, j)), None)
        if nxt is not None:
            found.append(view.config(arm, nxt))
    return group_of(found)


_STEPS = (cover, peaks, gaps, predicted, at_anchor, refine, lines)
#: The steps whose proposals may fill a group that an earlier step left short: what they
#: choose does not hang on the group's results (see :meth:`Climb.propose`).
_FILLERS = (cover, peaks, gaps, predicted)
