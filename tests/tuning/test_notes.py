"""What a tune says about what happened beside its table (``TuneResult.notes``): a run
that measured nothing new, an interrupt while it waited, earlier runs' trials taken for
dead, batches slow to make. Issue 35: each of these once ran without a word."""

from __future__ import annotations

import subprocess

import pytest
from rich.console import Console
from synthetic import SyntheticBackend

import autoplace
from autoplace.config import Config
from autoplace.measuring import timing_lock
from autoplace.report import tune_report
from autoplace.study import OptunaStudyLog, StudyIdentity, TrialSpace, open_storage


def run(env, backend, **options):
    options = {"batch_sizes": (8, 16, 32), "precisions": ("float32",), **options}
    return autoplace.tune(
        env["model"], storage=env["storage"], out=env["out"], backend=backend, **options
    )


def printed(result) -> str:
    console = Console(record=True, width=200)
    tune_report(result, console)
    return console.export_text()


def test_a_run_that_finds_the_study_finished_says_it_measured_nothing_new(env):
    first = run(env, SyntheticBackend())
    assert first.new_trials > 0 and not first.notes
    again = run(env, SyntheticBackend())
    assert again.new_trials == 0
    [note] = again.notes
    assert note.startswith("nothing new to measure") and "--remeasure" in note
    assert f"note: {note}" in " ".join(printed(again).split())


def test_an_interrupt_while_waiting_for_the_timing_lock_says_so_not_an_empty_verdict(env):
    """Ctrl-C while another autoplace times on the CPU: one note naming the wait, no empty
    table, no "no configuration ran successfully"."""

    def on_wait(line: str) -> None:
        if "is timing on" in line:
            raise KeyboardInterrupt  # the user's Ctrl-C, landing in the wait

    with timing_lock(["cpu:0"]):  # held here: the tune finds another process's lock
        result = run(env, SyntheticBackend(), on_wait=on_wait)
    assert result.interrupted and not result.measurements
    [note] = result.notes
    assert note.startswith("interrupted while another autoplace") and "timing on cpu" in note
    text = printed(result)
    assert "nothing to recommend" not in text and "Best per device" not in text
    assert "note: interrupted while" in text


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])  # not Python: a quick test starts none
    child.wait()
    return child.pid


def test_trials_a_killed_run_left_running_are_measured_again_and_said(env):
    first = run(env, SyntheticBackend(), trials=1)
    # What a SIGKILL leaves: a trial RUNNING whose owner is gone.
    storage = open_storage(env["storage"])
    log = OptunaStudyLog(
        storage,
        env["storage"],
        name=first.study_name,
        identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
        space=TrialSpace(devices=["cpu:0"], with_width=True),
        stale_after_s=0.0,
    )
    (ticket,) = log.begin([Config("cpu:0", 16, "float32", 64)], "search")
    held = {**log.owner.as_dict(), "token": "a killed run", "pid": _dead_pid()}
    storage.set_trial_user_attr(ticket.trial_id, "owner", held)
    heard: list[str] = []
    again = run(env, SyntheticBackend(), on_wait=heard.append)
    assert any("left running by a run that stopped" in line for line in heard)
    assert any(n.startswith("1 measurement(s) left running") for n in again.notes)
    assert Config("cpu:0", 16, "float32", 64) in again.measurements


@pytest.mark.parametrize(("batch_s", "said"), [(2.0, True), (0.01, False)])
def test_a_make_batch_that_takes_seconds_is_said_with_what_it_cost(env, batch_s, said):
    result = run(env, SyntheticBackend(batch_s=batch_s))
    notes = [n for n in result.notes if n.startswith("make_batch took")]
    assert bool(notes) == said
    if said:
        assert "make_batch took 2 s to make one batch" in notes[0]
        assert "two for each configuration" in notes[0]
