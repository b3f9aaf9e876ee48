"""The :class:`autoplace.study.StudyLog` contract, run against every storage a study can
live in: SQLite, a Journal file, PostgreSQL, MariaDB and Redis (``storage_url`` in
conftest.py; the servers' cases skip where AUTOPLACE_SKIP_SERVER_TESTS=1): what is
recorded, who owns a trial in flight and when it is taken for dead, that reading writes
nothing, and that a measurement the storage will not take is kept and stored later."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ADDRESSES
from study.storage_faults import FaultProxy
from synthetic import measured as flat

import autoplace.study._faults as faults
from autoplace import BadInputError, Config, Measurement, StorageFaultError
from autoplace.study import (
    OptunaStudyLog,
    StudyIdentity,
    StudyLog,
    StudyReader,
    TrialSpace,
    _claims,
    close_storage,
    open_storage,
)
from autoplace.study._url import file_path

A = Config("cpu:0", 8, "float32")
B = Config("cpu:0", 16, "float32")
C = Config("cpu:0", 32, "bfloat16")


def measured(c: Config, seconds: float, status: str = "ok") -> Measurement:
    return flat(
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
            identity=StudyIdentity(
                direction=direction,
                objective="throughput" if direction == "maximize" else "latency",
                attrs={"workload": {"name": "synthetic"}},
            ),
            space=TrialSpace(devices=["cpu:0"], with_width=False),
            stale_after_s=3600.0,
        )

    yield opener
    for storage in storages:
        close_storage(storage)


class Breakable:
    """A storage of each kind reached as a worker reaches it, and a real fault to put it
    in: a SQLite file another process holds locked; a Journal file that cannot be opened
    (a folder in its place); a server taken away (a proxy that refuses and resets)."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.kind = url.split("://")[0].split("+")[0]
        self.proxy, self.url, self._storages, self._locker = None, url, [], None
        if self.kind in ADDRESSES:
            host, port = ADDRESSES[self.kind]
            self.proxy = FaultProxy((host, port))
            self.url = url.replace(f"{host}:{port}", self.proxy.url_host)
        self.path = file_path(url)

    def log(self, name: str, spill_beside: Path) -> OptunaStudyLog:
        storage = open_storage(self.url)
        self._storages.append(storage)
        return OptunaStudyLog(
            storage,
            self.url,
            name=name,
            identity=StudyIdentity(
                direction="maximize",
                objective="throughput",
                attrs={"workload": {"name": "synthetic"}},
            ),
            space=TrialSpace(devices=["cpu:0"], with_width=False),
            stale_after_s=3600.0,
            spill_beside=spill_beside,
        )

    def fault(self) -> None:
        if self.proxy is not None:
            self.proxy.down()
        elif self.kind == "sqlite":
            self._locker = sqlite3.connect(self.path, isolation_level=None)
            self._locker.execute("BEGIN EXCLUSIVE")
        else:
            self.path.rename(self.path.with_name("aside.log"))
            self.path.mkdir()

    def repair(self) -> None:
        if self.proxy is not None:
            self.proxy.up()
        elif self._locker is not None:
            self._locker.rollback()
            self._locker.close()
        else:
            self.path.rmdir()
            self.path.with_name("aside.log").rename(self.path)

    def close(self) -> None:
        for storage in self._storages:
            close_storage(storage)
        if self.proxy is not None:
            self.proxy.close()


@pytest.fixture
def breakable(storage_url: str, tmp_path: Path) -> Iterator[Breakable]:
    made = Breakable(storage_url, tmp_path)
    yield made
    made.close()


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_new_study_holds_nothing(open_log) -> None:
    history = open_log().history()
    assert history.searches == () and history.of("confirm") == {} and not history.pending


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
        assert history.searches[1][1].fed.step_s == pytest.approx(0.02)
        assert (
            list(history.of("confirm")) == [B] and history.of("confirm")[B][0].fed.step_s == 0.019
        )
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
    return log.reader.access.storage.get_trial(ticket.trial_id)


def _as_left(log, ticket, **owner) -> None:
    """Make ``ticket``'s trial look as another worker left it: its owner (this log's, with
    ``owner`` changed and another token) and, if given, the age of its heartbeat."""
    age = owner.pop("age", None)
    held = {**log.owner.as_dict(), "token": "another worker", **owner}
    log.reader.access.storage.set_trial_user_attr(ticket.trial_id, "owner", held)
    if age is not None:
        log.reader.access.storage.set_trial_user_attr(
            ticket.trial_id, "heartbeat", time.time() - age
        )


def test_a_killed_workers_measurement_on_this_host_is_reclaimed_at_once(open_log) -> None:
    log = open_log()
    (ticket,) = log.begin([C], "search")
    _as_left(log, ticket, pid=_dead_pid())  # as a kill -9 leaves it: same boot, same pids
    other = open_log()
    assert other.history().pending == frozenset()  # not skipped as measured elsewhere
    trial = _trial(other, ticket)
    assert trial.state.name == "FAIL"
    assert trial.user_attrs["reclaimed_by"]["token"] == other.owner.token


@pytest.mark.parametrize(
    "elsewhere",
    [{"pidns": "pid:[4026530001]"}, {"boot": "another-boot-id"}, {"boot": None}],
    ids=["another pid namespace", "another machine", "an owner of unknown boot"],
)
def test_a_worker_with_the_same_host_name_and_pid_elsewhere_is_alive_while_it_beats(
    open_log, elsewhere
) -> None:
    # Two containers, or two machines, named alike: a pid means nothing across them, so
    # the missing process here says nothing; only the heartbeat does.
    log = open_log()
    fresh, old = log.begin([B, C], "search")
    _as_left(log, fresh, pid=_dead_pid(), age=5.0, **elsewhere)
    _as_left(log, old, pid=_dead_pid(), age=_claims.STALE_AFTER_S + 5.0, **elsewhere)
    other = open_log()
    assert other.history().pending == {B}
    assert _trial(other, fresh).state.name == "RUNNING"
    assert _trial(other, old).state.name == "FAIL"


def test_two_workers_of_one_process_are_two_owners(open_log) -> None:
    first, second = open_log(), open_log()
    assert first.owner.token != second.owner.token
    (ticket,) = first.begin([C], "search")
    assert second.history().pending == {C}  # the same process, alive: the other's in flight
    assert first.history().pending == {C}  # and its own
    first.record(ticket, measured(C, 0.5), score=64.0)
    assert [c for c, _ in second.history().searches] == [C]


def test_an_owner_whose_trial_was_reclaimed_keeps_its_measurement(open_log) -> None:
    # A worker whose heartbeats were lost (a long storage outage) is taken for dead; it
    # still finishes, and its measurement goes into a new trial, not a crash.
    log = open_log()
    (ticket,) = log.begin([C], "search")
    log.reader.access.storage.set_trial_user_attr(ticket.trial_id, "heartbeat", time.time() - 3600)
    other = open_log()
    assert other.history().pending == frozenset()
    assert _trial(other, ticket).state.name == "FAIL"  # reclaimed
    log.record(ticket, measured(C, 0.5), score=64.0)
    history = open_log().history()
    assert [c for c, _ in history.searches] == [C] and not history.pending
    trials = log.reader.access.storage.get_all_trials(log.reader.study_id)
    (kept,) = [t for t in trials if t.state.name == "COMPLETE"]
    assert kept.user_attrs["recovered_from"] == ticket.number and kept.value == 64.0
    assert kept.user_attrs["phase"] == "search" and kept.user_attrs["config"] == C.label()


def test_reading_a_study_writes_nothing_and_reclaims_nothing(open_log, storage_url, study_name):
    log = open_log()
    done, stale = log.begin([A, C], "search")
    log.record(done, measured(A, 0.01), score=800.0)
    _as_left(log, stale, pid=_dead_pid())  # dead: a worker that writes would reclaim it

    def snapshot():
        trials = log.reader.access.storage.get_all_trials(log.reader.study_id)
        attrs = log.reader.access.storage.get_study_user_attrs(log.reader.study_id)
        return attrs, [(t.state, t.user_attrs, t.system_attrs, t.values) for t in trials]

    before = snapshot()
    storage = open_storage(storage_url)
    try:
        reader = StudyReader.open(storage, storage_url, study_name)
        history = reader.history()
        assert [c for c, _ in history.searches] == [A] and history.pending == {C}
        assert reader.study_attrs["workload"] == {"name": "synthetic"}
    finally:
        close_storage(storage)
    assert snapshot() == before


@pytest.mark.slow  # waits out a storage's patience, seconds
def test_a_measurement_the_storage_will_not_take_is_kept_and_stored_on_the_next_open(
    breakable, study_name, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(faults, "PATIENCE_S", 1.0)
    out = tmp_path / "autoplace.toml"
    log = breakable.log(study_name, spill_beside=out)
    a, b = log.begin([A, B], "search")
    breakable.fault()
    errors = []
    for ticket, seconds in ((a, 0.01), (b, 0.02)):
        with pytest.raises(StorageFaultError) as info:
            log.record(ticket, measured(ticket.config, seconds), score=8 / seconds)
        errors.append(str(info.value))
    assert all("\n" not in e and str(log.spill) in e for e in errors)
    assert "2 finished measurement(s) are kept" in errors[-1]
    assert log.spill == tmp_path / "autoplace.unstored.json" and log.spill.exists()
    breakable.repair()
    history = breakable.log(study_name, spill_beside=out).history()
    assert [c for c, _ in history.searches] == [A, B] and not history.pending
    assert history.searches[1][1].fed.step_s == pytest.approx(0.02)
    assert not log.spill.exists()  # imported, then removed
    trials = log.reader.access.storage.get_all_trials(log.reader.study_id)
    assert sorted(t.state.name for t in trials) == ["COMPLETE", "COMPLETE"]
    # imported once: opening again adds nothing
    assert len(breakable.log(study_name, spill_beside=out).history().searches) == 2


@pytest.mark.slow  # waits out a storage's patience, seconds
def test_a_trial_left_running_by_a_failing_storage_is_ended_by_the_next_open(
    breakable, study_name, tmp_path, monkeypatch
) -> None:
    # Wherever the next worker runs: the process check (same boot and pid namespace) would
    # not do here, this process being alive; the spill file does.
    monkeypatch.setattr(faults, "PATIENCE_S", 1.0)
    out = tmp_path / "autoplace.toml"
    log = breakable.log(study_name, spill_beside=out)
    (ticket,) = log.begin([C], "search")
    breakable.fault()
    log.abandon([ticket], interrupted=True)  # Ctrl-C while the storage is away
    breakable.repair()
    other = breakable.log(study_name, spill_beside=out)
    trial = _trial(other, ticket)
    assert trial.state.name == "FAIL" and trial.user_attrs.get("interrupted")
    assert not other.history().pending and not log.spill.exists()


def test_keep_alive_refreshes_the_heartbeat_while_measuring(open_log, monkeypatch) -> None:
    monkeypatch.setattr(_claims, "HEARTBEAT_S", 0.05)
    log = open_log()
    (ticket,) = log.begin([C], "search")
    first = _trial(log, ticket).user_attrs["heartbeat"]
    with log.keep_alive([ticket]):
        deadline = time.monotonic() + 120  # a beat every 0.05 s; a busy machine may be slower
        while _trial(log, ticket).user_attrs["heartbeat"] == first:
            assert time.monotonic() < deadline, "no heartbeat while measuring"
            time.sleep(0.05)
    assert _trial(log, ticket).user_attrs["heartbeat"] > first
