"""The :class:`autoplace.study.StudyLog` contract, run against every storage a study can
live in: SQLite, a Journal file, PostgreSQL, MariaDB and Redis (``storage_url`` in
conftest.py; the servers' cases skip where AUTOPLACE_SKIP_SERVER_TESTS=1)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from autoplace import BadInputError, Config, Measurement
from autoplace.study import OptunaStudyLog, StudyLog, _log, close_storage, open_storage

A = Config("cpu:0", 8, "float32")
B = Config("cpu:0", 16, "float32")
C = Config("cpu:0", 32, "bfloat16")


def measured(c: Config, seconds: float, status: str = "ok") -> Measurement:
    return Measurement(
        status,  # type: ignore[arg-type]
        "" if status == "ok" else "synthetic failure",
        c.device,
        c.batch_size,
        c.precision,
        c.width,
        fed_step_s=seconds,
        fed_samples_per_s=c.batch_size / seconds,
    )


@pytest.fixture
def open_log(storage_url: str, study_name: str) -> Iterator:
    """Opens logs on one study, as separate workers would; closes them afterwards."""
    storages = []

    def opener(direction: str = "maximize") -> StudyLog:
        storage = open_storage(storage_url)
        storages.append(storage)
        return OptunaStudyLog(
            storage,
            storage_url,
            name=study_name,
            direction=direction,
            objective="throughput" if direction == "maximize" else "latency",
            attrs={"workload": {"name": "synthetic"}},
            devices=["cpu:0"],
            with_width=False,
            stale_after_s=3600.0,
        )

    yield opener
    for storage in storages:
        close_storage(storage)


def test_a_new_study_holds_nothing(open_log) -> None:
    history = open_log().history()
    assert history.searches == () and dict(history.confirmed) == {} and not history.pending


def test_what_is_recorded_is_in_the_history_of_every_worker(open_log) -> None:
    log = open_log()
    tickets = log.begin([A, B], "search", reference=A)
    assert [t.config for t in tickets] == [A, B]
    for t, seconds in zip(tickets, (0.01, 0.02), strict=True):
        log.record(t, measured(t.config, seconds), score=t.config.batch_size / seconds)
    (confirmation,) = log.begin([B], "confirm")
    log.record(confirmation, measured(B, 0.019), score=16 / 0.019)
    for history in (log.history(), open_log().history()):  # this worker, and another
        assert [c for c, _ in history.searches] == [A, B]
        assert history.searches[1][1].fed_step_s == pytest.approx(0.02)
        assert list(history.confirmed) == [B] and history.confirmed[B][0].fed_step_s == 0.019
        assert not history.pending


def test_measurements_in_flight_are_pending_for_other_workers(open_log) -> None:
    log = open_log()
    (ticket,) = log.begin([C], "search")
    assert open_log().history().pending == {C}
    log.record(ticket, measured(C, 0.5, status="oom"), score=None)
    history = open_log().history()
    assert not history.pending and history.searches[0][1].status == "oom"


def test_an_interrupted_measurement_is_measured_again(open_log) -> None:
    log = open_log()
    tickets = log.begin([A, B], "search")
    log.abandon(tickets, interrupted=True)
    history = open_log().history()
    assert history.searches == () and not history.pending


def test_a_study_made_for_the_other_direction_is_refused(open_log) -> None:
    open_log("maximize")
    with pytest.raises(BadInputError, match="made for an objective to maximize, not latency"):
        open_log("minimize")


def _dead_pid() -> int:
    """The id of a process that has just ended."""
    child = subprocess.Popen(["true"])  # not Python: a quick test starts none
    child.wait()
    return child.pid


def _trial(log, ticket):
    return log._storage.get_trial(ticket.trial_id)


def test_a_killed_workers_measurement_on_this_host_is_reclaimed_at_once(open_log) -> None:
    log = open_log()
    (ticket,) = log.begin([C], "search")
    owner = {"host": socket.gethostname(), "pid": _dead_pid()}  # as a kill -9 leaves it
    log._storage.set_trial_user_attr(ticket.trial_id, "owner", owner)
    other = open_log()
    assert other.history().pending == frozenset()  # not skipped as measured elsewhere
    trial = _trial(other, ticket)
    assert trial.state.name == "FAIL" and trial.user_attrs["reclaimed_by"]["pid"] == os.getpid()


def test_another_hosts_measurement_is_alive_while_its_heartbeat_is(open_log) -> None:
    log = open_log()
    fresh, old = log.begin([B, C], "search")
    for ticket, age in ((fresh, 5.0), (old, _log.STALE_AFTER_S + 5.0)):
        log._storage.set_trial_user_attr(ticket.trial_id, "owner", {"host": "elsewhere", "pid": 1})
        log._storage.set_trial_user_attr(ticket.trial_id, "heartbeat", time.time() - age)
    assert open_log().history().pending == {B}


def test_keep_alive_refreshes_the_heartbeat_while_measuring(open_log, monkeypatch) -> None:
    monkeypatch.setattr(_log, "HEARTBEAT_S", 0.05)
    log = open_log()
    (ticket,) = log.begin([C], "search")
    first = _trial(log, ticket).user_attrs["heartbeat"]
    with log.keep_alive([ticket]):
        deadline = time.monotonic() + 120  # a beat every 0.05 s; a busy machine may be slower
        while _trial(log, ticket).user_attrs["heartbeat"] == first:
            assert time.monotonic() < deadline, "no heartbeat while measuring"
            time.sleep(0.05)
    assert _trial(log, ticket).user_attrs["heartbeat"] > first
