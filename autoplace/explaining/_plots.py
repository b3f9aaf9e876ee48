"""The explanation's main figure, for the HTML report and for optuna-dashboard: throughput
against batch size per arm, the measured points with their spread, each fitted line's
throughput ``b/(a + c·b)`` where it holds, cliffs and crossovers marked, the pick starred.
Plotly is imported when a figure is drawn, never at ``import autoplace``.

Every figure draws an arm alike (:func:`arm_styles`: one colour per device and precision,
one marker per width) and writes its numbers as the terminal does (:mod:`autoplace.units`:
``122.03 k``, ``6.1 MiB``, ``560 µs``), in hover text and on the axes (:func:`decades`,
:func:`octaves`, :func:`linear_ticks`).

On a log axis plotly takes a shape's position in data units but an annotation's in log10
units (an annotation at ``x=64`` lands at 10⁶⁴): every marker here goes through
:func:`vline` and :func:`hline`, which place both right.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from autoplace import units
from autoplace.costs import Arm, ArmModel
from autoplace.explaining._run_length import label as configuration_label
from autoplace.explaining._value import Explanation
from autoplace.measurement import Measurement

#: Batches drawn along a fitted curve between its ends.
_CURVE_POINTS = 60
#: Ten colours told apart easily (D3's category 10), then marker shapes for more arms.
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x")
#: How the pick is marked on the throughput figure: an open star around its point.
PICK_MARKER = {"symbol": "star-open", "size": 22, "color": "#000", "line": {"width": 2}}
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


@dataclasses.dataclass(frozen=True)
class Style:
    """How every figure draws one arm: its colour (its device and precision's: the roofline's
    roof of that precision has it too) and its marker (its width's)."""

    color: str
    symbol: str


def arm_styles(arms: Iterable[Arm]) -> dict[Arm, Style]:
    """Each arm's :class:`Style`: one colour per (device, precision), in the order they
    come, one marker per width; past :data:`PALETTE`'s colours, the markers move on too."""
    arms = list(dict.fromkeys(arms))
    pairs = list(dict.fromkeys((d, p) for d, p, _ in arms))
    widths = sorted({w for _, _, w in arms}, key=lambda w: -1 if w is None else w)
    out = {}
    for d, p, w in arms:
        n = pairs.index((d, p))
        symbol = SYMBOLS[(widths.index(w) + n // len(PALETTE)) % len(SYMBOLS)]
        out[(d, p, w)] = Style(PALETTE[n % len(PALETTE)], symbol)
    return out


def precision_color(styles: dict[Arm, Style], device: str, precision: str) -> str:
    """The colour ``styles`` give ``device``'s ``precision`` (its arms share it)."""
    return next(s.color for (d, p, _), s in styles.items() if (d, p) == (device, precision))


def _ticks(values: Sequence[float], text: Callable[[float], str]) -> dict[str, Any]:
    return {"tickvals": list(values), "ticktext": [text(v) for v in values]}


def decades(low: float, high: float, text: Callable[[float], str]) -> dict[str, Any]:
    """Ticks of a log axis spanning ``low``..``high``, written by ``text`` (a formatter of
    :mod:`autoplace.units`): 1, 2 and 5 of each decade, fewer where they would crowd,
    more where the span is short. Plotly draws those inside the axis's range."""
    low, high = min(low, high), max(low, high)
    span = math.log10(high / low) if low > 0 else 0.0
    steps: tuple[float, ...] = (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)
    if span > 3:
        steps = (1,)
    elif span > 1:
        steps = (1, 2, 5)
    elif span > 0.5:
        steps = (1, 2, 3, 5, 7)
    every = 2 if span > 8 else 1
    first, last = math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1
    values = [s * 10.0**k for k in range(first, last + 1, every) for s in steps]
    return _ticks([float(f"{v:.3g}") for v in values], text)


def octaves(low: float, high: float, text: Callable[[float], str]) -> dict[str, Any]:
    """Ticks of a log axis at powers of two (every second, fourth, ... where more than
    :data:`MAX_TICKS` would crowd), written by ``text`` (``units.size``: 1.0 MiB, 2.0 MiB)."""
    first, last = math.floor(math.log2(low)) - 1, math.ceil(math.log2(high)) + 1
    step = max(1, math.ceil((last - first - 1) / MAX_TICKS))
    return _ticks([2.0**k for k in range(first, last + 1, step)], text)


def linear_ticks(high: float, text: Callable[[float], str]) -> dict[str, Any]:
    """Ticks of a linear axis from 0 past ``high``, at a round step (1, 2 or 5 of a
    decade), about five of them, written by ``text`` (0 as ``0``)."""
    if high <= 0:
        return _ticks([0.0], lambda _: "0")
    rough = high / 5
    unit = 10.0 ** math.floor(math.log10(rough))
    step = next(s * unit for s in (1, 2, 5, 10) if s * unit >= rough)
    values = [float(f"{k * step:.3g}") for k in range(math.ceil(high / step) + 1)]
    return _ticks(values, lambda v: text(v) if v else "0")


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


def clusters(values: Sequence[float], apart: float = 1.25) -> list[list[float]]:
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
    legend entry: its measured points, and its fitted curve (dashed) drawn with them; the
    pick is starred, with its own legend entry."""
    import plotly.graph_objects as go

    fig, entries, batches, departs, ys_all = go.Figure(), 0, [], [], []
    styles = arm_styles(explanation.models)
    pick = None
    for model in explanation.models.values():
        ran = sorted(
            (m for m in figures if arm_key(m) == model.arm and m.status == "ok" and m.fed.step_s),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        entries += 1
        batches += [m.batch_size for m in ran]
        ys = [m.batch_size / m.fed.step_s for m in ran]  # type: ignore[operator]
        ys_all += ys
        _arm_points(fig, model, styles[model.arm], ran, ys)
        pick = pick or next(
            (
                (m, y)
                for m, y in zip(ran, ys, strict=True)
                if configuration_label(m) == explanation.winner
            ),
            None,
        )
        departs += _arm_curve(fig, model, styles[model.arm])
    if pick is not None:
        _pick_point(fig, *pick)
        entries += 1
    _departures(fig, departs)
    _crossings(fig, explanation, batches)
    yaxis = {"title": "samples/s, feeding host batches", "type": "log", "automargin": True}
    if ys_all:
        yaxis.update(decades(min(ys_all), max(ys_all), units.rate))
    layout(fig, entries, xaxis=log2_axis("batch size", batches), yaxis=yaxis)
    return fig


def _fit_text(model: ArmModel) -> str:
    line = model.fed
    if line is None:
        return "one batch size: no line"
    return f"b/({units.seconds(line.fixed)} + {units.seconds(line.per_sample)}·b)"


def _arm_points(
    fig: Any, model: ArmModel, style: Style, ran: Sequence[Measurement], ys: Sequence[float]
) -> None:
    """An arm's measured points, each with its spread and the arm's line in its hover."""
    import plotly.graph_objects as go

    fit = _fit_text(model)
    errors = [y * (m.fed.spread or 0.0) / 2 for y, m in zip(ys, ran, strict=True)]
    fig.add_trace(
        go.Scatter(
            x=[m.batch_size for m in ran],
            y=ys,
            mode="markers",
            name=model.label,
            marker={"color": style.color, "size": 8, "symbol": style.symbol},
            error_y={"type": "data", "array": errors, "visible": True},
            legendgroup=model.label,
            hovertext=[
                f"{model.label}<br>batch {m.batch_size}: {units.rate(y)} samples/s "
                f"(spread {units.percent(m.fed.spread)})<br>line: {fit}"
                for m, y in zip(ran, ys, strict=True)
            ],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )


def _arm_curve(fig: Any, model: ArmModel, style: Style) -> list[int]:
    """An arm's fitted curve (dashed) over the batches its line holds over, and a dotted
    line where its measurements leave it; the batches where they do."""
    import plotly.graph_objects as go

    line = model.fed
    if line is None:
        return []
    lo, hi = min(line.batches), max(line.batches)
    xs = [lo * (hi / lo) ** (i / (_CURVE_POINTS - 1)) for i in range(_CURVE_POINTS)]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[b / line.at(b) for b in xs],
            mode="lines",
            line={"color": style.color, "dash": "dash"},
            name=f"{model.label}: {_fit_text(model)}",
            legendgroup=model.label,
            showlegend=False,
            hoverinfo="name",
        )
    )
    if line.departs_at is None:
        return []
    fig.add_vline(x=line.departs_at, line={"color": style.color, "dash": "dot"})
    return [line.departs_at]


def _pick_point(fig: Any, m: Measurement, y: float) -> None:
    """The pick, starred, with its own legend entry."""
    import plotly.graph_objects as go

    fig.add_trace(
        go.Scatter(
            x=[m.batch_size],
            y=[y],
            mode="markers",
            name=f"pick: {short_label(m)}",
            marker=PICK_MARKER,
            hovertext=[f"the pick: {short_label(m)}, {units.rate(y)} samples/s"],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )


def _departures(fig: Any, departs: Sequence[int]) -> None:
    """One label per batch where lines leave their measurements, stacked where they crowd."""
    for near in clusters(sorted(set(departs)), apart=2.5):
        for k, b in enumerate(near):
            label(fig, b, f"leaves the line: {b}", y=0.02 + 0.07 * k, color="#555")


def _crossings(fig: Any, explanation: Explanation, batches: Sequence[int]) -> None:
    """Where two arms' lines cross inside the batches drawn: one label for crossings a few
    percent apart."""
    crossings = sorted(
        x.above
        for x in explanation.crossovers
        if x.above is not None and x.above > x.low and min(batches) <= x.above <= max(batches)
    )
    for near in clusters(crossings):
        for above in near:
            fig.add_vline(x=above, line={"color": "#555", "dash": "longdash"})
        shown = list(dict.fromkeys(f"{a:.0f}" for a in near))
        text = "crossover" + ("s" if len(shown) > 1 else "") + " ≈ " + ", ".join(shown)
        vline(fig, near[0], text, log=True, color="#555", dash="longdash")
