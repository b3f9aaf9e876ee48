"""What a study holds: its measurements by phase, and what is in flight."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from autoplace.config import Config
from autoplace.measurement import Measurement

#: A phase's measurements, each with its configuration, oldest first.
Measured = tuple[tuple[Config, Measurement], ...]


@dataclasses.dataclass(frozen=True)
class History:
    """What a study holds, oldest first.

    Attributes:
        measured: every finished measurement by the phase that took it (its name as the
            study keeps it: ``search``, ``confirm``, ...), each with its configuration.
        pending: the configurations being measured right now, by this process or by
            another worker sharing the study.
        newest: the highest trial number among those read (-1: none); a recommendation
            file records it, so that the measurements its verdict rested on can be read
            again.
    """

    measured: Mapping[str, Measured] = dataclasses.field(default_factory=dict)
    pending: frozenset[Config] = frozenset()
    newest: int = -1

    @property
    def searches(self) -> Measured:
        """The search's measurements, in order: the groups its fit rests on."""
        return self.measured.get("search", ())

    def of(self, phase: str) -> dict[Config, tuple[Measurement, ...]]:
        """``phase``'s measurements of each configuration, oldest first."""
        out: dict[Config, tuple[Measurement, ...]] = {}
        for c, m in self.measured.get(phase, ()):
            out[c] = (*out.get(c, ()), m)
        return out

    def __len__(self) -> int:
        """How many finished measurements it holds, in every phase."""
        return sum(len(found) for found in self.measured.values())

    def figures(self) -> dict[Config, Measurement]:
        """Each configuration's latest search measurement that ran (else its latest)."""
        out: dict[Config, Measurement] = {}
        for c, m in self.searches:
            if m.status == "ok" or c not in out or out[c].status != "ok":
                out[c] = m
        return out

    def only(self, keep: Callable[[Config], bool]) -> History:
        """The part of the history whose configurations ``keep`` accepts."""
        kept = {p: tuple((c, m) for c, m in found if keep(c)) for p, found in self.measured.items()}
        return History(kept, self.pending, self.newest)

    def plus(self, phase: str, found: Sequence[tuple[Config, Measurement]]) -> History:
        """This history with ``found`` (configurations just measured in ``phase``) added."""
        measured = dict(self.measured)
        measured[phase] = (*measured.get(phase, ()), *found)
        return dataclasses.replace(self, measured=measured)
