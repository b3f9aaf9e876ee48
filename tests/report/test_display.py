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
