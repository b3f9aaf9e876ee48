"""The :class:`Explanation` value: what the cost models say about a study's pick, each
answer typed, and its sentences (found by ``_explanation``, written by ``_sentences``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from autoplace.costs import Arm, ArmModel
from autoplace.explaining._crossing import Crossover
from autoplace.explaining._devices import Scaling
from autoplace.explaining._emulated import Emulated
from autoplace.explaining._feeding import Feeding
from autoplace.explaining._fixed_cost import FixedCost
from autoplace.explaining._run_length import BreakEven
from autoplace.limits import Roofline


@dataclasses.dataclass(frozen=True)
class Explanation:
    """What the cost models say about a study's pick.

    Attributes:
        winner: the recommended configuration's label (``None``: nothing ran).
        loop: the loop the objective ranks on (``fed`` or ``step``).
        models: each arm's cost model.
        crossovers: the winner's arm against the best arm of each other (device,
            precision): above which batch the one with the cheaper sample wins.
        break_even: the winner against each other group's best: after how many samples
            the one with the slower start overtakes.
        run_lengths: what time-to-finish would pick for short, medium and long runs.
        transfer: the winner's feeding and what its remedies gain (``_answers.feeding``).
        fixed_cost: what the fixed cost of the winner's line is (``_answers.fixed_cost``).
        device_start: each device's start-up in a fresh process, paid once a process
            (counted once in the break-evens and the run-length picks).
        emulated: lower precisions with no faster kernels on their device.
        memory: the largest batch of the winner's arm that fits with a margin.
        sentences: the explanation, most important first.
    """

    winner: str | None
    loop: str
    models: Mapping[Arm, ArmModel]
    crossovers: tuple[Crossover, ...] = ()
    break_even: tuple[BreakEven, ...] = ()
    run_lengths: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)
    transfer: Feeding | None = None
    fixed_cost: FixedCost | None = None
    device_start: Mapping[str, float] = dataclasses.field(default_factory=dict)
    emulated: tuple[Emulated, ...] = ()
    memory: Mapping[str, Any] | None = None
    sentences: tuple[str, ...] = ()
    undetermined: tuple[str, ...] = ()
    #: Each arm's best configuration against the machine's limits (``autoplace.limits``),
    #: the winner's first; empty where the limits were not measured.
    rooflines: tuple[Roofline, ...] = ()
    #: The verdict's findings (``autoplace.findings``), as the file's ``[[findings]]``
    #: holds them: the file keeps them beside the explanation, not in it.
    findings: tuple[Mapping[str, Any], ...] = ()
    #: How the pick's kind scales over the device counts measured (``None``: one count).
    scaling: Scaling | None = None

    def as_dict(self) -> dict[str, Any]:
        """The recommendation file's ``[explanation]`` section."""
        return {
            "sentences": list(self.sentences),
            "loop": self.loop,
            "undetermined": list(self.undetermined),
            "arms": [m.as_dict() for m in self.models.values()],
            "crossovers": [c.as_dict() for c in self.crossovers],
            "break_even": [b.as_dict() for b in self.break_even],
            "run_lengths": dict(self.run_lengths),
            "transfer": self.transfer.as_dict() if self.transfer else None,
            "fixed_cost": self.fixed_cost.as_dict() if self.fixed_cost else None,
            "device_start_s": dict(self.device_start),
            "emulated": [e.as_dict() for e in self.emulated],
            "memory": dict(self.memory) if self.memory else None,
            "roofline": [r.as_dict() for r in self.rooflines],
            "scaling": self.scaling.as_dict() if self.scaling else None,
        }
