"""autoplace's own SIGINT handler (issue 50): put in place for a tune, given back after; a
first Ctrl-C taken and acted on where stopping is safe, a second one at once. Then the
command line itself, sent SIGINT as a terminal's Ctrl-C sends it: to its process group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import optuna
import pytest
from conftest import REPO, model

from autoplace import recommendation as rec
from autoplace._interrupt import Interrupt, taking_ctrl_c
from autoplace.study import storage_at
from autoplace.tuning import partial_path


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # its handler runs before os.kill returns


def test_a_ctrl_c_during_the_block_is_taken_not_raised_and_the_handler_before_comes_back():
    before = signal.getsignal(signal.SIGINT)
    with taking_ctrl_c() as interrupt:
        assert not interrupt.is_set()
        ctrl_c()  # no KeyboardInterrupt here: it is taken
        assert interrupt.is_set()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()  # where the tune stops
        with pytest.raises(KeyboardInterrupt):
            interrupt.sleep(600)  # a wait wakes at once
        assert interrupt.wait(600)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_launchers_own_handler_is_given_back():
    heard = []

    def launchers(signum, frame):
        heard.append(signum)

    old = signal.signal(signal.SIGINT, launchers)
    try:
        with taking_ctrl_c() as interrupt:
            ctrl_c()
        assert interrupt.is_set() and heard == []  # the tune's, while it ran
        assert signal.getsignal(signal.SIGINT) is launchers
        ctrl_c()
        assert heard == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, old)


def test_inside_autoplaces_own_handler_its_interrupt_is_used():
    # the command line's, around the whole command; the tune inside it takes the same Ctrl-C
    with taking_ctrl_c(exit_at_once=True) as outer:
        handler = signal.getsignal(signal.SIGINT)
        with taking_ctrl_c() as inner:
            assert inner is outer
        assert signal.getsignal(signal.SIGINT) is handler


def test_an_ignored_sigint_stays_ignored():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with taking_ctrl_c() as interrupt:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            ctrl_c()
        assert not interrupt.is_set()
    finally:
        signal.signal(signal.SIGINT, old)


def test_outside_the_main_thread_nothing_is_put_in_place():
    # signal.signal raises there: a launcher tuning in a thread keeps Python's handling
    before, found = signal.getsignal(signal.SIGINT), []

    def tune() -> None:
        with taking_ctrl_c() as interrupt:
            found.append((interrupt, signal.getsignal(signal.SIGINT)))

    thread = threading.Thread(target=tune)
    thread.start()
    thread.join()
    [(interrupt, during)] = found
    assert isinstance(interrupt, Interrupt) and not interrupt.is_set() and during is before


def test_a_second_ctrl_c_in_a_launchers_process_says_what_was_kept_and_raises(capfd):
    with taking_ctrl_c() as interrupt:
        interrupt.kept = lambda: "the 3 measurement(s) this run finished are in study 's'"
        ctrl_c()
        with pytest.raises(KeyboardInterrupt):
            ctrl_c()
    err = capfd.readouterr().err
    assert err == (
        "autoplace: interrupted again: stopping at once (KeyboardInterrupt); the 3 "
        "measurement(s) this run finished are in study 's'\n"
    )


# --- the command line: SIGINT to its process group, as from a terminal's Ctrl-C ----------


def _command(storage: str, out: Path, name: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "autoplace", "tune", str(model(name)), "--storage", storage,
            "--out", str(out), *options]  # fmt: skip


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}


def _ctrl_c_at(command: list[str], phase: str | None) -> tuple[int, str, int]:
    """Run ``command`` (a tune, not on a terminal: a line per finished measurement on
    stderr, naming its phase) and send SIGINT to its process group at the first line of
    ``phase``; its exit code, stderr, and the measurements it said it finished."""
    err, finished = [], 0
    run = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(command, cwd=REPO, env=_env(), start_new_session=True, **run) as tune:
        assert tune.stderr is not None
        for line in tune.stderr:
            err.append(line)
            said = line.split()
            if len(said) > 1 and said[0].isdigit():  # "  12 confirm cpu:0 b=128 ...": finished
                finished += 1
                if said[1] == phase:
                    os.killpg(tune.pid, signal.SIGINT)
                    phase = None
        return tune.wait(timeout=300), "".join(err), finished


def _trials(storage: str) -> list[optuna.trial.FrozenTrial]:
    with storage_at(storage) as opened:
        [summary] = optuna.get_all_study_summaries(opened)
        return optuna.load_study(study_name=summary.study_name, storage=opened).get_trials()


def _kept(storage: str) -> int:
    """The study's finished measurements (not those a Ctrl-C marked, nor those a resume took
    back from a process that ended without ending them: both measured again)."""
    return sum(
        1
        for t in _trials(storage)
        if t.state.is_finished()
        and not t.user_attrs.get("interrupted")
        and "reclaimed_by" not in t.user_attrs
    )


def _stopped_cleanly(code: int, err: str, storage: str, out: Path, finished: int) -> None:
    assert code == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "interrupted: every finished measurement is saved in study" in err
    assert rec.read(partial_path(out))["study"]["measured"] >= 1
    assert _kept(storage) == finished, err  # every measurement it said it finished
    assert not [t for t in _trials(storage) if t.state.name == "RUNNING"]


@pytest.mark.slow
def test_a_ctrl_c_at_each_phase_of_a_real_tune_stops_it_and_keeps_everything(tmp_path):
    # One study, stopped by a Ctrl-C in each phase in turn, each run resuming the last;
    # then run to its end. Every run exits 130, with no traceback, the pick so far in the
    # partial file and every measurement it finished in the study.
    storage, out = f"sqlite:///{tmp_path / 's.db'}", tmp_path / "a.toml"
    # (prefetched: on the CPU alone, a run that puts its batches is not fed three ways)
    command = _command(storage, out, "tiny_mlp", "--workload", "mlp", "--batch-sizes",
                       "8,32,128", "--precisions", "float32,bfloat16",
                       "--feeding", "prefetch")  # fmt: skip
    finished = 0
    for phase in ("search", "confirm", "feeding", "fuse"):
        code, err, said = _ctrl_c_at(command, phase)
        finished += said
        _stopped_cleanly(code, err, storage, out, finished)
    code, err, said = _ctrl_c_at(command, None)
    assert code == 0 and "Traceback" not in err, err
    assert _kept(storage) == finished + said
    assert rec.read(out) and not partial_path(out).exists()


@pytest.mark.slow
def test_a_ctrl_c_while_a_remedy_is_timed_stops_the_tune_and_keeps_everything(tmp_path):
    # A 48 MiB temporary mapped afresh every step: the pick's remedies are timed, in
    # workers started from scratch with their environment
    storage, out = f"sqlite:///{tmp_path / 's.db'}", tmp_path / "a.toml"
    command = _command(storage, out, "fresh_pages", "--batch-sizes", "1", "--precisions",
                       "float32", "--steps-per-call", "1")  # fmt: skip
    code, err, finished = _ctrl_c_at(command, "remedy")
    assert " remedy " in err, "the tune timed no remedy"
    _stopped_cleanly(code, err, storage, out, finished)


#: A command line whose tune measures with the synthetic backend, and whose backend sends
#: this process two Ctrl-Cs while its second group is measured: the second while the
#: first is being handled (the loop has not yet reached a point to stop at).
_TWICE = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from synthetic import SyntheticBackend
from autoplace.cli import main
from autoplace.tuning import _session

class Twice(SyntheticBackend):
    def __init__(self, interrupt=None):
        super().__init__()
        self.calls = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def measure_together(self, requests, on_progress=None):
        self.calls += 1
        if self.calls == 2:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return super().measure_together(requests, on_progress)

_session.SubprocessBackend = Twice
main(["tune", {model!r}, "--storage", {storage!r}, "--out", {out!r}, "--search", "grid",
      "--precisions", "float32", "--batch-sizes", "8,16,32,64,128,256,512,1024"])
"""


@pytest.mark.slow
def test_a_second_ctrl_c_ends_the_command_at_once_and_the_resume_measures_what_was_in_flight(
    tmp_path,
):
    from synthetic import SyntheticBackend

    import autoplace

    storage, out = f"journal:///{tmp_path / 's.log'}", tmp_path / "a.toml"
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    code = _TWICE.format(tests=str(REPO / "tests"), model=str(model_file), storage=storage,
                         out=str(out))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if "interrupted again" in x]
    first = _kept(storage)  # the first group, recorded before the Ctrl-Cs
    assert first > 0
    assert line.startswith(
        f"autoplace: interrupted again: stopped at once; the {first} measurement(s) this run "
        f"finished are in study "
    )
    assert "measured again when the same command runs again" in line
    assert not out.exists() and not partial_path(out).exists()  # ended at once
    # It left the group in flight RUNNING; its owner is gone, so the resume takes it back
    # at once, measures it again and loses nothing
    assert [t for t in _trials(storage) if t.state.name == "RUNNING"]
    again = SyntheticBackend()
    result = autoplace.tune(model_file, storage=storage, out=out, strategy=autoplace.Grid(),
                            precisions=("float32",), batch_sizes=(8, 16, 32, 64, 128, 256, 512,
                            1024), backend=again)  # fmt: skip
    assert not result.interrupted
    assert any("left running by an earlier run" in n for n in result.notes)
    assert not [t for t in _trials(storage) if t.state.name == "RUNNING"]
    assert _kept(storage) == first + len(again.measured)
