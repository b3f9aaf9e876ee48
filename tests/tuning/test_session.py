"""A tune stopped by Ctrl-C wherever it lands (issue 50): SIGINT is taken by autoplace's own
handler while the tune runs, and the loop stops where stopping keeps everything.

The Ctrl-C here is sent from inside a finalizer, a callback whose exceptions Python only
prints ("Exception ignored in ...") and drops: where Python's own handler put the
KeyboardInterrupt of issue 50, which the tune then never saw.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import weakref

import optuna
import pytest
from synthetic import SyntheticBackend, measured

import autoplace
from autoplace import machine
from autoplace import recommendation as rec
from autoplace.config import Config
from autoplace.machine import Interference
from autoplace.measuring import Progress
from autoplace.study import storage_at
from autoplace.tuning import _session

#: Every group the tune below measures: its phase, and which of that phase's groups it is.
GROUPS = [
    ("search", 1),
    ("search", 2),
    ("search", 3),
    ("confirm", 1),
    ("confirm", 2),
    ("feeding", 1),
    ("feeding", 2),
    ("remedy", 1),
    ("remedy", 2),
    ("fuse", 1),
    ("fuse", 2),
]


class _Doomed:
    pass


def ctrl_c_from_a_finalizer() -> None:
    """SIGINT to this process from inside a finalizer (a weakref's callback, as SQLAlchemy's
    that the garbage collector ran in issue 50)."""
    doomed = _Doomed()
    weakref.finalize(doomed, os.kill, os.getpid(), signal.SIGINT)
    del doomed  # the finalizer runs here; Python prints what it raises and goes on


def _faults(request):
    return 50.0 if request.env else 9000.0


def _faster_with_huge_pages(request):
    return 1 / 1.6 if any(k == "GLIBC_TUNABLES" for k, _ in request.env) else 1.0


class CtrlCBackend(SyntheticBackend):
    """A synthetic backend over two devices whose tune reaches every phase (see
    :data:`GROUPS`), sending a Ctrl-C from a finalizer while the ``nth`` group of ``phase``
    is measured."""

    def __init__(self, phase: str | None = None, nth: int = 1) -> None:
        super().__init__(devices=("cpu:0", "gpu:0"), faults=_faults, fresh=_faster_with_huge_pages)
        self.phase, self.nth, self.now, self.seen = phase, nth, None, 0

    def group(self, event) -> None:  # the tune's on_group
        self.now = event.phase
        self.seen += self.now == self.phase

    def measure(self, request):
        if self.now == self.phase and self.seen == self.nth:
            self.phase = None  # once
            ctrl_c_from_a_finalizer()
        return super().measure(request)


def tune(env, backend, **options):
    return autoplace.tune(
        env["model"],
        storage=env["storage"],
        out=env["out"],
        backend=backend,
        batch_sizes=(8, 16, 32, 64),
        precisions=("float32", "bfloat16"),
        on_group=backend.group,
        **options,
    )


def trials(env, result) -> list[optuna.trial.FrozenTrial]:
    with storage_at(env["storage"]) as storage:
        return optuna.load_study(study_name=result.study_name, storage=storage).get_trials()


def kept(env, result) -> list[optuna.trial.FrozenTrial]:
    """The study's finished measurements (not those marked interrupted: measured again)."""
    return [
        t
        for t in trials(env, result)
        if t.state.is_finished() and not t.user_attrs.get("interrupted")
    ]


@pytest.fixture
def unraisable(monkeypatch) -> list:
    """What Python printed as "Exception ignored in ..." during the test."""
    seen: list = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


@pytest.mark.parametrize(("phase", "nth"), GROUPS)
def test_a_ctrl_c_in_any_phase_stops_the_tune_and_keeps_every_finished_measurement(
    env, unraisable, phase, nth
):
    before = signal.getsignal(signal.SIGINT)
    backend = CtrlCBackend(phase, nth)
    result = tune(env, backend)
    assert backend.phase is None, f"the tune never measured a group #{nth} of {phase}"
    assert not unraisable  # nothing printed "Exception ignored in"
    assert result.interrupted
    assert signal.getsignal(signal.SIGINT) is before  # the handler before, given back
    # the pick so far beside --out; every measurement the backend finished is in the study
    assert result.out == _session.partial_path(env["out"]) and not env["out"].exists()
    assert rec.read(result.out)["study"]["measured"] >= 1
    assert len(kept(env, result)) == len(backend.measured) == result.new_trials
    assert not [t for t in trials(env, result) if t.state.name == "RUNNING"]
    # and the same command resumes: nothing measured twice, the rest measured
    again = CtrlCBackend()
    finished = tune(env, again)
    assert not finished.interrupted and finished.out == env["out"]
    assert len(kept(env, finished)) == len(backend.measured) + len(again.measured)
    assert not _session.partial_path(env["out"]).exists()


def test_a_ctrl_c_while_the_verdict_is_drawn_writes_the_pick_so_far(env, unraisable, monkeypatch):
    judge, sent = _session.judge, []

    def judged_while_ctrl_c(*args, **kwargs):
        if not sent:  # once: the pick so far is judged again, after it
            sent.append(True)
            ctrl_c_from_a_finalizer()
        return judge(*args, **kwargs)

    monkeypatch.setattr(_session, "judge", judged_while_ctrl_c)
    backend = CtrlCBackend()
    result = tune(env, backend)
    assert not unraisable and result.interrupted and result.answer is None
    assert result.out == _session.partial_path(env["out"]) and not env["out"].exists()
    assert len(kept(env, result)) == len(backend.measured)


def test_a_ctrl_c_while_the_file_is_written_says_interrupted(env, unraisable, monkeypatch):
    # Everything was measured and judged: the file is written whole, and the tune says the
    # Ctrl-C came (the command exits 130)
    write = rec.write

    def written_while_ctrl_c(path, document):
        ctrl_c_from_a_finalizer()
        return write(path, document)

    monkeypatch.setattr(rec, "write", written_while_ctrl_c)
    backend = CtrlCBackend()
    result = tune(env, backend)
    assert not unraisable and result.interrupted
    assert len(kept(env, result)) == len(backend.measured)


class AbandonedInFlight(CtrlCBackend):
    """A worker's measurement in flight when the Ctrl-C comes: the worker reports progress
    after it (as each configuration's set-up and each turn does), and is stopped there."""

    def measure_together(self, requests, on_progress=None):
        if self.now == self.phase and self.seen == self.nth and on_progress is not None:
            self.phase = None
            ctrl_c_from_a_finalizer()
            on_progress(Progress(0, "compiling"))
        return super().measure_together(requests, on_progress)


def test_a_measurement_in_flight_is_abandoned_and_measured_again_on_resume(env, unraisable):
    backend = AbandonedInFlight("search", 2)  # the second search group: the first recorded
    result = tune(env, backend)
    assert not unraisable and result.interrupted and backend.phase is None
    assert len(kept(env, result)) == len(backend.measured) == result.new_trials > 0
    stopped = [t for t in trials(env, result) if t.user_attrs.get("interrupted")]
    assert stopped and not [t for t in trials(env, result) if t.state.name == "RUNNING"]
    again = CtrlCBackend()
    finished = tune(env, again)
    assert not finished.interrupted
    measured_again = {r.config.label() for r in again.measured}
    assert {t.user_attrs["config"] for t in stopped} <= measured_again


BUSY = Interference(2, 4.0, 0.7, None, 4.2, 0)


def test_a_ctrl_c_while_waiting_for_quiet_stops_at_once(env, unraisable, monkeypatch):
    # On the code before issue 50 the Ctrl-C was lost and the tune waited the 30 s out
    monkeypatch.setattr(machine, "sample", lambda: BUSY)

    def on_wait(line: str) -> None:
        if "waiting for the machine to be quiet" in line:
            ctrl_c_from_a_finalizer()

    backend = CtrlCBackend()
    result = tune(env, backend, if_busy="wait", quiet_wait=30.0, on_wait=on_wait)
    assert not unraisable and result.interrupted and backend.measured == []
    assert result.notes[0].startswith("interrupted while waiting for the machine to be quiet")


def test_a_ctrl_c_while_waiting_for_another_workers_measurement_stops_at_once(env, unraisable):
    # Another worker holds the only configuration and never finishes it (on the code before
    # issue 50 the Ctrl-C was lost, and only the timer below ended the wait)
    from autoplace.study import OptunaStudyLog, StudyIdentity, TrialSpace, open_storage

    config = Config("cpu:0", 64, "float32", 64)
    other = OptunaStudyLog(
        open_storage(env["storage"]),
        env["storage"],
        name="shared",
        identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
        space=TrialSpace(devices=["cpu:0"], with_width=True),
        stale_after_s=3600.0,
    )
    (ticket,) = other.begin([config], "search")
    done = measured("ok", "", "cpu:0", 64, "float32", 64, fed_step_s=0.01, fed_samples_per_s=6400.0)
    unblock = threading.Timer(30.0, other.record, (ticket, done, 6400.0))
    unblock.start()

    def on_wait(line: str) -> None:
        if "another worker is measuring" in line:
            ctrl_c_from_a_finalizer()

    try:
        result = autoplace.tune(env["model"], batch_sizes=(64,), precisions=("float32",),
                                storage=env["storage"], study="shared", out=None,
                                backend=SyntheticBackend(), confirm=0, on_wait=on_wait)  # fmt: skip
    finally:
        unblock.cancel()
    assert not unraisable and result.interrupted and result.new_trials == 0
