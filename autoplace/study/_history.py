"""What a study holds: its measurements by phase, and what is in flight."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.study._trials import StoredPhase


@dataclasses.dataclass(frozen=True)
class History:
    """What a study holds, oldest first.

    Attributes:
        searches: every finished search measurement, with its configuration: the
            groups the drift fit rests on.
        confirmed: every confirmation per configuration.
        pending: the configurations being measured right now, by this process or by
            another worker sharing the study.
        remedies: every measurement of a remedy's windows per configuration: the pick
            timed as it is and with a setting that may remedy what it showed (e.g. an
            allocator setting; ``Measurement.environment`` says which).
        fused: every measurement of the steps-per-call windows per configuration: the
            pick timed at one step a call and at several (``Measurement.steps_per_call``).
        feeding: every measurement of the feeding windows per configuration: the pick and
            each other device's best, their steps fed three ways (``step_s`` resident,
            ``fed_step_s`` put, ``prefetch_step_s`` two puts in flight).
        newest: the highest trial number among those read (-1: none); a recommendation
            file records it, so that the measurements its verdict rested on can be read
            again (:meth:`~._reading.StudyReader.history` ``upto``).
    """

    searches: tuple[tuple[Config, Measurement], ...] = ()
    confirmed: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    pending: frozenset[Config] = frozenset()
    remedies: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    fused: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)
    newest: int = -1
    feeding: Mapping[Config, tuple[Measurement, ...]] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        """How many finished measurements it holds, in every phase."""
        return len(self.searches) + sum(
            len(ms)
            for held in (self.confirmed, self.remedies, self.fused, self.feeding)
            for ms in held.values()
        )

    def figures(self) -> dict[Config, Measurement]:
        """Each configuration's latest search measurement that ran (else its latest)."""
        out: dict[Config, Measurement] = {}
        for c, m in self.searches:
            if m.status == "ok" or c not in out or out[c].status != "ok":
                out[c] = m
        return out

    def only(self, keep: Callable[[Config], bool]) -> History:
        """The part of the history whose configurations ``keep`` accepts."""
        return History(
            tuple((c, m) for c, m in self.searches if keep(c)),
            {c: ms for c, ms in self.confirmed.items() if keep(c)},
            self.pending,
            {c: ms for c, ms in self.remedies.items() if keep(c)},
            {c: ms for c, ms in self.fused.items() if keep(c)},
            self.newest,
            {c: ms for c, ms in self.feeding.items() if keep(c)},
        )

    def plus(self, phase: StoredPhase, found: Sequence[tuple[Config, Measurement]]) -> History:
        """This history with ``found`` (configurations just measured in ``phase``) added."""
        if phase == "search":
            return dataclasses.replace(self, searches=(*self.searches, *found))
        key = {"confirm": "confirmed", "remedy": "remedies", "fuse": "fused", "feeding": "feeding"}[
            phase
        ]
        kept = dict(getattr(self, key))
        for c, m in found:
            kept[c] = (*kept.get(c, ()), m)
        return dataclasses.replace(self, **{key: kept})
