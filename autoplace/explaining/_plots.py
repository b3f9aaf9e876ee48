"""The explanation's main figure (throughput against batch size per arm, for the HTML report
and optuna-dashboard), and the helpers every figure of the report draws with.

Every figure draws an arm alike (:func:`arm_styles`) and writes numbers as the terminal
does (:mod:`autoplace.units`). On a log axis plotly places a shape in data units but an
annotation in log10 units: every label goes through :func:`label` or :func:`hline`,
which place both right. Plotly is imported when a figure is drawn.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autoplace import units
from autoplace.costs import Arm, ArmModel
from autoplace.explaining._value import Explanation
from autoplace.measurement import Measurement

if TYPE_CHECKING:
    from plotly.graph_objects import Figure, Scatter

#: Batches drawn along a fitted curve between its ends.
_CURVE_POINTS = 60
#: Ten colours told apart easily (D3's category 10), then marker shapes for more arms.
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x")
#: The pick on the throughput figure: an open star around its point.
PICK_MARKER = {"symbol": "star-open", "size": 22, "color": "#000", "line": {"width": 2}}
#: The plot area's height and a legend entry's, in pixels: a figure grows with its legend.
PLOT_HEIGHT = 380
LEGEND_ENTRY = 21
#: A horizontal marker further than this factor above the data is left out of a log plot
#: (it would squeeze the data into a sliver) and said instead.
FAR = 100.0
#: At most this many tick labels on a batch-size axis.
MAX_TICKS = 8

Ticks = dict[str, list[float] | list[str]]


def scatter(
    x: Sequence[float | None],
    y: Sequence[float | None],
    name: str,
    hover: Sequence[str] | None = None,
    **style: Any,
) -> Scatter:
    """A plotly ``Scatter``, each point's ``hover`` text shown alone."""
    import plotly.graph_objects as go

    if hover is not None:
        style.update(hovertext=hover, hovertemplate="%{hovertext}<extra></extra>")
    return go.Scatter(x=x, y=y, name=name, **style)


def log_axis(title: str, ticks: Mapping[str, object]) -> dict[str, object]:
    return {"title": title, "type": "log", "automargin": True, **ticks}


def log2_axis(title: str, values: Sequence[float] = ()) -> dict[str, object]:
    """A log axis ticked at powers of two (every ``2**k``-th past :data:`MAX_TICKS`)."""
    octaves = math.log2(max(values) / min(values)) if values and min(values) > 0 else 0
    step = max(1, math.ceil((octaves + 1) / MAX_TICKS))
    return log_axis(title, {"dtick": step * math.log10(2), "tickformat": "d"})


@dataclasses.dataclass(frozen=True)
class Style:
    """How every figure draws one arm: its device and precision's colour, its width's marker."""

    color: str
    symbol: str


def arm_styles(arms: Iterable[Arm]) -> dict[Arm, Style]:
    """Each arm's :class:`Style`, colours in the order the (device, precision) pairs come;
    past :data:`PALETTE`'s colours, the markers move on too."""
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
    return next(s.color for (d, p, _), s in styles.items() if (d, p) == (device, precision))


def _ticks(values: Sequence[float], text: Callable[[float], str]) -> Ticks:
    return {"tickvals": list(values), "ticktext": [text(v) for v in values]}


def decades(low: float, high: float, text: Callable[[float], str]) -> Ticks:
    """Ticks of a log axis over ``low``..``high`` written by ``text``: 1, 2 and 5 of each
    decade, fewer where they would crowd, more where the span is short."""
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


def octaves(low: float, high: float, text: Callable[[float], str]) -> Ticks:
    """Ticks of a log axis at powers of two (fewer past :data:`MAX_TICKS`)."""
    first, last = math.floor(math.log2(low)) - 1, math.ceil(math.log2(high)) + 1
    step = max(1, math.ceil((last - first - 1) / MAX_TICKS))
    return _ticks([2.0**k for k in range(first, last + 1, step)], text)


def linear_ticks(high: float, text: Callable[[float], str]) -> Ticks:
    """About five ticks of a linear axis from 0 past ``high`` at a round step."""
    if high <= 0:
        return _ticks([0.0], lambda _: "0")
    rough = high / 5
    unit = 10.0 ** math.floor(math.log10(rough))
    step = next(s * unit for s in (1, 2, 5, 10) if s * unit >= rough)
    values = [float(f"{k * step:.3g}") for k in range(math.ceil(high / step) + 1)]
    return _ticks(values, lambda v: text(v) if v else "0")


def short_label(m: Measurement) -> str:
    """``cpu:0 b=64 float32 w=8``."""
    width = "" if m.width is None else f" w={m.width}"
    return f"{m.device} b={m.batch_size} {m.precision}{width}"


def _annotate(fig: Figure, text: str, color: str, **where: Any) -> None:
    fig.add_annotation(
        text=text, showarrow=False, font={"size": 11, "color": color}, yanchor="bottom", **where
    )


def label(fig: Figure, x: float, text: str, *, y: float, color: str) -> None:
    """A label at ``x`` (data units, a log axis), ``y`` of the plot area's height up."""
    bg = "rgba(255,255,255,0.7)" if y < 1 else None
    _annotate(fig, text, color, x=math.log10(x), xref="x", y=y, yref="paper", bgcolor=bg)


def hline(fig: Figure, y: float, text: str, *, color: str, dash: str = "solid") -> None:
    """A horizontal marker at ``y`` (data units, a log axis) with its label."""
    fig.add_hline(y=y, line={"color": color, "dash": dash})
    _annotate(fig, text, color, x=1.0, xref="paper", xanchor="right", y=math.log10(y), yref="y")


def note(fig: Figure, text: str) -> None:
    """A line of text above the plot area, at its left."""
    _annotate(fig, text, "#555", x=0.0, xref="paper", y=1.0, yref="paper", xanchor="left")


def clusters(values: Sequence[float], apart: float = 1.25) -> list[list[float]]:
    """Sorted ``values`` in runs of neighbours within ``apart`` times each other (their labels
    would overlap on a log axis)."""
    runs: list[list[float]] = []
    for v in values:
        if runs and v <= runs[-1][-1] * apart:
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs


def marked(fig: Figure, near: Sequence[float], text: str) -> None:
    """Dashed vertical markers at ``near`` (values close together), labelled once."""
    for x in (*near, near[0]):  # the first twice: once more under its label
        fig.add_vline(x=x, line={"color": "#555", "dash": "longdash"})
    label(fig, near[0], text, y=1.0, color="#555")


def layout(fig: Figure, entries: int, **axes: Any) -> None:
    """The legend beside the plot, the figure tall enough for every entry."""
    fig.update_layout(
        height=max(PLOT_HEIGHT, LEGEND_ENTRY * entries) + 110,
        margin={"t": 40, "b": 70},
        legend={"yanchor": "top", "y": 1.0},
        **axes,
    )


def throughput_figure(explanation: Explanation, figures: Sequence[Measurement]) -> Figure:
    """Throughput against batch size, every arm one legend entry (its points, and its fitted
    curve ``b/(a + c·b)`` dashed), cliffs and crossovers marked, the pick starred."""
    import plotly.graph_objects as go

    fig, entries, batches, departs, ys_all = go.Figure(), 0, [], [], []
    styles = arm_styles(explanation.models)
    pick = None
    for model in explanation.models.values():
        ran = sorted(
            (m for m in figures if m.config.arm == model.arm and m.status == "ok" and m.fed.step_s),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        entries += 1
        batches += [m.batch_size for m in ran]
        ys = [m.fed.rate(m.batch_size) or 0.0 for m in ran]
        ys_all += ys
        _arm_points(fig, model, styles[model.arm], ran, ys)
        pick = pick or next(
            ((m, y) for m, y in zip(ran, ys, strict=True) if m.label() == explanation.winner), None
        )
        departs += _arm_curve(fig, model, styles[model.arm])
    if pick is not None:
        m, y = pick
        fig.add_trace(
            scatter(
                [m.batch_size],
                [y],
                f"pick: {short_label(m)}",
                mode="markers",
                hover=[f"the pick: {short_label(m)}, {units.rate(y)} samples/s"],
                marker=PICK_MARKER,
            )
        )
        entries += 1
    for near in clusters(sorted(set(departs)), apart=2.5):  # stacked where they crowd
        for k, b in enumerate(near):
            label(fig, b, f"leaves the line: {b}", y=0.02 + 0.07 * k, color="#555")
    crossings = sorted(
        x.above
        for x in explanation.crossovers
        if x.above is not None and x.above > x.low and min(batches) <= x.above <= max(batches)
    )
    for near in clusters(crossings):
        shown = list(dict.fromkeys(f"{a:.0f}" for a in near))
        marked(fig, near, "crossover" + "s" * (len(shown) > 1) + " ≈ " + ", ".join(shown))
    ticks = decades(min(ys_all), max(ys_all), units.rate) if ys_all else {}
    yaxis = log_axis("samples/s, feeding host batches", ticks)
    layout(fig, entries, xaxis=log2_axis("batch size", batches), yaxis=yaxis)
    return fig


def _fit_text(model: ArmModel) -> str:
    line = model.fed
    if line is None:
        return "one batch size: no line"
    return f"b/({units.seconds(line.fixed)} + {units.seconds(line.per_sample)}·b)"


def _arm_points(
    fig: Figure, model: ArmModel, style: Style, ran: Sequence[Measurement], ys: Sequence[float]
) -> None:
    """An arm's measured points, each with its spread and the arm's line in its hover."""
    fit = _fit_text(model)
    fig.add_trace(
        scatter(
            [m.batch_size for m in ran],
            ys,
            model.label,
            [
                f"{model.label}<br>batch {m.batch_size}: {units.rate(y)} samples/s "
                f"(spread {units.percent(m.fed.spread)})<br>line: {fit}"
                for m, y in zip(ran, ys, strict=True)
            ],
            mode="markers",
            marker={"color": style.color, "size": 8, "symbol": style.symbol},
            error_y={
                "type": "data",
                "array": [y * (m.fed.spread or 0.0) / 2 for y, m in zip(ys, ran, strict=True)],
                "visible": True,
            },
            legendgroup=model.label,
        )
    )


def _arm_curve(fig: Figure, model: ArmModel, style: Style) -> list[int]:
    """An arm's fitted curve (dashed) over the batches its line holds for, dotted where its
    measurements leave it; the batches where they do."""
    line = model.fed
    if line is None:
        return []
    lo, hi = min(line.batches), max(line.batches)
    xs = [lo * (hi / lo) ** (i / (_CURVE_POINTS - 1)) for i in range(_CURVE_POINTS)]
    fig.add_trace(
        scatter(
            xs,
            [b / line.at(b) for b in xs],
            f"{model.label}: {_fit_text(model)}",
            mode="lines",
            line={"color": style.color, "dash": "dash"},
            legendgroup=model.label,
            showlegend=False,
            hoverinfo="name",
        )
    )
    if line.departs_at is None:
        return []
    fig.add_vline(x=line.departs_at, line={"color": style.color, "dash": "dot"})
    return [line.departs_at]
