"""Tuning: what to measure next, what the measurements say, and the loop that asks.

Objectives say what "best" means; a :class:`Strategy` proposes each group of
configurations (:class:`Climb`, the default, or the exhaustive :class:`Grid`);
``_drift`` puts groups measured at different times on one scale; ``_verdict`` ranks
the configurations and compares finalists turn by turn; ``_loop`` is :func:`tune`.
"""

from autoplace.tuning._climb import Climb
from autoplace.tuning._drift import corrected_scores
from autoplace.tuning._grid import Grid
from autoplace.tuning._loop import (
    CONFIRM_CAP_S,
    DUEL_CAP_S,
    EQUIVALENT,
    SEARCH_CAP_S,
    Scored,
    TrialEvent,
    TuneResult,
    lower_bound,
    margin,
    tune,
)
from autoplace.tuning._objectives import (
    OBJECTIVES,
    Objective,
    latency,
    make_objective,
    throughput,
    time_to_finish,
)
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space, strategy_named
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import MAX_GROUP, Scores, Strategy

__all__ = [
    "CONFIRM_CAP_S",
    "DEFAULT_BATCH_SIZES",
    "DUEL_CAP_S",
    "EQUIVALENT",
    "MAX_GROUP",
    "OBJECTIVES",
    "SEARCH_CAP_S",
    "Climb",
    "Grid",
    "Objective",
    "Scored",
    "Scores",
    "Space",
    "Strategy",
    "TrialEvent",
    "TuneResult",
    "build_space",
    "corrected_scores",
    "latency",
    "lower_bound",
    "make_objective",
    "margin",
    "strategy_named",
    "throughput",
    "time_to_finish",
    "tune",
]
