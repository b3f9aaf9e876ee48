"""``autoplace report``: one self-contained HTML page, checked in a real browser when one
is installed (Debian's ``chromium``)."""

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import optuna
import pytest
from synthetic import SyntheticBackend, measured, step_time

import autoplace
from autoplace import BadInputError
from autoplace.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def slowdown(request):
    """cpu:0 starts slower (0.172 ms a step) but costs 1 µs a sample, cpu:1 the other way
    round (0.1 ms, 4 µs): their lines cross at batch 24; cpu:0's steps run twice as slow from
    batch 256 (the line departs there). Width 128 costs twice width 64. (Markers at batches
    like these are where plotly, given a log axis's data units, stretched it to 10^256.)"""
    c = request.config
    fixed, each = {"cpu:0": (1.72e-4, 1e-6), "cpu:1": (1e-4, 4e-6)}[c.device]
    t = (fixed + each * c.batch_size) * (2.0 if c.device == "cpu:0" and c.batch_size >= 256 else 1)
    t *= 2.0 if c.width == 128 else 1.0
    return t / step_time(c.device, c.batch_size, c.precision)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A study of eight arms (two devices, precisions and widths), crossovers, a cliff."""
    tmp = tmp_path_factory.mktemp("report")
    model = tmp / "m.py"
    model.write_text("# synthetic\n")
    result = autoplace.tune(
        model,
        devices=("cpu:0", "cpu:1"),
        precisions=("float32", "bfloat16"),
        widths=(64, 128),
        batch_sizes=(8, 16, 32, 64, 128, 256, 512),
        strategy=autoplace.Grid(),
        storage=f"sqlite:///{tmp / 's.db'}",
        out=tmp / "autoplace.toml",
        backend=SyntheticBackend(devices=("cpu:0", "cpu:1"), slowdown=slowdown),
    )
    return result, write_report(result.out, tmp / "report.html")


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_the_page_is_self_contained(tuned):
    _, page = tuned
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r'<script[^>]+src="http', text)  # no CDN: plotly.js is inlined
    assert text.count("Plotly.newPlot") == 4  # throughput, costs, run length, memory
    assert text.count("window.Plotly") >= 1


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_the_page_holds_the_sentences_and_every_measurement(tuned):
    result, page = tuned
    text = page.read_text()
    for sentence in result.explanation.sentences:
        assert html.escape(sentence) in text
    body = text.split('<table id="measurements">')[1]
    assert body.count("<tr") - 1 == len(result.measurements)  # a header, then one row each
    assert body.count('class="winner"') == 1


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_an_unwritable_report_path_is_refused_before_any_work(tmp_path):
    # The source does not even exist: the path is checked first.
    missing = tmp_path / "missing.toml"
    with pytest.raises(BadInputError, match="no folder"):
        write_report(missing, tmp_path / "nope" / "r.html")
    with pytest.raises(BadInputError, match="is a folder"):
        write_report(missing, tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(BadInputError, match="no folder"):
        write_report(missing, tmp_path / "file" / "r.html")


#: Run in the page once plotly has drawn: what a reader sees of each figure, from the
#: drawing itself (pixels), into <pre id="seen">.
_PROBE = """
window.addEventListener('load', function () { setTimeout(function () {
  var seen = [];
  document.querySelectorAll('.js-plotly-plot').forEach(function (gd) {
    var L = gd._fullLayout, plots = [];
    gd.querySelectorAll('.cartesianlayer g.subplot').forEach(function (sp) {
      var name = Array.from(sp.classList).find(function (c) { return c !== 'subplot'; });
      var m = /^(x\\d*)(y\\d*)$/.exec(name);
      var xa = L[m[1].replace('x', 'xaxis')], ya = L[m[2].replace('y', 'yaxis')];
      var drawn = sp.querySelector('.overplot').getBBox();
      plots.push({
        name: name, x0: xa._offset, x1: xa._offset + xa._length,
        y0: ya._offset, y1: ya._offset + ya._length,
        data: [drawn.x, drawn.x + drawn.width, drawn.y, drawn.y + drawn.height],
        ticks: [gd.querySelectorAll('g.' + xa._id + 'tick').length,
                gd.querySelectorAll('g.' + ya._id + 'tick').length],
        range: [xa.range, ya.range]
      });
    });
    var svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
    var legend = gd.querySelector('g.legend'), shown = null;
    if (legend) {
      var box = legend.getBoundingClientRect();
      shown = {
        inside: box.left >= svg.left - 1 && box.right <= svg.right + 1 &&
                box.top >= svg.top - 1 && box.bottom <= svg.bottom + 1,
        visible: legend.querySelector('rect.bg').getBBox().height,
        content: legend.querySelector('.scrollbox').getBBox().height
      };
    }
    seen.push({plots: plots, legend: shown});
  });
  var pre = document.createElement('pre');
  pre.id = 'seen';
  pre.textContent = JSON.stringify(seen);
  document.body.appendChild(pre);
}, 1000); });
"""


def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("AUTOPLACE_REQUIRE_CHROMIUM"):  # set by .ci/run
            pytest.fail("no chromium on this machine: apt-get install chromium")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return CHROMIUM


def browse(page: Path, *args: str) -> str:
    """Open ``page`` in headless Chromium; its standard output. No clock decides: the time
    budget is Chromium's virtual time, and the limit is there only to end a hung browser."""
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1300,1000", "--virtual-time-budget=30000", *args, page.as_uri()],
        capture_output=True, text=True, timeout=900, check=True,
    ).stdout  # fmt: skip


def seen(page: Path) -> list[dict]:
    """What a reader sees of each figure on ``page`` (see ``_PROBE``)."""
    probed = page.with_name(page.stem + "-probed.html")
    probed.write_text(page.read_text().replace("</body>", f"<script>{_PROBE}</script></body>"))
    dom = browse(probed, "--dump-dom")
    found = re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S)
    assert found, "the page never finished drawing"
    return json.loads(html.unescape(found.group(1)))


def assert_reads_well(figure: dict) -> None:
    """Each plot: its axes cover the data and not much more (the data fill at least half of
    the plot area each way), a sane number of ticks, a plot area tall enough to read; the
    legend whole, inside the figure, without a scroll bar."""
    for plot in figure["plots"]:
        x0, x1, y0, y1 = plot["data"]
        name = plot["name"]
        assert plot["x0"] - 1 <= x0 and x1 <= plot["x1"] + 1, (name, "x cut", plot)
        assert plot["y0"] - 1 <= y0 and y1 <= plot["y1"] + 1, (name, "y cut", plot)
        assert x1 - x0 >= 0.5 * (plot["x1"] - plot["x0"]), (name, "x mostly empty", plot)
        assert y1 - y0 >= 0.5 * (plot["y1"] - plot["y0"]), (name, "y mostly empty", plot)
        assert all(2 <= n <= 25 for n in plot["ticks"]), (name, "ticks", plot)
        assert plot["y1"] - plot["y0"] >= 250, (name, "plot area too low", plot)
    legend = figure["legend"]
    assert legend is not None and legend["inside"], legend
    assert legend["visible"] >= legend["content"], ("legend clipped", legend)


@pytest.mark.slow
def test_every_plot_reads_well_in_a_real_browser(tuned):
    _, page = tuned
    figures = seen(page)
    assert len(figures) == 4  # throughput, costs, run length, memory
    for figure in figures:
        assert_reads_well(figure)
    browse(page, f"--screenshot={page.with_suffix('.png')}", "--window-size=1300,3000")


@pytest.mark.slow
def test_the_figure_optuna_dashboard_shows_reads_well(tuned):
    # The study's note figure, as optuna-dashboard keeps it (JSON in the study) and draws it.
    import plotly.io
    from optuna_dashboard._custom_plot_data import get_plotly_graph_objects

    result, page = tuned
    storage = optuna.storages.RDBStorage(f"sqlite:///{page.parent / 's.db'}")
    study_id = storage.get_study_id_from_name(result.study_name)
    kept = get_plotly_graph_objects(storage.get_study_system_attrs(study_id))
    figure = plotly.io.from_json(kept["autoplace-throughput"])
    note = page.with_name("note.html")
    figure.write_html(note, include_plotlyjs=True)
    [drawn] = seen(note)
    assert_reads_well(drawn)
    names = [t.name for t in figure.data if t.showlegend is not False]
    arms = {m.label for m in result.explanation.models.values()}
    best = result.best.measurement
    pick = f"pick: {best.device} b={best.batch_size} {best.precision} w={best.width}"
    assert sorted(names) == sorted([*arms, pick])  # every arm, once, and the pick


def test_the_roofline_plot_draws_each_precisions_roof_and_each_arms_best_under_it():
    from autoplace.explaining import explain_figures
    from autoplace.report._html import roofline_figure

    figures, explanation = _arms_with_limits()
    fig = roofline_figure(explanation)
    roofs = [t for t in fig.data if t.mode == "lines"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(roofs) == 2 and len(points) == 2
    assert max(roofs[0].y) in (1e11, 5e10)  # flat at the peak past the ridge
    assert points[0].x[0] == pytest.approx(40.0)  # 2e5 FLOPs / 5e3 bytes per sample
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "overhead-bound" in points[0].name
    winner, other = (m for c, m in figures.items() if c.batch_size == 32)
    assert roofline_figure(explain_figures(figures, winner, [other])) is None  # no limits, no plot


def test_a_point_above_its_roof_is_drawn_beside_the_probes_measured_range():
    # Issue 47: a roofline point drawn above its own roof, the peak measured ±62% and not
    # shown. The roof is the probe's median; its windows' range is drawn beside it.
    from autoplace.report._html import roofline_figure

    _, explanation = _arms_with_limits(peak=[6e9, 1e10, 2e10])
    fig = roofline_figure(explanation)
    bands = [t for t in fig.data if t.fill == "toself"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(bands) == 2  # one per precision's roof
    above = [p for p in points if p.y[0] > 1e10]  # over the median roof of 1e10 FLOP/s
    assert above and all(p.y[0] <= 2e10 for p in above)  # within what the probe measured
    assert any("6.00 GFLOP/s–20.00 GFLOP/s" in b.name for b in bands), [b.name for b in bands]


def _arms_with_limits(peak=(1e11,)):
    """float32 and bfloat16 on one device at three batches, the machine's limits measured
    (float32's peak in each of the probe's windows: ``peak``), float32 the winner: the
    roofline's roofs come sorted by name (bfloat16 first), its points winner first."""
    from autoplace import Config
    from autoplace.explaining import explain_figures
    from autoplace.limits import DeviceLimits, Figure, MachineLimits

    def ran(b, precision):
        t = 5e-4 + 1e-6 * b
        return Config("cpu:0", b, precision), measured(
            "ok", "", "cpu:0", b, precision, None, step_s=t, step_spread=0.01, step_samples=5,
            fed_step_s=t, fed_step_spread=0.01, fed_step_chunk_s=(t,) * 5,
            fed_samples_per_s=b / t, flops=2e5 * b, bytes_accessed=5e3 * b, peak_bytes=4096 * b,
        )  # fmt: skip

    figures = dict(ran(b, p) for b in (8, 16, 32) for p in ("float32", "bfloat16"))
    half = [x / 2 for x in peak]
    device = DeviceLimits("cpu:0", "cpu", {"float32": Figure.of(list(peak)),
                          "bfloat16": Figure.of(half)}, 1024, Figure.of([1e10]),
                          Figure.of([5e9]), Figure.of([1e-5]))  # fmt: skip
    limits = MachineLimits((device,), {}, "2026-11-25T05:00:00+00:00")
    winner = figures[Config("cpu:0", 32, "float32")]
    other = figures[Config("cpu:0", 32, "bfloat16")]
    return figures, explain_figures(figures, winner, [other], limits=limits)


def test_a_precision_has_one_colour_for_its_roof_its_points_and_in_every_figure():
    # The roofline drew bfloat16's roof in float32's colour and the other way round.
    from autoplace.explaining import throughput_figure
    from autoplace.report._html import memory_figure, roofline_figure

    figures, explanation = _arms_with_limits()
    colours: dict[str, set[str]] = {"float32": set(), "bfloat16": set()}
    for trace in roofline_figure(explanation).data:
        precision = trace.name.split()[1]  # "cpu:0 float32 roof (...)", "cpu:0 float32 batch"
        colours[precision].add(trace.line.color if trace.mode == "lines" else trace.marker.color)
    for fig in (throughput_figure(explanation, list(figures.values())),
                memory_figure(explanation, list(figures.values()), {})):  # fmt: skip
        for trace in fig.data:
            if trace.name.startswith("pick"):
                continue
            precision = trace.name.split()[1].rstrip(":")  # "cpu:0 float32", its label
            colours[precision].add(trace.marker.color or trace.line.color)
    assert len(colours["float32"]) == 1 and len(colours["bfloat16"]) == 1, colours
    assert colours["float32"] != colours["bfloat16"]


def test_the_pick_is_starred_at_its_batch_on_the_throughput_plot():
    from autoplace.explaining import throughput_figure

    figures, explanation = _arms_with_limits()
    fig = throughput_figure(explanation, list(figures.values()))
    [pick] = [t for t in fig.data if t.name.startswith("pick")]
    assert pick.name == "pick: cpu:0 b=32 float32" and pick.showlegend is not False
    [float32] = [t for t in fig.data if t.name == "cpu:0 float32" and t.mode == "markers"]
    at = list(float32.x).index(32)
    assert (pick.x[0], pick.y[0]) == (32, float32.y[at])  # on the pick's own point
    assert pick.marker.symbol not in {t.marker.symbol for t in fig.data if t is not pick}


def test_the_figures_write_numbers_as_the_terminal_does():
    # Plotly's own "%{y:.4s}" wrote 122.0k where the terminal writes 122.03 k.
    from autoplace import units
    from autoplace.explaining import throughput_figure
    from autoplace.report._html import memory_figure, roofline_figure

    figures, explanation = _arms_with_limits()
    fig = throughput_figure(explanation, list(figures.values()))
    axis = fig.layout.yaxis
    assert list(axis.ticktext) == [units.rate(v) for v in axis.tickvals]
    [float32] = [t for t in fig.data if t.name == "cpu:0 float32" and t.mode == "markers"]
    for y, text in zip(float32.y, float32.hovertext, strict=True):
        assert f": {units.rate(y)} samples/s" in text
    memory = memory_figure(explanation, list(figures.values()), {}).layout.yaxis
    assert list(memory.ticktext) == [units.size(v) for v in memory.tickvals]
    roof = roofline_figure(explanation).layout.yaxis
    assert list(roof.ticktext) == [units.rate(v) for v in roof.tickvals]


def _finalist(fed, step, chunks, put):
    return measured(
        "ok", "", "cpu:0", 4096, "bfloat16", None, step_s=step, step_samples=chunks,
        fed_step_s=fed, fed_step_spread=0.05, transfer_s=put, batch_bytes=6_400_000,
        lower_s=0.05, compile_s=1.5, first_call_s=0.04,
    )  # fmt: skip


def test_the_per_step_bar_splits_the_fed_step_into_compute_and_feeding():
    # "one put of 6.1 MiB alone takes 14.4 ms of the 12.4 ms fed step" drew a bar of 100%
    # put and no compute: the put timed alone overlaps the step in the loop.
    from autoplace.report._html import costs_figure, costs_notes

    timed = _finalist(fed=12.4e-3, step=4e-3, chunks=5, put=14.4e-3)
    rough = _finalist(fed=1.05e-3, step=0.6e-3, chunks=1, put=0.2e-3)  # a glance
    slower = _finalist(fed=1.05e-3, step=1.3e-3, chunks=1, put=0.2e-3)  # a glance > fed
    fig = costs_figure([timed, rough, slower])
    per_step = {t.name.split(":")[0]: t for t in fig.data if t.xaxis == "x2"}
    assert set(per_step) == {"compute", "feeding", "fed step, whole"}  # no share for a put
    compute, feeding, whole = (per_step[k].y for k in ("compute", "feeding", "fed step, whole"))
    assert list(compute) == pytest.approx([4e-3, 0.6e-3, 0.0])  # the steady step
    assert [sum(parts) for parts in zip(compute, feeding, whole, strict=True)] == pytest.approx(
        [12.4e-3, 1.05e-3, 1.05e-3]
    )  # each bar is its fed step
    assert list(whole) == pytest.approx([0.0, 0.0, 1.05e-3])  # no impossible share
    assert list(per_step["compute"].marker.pattern.shape) == ["", "/", ""]  # rough: hatched
    notes = " ".join(costs_notes([timed, rough, slower]))
    assert "one put of 6.1 MiB timed alone takes 14.4 ms, longer than the whole 12.4 ms" in notes
    assert "timed once (600 µs;" in notes and "rough (hatched)" in notes
    assert "timed once (1.3 ms, right after the first call), longer than the whole 1.05 ms" in notes


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A quick tune: float32 and bfloat16 at three batches, finalists confirmed."""
    from autoplace.tuning import read_study

    tmp = tmp_path_factory.mktemp("small")
    (tmp / "m.py").write_text("# synthetic\n")
    result = autoplace.tune(
        tmp / "m.py",
        batch_sizes=(8, 64, 512),
        precisions=("float32", "bfloat16"),
        strategy=autoplace.Grid(),
        confirm=2,
        storage=f"journal:///{tmp / 's.log'}",
        out=tmp / "autoplace.toml",
        backend=SyntheticBackend(),
    )
    return result, read_study(result.out)


def _rows(page: str) -> list[list[str]]:
    body = page.split('<table id="measurements">')[1].split("<tbody>")[1].split("</tbody>")[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("</tr>") if row]


def test_the_table_writes_each_figure_as_the_terminal_does_and_keeps_the_raw_to_sort(small):
    from autoplace import units
    from autoplace.report._html import render

    _, view = small
    page = render(view)
    rows = {(r[1], r[2]): r for r in _rows(page)}
    for c, m in view.standing.figures.items():
        row = rows[(str(c.batch_size), c.precision)]
        assert row[5] == html.escape(units.rate(m.fed.rate(m.batch_size)))  # "122.03 k"
        assert row[6] == units.seconds(m.fed.step_s) and row[13] == units.size(m.peak_bytes)
        assert f'data-v="{m.fed.rate(m.batch_size)!r}"' in page  # the raw figure sorts
    table = page.split('<table id="measurements">')[1]
    assert not re.search(r">[^<]*\de[+-]\d", table)  # no 3.032e+05


def test_every_bfloat16_row_shows_a_deviation_from_float32(small):
    # Only a finalist's first window compares with float32 (the search never does): the
    # column was empty for every bfloat16 row the search alone measured.
    from autoplace import units
    from autoplace.report._html import render

    _, view = small
    rows = [r for r in _rows(render(view)) if r[2] == "bfloat16"]
    own = {c.batch_size: m.deviation_vs_float32 for c, m in view.standing.figures.items()
           if c.precision == "bfloat16" and m.deviation_vs_float32 is not None}  # fmt: skip
    assert own and len(own) < len(rows)  # some compared, some searched only
    for row in rows:
        batch, shown = int(row[1]), row[14]
        if batch in own:
            assert shown == units.percent(own[batch])
        else:
            compared = max(own, key=own.__getitem__)
            assert shown == f"{units.percent(own[compared])} (at batch {compared})"
