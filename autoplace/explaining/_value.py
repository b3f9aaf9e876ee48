"""The :class:`Explanation` value: each answer about a study's pick, typed, and its sentences."""

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
    """What the cost models say about a study's pick (``winner``'s label; ``None``: nothing
    ran), on the ``loop`` the objective ranks on: its arm against each other's best
    (``crossovers``, ``break_even``), the run-length picks, its feeding (``transfer``),
    fixed cost, memory, the precisions emulated, each arm's best against the machine's
    limits (``rooflines``), the scaling over device counts, and the sentences, most
    important first. ``findings`` are the verdict's, kept beside it in the file.
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
    rooflines: tuple[Roofline, ...] = ()
    findings: tuple[Mapping[str, Any], ...] = ()
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
