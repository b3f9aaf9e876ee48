"""Why the winner wins, in a few sentences with numbers: :class:`Explanation`.

Built from a study's :class:`~autoplace.tuning.Standing` alone: no extra measurement.
Each sentence rests on one answer of ``_answers`` over the arms' cost models
(``_model``); the sentences come most important first, so ``autoplace tune`` can end
with the first few and ``autoplace explain`` print them all.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from autoplace import units
from autoplace.config import Config
from autoplace.explaining._answers import (
    RUN_LENGTHS,
    BreakEven,
    Crossover,
    Emulated,
    break_even,
    crossover,
    emulated,
    memory_limit_batch,
    run_length_picks,
    transfer_share,
)
from autoplace.explaining._model import Arm, ArmModel, arm_models
from autoplace.measurement import Measurement

#: Fraction of a device's memory the largest-batch answer leaves free.
MEMORY_MARGIN = 0.10
#: A feeding share above this is worth a sentence near the top.
NOTABLE_TRANSFER = 0.20


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
        transfer: the winner's feeding share (see ``_answers.transfer_share``).
        emulated: lower precisions slower than float32 on their device.
        memory: the largest batch of the winner's arm that fits with a margin.
        sentences: the explanation, most important first.
    """

    winner: str | None
    loop: str
    models: Mapping[Arm, ArmModel]
    crossovers: tuple[Crossover, ...] = ()
    break_even: tuple[BreakEven, ...] = ()
    run_lengths: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)
    transfer: Mapping[str, float] | None = None
    emulated: tuple[Emulated, ...] = ()
    memory: Mapping[str, float] | None = None
    sentences: tuple[str, ...] = ()
    undetermined: tuple[str, ...] = ()

    def headline(self, n: int = 3) -> list[str]:
        """The ``n`` most important sentences."""
        return list(self.sentences[:n])

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
            "transfer": dict(self.transfer) if self.transfer else None,
            "emulated": [e.as_dict() for e in self.emulated],
            "memory": dict(self.memory) if self.memory else None,
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
) -> Explanation:
    """The explanation of ``winner`` among ``figures`` (one measurement per
    configuration), against ``others`` (the best of each other device and precision)."""
    models = arm_models(figures)
    if winner is None:
        return Explanation(None, loop, models, sentences=("Nothing ran: nothing to explain.",))
    arm = (winner.device, winner.precision, winner.width)
    mine = models[arm]
    largest = largest_batch or max(c.batch_size for c in figures)
    crossovers = tuple(
        x
        for o in others
        if (o.device, o.precision, o.width) != arm
        and (x := crossover(mine, models[(o.device, o.precision, o.width)], loop, largest))
    )
    evens = tuple(x for o in others if (x := break_even(winner, o)) is not None)
    ok = {c: m for c, m in figures.items() if m.status == "ok"}
    picks = run_length_picks(ok)
    transfer = transfer_share(winner)
    slow = tuple(emulated(ok, models.values()))
    limit = (device_memory or {}).get(winner.device)
    memory = memory_limit_batch(mine, limit, margin)
    undetermined = tuple(
        f"{m.label}: one batch size ran ({m.measured[0]}); a line needs two"
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
        emulated=slow,
        memory=memory,
        undetermined=undetermined,
    )
    return dataclasses.replace(explanation, sentences=tuple(_sentences(explanation, winner)))


def _sentences(e: Explanation, winner: Measurement) -> list[str]:
    """The explanation's sentences, most important first."""
    arm = (winner.device, winner.precision, winner.width)
    model, out = e.models[arm], []
    line = model.line(e.loop)
    if line is not None and line.per_sample > 0:
        out.append(_scaling(model.label, line, winner.batch_size))
    if e.transfer and e.transfer["share"] >= NOTABLE_TRANSFER:
        out.append(_feeding(e.transfer, winner))
    out += [_emulated(x) for x in e.emulated]
    out += [_crossing(x) for x in e.crossovers]
    out += [_even(x) for x in e.break_even]
    picks = {v["pick"] for v in e.run_lengths.values()}
    if len(picks) > 1:
        out.append(
            "From a fresh process, time-to-finish would pick "
            + "; ".join(
                f"{v['pick']} for a {name} run ({v['samples']:,} samples)"
                for name, v in e.run_lengths.items()
            )
            + "."
        )
    if e.transfer and e.transfer["share"] < NOTABLE_TRANSFER:
        out.append(_feeding(e.transfer, winner))
    if e.memory is not None:
        out.append(_memory(e.memory, model.label))
    out += [f"Not determined: {u}." for u in e.undetermined]
    return out


def _scaling(label: str, line: Any, batch: int) -> str:
    """Why the batch size: the fixed cost, the per-sample cost, where the line bends."""
    text = (
        f"On {label}, a step costs a fixed {units.seconds(line.fixed)} (dispatch, launch, "
        f"loop overhead) plus {units.seconds(line.per_sample)} per sample"
    )
    balance, ninety = line.balance, line.batch_for(0.9)
    if balance is not None and balance >= 1:
        text += (
            f": below batch {balance:.0f} the fixed cost dominates, and batch {ninety:.0f} "
            "reaches 90% of the peak throughput of that line"
        )
    else:
        text += ": the fixed cost is small even at batch 1"
    if line.departs_at is not None:
        text += (
            f"; from batch {line.departs_at} on, steps run {units.percent(line.departure)} "
            "slower than the line (caches outgrown, memory pressure)"
        )
    fit = (
        f"the line fits {len(line.batches)} batch sizes within {units.percent(line.error)} (median)"
    )
    return f"{text} ({fit}; the pick is batch {batch})."


def _feeding(t: Mapping[str, float], m: Measurement) -> str:
    return (
        f"Feeding a fresh host batch each step takes {units.percent(t['share'])} of the "
        f"step ({units.seconds(t['fed_step_s'])} fed against {units.seconds(t['step_s'])} "
        f"with the batch on the device; one put of {units.size(t['batch_bytes'])} takes "
        f"{units.seconds(t['transfer_s'])}): keeping the data on the device would make "
        f"{m.device} {units.percent(t['gain_on_device'])} faster."
    )


def _emulated(x: Emulated) -> str:
    dev = (
        ""
        if x.deviation is None
        else f"; its output deviates {units.percent(x.deviation)} from float32's"
    )
    dtypes = ", ".join(x.compute_dtypes) or "unknown dtypes"
    return (
        f"{x.precision} is emulated on {x.device}: {x.ratio:.2f}x float32's time per sample "
        f"at the best batch of each (XLA compiled it to {dtypes} but the device has no faster "
        f"kernels for it){dev}."
    )


def _crossing(x: Crossover) -> str:
    if x.above is None:
        return f"{x.slower} is behind {x.faster} at every batch up to {x.within}."
    if x.above < 1:
        return (
            f"{x.faster} beats {x.slower} at every batch: a smaller cost per sample "
            "and no larger fixed cost."
        )
    return (
        f"Above batch {x.above:.0f}, {x.faster} beats {x.slower} (its cost per sample is "
        "lower); below it, the smaller fixed cost wins."
    )


def _even(x: BreakEven) -> str:
    steps = f"{x.steps:,.0f} steps" if x.steps >= 1 else "its first step"
    return (
        f"{x.slow_start} starts {units.seconds(x.one_off_s[0] - x.one_off_s[1])} later "
        f"(lowering, compile, first call) than {x.fast_start} but runs each sample "
        f"{units.seconds(x.per_sample_s[1] - x.per_sample_s[0])} faster: it finishes first "
        f"after {_count(x.samples)} samples ({steps})."
    )


def _memory(m: Mapping[str, float], label: str) -> str:
    return (
        f"Memory on {label}: {units.size(m['fixed_bytes'])} plus "
        f"{units.size(m['per_sample_bytes'])} per sample (XLA's figures): the largest batch "
        f"leaving {units.percent(m['margin'])} of "
        f"{units.size(m['limit_bytes'])} free is {m['largest_batch']:,.0f} "
        f"({m['largest_power_of_two']:,.0f} as a power of two)."
    )


def _count(n: float) -> str:
    if n < 1e4:
        return f"{math.ceil(n):,}"
    return f"{n:,.3g}".replace("e+0", "e").replace("e+", "e")


__all__ = ["RUN_LENGTHS", "Explanation", "explain_figures"]
