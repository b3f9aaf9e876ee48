"""A phase of the tune, as one value: what it measures next, how, and what its measurements
say (as Optuna's samplers and Optax's transforms are values).

The loop (:mod:`._loop`) asks each phase of :data:`~._phases.PHASES` in order, every pass,
for its next group (:meth:`Phase.next`); the first that has one is measured, with the
settings the phase asks (:meth:`Phase.settings`), in the shared worker or in a window of
fresh processes (:attr:`Group.fresh`), and kept in the study under the phase's name. Once
no phase has a group the tune ends. The standing (:mod:`._standing`) asks each phase after
the confirmation to judge its own measurements (:meth:`Phase.judge`): a :class:`Result`
that says its sentences, its findings and its section of the recommendation file.

A new phase is one module with a class satisfying :class:`Phase`, one line in
:data:`~._phases.PHASES`, and its test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from autoplace.config import Config
from autoplace.findings import Finding
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings

if TYPE_CHECKING:
    from autoplace.study import History
    from autoplace.tuning._plan import Plan
    from autoplace.tuning._standing import Standing


@dataclasses.dataclass(frozen=True)
class Want:
    """One measurement a phase asks for: a configuration, with the settings of its process
    (``env``: ``NAME=value`` beside the user's environment) and its steps per call."""

    config: Config
    env: tuple[tuple[str, str], ...] = ()
    steps_per_call: int = 1


@dataclasses.dataclass(frozen=True)
class Group:
    """What a phase measures next: its wants, timed in turns, together in the shared worker
    or each in a fresh process of its own (``fresh``: a window), and the configuration every
    other score of a search group is anchored to (``reference``)."""

    phase: str
    wants: tuple[Want, ...]
    fresh: bool
    reference: Config | None = None

    @property
    def configs(self) -> list[Config]:
        return [w.config for w in self.wants]

    @classmethod
    def of(
        cls, phase: str, configs: Sequence[Config], fresh: bool, reference: Config | None = None
    ) -> Group:
        return cls(phase, tuple(Want(c) for c in configs), fresh, reference)


#: What :meth:`Phase.next` returns when it has work it cannot start now (another worker
#: is measuring what it needs): the loop asks no later phase, and waits if anything is in
#: flight, else ends.
BLOCKED = "blocked"


@dataclasses.dataclass(frozen=True)
class Context:
    """What a phase sees: the tune's plan, the study's history, the standing judged on it
    (the pick, its figures, the other phases' results so far) and the room left in the
    budget for new measurements."""

    plan: Plan
    history: History
    standing: Standing
    room: int

    def done(self, phase: str, config: Config) -> tuple[Measurement, ...]:
        """The measurements ``phase`` holds of ``config``."""
        return self.history.of(phase).get(config, ())


class Result(Protocol):
    """A phase's verdict on its measurements, rendered the same way everywhere: its
    ``sentences`` (the explanation's, after the pick's), its ``findings`` (the closed set of
    :mod:`autoplace.findings`) and its section of the recommendation file (``as_dict``,
    under ``[recommendation.<phase>]``)."""

    def sentences(self) -> tuple[str, ...]: ...

    def findings(self) -> tuple[Finding, ...]: ...

    def as_dict(self) -> dict[str, Any]: ...


class Phase(Protocol):
    """One phase of the tune.

    Contract: ``name`` is how the study keeps its measurements (stable: a study written by
    one version is read by the next). ``settings`` is a pure function of the user's settings
    and the objective. ``next`` is a pure function of its context: a :class:`Group` of at
    most ``ctx.room`` wants, ``None`` when it has nothing (more) to measure, or
    :data:`BLOCKED`. ``judge`` reads only its own phase's measurements and the standing's
    pick (``None``: nothing to say). Called from one thread.
    """

    name: str

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings: ...

    def next(self, ctx: Context) -> Group | str | None: ...

    def judge(self, ctx: Context) -> Result | None: ...


def windows_of(measurements: Sequence[Measurement]) -> int:
    """The distinct windows (calls timing in turns) the measurements that ran belong to."""
    return len({m.interleave_id or id(m) for m in measurements if m.status == "ok"})
