"""What one tune is after, for each of its passes: the space, the objective, and the
options that decide what to measure next and how the verdict is drawn. Built once from
the :class:`~._request.TuneRequest` (:meth:`Plan.of`), so that no part of the loop slices
options out of the request again."""

from __future__ import annotations

import dataclasses

from autoplace.objectives import Objective
from autoplace.tuning._climb import Climb
from autoplace.tuning._quiet import BusyPolicy
from autoplace.tuning._request import TuneRequest
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import Strategy


@dataclasses.dataclass(frozen=True)
class Plan:
    """A tune's space and objective, and the options every pass reads.

    Attributes:
        space: the configurations searched.
        objective: what "best" means.
        strategy: what the search proposes next (default: a :class:`~._climb.Climb`).
        confirm: the finalists confirmed in windows (0: none, the search's pick stands).
        max_deviation: a lower precision's tolerance against float32 (``None``: off).
        if_busy: what a busy machine does to the verdict's windows (``warn``, ``wait``,
            ``refuse``), waiting up to ``quiet_wait`` seconds.
        steps_per_call: the steps per call the pick may be timed at beside one.
    """

    space: Space
    objective: Objective
    strategy: Strategy
    confirm: int
    max_deviation: float | None
    if_busy: BusyPolicy
    quiet_wait: float
    steps_per_call: tuple[int, ...]

    @classmethod
    def of(cls, request: TuneRequest, space: Space) -> Plan:
        return cls(
            space=space,
            objective=request.objective_value,
            strategy=request.strategy or Climb(),
            confirm=request.confirm,
            max_deviation=request.max_deviation,
            if_busy=request.if_busy,
            quiet_wait=request.quiet_wait,
            steps_per_call=tuple(request.steps_per_call),
        )

    @classmethod
    def judging(
        cls,
        space: Space,
        objective: Objective,
        max_deviation: float | None,
        steps_per_call: tuple[int, ...] = (),
    ) -> Plan:
        """The plan a study is judged again under (``explain``, ``report``): what the verdict
        reads of the tune's options; nothing is measured."""
        return cls(space, objective, Climb(), 1, max_deviation, "warn", 0.0, steps_per_call)

    @property
    def fixed_batch(self) -> bool:
        return len(self.space.batch_sizes) == 1
