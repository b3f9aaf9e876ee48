"""Tuning on every storage: SQLite, Journal file, PostgreSQL, MariaDB and Redis (the
``storage_url`` fixture of conftest.py), and the URLs people type."""

from __future__ import annotations

import contextlib
import socket
import uuid

import optuna
import pytest
from storage_faults import fill, full_disk
from synthetic import SyntheticBackend

import autoplace
import autoplace.study._faults as faults
from autoplace import BadInputError, StorageError
from autoplace.errors import OutputError
from autoplace.study import mask_url, normalize_url, open_storage, storage_at


def tune(storage_url, study_name, backend, tmp_path, **kwargs):
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    options = dict(
        batch_sizes=(8, 16, 32, 64),
        precisions=("float32", "bfloat16"),
        storage=storage_url,
        study=study_name,
        out=tmp_path / "autoplace.toml",
        backend=backend,
        strategy=autoplace.Grid(),
        confirm=0,
    )
    options.update(kwargs)
    return autoplace.tune(model, **options)


def split(backend, known):
    """What ``backend`` measured: configurations ``known`` did not hold, and the rest,
    which must be references (the best so far, measured again with a group)."""
    measured = [r.config for r in backend.measured]
    fresh = [c for c in measured if c not in known]
    assert len(fresh) == len(set(fresh)), "a new configuration was measured twice"
    return fresh, [c for c in measured if c in known]


def searched(trials) -> list[str]:
    """The configurations of the finished search measurements, references left out (the
    best so far, measured again with each group on purpose)."""
    return [
        t.user_attrs["config"]
        for t in trials
        if t.state.name == "COMPLETE"
        and t.user_attrs.get("phase", "search") == "search"
        and not t.user_attrs.get("reference")
    ]


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_results_survive_and_resume_without_remeasuring(storage_url, study_name, tmp_path):
    first = SyntheticBackend()
    result = tune(storage_url, study_name, first, tmp_path, trials=5)
    assert result.new_trials == 5 and len(first.measured) == 5
    known = {r.config for r in first.measured}
    again = SyntheticBackend()
    result = tune(storage_url, study_name, again, tmp_path)
    fresh, references = split(again, known)
    assert set(fresh) == set(result.space.configs()) - known  # what the first had not measured
    assert len(references) == len(again.groups)  # the best so far, once in each group
    assert len(result.measurements) == 8
    assert tune(storage_url, study_name, SyntheticBackend(), tmp_path).new_trials == 0


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_two_workers_share_one_study(storage_url, study_name, tmp_path):
    a, b = SyntheticBackend(), SyntheticBackend()
    tune(storage_url, study_name, a, tmp_path, trials=4)
    result = tune(storage_url, study_name, b, tmp_path, trials=5)
    fresh, references = split(b, {r.config for r in a.measured})
    # one group: the best so far (from the other worker's measurements) and the four left
    assert len(fresh) == 4 and len(references) == 1 and len(b.groups) == 1
    assert len(result.measurements) == 8
    # Both see the same study: its trials hold every figure.
    with storage_at(storage_url) as storage:
        trials = optuna.load_study(study_name=study_name, storage=storage).trials
    assert len(trials) == 9
    assert all("autoplace:measurement" in t.system_attrs for t in trials)
    assert all(isinstance(t.user_attrs["fed_step_s"], float) for t in trials)


def test_failures_are_stored_with_reasons_and_not_retried(storage_url, study_name, tmp_path):
    def fail(request):
        return ("oom", "out of memory (synthetic)") if request.config.batch_size == 64 else None

    tune(storage_url, study_name, SyntheticBackend(fail=fail), tmp_path)
    again = SyntheticBackend()
    result = tune(storage_url, study_name, again, tmp_path)
    assert again.measured == []
    failed = {c.batch_size: m for c, m in result.measurements.items() if m.status != "ok"}
    assert set(failed) == {64} and failed[64].reason == "out of memory (synthetic)"


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    bad = tmp_path / "studies.db"
    bad.write_bytes(b"definitely not a database" * 10)
    with pytest.raises(StorageError, match="not a SQLite database"):
        open_storage(f"sqlite:///{bad}")


def test_an_unknown_scheme_is_a_storage_error():
    with pytest.raises(StorageError, match="cannot read the storage URL"):
        open_storage("nosuchdb://x/y")


def closed_port() -> int:
    """A port nothing listens at: bound here, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: A server URL of each kind, with a password (never shown), for an address of one's own.
NOWHERE = {
    "postgresql": "postgresql://postgres:Hid%2Fden7@{}/test",
    "mysql": "mysql://root:Hid%2Fden7@{}/test",
    "redis": "redis://:Hid%2Fden7@{}/0",
}


def unknown_host() -> str:
    """A host name no one knows (reserved never to exist: RFC 2606), where this machine's
    resolver says so."""
    host = "no-such-host.invalid"
    try:
        socket.getaddrinfo(host, 1)
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_NONAME:
            return host
        pytest.skip(f"this machine's resolver cannot tell: {exc}")
    pytest.skip(f"this machine's resolver knows {host}")


@pytest.mark.parametrize("kind", sorted(NOWHERE))
@pytest.mark.parametrize("where", ["closed port", "unknown host"])
def test_a_server_address_that_leads_nowhere_is_bad_input_at_once(kind, where, monkeypatch):
    # Nothing listening, or no such host, at start-up is a typo far more often than an
    # outage: exit code 2, one line, no wait (an outage mid-run is waited for:
    # test_faults.py). Told by the driver (open_storage) and before a worker starts.
    from autoplace.study import refuse_unreachable

    monkeypatch.setattr(faults, "PATIENCE_S", 2.0)  # were it waited for, not for long
    if where == "closed port":
        address = f"127.0.0.1:{closed_port()}"
        said = [f"nothing listens at {address}", "check the host and port in --storage, or start"]
    else:
        host = unknown_host()
        address, said = f"{host}:5", [f"no host is named {host}", "check the host in --storage"]
    url = NOWHERE[kind].format(address)
    heard: list[str] = []
    for refuse in (
        lambda: open_storage(url, on_wait=heard.append),
        lambda: refuse_unreachable(url),
    ):
        with pytest.raises(StorageError) as info:
            refuse()
        message = str(info.value)
        assert info.value.exit_code == 2 and "\n" not in message, message
        assert all(fragment in message for fragment in said), message
        assert mask_url(normalize_url(url)) in message and "Hid" not in message
    assert heard == []  # nothing was waited for


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///:memory:?cache=x"])
def test_an_in_memory_sqlite_storage_is_refused_in_one_line(url, tmp_path):
    with pytest.raises(StorageError) as info:
        open_storage(url)
    message = str(info.value)
    assert info.value.exit_code == 2 and "\n" not in message
    assert "in-memory SQLite database" in message and "lost when autoplace ends" in message
    assert "pass a file path" in message
    backend = SyntheticBackend()
    with pytest.raises(StorageError, match="in-memory"):
        tune(url, "memory", backend, tmp_path)
    assert backend.measured == [] and not (tmp_path / "autoplace.toml").exists()


def test_tune_on_an_in_memory_sqlite_storage_is_one_line(capsys, tmp_path):
    from conftest import model
    from test_cli import assert_one_line_error, run_cli

    code, out, err = run_cli(
        capsys, "tune", str(model("tiny_mlp")), "--storage", "sqlite:///:memory:",
        "--out", str(tmp_path / "a.toml"),
    )  # fmt: skip
    assert_one_line_error(code, out, err, "sqlite:///:memory:", "in-memory", "pass a file path")


def test_a_study_name_longer_than_a_storage_keeps_is_refused_before_measuring(
    storage_url, tmp_path
):
    from autoplace.study import MAX_STUDY_NAME

    backend = SyntheticBackend()
    with pytest.raises(BadInputError) as info:
        tune(storage_url, "x" * 600, backend, tmp_path)
    message = str(info.value)
    assert info.value.exit_code == 2 and "\n" not in message
    assert "600 characters" in message and "at most 512 characters" in message
    assert "pass a shorter --study" in message and "server is up" not in message
    assert backend.measured == []
    # The limit is the storages' own (PostgreSQL and MySQL keep no longer a name): one at
    # the limit is kept whole.
    longest = f"test-{uuid.uuid4().hex[:12]}-".ljust(MAX_STUDY_NAME, "y")
    try:
        assert tune(storage_url, longest, SyntheticBackend(), tmp_path, trials=1).new_trials
        with storage_at(storage_url) as storage:
            assert longest in {s.study_name for s in storage.get_all_studies()}
            assert "x" * 600 not in {s.study_name for s in storage.get_all_studies()}
    finally:
        with storage_at(storage_url) as storage, contextlib.suppress(KeyError):
            optuna.delete_study(study_name=longest, storage=storage)


def test_a_sqlite_study_in_a_read_only_folder_is_one_clear_error(tmp_path, monkeypatch):
    import autoplace.study._files as storage_module  # where the file is checked

    folder = tmp_path / "ro"
    folder.mkdir()
    real = storage_module.os.access
    # tests run as root on CI, which may write anywhere: the OS is asked, so ask it here
    monkeypatch.setattr(
        storage_module.os, "access", lambda p, m: False if p == folder else real(p, m)
    )
    with pytest.raises(StorageError, match="read-only") as info:
        open_storage(f"sqlite:///{folder / 'studies.db'}")
    assert "--storage" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_three_workers_split_the_search_and_agree(storage_url, study_name, tmp_path):
    import threading

    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    results, errors = [], []

    def worker(n: int) -> None:
        try:
            results.append(
                autoplace.tune(
                    model,
                    precisions=("float32", "bfloat16"),
                    storage=storage_url,
                    study=study_name,
                    out=tmp_path / f"worker-{n}.toml",
                    backend=SyntheticBackend(),
                )
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and len(results) == 3
    with storage_at(storage_url) as storage:
        trials = optuna.load_study(study_name=study_name, storage=storage).trials
    assert len(searched(trials)) == len(set(searched(trials)))  # none searched twice
    assert not [t for t in trials if t.state.name == "RUNNING"]
    # a worker that finds a group claimed waits for its result instead of claiming it
    # again and again (a spin that once wrote hundreds of failed trials during a duel)
    lost = [t for t in trials if t.user_attrs.get("lost_claim")]
    done = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(lost) <= len(done), (len(lost), len(done))
    picks = {r.best.config for r in results}
    assert len(picks) == 1  # every worker writes the same placement


class _LocksTheDatabase(SyntheticBackend):
    """Another process takes the SQLite file's lock while the second group is measured,
    and holds it for ``hold_s`` seconds."""

    def __init__(self, path, hold_s: float) -> None:
        super().__init__()
        self.path, self.hold_s, self.locker = path, hold_s, None

    def measure_together(self, requests, on_progress=None):
        import sqlite3
        import threading

        if len(self.groups) == 1:
            self.locker = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.locker.execute("BEGIN EXCLUSIVE")
            threading.Timer(self.hold_s, self.locker.rollback).start()
        return super().measure_together(requests)


@pytest.mark.slow  # waits out a lock held for seconds
@pytest.mark.parametrize("hold_s", [1.5, 12.0])
def test_a_sqlite_file_locked_mid_run_is_waited_for_then_one_line(tmp_path, monkeypatch, hold_s):
    # Patience far over the hold, or far under it: a busy machine may delay the release.
    monkeypatch.setattr(faults, "PATIENCE_S", 120.0 if hold_s < 4.0 else 4.0)
    path = tmp_path / "studies.db"
    url = f"sqlite:///{path}"
    backend = _LocksTheDatabase(path, hold_s)
    if hold_s < faults.PATIENCE_S:  # released within the patience: the run goes on
        result = tune(url, "locked", backend, tmp_path)
        assert len(result.measurements) == 8 and result.out is not None
        return
    with pytest.raises(autoplace.StorageFaultError) as info:
        tune(url, "locked", backend, tmp_path)
    message = str(info.value)
    assert "\n" not in message and "locked by another process" in message
    assert "database is locked" in message and "again to resume" in message
    assert "kept in" in message and "unstored.json" in message
    assert info.value.exit_code == 1
    backend.locker.rollback()
    stored = optuna.load_study(study_name="locked", storage=url).get_trials(
        states=(optuna.trial.TrialState.COMPLETE,)
    )
    assert 0 < len(stored) < len(backend.measured)  # the first group, not the second
    kept = {c for c in backend.groups[0]}
    assert {t.user_attrs["config"] for t in stored} == {c.label() for c in kept}
    again = SyntheticBackend()
    result = tune(url, "locked", again, tmp_path)
    # the group whose results could not be stored was kept aside and is stored now: none of
    # it is measured again, and nothing is measured twice
    fresh, _ = split(again, {r.config for r in backend.measured})
    assert set(fresh) == set(result.space.configs()) - {r.config for r in backend.measured}
    assert not list(tmp_path.glob("*.unstored.json"))
    study = optuna.load_study(study_name="locked", storage=url)
    assert optuna.trial.TrialState.RUNNING not in [t.state for t in study.trials]
    assert sorted(searched(study.trials)) == sorted(c.label() for c in result.space.configs())


# -- a full disk and a damaged file: the real cause, in one line, before measuring -------------


@pytest.mark.parametrize("name", ["studies.db", "studies.log"])
def test_a_study_on_a_full_disk_is_refused_before_measuring(tmp_path, name):
    disk = tmp_path / "disk"
    with full_disk(disk):
        fill(disk)
        backend = SyntheticBackend()
        with pytest.raises(autoplace.StorageFaultError) as info:
            tune(str(disk / name), "full", backend, tmp_path)
    message = str(info.value)
    assert f"the disk holding {disk / name} is full" in message and "\n" not in message
    assert "No space left on device" in message and "exceeding max length" not in message
    assert backend.measured == []


class _FillsTheDisk(SyntheticBackend):
    """Fills the disk at ``disk`` while its second group is measured."""

    def __init__(self, disk) -> None:
        super().__init__()
        self.disk = disk

    def measure_together(self, requests, on_progress=None):
        if len(self.groups) == 1:
            fill(self.disk)
        return super().measure_together(requests)


def test_a_study_whose_disk_fills_mid_run_names_it_and_keeps_the_measurements(tmp_path):
    disk = tmp_path / "disk"
    with full_disk(disk):
        url = f"sqlite:///{disk / 'studies.db'}"
        backend = _FillsTheDisk(disk)
        with pytest.raises(autoplace.StorageFaultError) as info:
            tune(url, "filling", backend, tmp_path)  # --out is on another disk
        message = str(info.value)
        assert f"the disk holding {disk / 'studies.db'} is full" in message
        assert "database or disk is full" in message and "\n" not in message
        assert "kept in" in message and str(tmp_path / "autoplace.unstored.json") in message
        (disk / "filler").unlink()  # the user frees some space
        again = SyntheticBackend()
        result = tune(url, "filling", again, tmp_path)
        fresh, _ = split(again, {r.config for r in backend.measured})
        assert set(fresh) == set(result.space.configs()) - {r.config for r in backend.measured}
        study = optuna.load_study(study_name="filling", storage=url)
        assert not [t for t in study.trials if t.state.name == "RUNNING"]


def test_a_recommendation_whose_disk_fills_is_one_line_and_the_study_keeps_all(tmp_path):
    disk = tmp_path / "disk"
    with full_disk(disk):
        url = f"sqlite:///{tmp_path / 'studies.db'}"
        with pytest.raises(OutputError) as info:
            tune(url, "toml", _FillsTheDisk(disk), tmp_path, out=disk / "autoplace.toml")
        message = str(info.value)
        assert f"cannot write {disk / 'autoplace.toml'}: the disk holding {disk} is full" in message
        assert info.value.exit_code == 1 and "\n" not in message
        (disk / "filler").unlink()
        again = SyntheticBackend()
        result = tune(url, "toml", again, tmp_path, out=disk / "autoplace.toml")
        assert again.measured == [] and result.out == disk / "autoplace.toml"


def _damage(path) -> None:
    """Overwrite the middle of a SQLite file with noise, its header left as it was."""
    data = bytearray(path.read_bytes())
    assert len(data) > 3 * 4096
    data[4096 : len(data) - 4096] = bytes((i * 7 + 3) % 256 for i in range(len(data) - 8192))
    path.write_bytes(bytes(data))


def test_a_damaged_sqlite_file_is_refused_before_measuring(tmp_path):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    tune(url, "damaged", SyntheticBackend(), tmp_path, trials=3)
    _damage(tmp_path / "studies.db")
    backend = SyntheticBackend()
    with pytest.raises(StorageError) as info:
        tune(url, "damaged", backend, tmp_path)
    message = str(info.value)
    assert f"the study database {tmp_path / 'studies.db'} is damaged" in message
    assert "restore it from a copy" in message and "\n" not in message
    assert "exceeding max length" not in message and info.value.exit_code == 2
    assert backend.measured == []


@pytest.mark.slow  # the CLI starts its measurement worker
def test_tune_on_a_damaged_sqlite_file_is_one_line(capsys, tmp_path):
    from test_cli import TINY, assert_one_line_error, run_cli

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    tune(url, "damaged", SyntheticBackend(), tmp_path, trials=3)
    _damage(tmp_path / "studies.db")
    code, out, err = run_cli(
        capsys, "tune", TINY, "--storage", url, "--out", str(tmp_path / "a.toml")
    )
    assert_one_line_error(code, out, err, "is damaged", "restore it from a copy", exit_code=2)
