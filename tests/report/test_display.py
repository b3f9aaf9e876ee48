"""What a person reads: progress while tuning, and the tune's table."""

from __future__ import annotations

import io
import re

from rich.console import Console
from synthetic import SyntheticBackend

import autoplace
from autoplace import units
from autoplace.report import tune_report
from autoplace.report._progress import TuneProgress


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
        assert units.seconds(s.measurement.fed.step_s) in text
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
    assert line.startswith(f"{closest['ratio']:.2f}x (95%: {closest['low']:.2f}–")
    assert " times " not in line.split(" as fast")[0] and "±" not in line.split(" as fast")[0]
    assert "% behind" not in flat


class _Glancing(SyntheticBackend):
    """As a tune ranking on the fed loop measures: the steady step only glanced at, one
    step right after the first call, slower than the fed loop's timed steps."""

    def measure(self, request):
        import dataclasses

        m = super().measure(request)
        if m.step.step_s is None:
            return m
        step = dataclasses.replace(m.step, step_s=m.step.step_s * 2.4, samples=1)
        return m.with_loop("step", step)


def _show(tmp_path, **kwargs):
    from autoplace import recommendation
    from autoplace.report import recommendation_report

    result = _tune(tmp_path, **kwargs)
    buffer = io.StringIO()
    recommendation_report(recommendation.read(result.out), Console(file=buffer, width=120))
    return result, buffer.getvalue()


def _row(text: str, what: str) -> list[str]:
    """A row of show's table, its cells."""
    line = next(line for line in text.splitlines() if line.startswith(f"│ {what} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


def test_show_never_sets_a_glanced_steady_step_beside_the_timed_fed_step(tmp_path):
    # "steady step 1.15 ms, spread - (timed once)" beside a 560 µs fed step: both of the
    # latest window, but the steady loop only glanced at; the fed loop, ranked on, timed.
    result, text = _show(tmp_path, backend=_Glancing())
    fig = result.document["recommendation"]["figures"]
    assert fig["step_s"] > fig["fed_step_s"] and fig["step_samples"] == 1
    assert fig["fed_step_samples"] >= 3  # the fed loop's chunks, recorded
    assert "figures of its latest window, a fresh process" in text
    step = _row(text, "steady step")
    assert step[1] == "not timed" and units.seconds(fig["step_s"]) in step[2]
    fed = _row(text, "fed step")
    assert fed[1] == f"{units.seconds(fig['fed_step_s'])} ± {units.percent(fig['fed_step_spread'])}"
    assert _row(text, "samples/s (fed)")[1] == units.rate(fig["fed_samples_per_s"])
    windows = len(fig["score_votes"])
    assert f"its {windows} windows" in _row(text, "score")[2]  # another source, said


def test_show_gives_a_lower_precision_picks_deviation_from_float32(tmp_path):
    # "vs float32 -" for a bfloat16 pick: only its first window compares with float32, and
    # the file took the figures of its last window, which does not.
    from synthetic import bfloat16_ahead

    result, text = _show(tmp_path, backend=SyntheticBackend(slowdown=bfloat16_ahead(0.3)))
    rec = result.document["recommendation"]
    assert rec["precision"] == "bfloat16" and rec["windows"] >= 2
    assert rec["figures"]["deviation_vs_float32"] == 0.001  # the synthetic deviation
    assert _row(text, "vs float32")[1] == "0.1%"
