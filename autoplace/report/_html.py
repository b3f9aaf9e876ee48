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
   fed step (feeding), both of one measurement (``_costs.py``: :func:`split_step`);
4. time from a fresh process against run length for the finalists, break-evens marked;
5. memory against batch size with the device's limit and the margin left free;
6. each arm's best under the machine's roofline, and throughput against the devices used
   together where several were;
7. the table of every measurement (click a column's header to sort).

Every arm has one colour and marker in every figure, the roofline's roofs included
(:func:`~autoplace.explaining.arm_styles`); every number is written as the terminal
writes it (:mod:`autoplace.units`), in the table, the hover text and on the axes.

The page's assembly is here; its figures and its table are each their own module.
Nothing here measures: it draws the study's :class:`~autoplace.tuning.Standing` and its
:class:`~autoplace.explaining.Explanation`.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from autoplace._atomic import check_writable, write_atomic
from autoplace.explaining import Explanation, throughput_figure
from autoplace.report._costs import costs_figure, costs_notes
from autoplace.report._plots import (
    memory_figure,
    roofline_figure,
    run_length_figure,
    scaling_figure,
)
from autoplace.report._table import measurements_table


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
        ("Where the time goes, per finalist", costs_figure(finalists), costs_notes(finalists)),
        (
            "Time from a fresh process against run length",
            run_length_figure(explanation, finalists, figures),
            [],
        ),
        ("Memory against batch size", memory_figure(explanation, figures, view.device_memory), []),
        ("Each arm's best against the machine's roofline", roofline_figure(explanation), []),
        ("Throughput against the devices used together", scaling_figure(explanation), []),
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
        table=measurements_table(figures, standing),
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
