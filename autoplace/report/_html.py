"""``autoplace report``: one self-contained HTML page of a study, readable offline.

Plotly draws the figures (the library Optuna's own visualisation uses); its JavaScript is
inlined once, so the page opens without a network, a CDN or a server. The page holds:

1. the explanation's sentences, then its findings (a busy machine, configurations it
   could not tell apart, ...), as the terminal and the file say them;
2. throughput against batch size for every arm: the measured points with their spread,
   the fitted line's throughput ``b/(a + c·b)`` where it holds, crossovers marked, the
   pick starred;
3. each finalist's costs split into their parts: one-off (lowering, compile, first call)
   and per fed step: the step with the batch on the device (compute), and the rest of the
   fed step (feeding), both of one measurement (see :func:`split_step`);
4. time from a fresh process against run length for the finalists, break-evens marked;
5. memory against batch size with the device's limit and the margin left free;
6. the table of every measurement (click a column's header to sort).

Every arm has one colour and marker in every figure, the roofline's roofs included
(:func:`~autoplace.explaining.arm_styles`); every number is written as the terminal
writes it (:mod:`autoplace.units`), in the table, the hover text and on the axes.

Nothing here measures: it draws the study's :class:`~autoplace.tuning.Standing` and its
:class:`~autoplace.explaining.Explanation`.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace import units
from autoplace._atomic import check_writable, write_atomic
from autoplace.costs import TIMED_CHUNKS, one_off
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
    linear_ticks,
    log2_axis,
    note,
    octaves,
    per_sample,
    precision_color,
    short_label,
    throughput_figure,
    vline,
)
from autoplace.measurement import Measurement


def write_report(
    source: str | Path,
    out: str | Path = "autoplace-report.html",
    workload: str | None = None,
    *,
    storage: str | None = None,
    study: str | None = None,
    objective: str = "throughput",
) -> Path:
    """Write the report of the study behind ``source`` (a recommendation file or a model
    file, as :func:`autoplace.explain` takes) to ``out``, atomically; return the path. An
    ``out`` that cannot be written is refused before the study is read."""
    from autoplace.tuning import read_study

    target = check_writable(out, "the report", make_folders=False)
    view = read_study(source, workload, storage=storage, study=study, objective=objective)
    return write_atomic(target, render(view))


def render(view: Any) -> str:
    """The report's HTML."""
    import plotly.graph_objects as go  # noqa: F401  (fails early if plotly is missing)

    explanation: Explanation = view.explanation
    standing = view.standing
    figures = [m for m in standing.figures.values()]
    finalists = [s.measurement for s in standing.ranked if s.confirmed] or [
        s.measurement for s in standing.ranked[:3]
    ]
    parts = [
        ("Throughput against batch size", throughput_figure(explanation, figures), []),
        ("Where the time goes, per finalist", _costs(finalists), _costs_notes(finalists)),
        (
            "Time from a fresh process against run length",
            _run_length(explanation, finalists, figures),
            [],
        ),
        ("Memory against batch size", _memory(explanation, figures, view.device_memory), []),
        ("Each arm's best against the machine's roofline", _roofline(explanation), []),
    ]
    blocks = []
    for title, fig, notes in parts:
        if fig is None:
            continue
        body = fig.to_html(full_html=False, include_plotlyjs=not blocks)  # inlined once
        said = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
        blocks.append(f'<section class="plot"><h2>{html.escape(title)}</h2>{body}{said}</section>')
    sentences = "".join(f"<li>{html.escape(s)}</li>" for s in explanation.sentences)
    findings = "".join(
        f'<li class="finding" data-kind="{html.escape(f["kind"])}"><b>{html.escape(f["text"])}'
        f"</b><br>{html.escape(f['cause'])}; {html.escape(f['fix'])}</li>"
        for f in explanation.findings
    )
    return _PAGE.format(
        title=html.escape(f"autoplace: {view.name}"),
        study=html.escape(view.name),
        objective=html.escape(standing.objective.describe()),
        sentences=sentences,
        findings=f'<ul class="findings">{findings}</ul>' if findings else "",
        plots="\n".join(blocks),
        table=_table(figures, standing),
    )


@dataclasses.dataclass(frozen=True)
class StepSplit:
    """One measurement's fed step in two parts that sum to it: ``compute`` (the step with
    the batch on the device, its steady step) and ``feeding`` (the rest: the fed step less
    the steady step, never negative). ``glance``: the steady step was timed once (one step
    right after the first call), so the split is rough; ``compute`` is ``None`` (the fed
    step drawn whole) where the steady step was not timed at all, or only glanced at and
    slower than the whole fed step: no share to draw."""

    fed: float
    compute: float | None
    feeding: float
    glance: bool


def split_step(m: Measurement) -> StepSplit | None:
    """``m``'s fed step split (see :class:`StepSplit`); ``None`` without a fed step. Both
    parts come from ``m`` alone: its two loops were timed in the same process."""
    if not m.fed_step_s:
        return None
    fed = m.fed_step_s
    glance = (m.step_samples or 1) < TIMED_CHUNKS
    if not m.step_s or (glance and m.step_s >= fed):
        return StepSplit(fed, None, fed, glance)
    compute = min(m.step_s, fed)
    return StepSplit(fed, compute, fed - compute, glance)


#: The parts of a finalist's costs: greys, so that no bar reads as an arm's colour; the
#: feeding part white, so that it never reads as a part of the one-off bars beside.
_ONE_OFF = (
    ("lowering", "#dadada", lambda m: m.lower_s),
    ("compile", "#a6a6a6", lambda m: m.compile_s),
    ("first call", "#707070", lambda m: m.first_call_s),
)
_COMPUTE, _FEEDING, _WHOLE = "#333333", "#ffffff", "#8c8c8c"


def _costs(finalists: Sequence[Measurement]) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not finalists:
        return None
    labels = [short_label(m) for m in finalists]
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("one-off, once per process", "per step, fed")
    )
    for name, color, value in _ONE_OFF:
        fig.add_trace(_bar(go, labels, [value(m) for m in finalists], name, color), row=1, col=1)
    # The fed step (the loop the finalists were ranked on, timed in turns) split into the
    # step with the batch on the device and the rest, both of the same measurement. The
    # put timed alone is no share of it: in the loop it overlaps the step (said below).
    splits = [split_step(m) for m in finalists]
    compute = [x.compute if x else None for x in splits]
    if any(c is not None for c in compute):
        rough = [x is not None and x.glance and x.compute is not None for x in splits]
        name = "compute: the step, batch on the device" + " (hatched: timed once)" * any(rough)
        bar = _bar(go, labels, compute, name, _COMPUTE)
        bar.marker.pattern = {"shape": ["/" if r else "" for r in rough], "fgcolor": "#fff"}
        fig.add_trace(bar, row=1, col=2)
        split = [x.feeding if x and x.compute is not None else None for x in splits]
        feeding = _bar(go, labels, split, "feeding: the fed step less the step", _FEEDING)
        feeding.marker.line = {"color": _COMPUTE, "width": 1}
        fig.add_trace(feeding, row=1, col=2)
    whole = [x.fed if x and x.compute is None else None for x in splits]
    if any(whole):
        name = "fed step, whole: the step alone not timed to split it"
        bar = _bar(go, labels, whole, name, _WHOLE)
        bar.marker.pattern = {"shape": ".", "fgcolor": "#fff"}
        fig.add_trace(bar, row=1, col=2)
    layout(fig, len(fig.data), barmode="stack")
    tops = [sum(v(m) or 0.0 for _, _, v in _ONE_OFF) for m in finalists]
    fig.update_yaxes(title_text="seconds", row=1, col=1, **linear_ticks(max(tops), units.seconds))
    fed = max((x.fed for x in splits if x), default=0.0)
    fig.update_yaxes(title_text="seconds", row=1, col=2, **linear_ticks(fed, units.seconds))
    return fig


def _bar(go: Any, labels: list[str], values: list[float | None], name: str, color: str) -> Any:
    """One part of a stacked bar per finalist, its hover text as the terminal writes it."""
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


def _costs_notes(finalists: Sequence[Measurement]) -> list[str]:
    """What the per-step bars cannot draw, in words: a put alone longer than the fed step
    it is part of (it overlaps the step in the loop), and a split resting on a glance."""
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
        step = units.seconds(m.step_s)
        if x.compute is not None and x.glance:
            notes.append(
                f"{short_label(m)}: the step with the batch on the device was timed once "
                f"({step}; a tune times in full the loop it ranks on): its share of the fed "
                "step is rough (hatched)."
            )
        elif x.compute is None and x.glance and m.step_s:
            notes.append(
                f"{short_label(m)}: the step with the batch on the device was timed once "
                f"({step}, right after the first call), longer than the whole "
                f"{units.seconds(x.fed)} fed step: too rough to split it, drawn whole."
            )
        elif x.compute is None:
            notes.append(f"{short_label(m)}: the step alone was not timed: its fed step is "
                         "drawn whole.")  # fmt: skip
    return notes


def _run_length(
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


def _memory(explanation: Explanation, figures: Sequence[Measurement], memory: Any) -> Any:
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


def _roofline(explanation: Explanation) -> Any:
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


#: The measurements table: each column's header, its raw value (kept for sorting) and how
#: the terminal writes it.
_COLUMNS: tuple[tuple[str, Callable[[Measurement], Any], Callable[[Any], str]], ...] = (
    ("device", lambda m: m.device, str),
    ("batch", lambda m: m.batch_size, str),
    ("precision", lambda m: m.precision, str),
    ("width", lambda m: m.width, str),
    ("status", lambda m: m.status, str),
    ("samples/s (fed)", lambda m: m.fed_samples_per_s, units.rate),
    ("fed step", lambda m: m.fed_step_s, units.seconds),
    ("spread", lambda m: m.fed_step_spread, units.percent),
    ("steady step", lambda m: m.step_s, units.seconds),
    ("transfer", lambda m: m.transfer_s, units.seconds),
    ("lowering", lambda m: m.lower_s, units.seconds),
    ("compile", lambda m: m.compile_s, units.seconds),
    ("first call", lambda m: m.first_call_s, units.seconds),
    ("peak memory", lambda m: m.peak_bytes, units.size),
    ("deviation vs float32", lambda m: m.deviation_vs_float32, units.percent),
    ("reason", lambda m: m.reason, str),
)


def _cell(value: Any, shown: Callable[[Any], str], title: str = "") -> str:
    """A cell: the value as the terminal writes it, the raw one kept for sorting; with a
    ``title``, greyed (a figure to read with care: the title says why)."""
    if value is None or value == "":
        return "<td></td>"
    text = html.escape(shown(value))
    said = f' class="arm" title="{html.escape(title)}"' if title else ""
    if isinstance(value, (int, float)):
        return f'<td data-v="{value!r}"{said}>{text}</td>'
    return f"<td{said}>{text}</td>"


#: A loop's chunks (the step's ``step_samples``, the fed loop's chunks) below
#: ``TIMED_CHUNKS``: a glance, one step right after the first call.
_GLANCED = "timed once (one step right after the first call): too rough to read beside a timed loop"


def _loops(m: Measurement) -> dict[str, str]:
    """The titles of ``m``'s loops that were only glanced at, by column."""
    chunks = {"steady step": m.step_samples or 1, "fed step": len(m.fed_step_chunk_s) or None}
    return {name: _GLANCED for name, n in chunks.items() if n is not None and n < TIMED_CHUNKS}


def _deviations(figures: Sequence[Measurement]) -> dict[Any, Measurement]:
    """Each lower-precision arm's measurement of its deviation from float32 (its largest):
    only a finalist's first window compares with float32, never the search."""
    out: dict[Any, Measurement] = {}
    for m in figures:
        if m.deviation_vs_float32 is None or m.precision == "float32":
            continue
        known = out.get(arm_key(m))
        if known is None or m.deviation_vs_float32 > known.deviation_vs_float32:  # type: ignore[operator]
            out[arm_key(m)] = m
    return out


def _deviation_cell(m: Measurement, measured: Mapping[Any, Measurement]) -> str:
    """``m``'s deviation from float32; where it has none but its arm measured one at
    another batch, that one, said so."""
    if m.deviation_vs_float32 is not None or arm_key(m) not in measured:
        return _cell(m.deviation_vs_float32, units.percent)
    other = measured[arm_key(m)]
    value = other.deviation_vs_float32
    title = (
        f"not compared at batch {m.batch_size} (the search does not compare with float32): "
        f"its arm's, at batch {other.batch_size}"
    )
    return (
        f'<td class="arm" data-v="{value!r}" title="{html.escape(title)}">'
        f"{units.percent(value)} (at batch {other.batch_size})</td>"
    )


def _table(figures: Sequence[Measurement], standing: Any) -> str:
    best = standing.best.config if standing.best else None
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _, _ in _COLUMNS)
    measured = _deviations(figures)
    rows = []
    for m in sorted(figures, key=lambda m: (m.device, m.precision, m.width or 0, m.batch_size)):
        mark = ' class="winner"' if best and _is(m, best) else ""
        glanced = _loops(m)
        cells = "".join(
            _deviation_cell(m, measured) if name == "deviation vs float32" else
            _cell(get(m), shown, glanced.get(name, ""))
            for name, get, shown in _COLUMNS
        )  # fmt: skip
        rows.append(f"<tr{mark}>{cells}</tr>")
    body = "".join(rows)
    return f'<table id="measurements"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _is(m: Measurement, c: Any) -> bool:
    return (m.device, m.batch_size, m.precision, m.width) == (
        c.device,
        c.batch_size,
        c.precision,
        c.width,
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.15em; margin-top: 2em; }}
ul.why li {{ margin: .35em 0; }}
ul.findings {{ list-style: none; padding: 0; }}
li.finding {{ background: #fff8e1; border-left: 4px solid #f9a825; margin: .5em 0;
  padding: .4em .8em; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }}
td {{ white-space: nowrap; }}
th {{ cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }}
tr.winner td {{ background: #e8f5e9; font-weight: 600; }}
td.arm {{ color: #777; font-style: italic; }}
p.note {{ color: #444; margin: .3em 0; }}
.meta {{ color: #666; }}
</style></head><body>
<h1>Why the winner wins</h1>
<p class="meta">study <code>{study}</code> — {objective}. Generated by autoplace from the
study's own measurements; opens offline.</p>
<ul class="why">{sentences}</ul>
{findings}
{plots}
<section><h2>Every measurement</h2>
<p class="note">Greyed: a figure to read with care (hover it for why): a loop timed once, or
a deviation from float32 compared at another batch of the arm.</p>{table}</section>
<script>
document.querySelectorAll('#measurements th').forEach(function (th, col) {{
  th.addEventListener('click', function () {{
    var body = th.closest('table').tBodies[0];
    var rows = Array.from(body.rows);
    var up = th.dataset.up !== '1'; th.dataset.up = up ? '1' : '0';
    rows.sort(function (a, b) {{
      var x = a.cells[col], y = b.cells[col];
      var vx = x.dataset.v !== undefined ? parseFloat(x.dataset.v) : x.textContent;
      var vy = y.dataset.v !== undefined ? parseFloat(y.dataset.v) : y.textContent;
      return (vx > vy ? 1 : vx < vy ? -1 : 0) * (up ? 1 : -1);
    }});
    rows.forEach(function (r) {{ body.appendChild(r); }});
  }});
}});
</script>
</body></html>
"""
