"""The exhaustive baseline: every configuration of the space, in order."""

from __future__ import annotations

import itertools

from autoplace.config import Config
from autoplace.objectives import Objective
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores


class Grid:
    """Every configuration, in order, :data:`MAX_GROUP` at a time: the exhaustive baseline."""

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> tuple[Config, ...]:
        left = (c for c in space.configs() if c not in scores and c not in pending)
        return tuple(itertools.islice(left, MAX_GROUP))
