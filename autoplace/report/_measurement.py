"""``autoplace measure``'s table: one configuration's phases, each with what it covers."""

from __future__ import annotations

from rich.console import Console

from autoplace import units
from autoplace.measurement import Measurement
from autoplace.report._lines import facts_table


def measurement_table(m: Measurement, console: Console | None = None) -> None:
    console = console or Console()
    colour = "green" if m.status == "ok" else "red"
    title = f"{m.workload} on {m.device}"
    if m.device_kind:
        title += f" ({m.device_kind})"
    title += f", batch {m.batch_size}, {m.precision}"
    if m.width is not None:
        title += f", width {m.width}"
    rows = [
        ("status", f"[{colour}]{m.status}[/]", m.reason),
        ("build", units.seconds(m.build_s), "your workload function (state, step)"),
        ("make_batch", units.seconds(m.batch_s), "your make_batch, one host batch"),
        ("trace + lower", units.seconds(m.lower_s), "jaxpr -> StableHLO"),
        ("XLA compile", units.seconds(m.compile_s), f"persistent cache {m.compile_cache}"),
        ("first call", units.seconds(m.first_call_s), "one step, batch on device"),
        (
            "steady step",
            units.seconds(m.step.step_s),
            f"median of {m.step.samples} timed chunks, spread ±{units.percent(m.step.spread)}"
            if m.step.step_s is not None
            else "",
        ),
        ("transfer", units.seconds(m.transfer_s), f"one batch of {units.size(m.batch_bytes)}"),
        ("fed step", units.seconds(m.fed.step_s), "step + putting a host batch on device"),
        (
            "samples/s",
            units.rate(m.step.rate(m.batch_size)),
            f"fed: {units.rate(m.fed.rate(m.batch_size))}",
        ),
        ("FLOPs/step", units.rate(m.flops), f"achieved {units.rate(m.flops_per_s, 'FLOP/s')}"),
        ("memory", units.size(m.peak_bytes), m.peak_bytes_source or ""),
        ("compute dtypes", ", ".join(m.compute_dtypes) or "-", "of dots and convolutions"),
        (
            "vs float32",
            units.percent(m.deviation_vs_float32),
            "relative deviation of the first step's output",
        ),
    ]
    shown = [row for row in rows if row[1] not in ("-", "")]
    console.print(facts_table(title, shown, no_wrap=False))
