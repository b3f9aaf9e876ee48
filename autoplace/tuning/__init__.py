"""Tuning: what to measure next, what the measurements say, and the loop that asks.

Objectives say what "best" means; options turn what the user asked for into a
:class:`Space`; a :class:`Strategy` proposes each group of configurations
(:class:`Climb`, the default, or the exhaustive :class:`Grid`); ``_drift`` puts
groups measured at different times on one scale; ``_verdict`` judges what a study
holds, once per pass, as a :class:`Standing`; ``_phases`` says how hard each phase
(search, confirm, duel) measures; ``_loop`` is :func:`tune`, and ``_document`` the
recommendation it writes; ``_session`` is :func:`tune`, a session that runs the passes of
``_loop`` (each group's run in ``_group``, what comes next in ``_next``) and draws the
verdict once (``_judge``) that the recommendation (``_document``) and the answer
(``_answer``) are views of; ``_explain`` is :func:`explain`, the study's pick explained
(by :mod:`autoplace.explaining`).
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
from autoplace.tuning._document import build_document
from autoplace.tuning._drift import Effects, corrected_scores, fit_effects
from autoplace.tuning._explain import StudyView, explain, read_study
from autoplace.tuning._fill import fill_fit
from autoplace.tuning._fit_points import FitPoints
from autoplace.tuning._grid import Grid
from autoplace.tuning._identity import study_suffix
from autoplace.tuning._judge import Judged, Tuned, Verdict, judge
from autoplace.tuning._margin import (
    EQUIVALENT,
    MIN_WINDOWS,
    Comparison,
    Noise,
    Scored,
    compare,
    could_decide,
    pooled_noise,
)
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space, strategy_named
from autoplace.tuning._phases import CONFIRM_CAP_S, DUEL_CAP_S, SEARCH_CAP_S, Phase, phase_settings
from autoplace.tuning._quiet import BUSY_POLICIES, QUIET_WAIT_S, BusyPolicy, await_quiet
from autoplace.tuning._request import TuneRequest
from autoplace.tuning._result import GroupEvent, TrialEvent, TuneResult
from autoplace.tuning._session import partial_path, tune
from autoplace.tuning._space import Space
from autoplace.tuning._standing import CONFIRM_REACH, LIST_REACH, Standing
from autoplace.tuning._strategies import MAX_GROUP, Scores, Strategy
from autoplace.tuning._verdict import standing
from autoplace.tuning._windows import (
    MAX_WINDOWS,
    RESOLUTION,
    confirmation_window,
    duel,
    finalists,
)

__all__ = [
    "BUSY_POLICIES",
    "CONFIRM_CAP_S",
    "CONFIRM_REACH",
    "DEFAULT_BATCH_SIZES",
    "DUEL_CAP_S",
    "EQUIVALENT",
    "LIST_REACH",
    "MAX_GROUP",
    "MAX_WINDOWS",
    "MIN_WINDOWS",
    "OBJECTIVES",
    "QUIET_WAIT_S",
    "RESOLUTION",
    "SEARCH_CAP_S",
    "BusyPolicy",
    "Climb",
    "Comparison",
    "Effects",
    "FitPoints",
    "Grid",
    "GroupEvent",
    "Judged",
    "Noise",
    "Objective",
    "Phase",
    "Scored",
    "Scores",
    "Space",
    "Standing",
    "Strategy",
    "StudyView",
    "TrialEvent",
    "TuneRequest",
    "TuneResult",
    "Tuned",
    "Verdict",
    "await_quiet",
    "build_document",
    "build_space",
    "compare",
    "confirmation_window",
    "corrected_scores",
    "could_decide",
    "duel",
    "explain",
    "fill_fit",
    "finalists",
    "fit_effects",
    "judge",
    "latency",
    "make_objective",
    "partial_path",
    "phase_settings",
    "pooled_noise",
    "read_study",
    "standing",
    "strategy_named",
    "study_suffix",
    "throughput",
    "time_to_finish",
    "tune",
]
