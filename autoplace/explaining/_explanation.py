"""Why the winner wins: :func:`explain_figures` finds each answer over the arms' cost models
from a study's figures alone, then has them said, most important first."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from autoplace.config import Config
from autoplace.costs import Arm, ArmModel, arm_models, device_starts
from autoplace.devices import device_names
from autoplace.explaining._crossing import against_figures, crossover
from autoplace.explaining._devices import scaling
from autoplace.explaining._emulated import emulated
from autoplace.explaining._feeding import feeding
from autoplace.explaining._fixed_cost import fixed_cost
from autoplace.explaining._memory import memory_limit_batch
from autoplace.explaining._run_length import break_even, run_length_picks
from autoplace.explaining._sentences import explanation_sentences
from autoplace.explaining._value import Explanation
from autoplace.limits import MachineLimits, Roofline, roofline
from autoplace.measurement import Loop, Measurement

#: Fraction of a device's memory the largest-batch answer leaves free.
MEMORY_MARGIN = 0.10


def explain_figures(
    figures: Mapping[Config, Measurement],
    winner: Measurement | None,
    others: list[Measurement],
    *,
    loop: Loop = "fed",
    largest_batch: int | None = None,
    device_memory: Mapping[str, int | None] | None = None,
    margin: float = MEMORY_MARGIN,
    noise: float | None = None,
    busy: bool = False,
    limits: MachineLimits | None = None,
    rates: Mapping[Config, float] | None = None,
) -> Explanation:
    """The explanation of ``winner`` among ``figures`` against ``others`` (the best of each
    other device and precision).

    ``noise`` (one measurement's, log units) and ``busy``: where the points cannot support
    a cause, it is not named. ``limits``: the machine's, to place each arm's best against
    (``None``: the explanation says how to measure them). ``rates``: each configuration's
    fed samples per second as the verdict's table shows them."""
    models = arm_models(figures)
    if winner is None:
        return Explanation(None, loop, models, sentences=("Nothing ran: nothing to explain.",))
    arm = winner.config.arm
    mine = models[arm]
    largest = largest_batch or max(c.batch_size for c in figures)
    crossovers = tuple(
        against_figures(x, figures, loop)
        for o in others
        if o.config.arm != arm and (x := crossover(mine, models[o.config.arm], loop, largest))
    )
    starts = device_starts(figures)
    evens = tuple(e for o in others if (e := break_even(winner, o, starts)) is not None)
    ok = {c: m for c, m in figures.items() if m.status == "ok"}
    picks = run_length_picks(ok, starts)
    transfer = feeding(winner)
    slow = tuple(emulated(ok, models.values(), limits, rates))
    cause = fixed_cost(mine, loop, limits.of(winner.device) if limits is not None else None)
    limit = (device_memory or {}).get(device_names(winner.device)[0])
    memory = memory_limit_batch(mine, limit, margin)
    undetermined = tuple(
        f"{m.label}: one batch size ran ({m.measured[0]}); a line needs two "
        "(`autoplace explain --measure` measures its neighbour)"
        for m in models.values()
        if m.line(loop) is None and m.measured
    )
    explanation = Explanation(
        winner=winner.label(),
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
        scaling=scaling(ok, winner, models, loop, limits, rates),
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
        model = models.get(m.config.arm)
        fixed = of = None
        for line, step in ((model.step, m.step.step_s), (model.fed, m.fed.step_s)) if model else ():
            if line is not None and step and m.batch_size in line.batches:
                fixed, of = line.fixed, step
                break
        r = roofline(m, device, fixed, of) if device is not None and m.status == "ok" else None
        if r is not None:
            out.append(r)
    return tuple(out)


__all__ = ["explain_figures"]
