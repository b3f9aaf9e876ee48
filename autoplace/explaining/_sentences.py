"""The explanation's sentences, most important first: each answer of the explanation in
words with its numbers (:func:`explanation_sentences`). Nothing here measures or fits: it
writes what :func:`~autoplace.explaining.explain_figures` found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoplace import units
from autoplace.config import Config
from autoplace.costs import DEPARTURE
from autoplace.explaining._crossing import Crossover
from autoplace.explaining._emulated import Emulated
from autoplace.explaining._feeding import NO_GAIN, Feeding
from autoplace.explaining._fixed_cost import FixedCost
from autoplace.explaining._run_length import BreakEven
from autoplace.explaining._value import Explanation
from autoplace.measurement import Measurement


def explanation_sentences(
    e: Explanation,
    winner: Measurement,
    causes: float | None,
    figures: Mapping[Config, Measurement] | None = None,
) -> list[str]:
    """The explanation's sentences, most important first."""
    arm = (winner.device, winner.precision, winner.width)
    model, out = e.models[arm], []
    line = model.line(e.loop)
    if line is not None and line.per_sample > 0:
        mine = {c.batch_size: m for c, m in (figures or {}).items()
                if (c.device, c.precision, c.width) == arm}  # fmt: skip
        out.append(_scaling(model.label, line, winner.batch_size, causes, mine, e.fixed_cost))
    if e.scaling is not None:
        out.append(e.scaling.sentence())
    if e.rooflines:
        out.append(e.rooflines[0].sentence(winner.device.split(":")[0]))
    if e.transfer and e.transfer.notable:
        out.append(_feeding(e.transfer))
    first = _first_call(winner, e.device_start.get(winner.device))
    if first:
        out.append(first)
    out += [_emulated(x) for x in e.emulated]
    out += [_crossing(x) for x in e.crossovers]
    beside = {c.label() for c, m in (figures or {}).items() if m.compiled_beside}
    if winner.compiled_beside:
        beside.add(winner.label())
    out += [_even(x, beside) for x in e.break_even]
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
    if e.transfer and not e.transfer.notable:
        out.append(_feeding(e.transfer))
    if e.memory is not None:
        out.append(_memory(e.memory, model.label))
    out += [f"Not determined: {u}." for u in e.undetermined]
    return out


def _scaling(
    label: str,
    line: Any,
    batch: int,
    causes: float | None = 0.0,
    measured: Mapping[int, Measurement] | None = None,
    fixed: FixedCost | None = None,
) -> str:
    """Why the batch size: the fixed cost and what it is (``fixed``: see
    :func:`_fixed_cause`), the per-sample cost, where the line bends; the cause of a bend
    only where it is over three times ``causes`` (a measurement's noise; ``None``: the
    machine was busy, no cause is named), and read from the figures of the arm's
    ``measured`` batches (see :func:`_bend_cause`), never guessed."""
    lo, hi = min(line.batches), max(line.batches)
    balance, ninety = line.balance, line.batch_for(0.9)
    if balance is None or balance < max(1.0, lo / 10):
        # The fixed cost is less than one sample's where the line holds: throughput is
        # (nearly) flat there.
        text = (
            f"On {label}, from batch {lo} to {hi} a step costs "
            f"{units.seconds(line.per_sample)} per sample and "
            + (
                f"a fixed {units.seconds(line.fixed)}, less than one sample's cost"
                if line.fixed > 0
                else "no fixed cost to see"
            )
            + ": throughput is nearly flat there, so a larger batch gains little"
        )
    else:
        text = (
            f"On {label}, a step costs a fixed {units.seconds(line.fixed)} "
            f"({_fixed_cause(fixed)}) plus {units.seconds(line.per_sample)} per sample: below "
            f"batch {balance:.0f} the fixed cost dominates, and batch {ninety:.0f} would reach 90% "
            "of the line's peak throughput"
        )
        if ninety is not None and line.departs_at is not None and ninety > hi:
            text += f", but the line holds only up to batch {hi}"
    if line.departs_at is not None and line.departure is not None:
        why = (
            _bend_cause(measured or {}, max(line.batches), line.departs_at)
            if line.departure > 0
            else "the cost per sample still falling"
        )
        why = _supported(why, line.departure, causes)
        text += (
            f"; at batch {line.departs_at} steps run {units.percent(abs(line.departure))} "
            f"{'slower' if line.departure > 0 else 'faster'} than the line ({why})"
        )
    if line.below_at is not None and line.below is not None:
        why = "the device not yet filled" if line.below > 0 else "faster than the line says"
        why = _supported(why, line.below, causes)
        text += (
            f"; at batch {line.below_at} they run {units.percent(abs(line.below))} "
            f"{'slower' if line.below > 0 else 'faster'} ({why})"
        )
    rough = "a rough line" if line.error > DEPARTURE / 2 else "the line holds"
    fit = (
        f"{rough} from batch {lo} to {hi}, {len(line.batches)} batch sizes within "
        f"{units.percent(line.error)} (median)"
    )
    return f"{text} ({fit}; the pick is batch {batch})."


#: XLA's FLOPs (or bytes) per sample at two batches further apart than this: the
#: program itself changed between them.
PROGRAM_CHANGE = 0.10


def _bend_cause(measured: Mapping[int, Measurement], last: int, bend: int) -> str:
    """Why steps at batch ``bend`` run slower than the line through the batches up to
    ``last``, from XLA's figures of the two: the program changed (its FLOPs per sample
    differ); else the same work moving fewer bytes a second (the memory hierarchy: caches
    outgrown); else the cause is not in the figures."""
    a, b = measured.get(last), measured.get(bend)
    if a is None or b is None or not (a.flops and b.flops):
        return "the cause is not in the figures: XLA gave no FLOPs for these batches"
    per_a, per_b = a.flops / last, b.flops / bend
    if abs(per_b / per_a - 1) > PROGRAM_CHANGE:
        return (
            f"the program changed: XLA counts {per_b / per_a:.2f}x the FLOPs per sample at "
            f"batch {bend} as at {last}"
        )
    step_a, step_b = a.step.step_s or a.fed.step_s, b.step.step_s or b.fed.step_s
    if a.bytes_accessed and b.bytes_accessed and step_a and step_b:
        bytes_a, bytes_b = a.bytes_accessed / last, b.bytes_accessed / bend
        rate_a, rate_b = a.bytes_accessed / step_a, b.bytes_accessed / step_b
        if abs(bytes_b / bytes_a - 1) <= PROGRAM_CHANGE and rate_b < rate_a / (1 + PROGRAM_CHANGE):
            return (
                f"the same work per sample, moved at {units.rate(rate_b, 'B/s')} against "
                f"{units.rate(rate_a, 'B/s')} at batch {last}: the memory hierarchy, caches "
                "outgrown"
            )
    return "the cause is not in the figures: the same FLOPs per sample, no fall in bytes a second"


def _supported(cause: str, off: float, noise: float | None) -> str:
    """``cause``, where the points can support it: a departure of ``off`` (a fraction)
    over three times a measurement's ``noise`` (``None``: a busy machine supports none)."""
    if noise is None:
        return "the machine was too busy to say why"
    if abs(off) <= 3 * noise:
        return "within the noise: no cause can be told"
    return cause


def _fixed_cause(x: FixedCost | None) -> str:
    """What the fixed cost of a step is, in words, with the figures it rests on (see
    :func:`autoplace.explaining._answers.fixed_cost`): never a cause it did not measure."""
    if x is None:
        return "not attributed"
    floor = f"the device's measured {units.seconds(x.floor_s)} dispatch floor"
    if x.cause == "put":
        if x.put_basis == "loops":
            own = (
                f"at most {units.seconds(x.step_fixed_s)} (its fastest step)"
                if x.step_bound
                else units.seconds(x.step_fixed_s)
            )
            return (
                f"putting the batch on the device: with the batch already there the step's "
                f"own fixed cost is {own}, so the put accounts for "
                f"{'at least ' if x.step_bound else ''}{units.seconds(x.put_s)} of it"
            )
        return (
            f"putting the batch on the device: a put timed alone costs a fixed "
            f"{units.seconds(x.put_s)}, {(x.put_s or 0) / x.fixed_s:.0%} of it"
        )
    if x.cause == "dispatch":
        return f"dispatch: {x.floors:.1f} times {floor}"
    put = f"not the put, which accounts for {units.seconds(x.put_s)} of it"
    not_dispatch = None if x.floor_s is None else f"not dispatch, at {x.floors:.1f} times {floor}"
    known = [] if x.put_s is None else [put]
    if not_dispatch is not None:
        known.append(not_dispatch)
    unknown = "" if x.floor_s is not None else "; this machine's dispatch floor was not measured"
    if x.cause == "step":
        return f"launches and the loop's own work: {', and '.join(known)}{unknown}"
    if x.loop != "step" and x.put_s is not None:  # only the put alone was timed
        dispatch = unknown if not_dispatch is None else f"; {not_dispatch}"
        return (
            "not attributed: the step with the batch on the device was not timed at two batch "
            f"sizes, and a put timed alone (a fixed {units.seconds(x.put_s)}) tells its own "
            f"cost, not what it adds to a step it overlaps{dispatch}"
        )
    if x.loop == "fed":
        said = ": " + known[0] if known else ""
        return (
            "not attributed: neither the step with the batch on the device nor the put alone "
            f"was timed at two batch sizes{said}{unknown}"
        )
    return f"not attributed{unknown}"


def _first_call(m: Measurement, start: float | None = None) -> str | None:
    """The seeds' "first inference is slow": what a fresh process pays before its first
    result, against a later step; its device's ``start`` (what every fresh process pays
    once to start the device, whatever it runs: :func:`~autoplace.costs.device_starts`)
    said apart from this configuration's tracing, compile and first run."""
    parts = (m.lower_s, m.compile_s, m.first_call_s)
    if any(p is None for p in parts) or not m.fed.step_s:
        return None
    lower, compile_, call = parts
    total = (start or 0.0) + lower + compile_ + call  # type: ignore[operator]
    device = (
        f"starting {m.device} {units.seconds(start)}, as every fresh process pays it once, "
        "whatever it runs; "
        if start is not None
        else ""
    )
    return (
        f"The first call from a fresh process takes {units.seconds(total)} ({device}tracing "
        f"and lowering {units.seconds(lower)}, compiling {units.seconds(compile_)}, the first "
        f"run {units.seconds(call)}), {total / m.fed.step_s:,.0f} times a later step "
        f"({units.seconds(m.fed.step_s)}): time one call and you time the compiler."
        + _side_by_side(m)
    )


def _side_by_side(m: Measurement) -> str:
    """What a compile figure timed side by side with others on an accelerator is worth
    (a study an older autoplace wrote: see ``Measurement.compiled_beside``): it overstates
    a compile alone; the configuration's compile alone where the study has one."""
    if not m.compiled_beside or m.compile_s is None:
        return ""
    n = m.compiled_beside
    others = "another step" if n == 1 else f"{n} other steps"
    alone = (
        f"alone, this configuration compiled in {units.seconds(m.compile_alone_s)}"
        if m.compile_alone_s is not None
        else "the study has no compile of this configuration alone"
    )
    return (
        f" That compile of {units.seconds(m.compile_s)} was timed side by side with {others} "
        f"for {m.device}, as autoplace compiled an accelerator's steps before it compiled "
        "them one at a time; each slows the others' (XLA's autotuner times kernels on the "
        f"device as it compiles), so it overstates a compile alone: {alone}."
    )


def _times(x: float) -> str:
    """A ratio as a gain: ``3.6x``, ``28x``."""
    return f"{x:.1f}x" if x < 10 else f"{x:.0f}x"


def _feeding(t: Feeding) -> str:
    """What feeding a host batch each step costs, on what it rests, and the remedies'
    measured gains (or that they were not timed)."""
    fed = units.seconds(t.fed_step_s)
    if t.basis == "loops":
        text = (
            f"Putting a fresh host batch each step takes {units.percent(t.share)} of the {fed} "
            f"step ({units.seconds(t.step_s)} with the batch already on the device)"
        )
    elif t.basis == "put":
        put = (
            f"One put of a {units.size(t.batch_bytes)} batch, timed alone, takes "
            if t.batch_bytes
            else "One batch's put, timed alone, takes "
        ) + units.seconds(t.transfer_s)
        if (t.transfer_s or 0.0) < t.fed_step_s:
            text = (
                f"{put}: feeding is up to {units.percent(t.share)} of the {fed} fed step (in "
                "the loop the put can overlap the step)"
            )
        else:
            text = (
                f"{put}, longer than the whole {fed} fed step: in the loop the put overlaps "
                "the step, so this figure does not tell the feeding's share"
            )
    else:
        text = f"Feeding a fresh host batch each step: the step takes {fed}"
    pre, res = t.prefetch_gain, t.resident_gain
    remedies = []
    if pre is not None and t.prefetch_step_s is not None:
        remedies.append(
            f"keep two batches in flight (`autoplace.prefetch`): {_times(pre)} ({fed} → "
            f"{units.seconds(t.prefetch_step_s)} a step)"
            if pre >= NO_GAIN
            else "keeping two batches in flight (`autoplace.prefetch`) gains nothing here "
            f"({units.seconds(t.prefetch_step_s)} a step against {fed})"
        )
    if res is not None:
        remedies.append(
            f"with the data on the device, {_times(res)}"
            + ("" if pre is not None else f" ({fed} → {units.seconds(t.step_s)} a step)")
        )
    untimed = [
        what
        for what, gain in (
            ("keeping two batches in flight", pre),
            ("the step with the batch on the device", res),
        )
        if gain is None
    ]
    if untimed:
        remedies.append(
            f"{' and '.join(untimed)} {'were' if len(untimed) > 1 else 'was'} not timed here, "
            "so what " + ("either gains" if len(untimed) > 1 else "it gains") + " is not known"
        )
    return f"{text}; {'; '.join(remedies)}."


def _emulated(x: Emulated) -> str:
    dev = (
        ""
        if x.deviation is None
        else f"; its output deviates {units.percent(x.deviation)} from float32's"
    )
    compiled = f"XLA compiled it to {', '.join(x.compute_dtypes)} but " if x.compute_dtypes else ""
    width = "" if x.width is None else f" width {x.width}"
    loop = "with the batch on the device" if x.ratio_basis == "step" else "fed"
    if x.basis == "peak" and x.peaks is not None:
        steps = (
            ""
            if x.ratio is None
            else f"; here its steps take {x.ratio:.2f}x float32's time per sample ({loop})"
        )
        return (
            f"{x.precision} is emulated on {x.device}: its measured peak is "
            f"{x.peak_ratio:.2f}x float32's ({units.rate(x.peaks[0], 'FLOP/s')} against "
            f"{units.rate(x.peaks[1], 'FLOP/s')}): {compiled}the device has no faster "
            f"kernels for it{steps}{dev}."
        )
    if x.basis == "step":
        return (
            f"{x.precision} is emulated on {x.device}{width}: {x.ratio:.2f}x float32's "
            f"time per sample with the batch on the device, at the best batch of each "
            f"({compiled}the device has no faster kernels for it; judged from the steps, this "
            f"machine's peak per precision not being measured: `autoplace limits`){dev}."
        )
    return (
        f"{x.precision} runs {x.ratio:.2f}x float32's time per sample on "
        f"{x.device}{width}, fed, at the best batch of each: the feeding is in these figures, "
        "so they do not tell whether the device has faster kernels for it (`autoplace "
        f"limits` measures its peak per precision){dev}."
    )


def _crossing(x: Crossover) -> str:
    """What the two lines say where both hold, then what the measurements say where they
    disagree with it, or where the arm behind there is ahead at its own best batch: so that
    no sentence says "ahead at every batch" beside a table that shows the opposite."""
    where = f"from batch {x.low} to {x.high}, where both lines hold"
    if x.above is None:
        text = (
            f"{x.slower} keeps ahead of {x.faster} {where}: its smaller fixed cost outweighs "
            f"{x.faster}'s smaller cost per sample there"
        )
    elif x.above <= x.low:
        text = f"By their fitted lines, {x.faster} is ahead of {x.slower} {where}"
    else:
        text = (
            f"Above batch {x.above:.0f}, {x.faster} overtakes {x.slower} (a smaller cost per "
            f"sample); below it, {x.slower}'s smaller fixed cost wins ({where})"
        )
    if x.measured_against:
        text += f"; measured, {x.measured_against}"
    if x.best_against:
        text += f"; at their best batches, {x.best_against}"
    return text + "."


def _even(x: BreakEven, beside: set[str] | None = None) -> str:
    """The break-even in words; ``beside``: the configurations whose compile figure was
    timed side by side with others on an accelerator (see :func:`_side_by_side`)."""
    steps = f"{x.steps:,.0f} steps" if x.steps >= 1 else "its first step"
    start = "its device's start-up, once a process; " if any(x.device_start_s) else ""
    beside = beside or set()
    caveats = (
        "; its compile figure was timed side by side with others, which overstates how much "
        "later it starts"
        if x.slow_start in beside
        else "",
        f"; {x.fast_start}'s compile figure was timed side by side with others, which "
        "understates how much later the other starts"
        if x.fast_start in beside
        else "",
    )
    return (
        f"{x.slow_start} starts {units.seconds(x.one_off_s[0] - x.one_off_s[1])} later "
        f"({start}lowering, compile, first call) than {x.fast_start} but runs each sample "
        f"{units.seconds(x.per_sample_s[1] - x.per_sample_s[0])} faster: it finishes first "
        f"after {units.count(x.samples)} samples ({steps}){''.join(caveats)}."
    )


def _memory(m: Mapping[str, Any], label: str) -> str:
    line = (
        f"{units.size(m['per_sample_bytes'])} per sample and no fixed part (XLA's figures; "
        "a least-squares line put its fixed part below zero, so it is held at zero and the "
        "slope fitted alone)"
        if m["fit"] == "through zero"
        else f"{units.size(m['fixed_bytes'])} plus {units.size(m['per_sample_bytes'])} per "
        "sample (XLA's figures, a least-squares line)"
    )
    return (
        f"Memory on {label}: {line}: the largest batch "
        f"leaving {units.percent(m['margin'])} of "
        f"{units.size(m['limit_bytes'])} free is {m['largest_batch']:,.0f} "
        f"({m['largest_power_of_two']:,.0f} as a power of two)."
    )
