"""The explanation's main figure, for the HTML report and for optuna-dashboard: throughput
against batch size per arm, the measured points with their spread, each fitted line's
throughput ``b/(a + c·b)`` where it holds, cliffs and crossovers marked. Plotly is
imported when a figure is drawn, never at ``import autoplace``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from autoplace import units
from autoplace.explaining._explanation import Explanation
from autoplace.measurement import Measurement

#: Batches drawn along a fitted curve between its ends.
_CURVE_POINTS = 60
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def log2_axis(title: str) -> dict[str, Any]:
    return {"title": title, "type": "log", "dtick": math.log10(2), "tickformat": "d"}


def arm_key(m: Measurement) -> tuple[str, str, int | None]:
    return (m.device, m.precision, m.width)


def throughput_figure(explanation: Explanation, figures: Sequence[Measurement]) -> Any:
    """Throughput against batch size, every arm (see the module docstring)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for n, model in enumerate(explanation.models.values()):
        color = PALETTE[n % len(PALETTE)]
        ran = sorted(
            (m for m in figures if arm_key(m) == model.arm and m.status == "ok" and m.fed_step_s),
            key=lambda m: m.batch_size,
        )
        if not ran:
            continue
        ys = [m.batch_size / m.fed_step_s for m in ran]  # type: ignore[operator]
        errors = [y * (m.fed_step_spread or 0.0) / 2 for y, m in zip(ys, ran, strict=True)]
        fig.add_trace(
            go.Scatter(
                x=[m.batch_size for m in ran],
                y=ys,
                mode="markers",
                name=f"{model.label} (measured)",
                marker={"color": color, "size": 8},
                error_y={"type": "data", "array": errors, "visible": True},
                legendgroup=model.label,
            )
        )
        line = model.fed
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
                name=f"{model.label}: b/({units.seconds(line.fixed)} + "
                f"{units.seconds(line.per_sample)}·b)",
                legendgroup=model.label,
            )
        )
        if line.departs_at is not None:
            fig.add_vline(
                x=line.departs_at,
                line={"color": color, "dash": "dot"},
                annotation_text=f"leaves the line: {line.departs_at}",
            )
    for x in explanation.crossovers:
        if x.above is not None and x.above >= 1:
            fig.add_vline(
                x=x.above,
                line={"color": "#555", "dash": "longdash"},
                annotation_text=f"crossover ≈ {x.above:.0f}",
                annotation_position="top left",
            )
    fig.update_layout(
        xaxis=log2_axis("batch size"),
        yaxis={"title": "samples/s, feeding host batches", "type": "log"},
        height=480,
        margin={"t": 30},
    )
    return fig
