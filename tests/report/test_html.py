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
from synthetic import SyntheticBackend, step_time

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
    names = {t.name for t in figure.data if t.showlegend is not False}
    assert names == {m.label for m in result.explanation.models.values()}  # every arm, once


def test_the_roofline_plot_draws_each_precisions_roof_and_each_arms_best_under_it():
    from autoplace import Config, Measurement
    from autoplace.explaining import explain_figures
    from autoplace.limits import DeviceLimits, Figure, MachineLimits
    from autoplace.report._html import _roofline

    def ran(b, precision):
        t = 5e-4 + 1e-6 * b
        return Config("cpu:0", b, precision), Measurement(
            "ok", "", "cpu:0", b, precision, None, step_s=t, step_spread=0.01, step_samples=5,
            fed_step_s=t, fed_step_spread=0.01, fed_step_chunk_s=(t,) * 5,
            fed_samples_per_s=b / t, flops=2e5 * b, bytes_accessed=5e3 * b,
        )  # fmt: skip

    figures = dict(ran(b, p) for b in (8, 16, 32) for p in ("float32", "bfloat16"))
    device = DeviceLimits("cpu:0", "cpu", {"float32": Figure.of([1e11]),
                          "bfloat16": Figure.of([5e10])}, 1024, Figure.of([1e10]),
                          Figure.of([5e9]), Figure.of([1e-5]))  # fmt: skip
    limits = MachineLimits((device,), {}, "2026-11-25T05:00:00+00:00")
    winner = figures[Config("cpu:0", 32, "float32")]
    other = figures[Config("cpu:0", 32, "bfloat16")]
    explanation = explain_figures(figures, winner, [other], limits=limits)
    fig = _roofline(explanation)
    roofs = [t for t in fig.data if t.mode == "lines"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(roofs) == 2 and len(points) == 2
    assert max(roofs[0].y) in (1e11, 5e10)  # flat at the peak past the ridge
    assert points[0].x[0] == pytest.approx(40.0)  # 2e5 FLOPs / 5e3 bytes per sample
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "overhead-bound" in points[0].name
    assert _roofline(explain_figures(figures, winner, [other])) is None  # no limits, no plot
