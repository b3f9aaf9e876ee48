"""Tuning: what to measure next, what the measurements say, and the loop that asks.

Objectives say what "best" means; options turn what the user asked for into a
:class:`Space`; a :class:`Strategy` proposes the search's groups (:class:`Climb`, the
default, or the exhaustive :class:`Grid`). The tune runs in phases (``_phase``: each one
value, ``_phases``: in order): the search, the confirmation's windows (``_confirm``), then
what follows the pick (feeding, steps per call, memory). ``_standing`` judges what a study
holds once per pass; ``_loop`` drives the passes; ``_session`` is :func:`tune`; ``_judge``
draws the verdict once, and the recommendation file (``_document``) and the answer
(``_answer``) are views of it; ``_explain`` is :func:`explain`.
"""

from autoplace.objectives import (
    OBJECTIVES,
    Objective,
    latency,
    make_objective,
    throughput,
    time_to_finish,
)
from autoplace.tuning._climb import Climb
from autoplace.tuning._compare import Comparison, Spread, compare
from autoplace.tuning._explain import StudyView, explain, read_study
from autoplace.tuning._fill import fill_fit
from autoplace.tuning._fit_points import FitPoints
from autoplace.tuning._grid import Grid
from autoplace.tuning._identity import study_suffix
from autoplace.tuning._judge import Judged, Tuned, Verdict, judge
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space, strategy_named
from autoplace.tuning._phase import Phase
from autoplace.tuning._phases import PHASES
from autoplace.tuning._quiet import BUSY_POLICIES, QUIET_WAIT_S, BusyPolicy, await_quiet
from autoplace.tuning._request import TuneRequest
from autoplace.tuning._result import GroupEvent, TrialEvent, TuneResult
from autoplace.tuning._scored import Scored
from autoplace.tuning._session import partial_path, tune
from autoplace.tuning._space import Space
from autoplace.tuning._standing import Standing
from autoplace.tuning._strategies import MAX_GROUP, Scores, Strategy

__all__ = [
    "BUSY_POLICIES",
    "DEFAULT_BATCH_SIZES",
    "MAX_GROUP",
    "OBJECTIVES",
    "PHASES",
    "QUIET_WAIT_S",
    "BusyPolicy",
    "Climb",
    "Comparison",
    "FitPoints",
    "Grid",
    "GroupEvent",
    "Judged",
    "Objective",
    "Phase",
    "Scored",
    "Scores",
    "Space",
    "Spread",
    "Standing",
    "Strategy",
    "StudyView",
    "TrialEvent",
    "TuneRequest",
    "TuneResult",
    "Tuned",
    "Verdict",
    "await_quiet",
    "build_space",
    "compare",
    "explain",
    "fill_fit",
    "judge",
    "latency",
    "make_objective",
    "partial_path",
    "read_study",
    "strategy_named",
    "study_suffix",
    "throughput",
    "time_to_finish",
    "tune",
]
