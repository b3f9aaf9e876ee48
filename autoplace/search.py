"""Which configuration to measure next: search strategies over the placement space.

A strategy is a pure function of what is known: given the candidate space, the
scores measured so far (``None`` for a configuration that failed) and the
configurations being measured right now (by this process or by other workers
sharing the study), it proposes the next configuration, or ``None`` when it has
nothing worth measuring. Optuna stores the results and lets several workers share
them; strategies never touch storage.

:class:`Climb`, the default, uses the problem's shape. For a fixed (device,
precision, width), the score as a function of log2(batch size) is usually
unimodal: per-step overheads dominate small batches, memory and cache pressure
large ones. So:

1. screen: every arm (device, precision, width) is measured at one start batch;
2. climb: the most promising arm that still has a better-looking neighbour gets
   that neighbour measured (up or down the batch list), until every arm sits on a
   local optimum, or is out of reach of the best arm;
   Scores within ``noise`` of an arm's best count as a plateau, and the climb
   continues past its edges: on a noisy machine one flat step proves no peak;
3. an arm is out of reach when even growing at the best rate any arm has shown
   per batch doubling, for every step it has left, it could not beat the best
   score by more than ``noise``.

Out-of-memory (``too_big``/``oom``) at a batch rules out larger batches of that arm.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from autoplace.config import Config
from autoplace.objectives import Objective

#: A configuration's result as the search sees it: a score, or None for a failure.
Scores = Mapping[Config, "float | None"]


@dataclasses.dataclass(frozen=True)
class Space:
    """The candidates: every combination of the four axes."""

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    precisions: tuple[str, ...]
    widths: tuple[int | None, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_sizes", tuple(sorted(set(self.batch_sizes))))

    def arms(self) -> list[tuple[str, str, int | None]]:
        return list(itertools.product(self.devices, self.precisions, self.widths))

    def configs(self) -> list[Config]:
        return [
            Config(device=d, batch_size=b, precision=p, width=w)
            for d, p, w in self.arms()
            for b in self.batch_sizes
        ]

    def __len__(self) -> int:
        return len(self.devices) * len(self.batch_sizes) * len(self.precisions) * len(self.widths)


class Strategy(Protocol):
    """Proposes what to measure next.

    ``propose`` must be a pure function of its arguments, never return a
    configuration in ``scores`` or ``pending``, and return ``None`` once nothing
    left is worth measuring. It is called from one thread.
    """

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> Config | None: ...


class Grid:
    """Every configuration, in order: the exhaustive baseline."""

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> Config | None:
        for config in space.configs():
            if config not in scores and config not in pending:
                return config
        return None


def _arm(c: Config) -> tuple[str, str, int | None]:
    return (c.device, c.precision, c.width)


@dataclasses.dataclass(frozen=True)
class Climb:
    """Screen every arm at one batch size, then climb the batch axis of the promising ones.

    Args:
        start_batch: the batch size arms are screened at (the nearest in the space).
        noise: relative score difference treated as measurement noise.
    """

    start_batch: int = 64
    noise: float = 0.05

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> Config | None:
        batches = space.batch_sizes
        start = min(
            range(len(batches)), key=lambda i: abs(math.log2(batches[i] / self.start_batch))
        )
        taken = set(scores) | set(pending)
        arms = space.arms()

        def cfg(arm: tuple[str, str, int | None], i: int) -> Config:
            return Config(device=arm[0], batch_size=batches[i], precision=arm[1], width=arm[2])

        # 1. screen
        for arm in arms:
            if cfg(arm, start) not in taken:
                return cfg(arm, start)

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
        # An arm whose screen failed (out of memory) steps down below the failure.
        for arm, measured in table.items():
            j = ceiling[arm] - 1
            if not measured and 0 <= j < start and cfg(arm, j) not in taken:
                return cfg(arm, j)
        best_scores = [s for t in table.values() for s in t.values()]
        if not best_scores:
            return None  # nothing ran at any batch size
        best = max(best_scores) if objective.direction == "maximize" else min(best_scores)
        growth = self._best_growth(table, objective)

        # 2. climb: candidates are the unmeasured neighbours of each arm's best batch
        sign = 1.0 if objective.direction == "maximize" else -1.0
        options: list[tuple[float, Config]] = []
        for arm, measured in table.items():
            if not measured:
                continue
            i_best = max(measured, key=lambda i: sign * measured[i])
            s_best = measured[i_best]
            # Batches within the noise of the arm's best form a plateau; a flat or
            # noisy step is no proof of a peak, so the climb goes on past its edges.
            plateau = [i for i, v in measured.items() if objective.gain(s_best, v) <= self.noise]
            for j, up in ((max(plateau) + 1, True), (min(plateau) - 1, False)):
                if not 0 <= j < ceiling[arm] or j in measured:
                    continue
                c = cfg(arm, j)
                if c in taken:
                    continue
                # An arm gets a second point before it is judged: its own growth counts.
                if len(measured) >= 2 and s_best != best:
                    left = (ceiling[arm] - j) if up else (j + 1)
                    optimistic = self._project(s_best, growth, left, objective)
                    if objective.gain(optimistic, best) <= self.noise:
                        continue  # 3. out of reach
                # Most promising first: the arm's current best, then the upward direction.
                rank = objective.gain(s_best, best) + (1e-9 if up else 0.0)
                options.append((rank, c))
        if not options:
            return None
        return max(options, key=lambda o: o[0])[1]

    @staticmethod
    def _best_growth(table: Mapping[tuple, Mapping[int, float]], objective: Objective) -> float:
        """Largest improvement factor seen between neighbouring batch sizes of any arm (>= 1)."""
        growth = 1.0
        for measured in table.values():
            for i, s in measured.items():
                nxt = measured.get(i + 1)
                if nxt is not None and s > 0 and nxt > 0:
                    ratio = nxt / s if objective.direction == "maximize" else s / nxt
                    growth = max(growth, ratio, 1.0 / ratio)
        return growth

    @staticmethod
    def _project(score: float, growth: float, steps: int, objective: Objective) -> float:
        factor = growth ** max(steps, 1)
        return score * factor if objective.direction == "maximize" else score / factor


def strategy_named(name: str) -> Strategy:
    from autoplace.errors import BadInputError

    if name == "climb":
        return Climb()
    if name == "grid":
        return Grid()
    raise BadInputError(f"unknown search {name!r}: use climb (the default) or grid")


def ordered_batches(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted(set(values)))
