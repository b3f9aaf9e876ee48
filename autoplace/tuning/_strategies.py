"""Which configurations to measure next: the strategy protocol and the exhaustive grid.

A strategy is a pure function of what is known: given the candidate space, the
scores measured so far (``None`` for a configuration that failed) and the
configurations being measured right now (by this process or by other workers
sharing the study), it proposes the next *group* of configurations, measured
together (their timed loops in turns), or an empty group when it has nothing worth
measuring. The loop adds a reference to each group (the best configuration so
far), so every score the strategy sees is put on one scale with the others, the
machine's drift between groups taken out (:func:`autoplace.tuning._search.estimates`).
Strategies never touch storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from autoplace.config import Config
from autoplace.objectives import Objective
from autoplace.tuning._space import Space

#: A configuration's result as the search sees it: a score, or None for a failure.
Scores = Mapping[Config, "float | None"]
#: The most new configurations a strategy proposes to measure together. Five, not three:
#: each group pays a pass of its own (the reference timed again, the study read and
#: written, the verdict judged), and with five the Climb measures the same configurations
#: of the eight synthetic shapes in 39 groups instead of 56 (the cover's batches below the
#: screen go in one group), each shape's best still exact (``tests/tuning/test_climb.py``).
MAX_GROUP = 5


class Strategy(Protocol):
    """Proposes what to measure next.

    ``propose`` must be a pure function of its arguments and return a group of
    distinct configurations, none in ``scores`` or ``pending``, of at most
    :data:`MAX_GROUP`: they are measured together, their timed loops in turns. It
    returns an empty group once nothing left is worth measuring. It is called from
    one thread.
    """

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> tuple[Config, ...]: ...
