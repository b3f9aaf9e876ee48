"""The explanation's main figure, for the HTML report and for optuna-dashboard: throughput
against batch size per arm, the measured points with their spread, each fitted line's
throughput ``b/(a + c·b)`` where it holds, cliffs and crossovers marked. Plotly is
imported when a figure is drawn, never at ``import autoplace``.

On a log axis plotly takes a shape's position in data units but an annotation's in log10
units (an annotation at ``x=64`` lands at 10⁶⁴): every marker here goes through
:func:`vline` and :func:`hline`, which place both right.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from autoplace import units
from autoplace.explaining._explanation import Explanation
from autoplace.measurement import Measurement

#: Batches drawn along a fitted curve between its ends.
_CURVE_POINTS = 60
#: Ten colours told apart easily (D3's category 10), then marker shapes for more arms.
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x")
#: The plot area's height, and a legend entry's, in pixels: a figure grows with its legend
#: so that every entry shows (plotly would clip the rest behind a scroll bar).
PLOT_HEIGHT = 380
LEGEND_ENTRY = 21
#: A horizontal marker further than this factor above the data is left out of a log
#: plot (it would squeeze the data into a sliver) and said in the axis title instead.
FAR = 100.0


#: At most this many tick labels on a batch-size axis: every power of two, or every
#: second, fourth, ... where more would crowd (a narrow figure turns crowded labels on end).
MAX_TICKS = 8


def log2_axis(title: str, values: Sequence[float] = ()) -> dict[str, Any]:
    """A log axis ticked at powers of two (every ``2**k``-th one where the ``values``
    span more than :data:`MAX_TICKS` of them)."""
    octaves = math.log2(max(values) / min(values)) if values and min(values) > 0 else 0
    step = max(1, math.ceil((octaves + 1) / MAX_TICKS))
    return {
        "title": title,
        "type": "log",
        "dtick": step * math.log10(2),
        "tickformat": "d",
        "automargin": True,
    }


def arm_key(m: Measurement) -> tuple[str, str, int | None]:
    return (m.device, m.precision, m.width)


def short_label(m: Measurement) -> str:
    """A configuration in a few characters, its width included when it has one:
    ``cpu:0 b=64 float32 w=8``."""
    width = "" if m.width is None else f" w={m.width}"
    return f"{m.device} b={m.batch_size} {m.precision}{width}"


def _at(value: float, log: bool) -> float:
    """Where an annotation goes on an axis: log10 of the value on a log axis."""
    return math.log10(value) if log else value


def vline(fig: Any, x: float, text: str, *, log: bool, color: str, dash: str) -> None:
    """A vertical marker at ``x`` (data units) labelled above the plot area, right on a log
    axis too."""
    fig.add_vline(x=x, line={"color": color, "dash": dash})
    label(fig, x, text, y=1.0, color=color, log=log)


def label(fig: Any, x: float, text: str, *, y: float, color: str, log: bool = True) -> None:
    """A label at ``x`` (data units), ``y`` of the plot area's height up (1: above it)."""
    fig.add_annotation(
        x=_at(x, log),
        xref="x",
        y=y,
        yref="paper",
        yanchor="bottom",
        text=text,
        showarrow=False,
        font={"size": 11, "color": color},
        bgcolor="rgba(255,255,255,0.7)" if y < 1 else None,
    )


def hline(fig: Any, y: float, text: str, *, log: bool, color: str, dash: str = "solid") -> None:
    """A horizontal marker at ``y`` (data units) with its label, right on a log axis too."""
    fig.add_hline(y=y, line={"color": color, "dash": dash})
    fig.add_annotation(
        x=1.0,
        xref="paper",
        xanchor="right",
        y=_at(y, log),
        yref="y",
        yanchor="bottom",
        text=text,
        showarrow=False,
        font={"size": 11, "color": color},
    )


def note(fig: Any, text: str) -> None:
    """A line of text above the plot area, at its left."""
    fig.add_annotation(
        x=0.0, xref="paper", y=1.0, yref="paper", yanchor="bottom", xanchor="left",
        text=text, showarrow=False, font={"size": 11, "color": "#555"},
    )  # fmt: skip


def _clusters(values: Sequence[float], apart: float = 1.25) -> list[list[float]]:
    """Sorted ``values`` in runs whose neighbours lie within ``apart`` times each other
    (their labels would overlap on a log axis)."""
    runs: list[list[float]] = []
    for v in values:
        if runs and v <= runs[-1][-1] * apart:
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs


def layout(fig: Any, entries: int, **axes: Any) -> None:
    """The figure's layout: the legend beside the plot, tall enough for every entry."""
    fig.update_layout(
        height=max(PLOT_HEIGHT, LEGEND_ENTRY * entries) + 110,
        margin={"t": 40, "b": 70},
        legend={"yanchor": "top", "y": 1.0},
        **axes,
    )


def throughput_figure(explanation: Explanation, figures: Sequence[Measurement]) -> Any:
    """Throughput against batch size, every arm (see the module docstring). Each arm is one
    legend entry: its measured points, and its fitted curve (dashed) drawn with them."""
    import plotly.graph_objects as go

    fig, entries, batches, departs = go.Figure(), 0, [], []
    for n, model in enumerate(explanation.models.values()):
        color = PALETTE[n % len(PALETTE)]
        ran = sorted(
            (m for m in figures if arm_key(m) == model.arm and m.status == "ok" and m.fed_step_s),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        entries += 1
        batches += [m.batch_size for m in ran]
        ys = [m.batch_size / m.fed_step_s for m in ran]  # type: ignore[operator]
        errors = [y * (m.fed_step_spread or 0.0) / 2 for y, m in zip(ys, ran, strict=True)]
        line = model.fed
        fit = (
            f"b/({units.seconds(line.fixed)} + {units.seconds(line.per_sample)}·b)"
            if line is not None
            else "one batch size: no line"
        )
        fig.add_trace(
            go.Scatter(
                x=[m.batch_size for m in ran],
                y=ys,
                mode="markers",
                name=model.label,
                marker={"color": color, "size": 8, "symbol": SYMBOLS[n // len(PALETTE) % 5]},
                error_y={"type": "data", "array": errors, "visible": True},
                legendgroup=model.label,
                hovertemplate=f"{model.label}<br>batch %{{x}}: %{{y:.4s}} samples/s<br>line: "
                f"{fit}<extra></extra>",
            )
        )
        if line is None:
            continue
        lo, hi = min(line.batches), max(line.batches)
        xs = [lo * (hi / lo) ** (i / (_CURVE_POINTS - 1)) for i in range(_CURVE_POINTS)]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[b / line.at(b) for b in xs],
                mode="lines",
                line={"color": color, "dash": "dash"},
                name=f"{model.label}: {fit}",
                legendgroup=model.label,
                showlegend=False,
                hoverinfo="name",
            )
        )
        if line.departs_at is not None:
            fig.add_vline(x=line.departs_at, line={"color": color, "dash": "dot"})
            departs.append(line.departs_at)
    # One label per batch where lines leave their measurements, stacked where they crowd.
    for near in _clusters(sorted(set(departs)), apart=2.5):
        for k, b in enumerate(near):
            label(fig, b, f"leaves the line: {b}", y=0.02 + 0.07 * k, color="#555")
    crossings = sorted(
        x.above
        for x in explanation.crossovers
        if x.above is not None and x.above > x.low and min(batches) <= x.above <= max(batches)
    )
    for near in _clusters(crossings):  # one label for crossings a few percent apart
        for above in near:
            fig.add_vline(x=above, line={"color": "#555", "dash": "longdash"})
        shown = list(dict.fromkeys(f"{a:.0f}" for a in near))
        text = "crossover" + ("s" if len(shown) > 1 else "") + " ≈ " + ", ".join(shown)
        vline(fig, near[0], text, log=True, color="#555", dash="longdash")
    layout(
        fig,
        entries,
        xaxis=log2_axis("batch size", batches),
        yaxis={"title": "samples/s, feeding host batches", "type": "log", "automargin": True},
    )
    return fig
