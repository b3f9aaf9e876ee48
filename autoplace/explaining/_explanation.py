"""Why the winner wins, in a few sentences with numbers: :class:`Explanation`.

Built from a study's :class:`~autoplace.tuning.Standing` alone: no extra measurement.
Each sentence rests on one answer (``_crossing``, ``_run_length``, ``_fixed_cost``,
``_feeding``, ``_emulated``, ``_memory``) over the arms' cost models
(:mod:`autoplace.costs`); the sentences come most important first, so ``autoplace tune`` can end
with the first few and ``autoplace explain`` print them all. ``_sentences`` writes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from autoplace.config import Config
from autoplace.costs import Arm, ArmModel, arm_models, device_starts
from autoplace.explaining._crossing import Crossover, against_figures, crossover
from autoplace.explaining._emulated import Emulated, emulated
from autoplace.explaining._feeding import Feeding, feeding
from autoplace.explaining._fixed_cost import FixedCost, fixed_cost
from autoplace.explaining._memory import memory_limit_batch
from autoplace.explaining._run_length import BreakEven, break_even, run_length_picks
from autoplace.explaining._sentences import explanation_sentences
from autoplace.limits import MachineLimits, Roofline, roofline
from autoplace.measurement import Measurement

#: Fraction of a device's memory the largest-batch answer leaves free.
MEMORY_MARGIN = 0.10


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
        }


def explain_figures(
    figures: Mapping[Config, Measurement],
    winner: Measurement | None,
    others: list[Measurement],
    *,
    loop: str = "fed",
    largest_batch: int | None = None,
    device_memory: Mapping[str, int | None] | None = None,
    margin: float = MEMORY_MARGIN,
    noise: float | None = None,
    busy: bool = False,
    limits: MachineLimits | None = None,
) -> Explanation:
    """The explanation of ``winner`` among ``figures`` (one measurement per
    configuration), against ``others`` (the best of each other device and precision).

    ``noise`` is one measurement's noise (log units) and ``busy`` whether the machine was
    busy: where the points cannot support a cause (a departure from the line within three
    times the noise, or any on a busy machine), the cause is not named. ``limits``: the
    machine's measured limits, to place each arm's best configuration against (see
    :mod:`autoplace.limits`); ``None``: not measured, and the explanation says how."""
    models = arm_models(figures)
    if winner is None:
        return Explanation(None, loop, models, sentences=("Nothing ran: nothing to explain.",))
    arm = (winner.device, winner.precision, winner.width)
    mine = models[arm]
    largest = largest_batch or max(c.batch_size for c in figures)
    crossovers = tuple(
        against_figures(x, figures, loop)
        for o in others
        if (o.device, o.precision, o.width) != arm
        and (x := crossover(mine, models[(o.device, o.precision, o.width)], loop, largest))
    )
    starts = device_starts(figures)
    evens = tuple(x for o in others if (x := break_even(winner, o, starts)) is not None)
    ok = {c: m for c, m in figures.items() if m.status == "ok"}
    picks = run_length_picks(ok, starts)
    transfer = feeding(winner)
    slow = tuple(emulated(ok, models.values(), limits))
    cause = fixed_cost(mine, loop, limits.of(winner.device) if limits is not None else None)
    limit = (device_memory or {}).get(winner.device)
    memory = memory_limit_batch(mine, limit, margin)
    undetermined = tuple(
        f"{m.label}: one batch size ran ({m.measured[0]}); a line needs two "
        "(`autoplace explain --measure` measures its neighbour)"
        for m in models.values()
        if m.line(loop) is None and m.measured
    )
    explanation = Explanation(
        winner=Config(winner.device, winner.batch_size, winner.precision, winner.width).label(),
        loop=loop,
        models=models,
        crossovers=crossovers,
        break_even=evens,
        run_lengths=picks,
        transfer=transfer,
        fixed_cost=cause,
        device_start=starts,
        emulated=slow,
        memory=memory,
        undetermined=undetermined,
        rooflines=_rooflines([winner, *others], models, limits),
    )
    causes = None if busy else (noise or 0.0)
    sentences = explanation_sentences(explanation, winner, causes, ok)
    if limits is None:
        sentences.append(UNPLACED)
    return dataclasses.replace(explanation, sentences=tuple(sentences))


#: The last sentence where the machine's limits were not measured.
UNPLACED = (
    "Not placed against this machine's peak FLOP/s, bandwidth and dispatch floor: "
    "`autoplace limits` measures them once (7 s on a 2-core CPU), then `autoplace explain` "
    "says how far each arm's step is from them."
)


def _rooflines(
    best: list[Measurement], models: Mapping[Arm, ArmModel], limits: MachineLimits | None
) -> tuple[Roofline, ...]:
    """Each arm's best configuration (the winner first) against its device's limits."""
    if limits is None:
        return ()
    out = []
    for m in best:
        device = limits.of(m.device)
        model = models.get((m.device, m.precision, m.width))
        fixed = of = None
        for line, step in ((model.step, m.step_s), (model.fed, m.fed_step_s)) if model else ():
            if line is not None and step and m.batch_size in line.batches:
                fixed, of = line.fixed, step
                break
        r = roofline(m, device, fixed, of) if device is not None and m.status == "ok" else None
        if r is not None:
            out.append(r)
    return tuple(out)


__all__ = ["Explanation", "explain_figures"]
