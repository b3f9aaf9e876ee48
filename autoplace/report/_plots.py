"""The report's curves: time from a fresh process against run length (break-evens
marked), memory against batch size (the device's limit and the margin left free), and each
arm's best under the machine's roofline. Each is ``None`` when there is nothing to draw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace import units
from autoplace.costs import one_off
from autoplace.explaining import (
    FAR,
    Explanation,
    arm_key,
    arm_styles,
    clusters,
    configuration_label,
    decades,
    finish_s,
    hline,
    layout,
    log2_axis,
    note,
    octaves,
    per_sample,
    precision_color,
    short_label,
    vline,
)
from autoplace.measurement import Measurement


def run_length_figure(
    explanation: Explanation, finalists: Sequence[Measurement], figures: Sequence[Measurement]
) -> Any:
    """Seconds from a fresh process against the samples of a run: the finalists, and the
    configurations the explanation's break-evens name (each arm's best), so that every
    break-even marked is where two drawn lines cross."""
    import plotly.graph_objects as go

    named = {x for even in explanation.break_even for x in (even.slow_start, even.fast_start)}
    drawn_too = [m for m in figures if configuration_label(m) in named and m not in finalists]
    timed = [m for m in (*finalists, *drawn_too) if one_off(m) is not None and per_sample(m)]
    if not timed:
        return None
    fig = go.Figure()
    styles = arm_styles([*explanation.models, *(arm_key(m) for m in timed)])
    samples = [round(10 ** (k / 8)) for k in range(0, 8 * 8 + 1)]  # 1 .. 1e8
    drawn: list[tuple[str, str, int | None]] = []
    finish: list[float] = []
    for m in timed:
        start = explanation.device_start.get(m.device, 0.0)  # once a process
        ys = [finish_s(m, s, start) or 0.0 for s in samples]
        finish += ys
        dash = _DASHES[drawn.count(arm_key(m)) % len(_DASHES)]  # an arm's finalists apart
        drawn.append(arm_key(m))
        fig.add_trace(
            go.Scatter(
                x=samples,
                y=ys,
                mode="lines",
                name=short_label(m),
                line={"color": styles[arm_key(m)].color, "dash": dash},
                hovertext=[
                    f"{short_label(m)}: {s:,} samples in {units.seconds(y)}"
                    for s, y in zip(samples, ys, strict=True)
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    shown = {configuration_label(m) for m in timed}
    evens = sorted(
        even.samples
        for even in explanation.break_even
        if {even.slow_start, even.fast_start} <= shown and samples[0] <= even.samples <= samples[-1]
    )
    for near in clusters(evens, apart=2.5):  # one label for break-evens close together
        for at in near:
            fig.add_vline(x=at, line={"color": "#555", "dash": "longdash"})
        text = "break-even" + ("s" if len(near) > 1 else "") + " ≈ "
        text += ", ".join(units.count(at) for at in near) + " samples"
        vline(fig, near[0], text, log=True, color="#555", dash="longdash")
    layout(
        fig,
        len(timed),
        xaxis={
            "title": "samples in the run",
            "type": "log",
            **decades(samples[0], samples[-1], lambda v: f"{v:,.0f}"),
        },
        yaxis={
            "title": "time from a fresh process",
            "type": "log",
            **decades(min(finish), max(finish), units.seconds),
        },
    )
    return fig


#: Line dashes that tell apart finalists of one arm (one colour) on the run-length plot.
_DASHES = ("solid", "dash", "dot", "dashdot")


def memory_figure(explanation: Explanation, figures: Sequence[Measurement], memory: Any) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    peaks: list[int] = []
    styles = arm_styles(explanation.models)
    for model in explanation.models.values():
        style = styles[model.arm]
        ran = sorted(
            (m for m in figures if arm_key(m) == model.arm and m.peak_bytes),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        peaks += [m.peak_bytes for m in ran]  # type: ignore[misc]
        fig.add_trace(
            go.Scatter(
                x=[m.batch_size for m in ran],
                y=[m.peak_bytes for m in ran],
                mode="markers+lines",
                name=model.label,
                line={"color": style.color},
                marker={"color": style.color, "symbol": style.symbol},
                hovertext=[
                    f"{model.label}<br>batch {m.batch_size}: {units.size(m.peak_bytes)} "
                    f"({m.peak_bytes_source or 'peak'})"
                    for m in ran
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    if not peaks:
        return None
    far, drawn = [], list(peaks)
    for device, limit in {d: b for d, b in (memory or {}).items() if b}.items():
        if limit > FAR * max(peaks):  # drawn, it would squeeze the peaks into a sliver
            far.append(f"{device}'s {units.size(limit)}")
            continue
        drawn.append(limit)
        hline(fig, limit, f"{device} memory", log=True, color="#d62728")
        if explanation.memory is not None:
            margin = explanation.memory["margin"]
            text = f"{units.percent(margin)} left free"
            hline(fig, (1 - margin) * limit, text, log=True, color="#d62728", dash="dot")
    if far:
        note(fig, f"far above every peak, off the chart: {', '.join(far)} of memory")
    layout(
        fig,
        len(fig.data),
        xaxis=log2_axis("batch size", [b for trace in fig.data for b in trace.x]),
        yaxis={
            "title": "peak memory",
            "type": "log",
            "automargin": True,
            **octaves(min(drawn), max(drawn), units.size),
        },
    )
    return fig


def roofline_figure(explanation: Explanation) -> Any:
    """Achieved FLOP/s against arithmetic intensity, one point per arm at its best batch,
    under the roofs its device's measured limits draw: the bandwidth's slope
    (``intensity × bytes/s``) up to each precision's peak. A roof and the points of its
    precision share one colour (every figure's, :func:`~autoplace.explaining.arm_styles`).
    ``None`` without the limits (``autoplace limits``) or XLA's figures."""
    import plotly.graph_objects as go

    placed = [r for r in explanation.rooflines if r.intensity and r.flops_per_s]
    if not placed:
        return None
    fig = go.Figure()
    styles = arm_styles(
        [*explanation.models, *((r.config.device, r.config.precision, r.config.width)
                                for r in placed)]
    )  # fmt: skip
    intensities = [r.intensity for r in placed if r.intensity]
    ridges = [r.peak_flops / r.bandwidth for r in placed]
    low, high = min(intensities) / 10, max(max(intensities) * 10, *ridges)
    roofs = {(r.config.device, r.config.precision): r for r in placed}
    ys: list[float] = []
    for (device, precision), r in sorted(roofs.items()):
        ridge = r.peak_flops / r.bandwidth
        xs = [low, ridge, high]
        roof = [min(r.peak_flops, x * r.bandwidth) for x in xs]
        ys += roof
        if r.peak_range is not None and r.peak_range[1] > r.peak_range[0]:
            # The roof is the probe's median: its windows' range shown, so that a point
            # above the median roof is seen within (or beyond) what the probe measured.
            lowest, highest = r.peak_range
            band = [min(highest, x * r.bandwidth) for x in xs] + [
                min(lowest, x * r.bandwidth) for x in reversed(xs)
            ]
            fig.add_trace(
                go.Scatter(
                    x=[*xs, *reversed(xs)],
                    y=band,
                    fill="toself",
                    mode="lines",
                    line={"width": 0},
                    opacity=0.15,
                    fillcolor=precision_color(styles, device, precision),
                    name=f"{device} {precision} peak as the probe measured it: "
                    f"{units.rate(lowest, 'FLOP/s')}–{units.rate(highest, 'FLOP/s')}",
                    hoverinfo="skip",
                )
            )
            ys += [highest]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=roof,
                mode="lines",
                name=f"{device} {precision} roof ({units.rate(r.peak_flops, 'FLOP/s')}, "
                f"{units.rate(r.bandwidth, 'B/s')})",
                line={"color": precision_color(styles, device, precision), "dash": "dash"},
                hovertext=[
                    f"{device} {precision} roof at {x:.3g} FLOP/byte: {units.rate(y, 'FLOP/s')}"
                    for x, y in zip(xs, roof, strict=True)
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    for r in placed:
        c = r.config
        style = styles[(c.device, c.precision, c.width)]
        ys.append(r.flops_per_s)  # type: ignore[arg-type]
        fig.add_trace(
            go.Scatter(
                x=[r.intensity],
                y=[r.flops_per_s],
                mode="markers",
                name=f"{c.device} {c.precision} batch {c.batch_size}: {r.regime or 'unknown'}",
                marker={"color": style.color, "size": 11, "symbol": style.symbol},
                hovertext=[
                    f"{c.label()}: {units.rate(r.flops_per_s, 'FLOP/s')} at "
                    f"{r.intensity:.3g} FLOP/byte ({r.regime or 'unknown'})"
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    layout(
        fig,
        len(fig.data),
        xaxis={
            "title": "arithmetic intensity (FLOP per byte accessed)",
            "type": "log",
            "automargin": True,
            **decades(low, high, lambda v: f"{v:g}"),
        },
        yaxis={
            "title": "achieved FLOP/s",
            "type": "log",
            "automargin": True,
            **decades(min(ys), max(ys), units.rate),
        },
    )
    return fig


def scaling_figure(explanation: Explanation) -> Any:
    """Throughput against the devices used together, the pick's kind, precision and
    width at each count's best batch, beside perfect scaling from one device."""
    import plotly.graph_objects as go

    s = explanation.scaling
    if s is None:
        return None
    fig = go.Figure()
    counts = [c.count for c in s.counts]
    one = s.counts[0].rate
    fig.add_trace(
        go.Scatter(
            x=counts,
            y=[one * n for n in counts],
            mode="lines",
            name="perfect scaling",
            line={"color": "#999", "dash": "dot"},
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=counts,
            y=[c.rate for c in s.counts],
            mode="markers+lines",
            name=f"measured ({s.platform})",
            marker={"size": 10},
            hovertext=[
                f"{c.label}<br>{units.rate(c.rate, 'samples/s')}: {c.speedup:.2f}x one "
                f"device ({c.efficiency:.0%})"
                for c in s.counts
            ],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    rates = [c.rate for c in s.counts] + [one * counts[-1]]
    layout(
        fig,
        2,
        xaxis=log2_axis("devices used together", counts),
        yaxis={"title": "samples/s", "type": "log", "automargin": True,
               **octaves(min(rates), max(rates), lambda r: units.rate(r, "samples/s"))},
    )  # fmt: skip
    return fig
