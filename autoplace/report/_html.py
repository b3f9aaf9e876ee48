"""``autoplace report``: one self-contained HTML page of a study, readable offline.

Plotly draws the figures (the library Optuna's own visualisation uses); its JavaScript is
inlined once, so the page opens without a network, a CDN or a server. The page holds:

1. the explanation's sentences, then its findings (a busy machine, configurations it
   could not tell apart, ...), as the terminal and the file say them;
2. throughput against batch size for every arm: the measured points with their spread,
   the fitted line's throughput ``b/(a + c·b)`` where it holds, crossovers marked;
3. each finalist's costs split into their parts: one-off (lowering, compile, first call)
   and per fed step (the put of the batch on the device, and the rest);
4. time from a fresh process against run length for the finalists, break-evens marked;
5. memory against batch size with the device's limit and the margin left free;
6. the table of every measurement (click a column's header to sort).

Nothing here computes a figure: it draws the study's :class:`~autoplace.tuning.Standing`
and its :class:`~autoplace.explaining.Explanation`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autoplace import units
from autoplace._atomic import check_writable, write_atomic
from autoplace.explaining import (
    FAR,
    PALETTE,
    Explanation,
    arm_key,
    finish_s,
    hline,
    layout,
    log2_axis,
    note,
    one_off,
    per_sample,
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
        ("Throughput against batch size", throughput_figure(explanation, figures)),
        ("Where the time goes, per finalist", _costs(finalists)),
        ("Time from a fresh process against run length", _run_length(explanation, finalists)),
        ("Memory against batch size", _memory(explanation, figures, view.device_memory)),
        ("Each arm's best against the machine's roofline", _roofline(explanation)),
    ]
    blocks = []
    for title, fig in parts:
        if fig is None:
            continue
        body = fig.to_html(full_html=False, include_plotlyjs=not blocks)  # inlined once
        blocks.append(f'<section class="plot"><h2>{html.escape(title)}</h2>{body}</section>')
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


def _costs(finalists: Sequence[Measurement]) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not finalists:
        return None
    labels = [short_label(m) for m in finalists]
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("one-off, once per process", "per step, fed")
    )
    for name, value in (
        ("lowering", lambda m: m.lower_s),
        ("compile", lambda m: m.compile_s),
        ("first call", lambda m: m.first_call_s),
    ):
        fig.add_trace(
            go.Bar(x=labels, y=[value(m) or 0.0 for m in finalists], name=name), row=1, col=1
        )
    # The fed step (the loop the finalists were ranked on, timed in turns) split into the
    # measured put of one batch and the rest: compute, dispatch, the loop itself.
    puts = [min(m.transfer_s or 0.0, m.fed_step_s or 0.0) for m in finalists]
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[(m.fed_step_s or 0.0) - p for m, p in zip(finalists, puts, strict=True)],
            name="step: compute, dispatch, loop",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(go.Bar(x=labels, y=puts, name="put of the batch on the device"), row=1, col=2)
    layout(fig, 5, barmode="stack")
    fig.update_yaxes(title_text="seconds", row=1, col=1)
    fig.update_yaxes(title_text="seconds", row=1, col=2)
    return fig


def _run_length(explanation: Explanation, finalists: Sequence[Measurement]) -> Any:
    import plotly.graph_objects as go

    timed = [m for m in finalists if one_off(m) is not None and per_sample(m)]
    if not timed:
        return None
    fig = go.Figure()
    samples = [round(10 ** (k / 8)) for k in range(0, 8 * 8 + 1)]  # 1 .. 1e8
    for n, m in enumerate(timed):
        fig.add_trace(
            go.Scatter(
                x=samples,
                y=[finish_s(m, s) for s in samples],
                mode="lines",
                name=short_label(m),
                line={"color": PALETTE[n % len(PALETTE)]},
            )
        )
    for even in explanation.break_even:
        if samples[0] <= even.samples <= samples[-1]:
            text = f"break-even ≈ {even.samples:,.0f} samples"
            vline(fig, even.samples, text, log=True, color="#555", dash="longdash")
    layout(
        fig,
        len(timed),
        xaxis={"title": "samples in the run", "type": "log"},
        yaxis={"title": "seconds from a fresh process", "type": "log", "dtick": 1},
    )
    return fig


def _memory(explanation: Explanation, figures: Sequence[Measurement], memory: Any) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    peaks: list[int] = []
    for n, model in enumerate(explanation.models.values()):
        color = PALETTE[n % len(PALETTE)]
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
                line={"color": color},
            )
        )
    if not peaks:
        return None
    far = []
    for device, limit in {d: b for d, b in (memory or {}).items() if b}.items():
        if limit > FAR * max(peaks):  # drawn, it would squeeze the peaks into a sliver
            far.append(f"{device}'s {units.size(limit)}")
            continue
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
        yaxis={"title": "peak bytes", "type": "log", "automargin": True},
    )
    return fig


def _roofline(explanation: Explanation) -> Any:
    """Achieved FLOP/s against arithmetic intensity, one point per arm at its best batch,
    under the roofs its device's measured limits draw: the bandwidth's slope
    (``intensity × bytes/s``) up to each precision's peak. ``None`` without the limits
    (``autoplace limits``) or XLA's figures."""
    import plotly.graph_objects as go

    placed = [r for r in explanation.rooflines if r.intensity and r.flops_per_s]
    if not placed:
        return None
    fig = go.Figure()
    intensities = [r.intensity for r in placed if r.intensity]
    ridges = [r.peak_flops / r.bandwidth for r in placed]
    low, high = min(intensities) / 10, max(max(intensities) * 10, *ridges)
    roofs = {(r.config.device, r.config.precision): r for r in placed}
    for n, ((device, precision), r) in enumerate(sorted(roofs.items())):
        ridge = r.peak_flops / r.bandwidth
        xs = [low, ridge, high]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[min(r.peak_flops, x * r.bandwidth) for x in xs],
                mode="lines",
                name=f"{device} {precision} roof ({units.rate(r.peak_flops, 'FLOP/s')}, "
                f"{units.rate(r.bandwidth, 'B/s')})",
                line={"color": PALETTE[n % len(PALETTE)], "dash": "dash"},
            )
        )
    for n, r in enumerate(placed):
        c = r.config
        fig.add_trace(
            go.Scatter(
                x=[r.intensity],
                y=[r.flops_per_s],
                mode="markers",
                name=f"{c.device} {c.precision} batch {c.batch_size}: {r.regime or 'unknown'}",
                marker={"color": PALETTE[n % len(PALETTE)], "size": 11, "symbol": "diamond"},
            )
        )
    layout(
        fig,
        len(fig.data),
        xaxis={
            "title": "arithmetic intensity (FLOP per byte accessed)",
            "type": "log",
            "automargin": True,
        },
        yaxis={"title": "achieved FLOP/s", "type": "log", "automargin": True},
    )
    return fig


_COLUMNS = (
    ("device", lambda m: m.device),
    ("batch", lambda m: m.batch_size),
    ("precision", lambda m: m.precision),
    ("width", lambda m: m.width if m.width is not None else ""),
    ("status", lambda m: m.status),
    ("samples/s (fed)", lambda m: m.fed_samples_per_s),
    ("fed step (s)", lambda m: m.fed_step_s),
    ("spread", lambda m: m.fed_step_spread),
    ("steady step (s)", lambda m: m.step_s),
    ("transfer (s)", lambda m: m.transfer_s),
    ("lowering (s)", lambda m: m.lower_s),
    ("compile (s)", lambda m: m.compile_s),
    ("first call (s)", lambda m: m.first_call_s),
    ("peak bytes", lambda m: m.peak_bytes),
    ("deviation vs float32", lambda m: m.deviation_vs_float32),
    ("reason", lambda m: m.reason),
)


def _cell(value: Any) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, float):
        return f'<td data-v="{value!r}">{value:.4g}</td>'
    if isinstance(value, int):
        return f'<td data-v="{value}">{value}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _table(figures: Sequence[Measurement], standing: Any) -> str:
    best = standing.best.config if standing.best else None
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in _COLUMNS)
    rows = []
    for m in sorted(figures, key=lambda m: (m.device, m.precision, m.width or 0, m.batch_size)):
        mark = ' class="winner"' if best and _is(m, best) else ""
        cells = "".join(_cell(get(m)) for _, get in _COLUMNS)
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
th {{ cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }}
tr.winner td {{ background: #e8f5e9; font-weight: 600; }}
.meta {{ color: #666; }}
</style></head><body>
<h1>Why the winner wins</h1>
<p class="meta">study <code>{study}</code> — {objective}. Generated by autoplace from the
study's own measurements; opens offline.</p>
<ul class="why">{sentences}</ul>
{findings}
{plots}
<section><h2>Every measurement</h2>{table}</section>
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
