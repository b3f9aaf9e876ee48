"""The report's costs of each finalist: one-off (lowering, compile, first call) and per fed
step, split into compute and feeding (:func:`split_step`), and in words what the bars
cannot draw."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from autoplace import units
from autoplace.costs import TIMED_CHUNKS
from autoplace.explaining import layout, linear_ticks, short_label
from autoplace.measurement import Measurement

if TYPE_CHECKING:
    from plotly.graph_objects import Bar, Figure


@dataclasses.dataclass(frozen=True)
class StepSplit:
    """One measurement's fed step as ``compute`` (its steady step, the batch on the device)
    plus ``feeding`` (the rest, never negative). ``glance``: the steady step was timed once,
    so the split is rough; ``compute`` is ``None`` (the fed step drawn whole) where it was
    not timed, or glanced at and slower than the fed step."""

    fed: float
    compute: float | None
    feeding: float
    glance: bool


def split_step(m: Measurement) -> StepSplit | None:
    """``m``'s fed step split (both loops timed in its process); ``None`` without one."""
    if not m.fed.step_s:
        return None
    fed = m.fed.step_s
    glance = (m.step.samples or 1) < TIMED_CHUNKS
    if not m.step.step_s or (glance and m.step.step_s >= fed):
        return StepSplit(fed, None, fed, glance)
    compute = min(m.step.step_s, fed)
    return StepSplit(fed, compute, fed - compute, glance)


#: The parts of a finalist's costs in greys (no bar reads as an arm's colour), feeding white.
_ONE_OFF = (
    ("lowering", "#dadada", lambda m: m.lower_s),
    ("compile", "#a6a6a6", lambda m: m.compile_s),
    ("first call", "#707070", lambda m: m.first_call_s),
)
_COMPUTE, _FEEDING, _WHOLE = "#333333", "#ffffff", "#8c8c8c"


def costs_figure(finalists: Sequence[Measurement]) -> Figure | None:
    """Each finalist's one-off costs and its fed step, split, as stacked bars."""
    from plotly.subplots import make_subplots

    if not finalists:
        return None
    labels = [short_label(m) for m in finalists]
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("one-off, once per process", "per step, fed")
    )
    for name, color, value in _ONE_OFF:
        fig.add_trace(_bar(labels, [value(m) for m in finalists], name, color), row=1, col=1)
    # The put timed alone is no share of the fed step: in the loop it overlaps (see notes).
    splits = [split_step(m) for m in finalists]
    compute = [x.compute if x else None for x in splits]
    if any(c is not None for c in compute):
        rough = [x is not None and x.glance and x.compute is not None for x in splits]
        name = "compute: the step, batch on the device" + " (hatched: timed once)" * any(rough)
        bar = _bar(labels, compute, name, _COMPUTE)
        bar.marker.pattern = {"shape": ["/" if r else "" for r in rough], "fgcolor": "#fff"}
        fig.add_trace(bar, row=1, col=2)
        split = [x.feeding if x and x.compute is not None else None for x in splits]
        feeding = _bar(labels, split, "feeding: the fed step less the step", _FEEDING)
        feeding.marker.line = {"color": _COMPUTE, "width": 1}
        fig.add_trace(feeding, row=1, col=2)
    whole = [x.fed if x and x.compute is None else None for x in splits]
    if any(whole):
        name = "fed step, whole: the step alone not timed to split it"
        bar = _bar(labels, whole, name, _WHOLE)
        bar.marker.pattern = {"shape": ".", "fgcolor": "#fff"}
        fig.add_trace(bar, row=1, col=2)
    layout(fig, len(fig.data), barmode="stack")
    tops = [sum(v(m) or 0.0 for _, _, v in _ONE_OFF) for m in finalists]
    fig.update_yaxes(title_text="seconds", row=1, col=1, **linear_ticks(max(tops), units.seconds))
    fed = max((x.fed for x in splits if x), default=0.0)
    fig.update_yaxes(title_text="seconds", row=1, col=2, **linear_ticks(fed, units.seconds))
    return fig


def _bar(labels: list[str], values: list[float | None], name: str, color: str) -> Bar:
    """One part of a stacked bar per finalist."""
    import plotly.graph_objects as go

    return go.Bar(
        x=labels,
        y=[v or 0.0 for v in values],
        name=name,
        marker={"color": color},
        hovertext=[
            f"{x}<br>{name}: {units.seconds(v)}" for x, v in zip(labels, values, strict=True)
        ],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def costs_notes(finalists: Sequence[Measurement]) -> list[str]:
    """What the per-step bars cannot draw: a put alone longer than its fed step, and a split
    resting on a glance."""
    notes = []
    for m in finalists:
        x = split_step(m)
        if x is None:
            continue
        put, of = m.transfer_s, f" of {units.size(m.batch_bytes)}" if m.batch_bytes else ""
        if put is not None and put > x.fed:
            notes.append(
                f"{short_label(m)}: one put{of} timed alone takes "
                f"{units.seconds(put)}, longer than the whole {units.seconds(x.fed)} fed step: "
                "in the loop the put overlaps the step, so it is no share of the bar."
            )
        step = units.seconds(m.step.step_s)
        if x.compute is not None and x.glance:
            notes.append(
                f"{short_label(m)}: the step with the batch on the device was timed once "
                f"({step}; a tune times in full the loop it ranks on): its share of the fed "
                "step is rough (hatched)."
            )
        elif x.compute is None and x.glance and m.step.step_s:
            notes.append(
                f"{short_label(m)}: the step with the batch on the device was timed once "
                f"({step}, right after the first call), longer than the whole "
                f"{units.seconds(x.fed)} fed step: too rough to split it, drawn whole."
            )
        elif x.compute is None:
            notes.append(f"{short_label(m)}: the step alone was not timed: its fed step is "
                         "drawn whole.")  # fmt: skip
    return notes
