"""``autoplace report``: one self-contained HTML page, checked in a real browser when one
is installed (Debian's ``chromium``)."""

import html
import os
import re
import shutil
import subprocess

import pytest
from synthetic import SyntheticBackend

import autoplace
from autoplace import BadInputError
from autoplace.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    model = tmp / "m.py"
    model.write_text("# synthetic\n")
    result = autoplace.tune(
        model,
        devices=("cpu:0", "cpu:1"),
        precisions=("float32", "bfloat16"),
        storage=f"journal:///{tmp / 's.log'}",
        out=tmp / "autoplace.toml",
        backend=SyntheticBackend(devices=("cpu:0", "cpu:1")),
    )
    return result, write_report(result.out, tmp / "report.html")


def test_the_page_is_self_contained(tuned):
    _, page = tuned
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r'<script[^>]+src="http', text)  # no CDN: plotly.js is inlined
    assert text.count("Plotly.newPlot") == 4  # throughput, costs, run length, memory
    assert text.count("window.Plotly") >= 1


def test_the_page_holds_the_sentences_and_every_measurement(tuned):
    result, page = tuned
    text = page.read_text()
    for sentence in result.explanation.sentences:
        assert html.escape(sentence) in text
    body = text.split('<table id="measurements">')[1]
    assert body.count("<tr") - 1 == len(result.measurements)  # a header, then one row each
    assert body.count('class="winner"') == 1


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


@pytest.mark.slow
def test_the_plots_are_drawn_in_a_real_browser(tuned):
    if CHROMIUM is None:
        if os.environ.get("AUTOPLACE_REQUIRE_CHROMIUM"):  # set by .ci/run
            pytest.fail("no chromium on this machine: apt-get install chromium")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    _, page = tuned
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=20000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # plotly draws each figure as SVG: a main-svg per figure, and data points within.
    assert dom.count('class="main-svg"') >= 4
    assert dom.count('class="point"') > 10
