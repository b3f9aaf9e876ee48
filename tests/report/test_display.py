"""What a person reads: progress while tuning, and the tune's table."""

from __future__ import annotations

import io
import re

from rich.console import Console
from synthetic import SyntheticBackend

import autoplace
from autoplace import units
from autoplace.report import tune_report
from autoplace.report._display import TuneProgress


def _tune(tmp_path, **kwargs):
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    options = dict(
        batch_sizes=(8, 16, 32),
        precisions=("float32", "bfloat16"),
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "autoplace.toml",
        backend=SyntheticBackend(),
        strategy=autoplace.Grid(),
        confirm=2,
    )
    return autoplace.tune(model, **{**options, **kwargs})


def test_off_a_terminal_each_finished_measurement_is_one_plain_line(tmp_path):
    # a log, CI, nohup, a launcher's pipe: no live display, a line as each one finishes
    buffer = io.StringIO()
    progress = TuneProgress(Console(file=buffer, width=200), None)
    result = _tune(tmp_path, on_trial=progress.trial, on_group=progress.group)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == result.new_trials
    assert re.match(r"\s+1 search\s+cpu:0 b=8 float32 width=64: [\d.]+ k samples/s", lines[0])
    assert any(" confirm " in line for line in lines)
    assert "best: cpu:0" in lines[-1]


def test_the_tables_columns_come_from_the_loop_the_score_rests_on(tmp_path):
    result = _tune(tmp_path)
    buffer = io.StringIO()
    tune_report(result, Console(file=buffer, width=200))
    text = buffer.getvalue()
    assert "fed step" in text  # throughput rests on the fed loop: its step time, so labelled
    for s in result.per_device_precision:
        assert units.seconds(s.measurement.fed_step_s) in text
    counted = f"{len(result.measurements)} of {len(result.space)} configurations measured;"
    assert counted in text and f"{result.new_trials} measurements this run" in text


def _every_screen(tmp_path, **kwargs):
    """What ``tune``, ``show`` and ``explain`` print for a tune over two devices, three
    precisions and two widths: at 80 columns, and off a terminal (a log: rich's 80)."""
    from autoplace import recommendation
    from autoplace.report import explanation_report, recommendation_report

    result = _tune(
        tmp_path,
        devices=("cpu:0", "cpu:1"),
        precisions=("float32", "bfloat16", "float16"),
        widths=(64, 128),
        backend=SyntheticBackend(devices=("cpu:0", "cpu:1")),
        **kwargs,
    )
    doc = recommendation.read(result.out)
    screens = []
    for console in (lambda f: Console(file=f, width=80), lambda f: Console(file=f)):
        buffer = io.StringIO()
        tune_report(result, console(buffer))
        recommendation_report(doc, console(buffer))
        explanation_report(result.explanation, console(buffer))
        screens.append(buffer.getvalue())
    return result, screens


def test_at_80_columns_and_in_a_log_nothing_is_cut(tmp_path):
    _, screens = _every_screen(tmp_path)
    for text in screens:
        assert "…" not in text  # rich's mark of a cut cell or header
        assert max(len(line) for line in text.splitlines()) <= 80
        table = text.split("Best per device and precision")[1].split("configurations measured")[0]
        for precision in ("float32", "bfloat16", "float16"):
            assert f" {precision} " in table  # whole, so that float32 and float16 differ
        model = text.split("Cost model per arm")[1]
        for word in ("a:", "fixed", "c: per", "sample", "h:", "feeding", "holds", "fit",
                     "error", "leaves", "the line", "one-off"):  # fmt: skip
            assert word in model, word


def test_after_a_width_search_every_line_naming_a_configuration_names_its_width(tmp_path):
    result, (text, _) = _every_screen(tmp_path)
    flat = " ".join(text.split())
    closest = result.document["recommendation"]["closest"]
    named = (
        f"{closest['device']} batch={closest['batch_size']} {closest['precision']} "
        f"width={closest['width']}"
    )
    assert flat.count("against the closest: ") == 2 and named in flat  # tune's and show's
    for alt in result.document["alternatives"]:
        assert (
            f"best on {alt['device']}: batch {alt['batch_size']}, {alt['precision']}, width" in flat
        )
    for sentence in result.explanation.sentences:
        if "emulated" in sentence:
            assert re.match(r"\w+ is emulated on cpu:\d width \d+:", sentence), sentence


def test_a_per_width_pick_resting_on_one_point_says_so(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    result, (text, _) = _every_screen(tmp_path / "one", batch_sizes=(8,))
    flat = " ".join(text.split())
    for pw in result.document["per_width"]:
        assert pw["arm_batches"] == [8]
        assert f"width {pw['width']}: {pw['device']}, batch 8, {pw['precision']}" in flat
    assert flat.count("(rests on one point: its arm ran at that batch size only") == 2 * len(
        result.document["per_width"]
    )  # in tune's lines and show's
    result, (text, _) = _every_screen(tmp_path / "two", batch_sizes=(8, 16))
    assert all(len(pw["arm_batches"]) == 2 for pw in result.document["per_width"])
    assert "rests on one point" not in text


def test_the_closest_is_said_as_a_ratio_with_its_interval_never_as_a_percentage(tmp_path):
    # "495.7% behind" read as the runner-up's share when it was the winner's lead: a ratio
    # of the pick's score to the other's, with its interval, cannot be read the wrong way
    result, (text, _) = _every_screen(tmp_path)
    flat = " ".join(text.split())
    closest = result.document["recommendation"]["closest"]
    line = flat.split("against the closest: ")[1]
    assert line.startswith(f"{closest['ratio']:.2f}"[:3]) and " times " in line.split(" (")[0]
    assert "95% interval" in line and "% behind" not in flat
