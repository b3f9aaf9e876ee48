"""What :func:`autoplace.tune` tells while it runs (events) and returns (its result)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoplace.answer import Answer
from autoplace.config import Config
from autoplace.devices import DeviceInfo
from autoplace.explaining import Explanation
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._scored import Scored
from autoplace.tuning._space import Space
from autoplace.tuning._standing import Standing

if TYPE_CHECKING:
    from autoplace.tuning._judge import Verdict


@dataclasses.dataclass(frozen=True)
class GroupEvent:
    """What ``on_group`` hears before a group is measured: the phase (its name) and its
    configurations."""

    phase: str
    configs: tuple[Config, ...]
    new_trials: int
    budget: int | None


@dataclasses.dataclass(frozen=True)
class TrialEvent:
    """What ``on_trial`` hears after each configuration, with the phase that measured it."""

    measurement: Measurement
    score: float | None
    best: Scored | None
    new_trials: int
    budget: int | None
    objective: Objective
    phase: str = "search"


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """Everything :func:`tune` found. ``document`` is what was written to ``out``."""

    study_name: str
    storage: str
    objective: Objective
    space: Space
    #: The verdict, drawn once: the standing, why the winner wins, the findings.
    verdict: Verdict
    new_trials: int
    interrupted: bool
    out: Path | None
    document: dict[str, Any]
    #: The compact answer a study keeps and :func:`autoplace.recommend` caches; ``None``
    #: when nothing was recommended or the tune was interrupted.
    answer: Answer | None = None
    #: The machine's devices, as the tune's backend listed them.
    devices: tuple[DeviceInfo, ...] = ()
    #: What the run did that its table does not show, one line each (an interrupt during
    #: a wait, nothing new measured, trials of a killed run measured again, slow batches).
    notes: tuple[str, ...] = ()

    @property
    def standing(self) -> Standing:
        return self.verdict.standing

    @property
    def explanation(self) -> Explanation:
        return self.verdict.explanation

    @property
    def measurements(self) -> dict[Config, Measurement]:
        """Every configuration of the space the study holds, with its figures."""
        return dict(self.standing.figures)

    @property
    def best(self) -> Scored | None:
        return self.standing.best

    @property
    def per_device_precision(self) -> list[Scored]:
        """The best configuration of each (device, precision), best first."""
        return self.standing.per_group

    @property
    def closest(self) -> Scored | None:
        """The configuration closest to the pick, whatever its device or precision."""
        ranking = self.standing.ranking
        found = ranking.closest if ranking is not None else None
        return found[0] if found else None
