"""Storage faults, for real: PostgreSQL, MariaDB and Redis through a proxy that takes them
away (down for a while, down for good, connections reset, silent, slow, a reply lost), and
which driver failures pass. What a user meets is checked: the tune goes on, or ends with
one line naming the storage and the cause; nothing measured is lost, nothing is left
RUNNING, nothing is measured twice."""

from __future__ import annotations

import sqlite3
import threading

import optuna
import pytest
from conftest import ADDRESSES, skip_servers
from storage_faults import FaultProxy
from synthetic import SyntheticBackend, measured
from test_storage import searched, split, tune

import autoplace.study._faults as faults
import autoplace.study._storage as storages
from autoplace import StorageError, StorageFaultError
from autoplace._interrupt import Interrupt
from autoplace.study import mask_url, normalize_url, open_storage, storage_at
from autoplace.study._faults import kind

SERVER_KINDS = [
    pytest.param(k, marks=[skip_servers, pytest.mark.storage])
    for k in ("postgresql", "mysql", "redis")
]


class Server:
    """A real server behind a :class:`FaultProxy`: ``url`` reaches it through the proxy."""

    def __init__(self, direct: str) -> None:
        self.kind = direct.split("://")[0]
        host, port = ADDRESSES[self.kind]
        self.proxy = FaultProxy((host, port))
        self.direct = direct
        self.url = direct.replace(f"{host}:{port}", self.proxy.url_host)


@pytest.fixture
def server(storage_url):
    made = Server(storage_url)
    yield made
    made.proxy.close()


class Faulty(SyntheticBackend):
    """Puts a fault in before measuring its ``at``-th group (from 1)."""

    def __init__(self, fault, at: int = 2) -> None:
        super().__init__()
        self.fault, self.at = fault, at

    def measure_together(self, requests, on_progress=None):
        if len(self.groups) + 1 == self.at:
            self.fault()
        return super().measure_together(requests)


def raised_unless_hung(server: Server, action) -> BaseException:
    """What ``action()`` raises, run aside while ``server`` may be silent: a hang is what
    the caller looks for, so it gets generous time (not a speed), then the proxy forwards
    again and the action must have ended with a failure."""
    ended: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:
            ended.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=300)
    server.proxy.set_mode("pass")
    thread.join()
    (error,) = ended
    return error


def trials_of(url: str, name: str) -> list:
    with storage_at(url) as storage:
        return optuna.load_study(study_name=name, storage=storage).trials


def assert_whole(url: str, name: str, configs) -> None:
    """Every configuration searched exactly once, nothing RUNNING."""
    trials = trials_of(url, name)
    assert [t.number for t in trials if t.state.name == "RUNNING"] == []
    assert sorted(searched(trials)) == sorted(c.label() for c in configs)


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_an_outage_within_the_patience_is_waited_out_and_said(server, study_name, tmp_path):
    heard: list[str] = []
    back: list[threading.Timer] = []
    backend = Faulty(lambda: back.append(server.proxy.down_for(3.0)))
    result = tune(server.url, study_name, backend, tmp_path, on_wait=heard.append)
    back[0].join()
    assert result.out is not None and len(result.measurements) == 8
    assert any(line.startswith("waiting for the storage (") for line in heard), heard
    assert_whole(server.direct, study_name, result.space.configs())


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_refusal_at_start_is_a_typo_and_one_mid_run_an_outage(
    server, study_name, tmp_path, monkeypatch
):
    # Before anything is stored, nothing listening at the address is bad input: one line,
    # exit code 2, no wait. Once the run has begun, the same refusal is a server away,
    # waited out.
    monkeypatch.setattr(faults, "PATIENCE_S", 20.0)
    server.proxy.down()
    heard: list[str] = []
    backend = SyntheticBackend()
    with pytest.raises(StorageError) as info:
        tune(server.url, study_name, backend, tmp_path, on_wait=heard.append)
    message = str(info.value)
    assert info.value.exit_code == 2 and "\n" not in message
    assert f"nothing listens at {server.proxy.url_host}" in message
    assert "check the host and port in --storage, or start the server" in message
    assert heard == [] and backend.measured == []
    server.proxy.up()
    back: list[threading.Timer] = []
    backend = Faulty(lambda: back.append(server.proxy.down_for(3.0)))
    result = tune(server.url, study_name, backend, tmp_path, on_wait=heard.append)
    back[0].join()
    assert any(line.startswith("waiting for the storage (") for line in heard), heard
    assert_whole(server.direct, study_name, result.space.configs())


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_server_that_accepts_and_never_answers_at_start_is_waited_for_within_bounds(
    server, monkeypatch
):
    # A hung server is not a typo: it is waited for, saying for what and until when, and
    # the wait ends.
    monkeypatch.setattr(faults, "PATIENCE_S", 3.0)
    monkeypatch.setattr(faults, "TICK_S", 1.0)
    monkeypatch.setattr(storages, "STATEMENT_TIMEOUT_S", 2.0)
    monkeypatch.setattr(storages, "CONNECT_TIMEOUT_S", 2)
    server.proxy.set_mode("silent")
    heard: list[str] = []
    error = raised_unless_hung(server, lambda: open_storage(server.url, on_wait=heard.append))
    assert isinstance(error, StorageFaultError) and "did not answer" in str(error)
    shown = mask_url(normalize_url(server.url))
    assert any(line.endswith(f": no answer yet from {shown}") for line in heard), heard
    assert heard and all(
        line.startswith("waiting for the storage (")
        and ("s, trying until 3 s): " in line or "s, the last try): " in line)
        for line in heard
    ), heard


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_server_down_for_good_ends_in_one_line_and_loses_nothing(
    server, study_name, tmp_path, monkeypatch
):
    monkeypatch.setattr(faults, "PATIENCE_S", 2.0)
    backend = Faulty(server.proxy.down)
    with pytest.raises(StorageFaultError) as info:
        tune(server.url, study_name, backend, tmp_path)
    message = str(info.value)
    assert info.value.exit_code == 1 and "\n" not in message
    assert mask_url(normalize_url(server.url)) in message and "did not answer" in message
    assert "refused" in message.lower() and "again" in message
    spill = tmp_path / "autoplace.unstored.json"
    assert f"{len(backend.groups[1])} finished measurement(s) are kept in {spill}" in message
    server.proxy.up()
    again = SyntheticBackend()
    result = tune(server.url, study_name, again, tmp_path)
    measured_before = {r.config for r in backend.measured}
    fresh, _ = split(again, measured_before)
    assert set(fresh) == set(result.space.configs()) - measured_before  # none measured again
    assert not spill.exists()
    assert_whole(server.direct, study_name, result.space.configs())


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_silent_server_is_a_fault_not_a_hang(server, study_name, tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "PATIENCE_S", 3.0)
    monkeypatch.setattr(faults, "TICK_S", 1.0)
    monkeypatch.setattr(storages, "STATEMENT_TIMEOUT_S", 2.0)
    monkeypatch.setattr(storages, "CONNECT_TIMEOUT_S", 2)
    heard: list[str] = []
    backend = Faulty(lambda: server.proxy.set_mode("silent"))
    error = raised_unless_hung(
        server, lambda: tune(server.url, study_name, backend, tmp_path, on_wait=heard.append)
    )
    assert isinstance(error, StorageFaultError) and "\n" not in str(error)
    assert "did not answer" in str(error) and "kept in" in str(error)
    assert any("waiting for the storage" in line for line in heard), heard
    result = tune(server.url, study_name, SyntheticBackend(), tmp_path)
    assert_whole(server.direct, study_name, result.space.configs())


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_server_answering_too_slowly_ends_as_a_silent_one_and_the_resume_stores_all(
    server, study_name, tmp_path, monkeypatch
):
    # Every exchange is answered, each late: each passes the drivers' timeouts, so only
    # the bound on a storage call as a whole ends it, in the line a silent server gets
    # (before, one call went on for minutes: 244 s at 2 s a chunk). The test waits far
    # longer than the bound before it gives the server its speed back; then a tune still
    # running would end without an error, and fail here.
    monkeypatch.setattr(faults, "CALL_LIMIT_S", 3.0)
    backend = Faulty(lambda: server.proxy.set_mode("delay", 0.5))
    error = raised_unless_hung(server, lambda: tune(server.url, study_name, backend, tmp_path))
    message = str(error)
    assert isinstance(error, StorageFaultError) and "\n" not in message, message
    assert "did not answer for " in message and "answers too slowly" in message, message
    spill = tmp_path / "autoplace.unstored.json"
    assert f"measurement(s) are kept in {spill}" in message
    monkeypatch.undo()
    again = SyntheticBackend()
    result = tune(server.url, study_name, again, tmp_path)
    fresh, _ = split(again, {r.config for r in backend.measured})
    assert set(fresh) == set(result.space.configs()) - {r.config for r in backend.measured}
    assert not spill.exists()
    assert_whole(server.direct, study_name, result.space.configs())


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_each_driver_ends_a_try_once_the_calls_bound_has_passed(storage_url):
    # The hooks of every server's driver, with no proxy in between: a call whose bound
    # has passed is ended at its next exchange, as a fault that passes, in our words; the
    # storage is used again afterwards.
    with storage_at(storage_url) as storage:
        with pytest.raises(Exception) as info, faults.bounded(0.0):
            storage.get_all_studies()
        assert kind(info.value) == "away" and faults.cause(info.value) == faults.overdue()
        assert isinstance(storage.get_all_studies(), list)


def test_a_storage_call_is_bounded_as_a_whole():
    seen: list[float | None] = []

    def action() -> None:
        seen.append(faults.remaining())

    faults.retry(action)
    faults.retry(action, patience_s=0.0)  # tried once, and bounded all the same
    assert faults.remaining() is None  # outside a call
    assert all(left is not None and 0 < left <= faults.CALL_LIMIT_S for left in seen), seen
    with faults.bounded(5.0):
        faults.retry(action)  # the bound around it comes first
    assert seen[-1] is not None and seen[-1] <= 5.0


def test_a_try_the_bound_cut_short_reports_the_failure_before_it(monkeypatch):
    # A server refusing until the bound passes: the last try, cut by the bound before it
    # was answered, is not the cause; the refusal is (and with no failure before, the cut).
    failures = [ConnectionRefusedError(111, "Connection refused"), TimeoutError(faults.overdue())]
    left = [5.0, -0.1]  # what the bound leaves when each failure is met: the second, past it
    monkeypatch.setattr(faults, "remaining", lambda: left.pop(0))

    def action() -> None:
        raise failures.pop(0)

    with pytest.raises(ConnectionRefusedError):
        faults.retry(action)
    assert failures == [] and left == []
    left.append(-0.1)
    with pytest.raises(TimeoutError, match="answers too slowly"):
        faults.retry(lambda: (_ for _ in ()).throw(TimeoutError(faults.overdue())))


class _Clock:
    """``time.monotonic`` of a test: it moves only when a storage call takes its time."""

    def __init__(self, monkeypatch) -> None:
        import time

        self.now = 1000.0
        monkeypatch.setattr(time, "monotonic", lambda: self.now)

    def call(self, seconds: float, seen: list):
        """A storage call answered ``seconds`` late, ended as the drivers' hooks end one
        still under way when the call's bound passes; ``seen``: what each had left."""

        def action() -> str:
            left = faults.remaining()
            seen.append(left)
            self.now += min(seconds, left)
            if seconds >= left:  # cut where the bound passes, as the hooks cut it
                raise TimeoutError(faults.overdue())
            return "answered"

        return action


def test_slow_calls_one_after_another_share_the_minute_a_quick_one_ends_it(monkeypatch):
    # A storage answering every call, each 20 s late: alone, each is within the minute;
    # one after another they are one wait, and the run ends as a silent server's would,
    # 60 s after the slowness began, not after as many minutes as there are calls.
    from autoplace.study._access import Access

    clock, seen = _Clock(monkeypatch), []
    access = Access(object(), "postgresql://db:5432/studies", None)
    access.opened = True
    assert access.do(clock.call(20, seen)) == access.do(clock.call(20, seen)) == "answered"
    assert access.do(clock.call(0.01, seen)) == "answered"  # a quick one: the wait is over
    access.do(clock.call(30, seen))
    access.do(clock.call(20, seen))
    with pytest.raises(StorageFaultError) as info:
        access.do(clock.call(20, seen))
    assert seen == [60, 40, 20, 60, 30, 10]
    message = str(info.value)
    assert "did not answer for 60 s (it answers too slowly" in message, message
    with pytest.raises(StorageFaultError):  # the run is ending: the next is not tried
        access.do(clock.call(0.01, seen))
    assert len(seen) == 6


def test_a_call_past_its_bound_is_not_tried_again():
    tries: list[int] = []

    def action() -> None:
        tries.append(1)
        raise ConnectionResetError(104, "Connection reset by peer")  # a fault that passes

    with pytest.raises(ConnectionResetError), faults.bounded(0.0):
        faults.retry(action)
    assert len(tries) == 1


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_dropped_connections_and_slow_packets_do_not_stop_a_tune(server, study_name, tmp_path):
    def fault() -> None:
        server.proxy.drop()
        server.proxy.set_mode("delay", 0.01)

    backend = Faulty(fault)
    result = tune(server.url, study_name, backend, tmp_path)
    assert len(result.measurements) == 8
    server.proxy.set_mode("pass")
    assert_whole(server.direct, study_name, result.space.configs())


#: What the request that commits a new trial holds, per server.
_COMMIT = {"postgresql": b"COMMIT", "mysql": b"COMMIT", "redis": b"EVAL"}


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_trial_whose_creation_reply_was_lost_is_made_once(server, study_name, tmp_path):
    from autoplace import Config
    from autoplace.study import (
        OptunaStudyLog,
        StudyIdentity,
        TrialSpace,
        close_storage,
        open_storage,
    )

    storage = open_storage(server.url)
    try:
        log = OptunaStudyLog(
            storage,
            server.url,
            name=study_name,
            identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
            space=TrialSpace(devices=["cpu:0"], with_width=False),
            stale_after_s=3600.0,
        )
        config = Config("cpu:0", 8, "float32")
        server.proxy.lose_reply_to(_COMMIT[server.kind])
        (ticket,) = log.claim(log.begin([config], "search"), "search")  # as the loop does
        assert server.proxy.lost == 1  # the fault happened: the server created it, unheard
        log.record(ticket, measured("ok", "", "cpu:0", 8, "float32", None), score=1.0)
        assert [c for c, _ in log.history().searches] == [config]
    finally:
        close_storage(storage)
    trials = trials_of(server.direct, study_name)
    # one trial holds the measurement; a duplicate Optuna made retrying (PostgreSQL, MySQL)
    # is ended at once, never left RUNNING for others to wait on
    assert [t.state.name for t in trials if t.user_attrs.get("config")].count("COMPLETE") == 1
    assert all(t.state.name == "COMPLETE" or t.user_attrs.get("duplicate") for t in trials)


@pytest.mark.slow  # waits out a storage's patience, seconds
def test_a_sqlite_file_held_locked_is_waited_for_with_a_line(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "TICK_S", 1.0)
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    tune(url, "locked", SyntheticBackend(), tmp_path, trials=1)
    locker = sqlite3.connect(tmp_path / "studies.db", isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    threading.Timer(6.0, locker.rollback).start()
    heard: list[str] = []
    result = tune(url, "locked", SyntheticBackend(), tmp_path, on_wait=heard.append)
    locker.close()
    assert any("waiting for the storage" in line for line in heard), heard
    assert_whole(url, "locked", result.space.configs())


def _driver_errors():
    """Real exceptions of the drivers, as they raise them, and what each is."""
    import psycopg.errors
    import pymysql.err
    import redis.exceptions

    return [
        (psycopg.errors.DeadlockDetected("deadlock detected"), "locked"),
        (psycopg.errors.LockNotAvailable("could not obtain lock on row"), "locked"),
        (psycopg.errors.AdminShutdown("terminating connection"), "away"),
        (psycopg.errors.CannotConnectNow("the database system is starting up"), "away"),
        (psycopg.errors.SerializationFailure("could not serialize access"), "locked"),
        (psycopg.OperationalError("server closed the connection unexpectedly"), "away"),
        (psycopg.errors.InvalidPassword("password authentication failed"), "credentials"),
        (psycopg.errors.DiskFull("could not extend file: No space left on device"), "full"),
        (psycopg.errors.UndefinedTable('relation "trials" does not exist'), "other"),
        (pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"), "locked"),
        (pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock"), "locked"),
        (pymysql.err.OperationalError(2006, "MySQL server has gone away"), "away"),
        (pymysql.err.OperationalError(2013, "Lost connection to MySQL server"), "away"),
        (pymysql.err.OperationalError(1040, "Too many connections"), "away"),
        (pymysql.err.OperationalError(1045, "Access denied for user 'root'"), "credentials"),
        (pymysql.err.InterfaceError(0, ""), "away"),
        (redis.exceptions.ConnectionError("Connection reset by peer"), "away"),
        (redis.exceptions.TimeoutError("Timeout reading from socket"), "away"),
        (redis.exceptions.BusyLoadingError("Redis is loading the dataset"), "away"),
        (redis.exceptions.AuthenticationError("invalid password"), "credentials"),
        (sqlite3.OperationalError("database is locked"), "locked"),
        (sqlite3.OperationalError("database or disk is full"), "full"),
        (sqlite3.DatabaseError("database disk image is malformed"), "damaged"),
        (OSError(28, "No space left on device"), "full"),
        (ConnectionResetError(104, "Connection reset by peer"), "away"),
    ]


def test_which_driver_failures_pass():
    for error, expected in _driver_errors():
        wrapped = optuna.exceptions.StorageInternalError("An exception is raised ...")
        wrapped.__cause__ = error  # as Optuna raises it, wrapped
        assert (kind(error), kind(wrapped)) == (expected, expected), (error, expected)


def test_a_storage_fault_line_names_the_drivers_cause_not_optunas():
    import psycopg

    from autoplace.study._faults import fault_error

    error = optuna.exceptions.StorageInternalError(
        "An exception is raised during the commit. This typically happens due to invalid "
        "data in the commit, e.g. exceeding max length."
    )
    error.__cause__ = psycopg.OperationalError("server closed the connection unexpectedly")
    line = str(fault_error("postgresql://db/x", error, str, opened=True, waited_s=60.0))
    assert "exceeding max length" not in line
    assert "server closed the connection unexpectedly" in line and "for 60 s" in line


# -- what a user of the command meets ---------------------------------------------------------


def _tune_cli(capsys, server: Server, study: str, tmp_path):
    from conftest import model
    from test_cli import run_cli

    return run_cli(
        capsys, "tune", str(model("tiny_mlp")), "--storage", server.url, "--study", study,
        "--out", str(tmp_path / "autoplace.toml"), "--batch-sizes", "2..32",
        "--precisions", "float32", "--measure-timeout", "60",
    )  # fmt: skip


def _after_the_first_group(monkeypatch, fault) -> None:
    """Put ``fault`` in as soon as the command's worker has measured its first group, before
    the tune stores it (the worker and its measurements are the real ones)."""
    from autoplace.measuring import SubprocessBackend

    real = SubprocessBackend.measure_together
    calls = []

    def measure_together(self, requests, on_progress=None):
        results = real(self, requests)
        calls.append(len(requests))
        if len(calls) == 1:
            fault()
        return results

    monkeypatch.setattr(SubprocessBackend, "measure_together", measure_together)


def _lines(err: str) -> tuple[list[str], list[str]]:
    """stderr's lines saying the storage is waited for, and its error lines."""
    lines = err.splitlines()
    waits = [line for line in lines if line.startswith("waiting for the storage")]
    return waits, [line for line in lines if line.startswith("autoplace: error")]


@pytest.mark.slow  # the CLI starts its measurement worker
@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_the_command_waits_out_an_outage_saying_so(
    capsys, server, study_name, tmp_path, monkeypatch
):
    back: list[threading.Timer] = []
    _after_the_first_group(monkeypatch, lambda: back.append(server.proxy.down_for(4.0)))
    code, _out, err = _tune_cli(capsys, server, study_name, tmp_path)
    back[0].join()
    waits, errors = _lines(err)
    assert code == 0 and "Traceback" not in err, err
    assert waits and not errors and (tmp_path / "autoplace.toml").exists()
    assert not [t for t in trials_of(server.direct, study_name) if t.state.name == "RUNNING"]


@pytest.mark.slow  # the CLI starts its measurement worker
@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_the_command_on_a_server_gone_for_good_is_one_line_and_resumes_whole(
    capsys, server, study_name, tmp_path, monkeypatch
):
    from test_cli import assert_one_line_error

    monkeypatch.setattr(faults, "PATIENCE_S", 3.0)
    _after_the_first_group(monkeypatch, server.proxy.down)
    code, out, err = _tune_cli(capsys, server, study_name, tmp_path)
    _, errors = _lines(err)
    shown = mask_url(normalize_url(server.url))
    assert "Traceback" not in err and err.splitlines()[-1] == errors[-1]  # the last line
    assert_one_line_error(code, out, f"{errors[0]}\n", shown, "did not answer", exit_code=1)
    assert not (tmp_path / "autoplace.toml").exists()
    assert "finished measurement(s) are kept in" in errors[0]  # the first group's
    monkeypatch.undo()
    server.proxy.up()
    code, _out, err = _tune_cli(capsys, server, study_name, tmp_path)
    assert code == 0 and "Traceback" not in err, err
    trials = trials_of(server.direct, study_name)
    assert not [t for t in trials if t.state.name == "RUNNING"]
    assert len(searched(trials)) == len(set(searched(trials)))  # nothing measured twice
    assert not (tmp_path / "autoplace.unstored.json").exists()  # imported, if any was kept


@pytest.mark.parametrize("storage_url", SERVER_KINDS, indirect=True)
def test_a_launchers_look_up_waits_out_an_outage_saying_so(
    server, study_name, tmp_path, monkeypatch
):
    """recommend() reads a team's study as patiently as a tune writes it, and says so: a
    server that accepts and does not answer for a while (one that nothing listens at when
    the look-up starts is a typo, refused at once: the test above)."""
    import autoplace

    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    space = {"batch_sizes": (8, 64), "precisions": ("float32",), "confirm": 1}
    autoplace.tune(model, storage=server.url, study=study_name, out=None,
                   backend=SyntheticBackend(), **space)  # fmt: skip
    monkeypatch.setattr(storages, "STATEMENT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(storages, "CONNECT_TIMEOUT_S", 1)
    heard: list[str] = []
    server.proxy.set_mode("silent")
    back = threading.Timer(3.0, server.proxy.set_mode, ("pass",))
    back.start()
    found = autoplace.recommend(
        model,
        storage=server.url,
        study=study_name,
        on_miss="raise",
        cache_dir=tmp_path / "cache",
        backend=SyntheticBackend(),
        on_wait=heard.append,
        tune_options=space,  # the question the tune answered (a wider one is a miss)
    )
    back.join()
    assert found.source == "study" and found.exact
    assert any(line.startswith("waiting for the storage (") for line in heard), heard
    assert not any("@" in line for line in heard)  # no credentials in what it says


def test_a_ctrl_c_cuts_a_wait_for_the_storage_short():
    # A storage locked for the whole patience: the Ctrl-C taken during a try makes it the
    # last, its failure raised as it came (a measurement being recorded goes to the spill
    # file), not 60 s of tries (issue 50)
    interrupt, tries = Interrupt(), []

    def locked() -> None:
        tries.append(1)
        if len(tries) == 2:
            interrupt.set()
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        faults.retry(locked, interrupt=interrupt)
    assert len(tries) == 2
