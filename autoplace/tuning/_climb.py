"""Which configurations to measure next: search strategies over the placement space.

A strategy is a pure function of what is known: given the candidate space, the
scores measured so far (``None`` for a configuration that failed) and the
configurations being measured right now (by this process or by other workers
sharing the study), it proposes the next *group* of configurations, measured
together (their timed loops in turns), or an empty group when it has nothing worth
measuring. The tuner adds a reference to each group (the best configuration so
far), so every score the strategy sees is corrected for the machine's drift (see
:mod:`autoplace.drift`). Optuna stores the results and lets several workers share
them; strategies never touch storage.

:class:`Climb`, the default, uses the problem's shape. For a fixed (device,
precision, width), the score as a function of log2(batch size) is usually
unimodal: per-step overheads dominate small batches, memory and cache pressure
large ones; and arms on one device tend to peak at similar batch sizes. So:

1. screen: every arm (device, precision, width) is measured at one start batch
   (for throughput, a third of the way down from the largest batch), together;
2. climb the leader (the arm with the best score): bracket its best with a jump
   of two batch steps (x4) each way, both at once, jump on while its *anchor* (the
   smallest batch scoring within ``noise`` of its best: as good, and cheaper) is at
   the edge of what it has measured, then both neighbours of its best, and down in
   single steps while its smallest measured batch is within ``sweep`` of its best
   (cheap, and a CPU can peak again at a batch small enough for its caches);
3. measure every other arm at the leader's anchor, together (unless it trails the
   leader by more than ``drop`` at every batch both have measured: emulated
   precisions on a CPU can run at half speed or less), and refine those within
   ``reach`` of the best around their best. One that overtakes the
   leader leads, but the jumps and the sweep of step 2 are for one arm per device
   (the one measured most), since arms on one device peak at similar batches.

Out-of-memory (``too_big``/``oom``) at a batch rules out larger batches of that
arm; an arm whose screen does not fit steps down until one does.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable

from autoplace.config import Config
from autoplace.tuning._objectives import Objective
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores


def _arm(c: Config) -> tuple[str, str, int | None]:
    return (c.device, c.precision, c.width)


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

    def _start(self, batches: tuple[int, ...], objective: Objective) -> int:
        if self.start_batch is not None:
            target = math.log2(self.start_batch)
        else:
            low, high = math.log2(batches[0]), math.log2(batches[-1])
            fraction = 2 / 3 if objective.name == "throughput" else 1 / 2
            target = low + fraction * (high - low)
        return min(range(len(batches)), key=lambda i: abs(math.log2(batches[i]) - target))

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> tuple[Config, ...]:
        batches = space.batch_sizes
        start = self._start(batches, objective)
        taken = set(scores) | set(pending)
        arms = space.arms()

        def cfg(arm: tuple[str, str, int | None], i: int) -> Config:
            return Config(device=arm[0], batch_size=batches[i], precision=arm[1], width=arm[2])

        def free(arm: tuple[str, str, int | None], i: int) -> bool:
            return 0 <= i < ceiling[arm] and cfg(arm, i) not in taken

        def group(configs: Iterable[Config]) -> tuple[Config, ...]:
            return tuple(itertools.islice(dict.fromkeys(configs), MAX_GROUP))

        # Per arm: measured scores by batch index, and where failures cap the batch.
        table: dict[tuple, dict[int, float]] = {arm: {} for arm in arms}
        ceiling: dict[tuple, int] = {arm: len(batches) for arm in arms}
        for c, s in scores.items():
            arm = _arm(c)
            if arm not in table or c.batch_size not in batches:
                continue
            i = batches.index(c.batch_size)
            if s is None:
                ceiling[arm] = min(ceiling[arm], i)
            else:
                table[arm][i] = s

        # 1. screen every arm; one whose screen failed steps down below the failure
        screen = group(
            cfg(arm, start)
            for arm in arms
            if free(arm, start) and not table[arm] and ceiling[arm] > start
        )
        if screen:
            return screen
        below = group(
            cfg(arm, ceiling[arm] - 1)
            for arm in arms
            if not table[arm] and free(arm, ceiling[arm] - 1)
        )
        if below:
            return below
        sign = 1.0 if objective.direction == "maximize" else -1.0

        def best_of(arm: tuple) -> tuple[int, float]:
            i = max(table[arm], key=lambda i: sign * table[arm][i])
            return i, table[arm][i]

        ranked = sorted((a for a in arms if table[a]), key=lambda a: -sign * best_of(a)[1])
        if not ranked:
            return ()  # nothing ran at any batch size

        def anchor(arm: tuple) -> int:
            """The smallest batch scoring within noise of the arm's best: as good, and cheaper."""
            _, s_best = best_of(arm)
            return min(i for i, v in table[arm].items() if objective.gain(s_best, v) <= self.noise)

        def neighbours(arm: tuple) -> list[Config]:
            """The unmeasured neighbours of the arm's best."""
            i = best_of(arm)[0]
            return [cfg(arm, j) for j in (i + 1, i - 1) if free(arm, j)]

        # 2. climb the leader: bracket its best (a jump of two batch steps each way,
        #    together), jump on while its anchor is at the edge of what is measured, then
        #    refine around its best. The bracket looks below a best that was climbed to:
        #    on a CPU a small batch can win again once it fits in cache.
        leader = ranked[0]
        i_best, s_lead = best_of(leader)
        measured, i_anchor = table[leader], anchor(leader)
        #    Only one arm per device is explored so (its *scout*: the one measured most):
        #    arms on one device peak at similar batches, so an arm that overtakes the
        #    scout, at the scout's anchor, is refined in single steps from there.
        scout = max((a for a in ranked if a[0] == leader[0]), key=lambda a: len(table[a]))
        explore = len(measured) >= len(table[scout])
        bracket = []
        for seen, jumps in (
            (max(measured) > i_best, (i_best + 2, i_best + 1)),
            (min(measured) < i_best, (i_best - 2, i_best - 1)),
        ):
            j = next((j for j in jumps if free(leader, j)), None)
            if explore and not seen and j is not None:
                bracket.append(cfg(leader, j))
        if bracket:
            return group(bracket)
        if explore and i_anchor == max(measured):
            for j in (i_anchor + 2, i_anchor + 1):
                if free(leader, j) and all(k not in measured for k in range(i_anchor + 1, j + 1)):
                    return (cfg(leader, j),)
        if explore and i_anchor == min(measured):
            for j in (i_anchor - 2, i_anchor - 1):
                if free(leader, j) and all(k not in measured for k in range(j, i_anchor)):
                    return (cfg(leader, j),)
        steps = neighbours(leader)
        if steps:
            return group(steps)
        #    then sweep down in single steps while the smallest batch measured still
        #    scores within ``sweep`` of the best: small batches are cheap to measure,
        #    and a dip there does not prove that smaller ones lose
        i_low = min(measured)
        sweeping = explore and objective.gain(s_lead, measured[i_low]) <= self.sweep
        if sweeping and free(leader, i_low - 1):
            return (cfg(leader, i_low - 1),)

        # 3. the others: try each at the leader's anchor, unless the leader beats it by
        #    more than ``drop`` wherever both were measured; refine those within reach
        def trails(arm: tuple) -> bool:
            common = table[leader].keys() & table[arm].keys()
            gains = [objective.gain(table[leader][i], table[arm][i]) for i in common]
            return bool(gains) and min(gains) > self.drop

        at_anchor = group(
            cfg(arm, i_anchor)
            for arm in ranked[1:]
            if i_anchor not in table[arm] and free(arm, i_anchor) and not trails(arm)
        )
        if at_anchor:
            return at_anchor
        return group(
            c
            for arm in ranked[1:]
            if objective.gain(s_lead, best_of(arm)[1]) <= self.reach
            for c in neighbours(arm)
        )
