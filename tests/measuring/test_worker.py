"""A worker's death: whose doing it was (only one from outside is no failure of the
configuration), and the log an error about it points to."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from autoplace.measuring import _worker
from autoplace.measuring._worker import Death, Stop, Worker, death_of

#: A process id no process has (above Linux's pid_max): the kernel's log names no kill of it.
NOBODY = 2**23


@pytest.fixture
def memory_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_worker, "_memory_free", lambda: (8 * 2**30, 16 * 2**30))
    monkeypatch.setattr(_worker, "_oom_killed", lambda pid: False)


@pytest.mark.parametrize(
    ("code", "death", "said"),
    [
        (3, Death.EXITED, "the worker exited with code 3"),
        (None, Death.EXITED, "the worker exited with code None"),
        (-signal.SIGSEGV, Death.FAULT, "the worker was killed by SIGSEGV"),
        (-signal.SIGABRT, Death.FAULT, "the worker was killed by SIGABRT"),
        (-signal.SIGBUS, Death.FAULT, "the worker was killed by SIGBUS"),
        (-signal.SIGTERM, Death.OUTSIDE, "the worker was killed by SIGTERM"),
        (-signal.SIGHUP, Death.OUTSIDE, "the worker was killed by SIGHUP"),
        (-signal.SIGKILL, Death.OUTSIDE, "the worker was killed by SIGKILL (from outside;"),
    ],
)
def test_a_death_is_the_configurations_unless_a_signal_came_from_outside(
    memory_to_spare: None, code: int | None, death: Death, said: str
) -> None:
    found, why = death_of(code, NOBODY)
    assert found is death
    assert why.startswith(said)
    assert Stop("crash", why, None, found).outside is (death is Death.OUTSIDE)


def test_a_kill_the_kernels_log_names_or_memory_nearly_full_is_out_of_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_worker, "_memory_free", lambda: (8 * 2**30, 16 * 2**30))
    monkeypatch.setattr(_worker, "_oom_killed", lambda pid: pid == 42)
    death, why = death_of(-signal.SIGKILL, 42)
    assert death is Death.OUT_OF_MEMORY and "its log names this worker" in why
    monkeypatch.setattr(_worker, "_memory_free", lambda: (2**20, 16 * 2**30))
    death, why = death_of(-signal.SIGKILL, NOBODY)
    assert death is Death.OUT_OF_MEMORY and "memory is nearly full" in why
    assert not Stop("crash", why, None, death).outside


def test_a_worker_whose_fork_server_went_died_from_outside_whatever_its_code() -> None:
    # Its code is unknown (no parent to report it): read as 1, or still running (a zombie
    # nobody reaps); either way the server's end took it.
    for code in (1, 0, None):
        death, why = death_of(code, NOBODY, orphaned=True)
        assert death is Death.OUTSIDE and "fork server" in why


def test_a_timeout_is_no_death() -> None:
    assert not Stop("timeout", "no result within 3 s").outside


def test_an_error_points_to_a_kept_copy_of_the_log_or_says_it_was_empty(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = Worker(log, {}, {})
    assert worker.kept_log() is None  # never written
    assert worker.log_hint() == "; it wrote nothing to its log"
    log.write_text("")
    assert worker.kept_log() is None  # empty: no empty copy is left behind to point to
    log.write_text("Fatal Python error: init_fs_encoding\n")
    hint = worker.log_hint()
    kept = Path(hint.removeprefix("; see "))
    try:
        assert hint.startswith("; see ") and kept != log
        assert kept.read_text() == log.read_text()  # a copy that outlives the worker's folder
    finally:
        kept.unlink(missing_ok=True)
