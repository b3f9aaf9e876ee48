"""The report's curves: time from a fresh process against run length, memory against batch
size, each arm's best under the machine's roofline, and throughput against the devices
used together. Each is ``None`` when there is nothing to draw."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from autoplace import units
from autoplace.config import Arm
from autoplace.costs import one_off
from autoplace.explaining import (
    FAR,
    Explanation,
    arm_styles,
    clusters,
    decades,
    finish_s,
    hline,
    layout,
    log2_axis,
    log_axis,
    marked,
    note,
    octaves,
    per_sample,
    precision_color,
    scatter,
    short_label,
)
from autoplace.measurement import Measurement

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

#: Line dashes that tell apart finalists of one arm (one colour) on the run-length plot.
_DASHES = ("solid", "dash", "dot", "dashdot")


def run_length_figure(
    explanation: Explanation, finalists: Sequence[Measurement], figures: Sequence[Measurement]
) -> Figure | None:
    """Seconds from a fresh process against the samples of a run: the finalists, and the
    configurations the break-evens name, so that each break-even marked is where two drawn
    lines cross."""
    import plotly.graph_objects as go

    named = {x for even in explanation.break_even for x in (even.slow_start, even.fast_start)}
    drawn_too = [m for m in figures if m.label() in named and m not in finalists]
    timed = [m for m in (*finalists, *drawn_too) if one_off(m) is not None and per_sample(m)]
    if not timed:
        return None
    fig = go.Figure()
    styles = arm_styles([*explanation.models, *(m.config.arm for m in timed)])
    samples = [round(10 ** (k / 8)) for k in range(0, 8 * 8 + 1)]  # 1 .. 1e8
    drawn: list[Arm] = []
    finish: list[float] = []
    for m in timed:
        start = explanation.device_start.get(m.device, 0.0)  # once a process
        ys = [finish_s(m, s, start) or 0.0 for s in samples]
        finish += ys
        dash = _DASHES[drawn.count(m.config.arm) % len(_DASHES)]  # an arm's finalists apart
        drawn.append(m.config.arm)
        hover = [
            f"{short_label(m)}: {s:,} samples in {units.seconds(y)}"
            for s, y in zip(samples, ys, strict=True)
        ]
        fig.add_trace(
            scatter(
                samples,
                ys,
                short_label(m),
                hover,
                mode="lines",
                line={"color": styles[m.config.arm].color, "dash": dash},
            )
        )
    shown = {m.label() for m in timed}
    evens = sorted(
        even.samples
        for even in explanation.break_even
        if {even.slow_start, even.fast_start} <= shown and samples[0] <= even.samples <= samples[-1]
    )
    for near in clusters(evens, apart=2.5):
        counts = ", ".join(units.count(at) for at in near)
        marked(fig, near, f"break-even{'s' * (len(near) > 1)} ≈ {counts} samples")
    layout(
        fig,
        len(timed),
        xaxis=log_axis("samples in the run", decades(samples[0], samples[-1], "{:,.0f}".format)),
        yaxis=log_axis(
            "time from a fresh process", decades(min(finish), max(finish), units.seconds)
        ),
    )
    return fig


def memory_figure(
    explanation: Explanation,
    figures: Sequence[Measurement],
    memory: Mapping[str, int | None] | None,
) -> Figure | None:
    """Peak memory against batch size per arm, under each device's memory and the margin
    left free (a memory far above every peak said, not drawn)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    peaks: list[int] = []
    styles = arm_styles(explanation.models)
    for model in explanation.models.values():
        style = styles[model.arm]
        ran = sorted(
            (m for m in figures if m.config.arm == model.arm and m.peak_bytes),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        peaks += [m.peak_bytes or 0 for m in ran]
        hover = [
            f"{model.label}<br>batch {m.batch_size}: {units.size(m.peak_bytes)} "
            f"({m.peak_bytes_source or 'peak'})"
            for m in ran
        ]
        fig.add_trace(
            scatter(
                [m.batch_size for m in ran],
                [m.peak_bytes for m in ran],
                model.label,
                hover,
                mode="markers+lines",
                line={"color": style.color},
                marker={"color": style.color, "symbol": style.symbol},
            )
        )
    if not peaks:
        return None
    far, drawn = [], list(peaks)
    for device, limit in {d: b for d, b in (memory or {}).items() if b}.items():
        if limit > FAR * max(peaks):
            far.append(f"{device}'s {units.size(limit)}")
            continue
        drawn.append(limit)
        hline(fig, limit, f"{device} memory", color="#d62728")
        if explanation.memory is not None:
            margin = explanation.memory["margin"]
            text = f"{units.percent(margin)} left free"
            hline(fig, (1 - margin) * limit, text, color="#d62728", dash="dot")
    if far:
        note(fig, f"far above every peak, off the chart: {', '.join(far)} of memory")
    layout(
        fig,
        len(fig.data),
        xaxis=log2_axis("batch size", [b for trace in fig.data for b in trace.x]),
        yaxis=log_axis("peak memory", octaves(min(drawn), max(drawn), units.size)),
    )
    return fig


def roofline_figure(explanation: Explanation) -> Figure | None:
    """Achieved FLOP/s against arithmetic intensity, each arm's best under its device's
    roofs (the bandwidth's slope up to each precision's peak, the probe's range of it
    shaded), a roof in its precision's colour; ``None`` without the limits or XLA's figures."""
    import plotly.graph_objects as go

    placed = [r for r in explanation.rooflines if r.intensity and r.flops_per_s]
    if not placed:
        return None
    fig = go.Figure()
    styles = arm_styles([*explanation.models, *(r.config.arm for r in placed)])
    intensities = [r.intensity for r in placed if r.intensity]
    ridges = [r.peak_flops / r.bandwidth for r in placed]
    low, high = min(intensities) / 10, max(max(intensities) * 10, *ridges)
    roofs = {(r.config.device, r.config.precision): r for r in placed}
    ys: list[float] = []
    for (device, precision), r in sorted(roofs.items()):
        xs = [low, r.peak_flops / r.bandwidth, high]
        roof = [min(r.peak_flops, x * r.bandwidth) for x in xs]
        ys += roof
        color = precision_color(styles, device, precision)
        if r.peak_range is not None and r.peak_range[1] > r.peak_range[0]:
            lowest, highest = r.peak_range
            band = [min(highest, x * r.bandwidth) for x in xs]
            band += [min(lowest, x * r.bandwidth) for x in reversed(xs)]
            name = (
                f"{device} {precision} peak as the probe measured it: "
                f"{units.rate(lowest, 'FLOP/s')}–{units.rate(highest, 'FLOP/s')}"
            )
            fig.add_trace(
                scatter(
                    [*xs, *reversed(xs)],
                    band,
                    name,
                    fill="toself",
                    mode="lines",
                    line={"width": 0},
                    opacity=0.15,
                    fillcolor=color,
                    hoverinfo="skip",
                )
            )
            ys += [highest]
        name = (
            f"{device} {precision} roof ({units.rate(r.peak_flops, 'FLOP/s')}, "
            f"{units.rate(r.bandwidth, 'B/s')})"
        )
        hover = [
            f"{device} {precision} roof at {x:.3g} FLOP/byte: {units.rate(y, 'FLOP/s')}"
            for x, y in zip(xs, roof, strict=True)
        ]
        fig.add_trace(
            scatter(xs, roof, name, hover, mode="lines", line={"color": color, "dash": "dash"})
        )
    for r in placed:
        c, style = r.config, styles[r.config.arm]
        ys.append(r.flops_per_s or 0.0)
        hover = [
            f"{c.label()}: {units.rate(r.flops_per_s, 'FLOP/s')} at "
            f"{r.intensity:.3g} FLOP/byte ({r.regime or 'unknown'})"
        ]
        fig.add_trace(
            scatter(
                [r.intensity],
                [r.flops_per_s],
                hover=hover,
                mode="markers",
                name=f"{c.device} {c.precision} batch {c.batch_size}: {r.regime or 'unknown'}",
                marker={"color": style.color, "size": 11, "symbol": style.symbol},
            )
        )
    layout(
        fig,
        len(fig.data),
        xaxis=log_axis(
            "arithmetic intensity (FLOP per byte accessed)", decades(low, high, lambda v: f"{v:g}")
        ),
        yaxis=log_axis("achieved FLOP/s", decades(min(ys), max(ys), units.rate)),
    )
    return fig


def scaling_figure(explanation: Explanation) -> Figure | None:
    """Throughput against the devices used together (the pick's kind, precision and width
    at each count's best batch), beside perfect scaling from one device."""
    import plotly.graph_objects as go

    s = explanation.scaling
    if s is None:
        return None
    fig = go.Figure()
    counts = [c.count for c in s.counts]
    one = s.counts[0].rate
    fig.add_trace(
        scatter(
            counts,
            [one * n for n in counts],
            "perfect scaling",
            mode="lines",
            line={"color": "#999", "dash": "dot"},
            hoverinfo="skip",
        )
    )
    hover = [
        f"{c.label}<br>{units.rate(c.rate, 'samples/s')}: {c.speedup:.2f}x one device "
        f"({c.efficiency:.0%})"
        for c in s.counts
    ]
    fig.add_trace(
        scatter(
            counts,
            [c.rate for c in s.counts],
            f"measured ({s.platform})",
            hover,
            mode="markers+lines",
            marker={"size": 10},
        )
    )
    rates = [c.rate for c in s.counts] + [one * counts[-1]]
    samples = octaves(min(rates), max(rates), lambda r: units.rate(r, "samples/s"))
    layout(
        fig,
        2,
        xaxis=log2_axis("devices used together", counts),
        yaxis=log_axis("samples/s", samples),
    )
    return fig
