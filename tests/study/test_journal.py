"""A Journal file study after a writer stopped mid-write: a cut last record set aside, said
in one line, and the rest read; a lock left behind taken over in one line; damage before
the last record named with its file and line, not blamed on a password."""

from __future__ import annotations

import json
import logging
import os
import threading
import time

import optuna
import pytest
from storage_faults import fill, full_disk
from synthetic import SyntheticBackend
from test_storage import searched, tune

import autoplace
import autoplace.study._journal as journals
from autoplace import StorageError
from autoplace.study import open_storage
from autoplace.study._journal import JournalLock, mend

RECORD = b'{"op_code": 0, "worker_id": "a", "study_name": "s", "directions": [1]}\n'


def journal_url(path) -> str:
    return f"journal:///{path}"


def study_trials(url: str, name: str) -> list:
    return optuna.load_study(study_name=name, storage=open_storage(url)).trials


def cut_files(journal) -> list:
    return sorted(journal.parent.glob(f"{journal.name}.cut-*"))


# -- a cut last record ---------------------------------------------------------------------


def test_a_cut_last_record_is_set_aside_in_one_line_and_the_rest_is_read(tmp_path):
    journal = tmp_path / "studies.log"
    first = SyntheticBackend()
    tune(journal_url(journal), "cut", first, tmp_path, trials=2)
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-7])  # a writer killed mid-record
    kept = whole[whole.rstrip(b"\n").rfind(b"\n") + 1 : -7]  # what is left of the last one
    heard: list[str] = []
    again = SyntheticBackend()
    result = tune(journal_url(journal), "cut", again, tmp_path, on_wait=heard.append)
    (side,) = cut_files(journal)
    assert side.read_bytes() == kept
    said = [line for line in heard if "set aside" in line]
    assert said == [
        f"the study journal {journal} ended in a record cut mid-write (a full disk, or a "
        f"writer killed): set aside in {side.name} beside it; the rest is read"
    ]
    trials = study_trials(journal_url(journal), "cut")
    assert sorted(searched(trials)) == sorted(c.label() for c in result.space.configs())
    assert {r.config.label() for r in first.measured} <= set(searched(trials))


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        (b'{"op_code": 4, "worker', "cut before its newline"),
        (b'{"op_code": 4, "worker\n', "its newline written, not all of it"),
        (b"\n", "an empty line"),
        (b"[1, 2]\n", "JSON, not a record"),
    ],
)
def test_a_last_line_that_is_not_a_whole_record_is_set_aside(tmp_path, tail, why):
    journal = tmp_path / "studies.log"
    journal.write_bytes(RECORD * 3 + tail)
    heard: list[str] = []
    side = mend(journal, heard.append)
    assert side is not None and side.read_bytes() == tail, why
    assert journal.read_bytes() == RECORD * 3 and len(heard) == 1


def test_a_journal_that_ends_whole_is_left_as_it_is(tmp_path):
    journal = tmp_path / "studies.log"
    for content in (b"", RECORD, RECORD * 2):
        journal.write_bytes(content)
        assert mend(journal, None) is None and journal.read_bytes() == content
    assert mend(tmp_path / "none.log", None) is None
    assert cut_files(journal) == []


def test_a_last_record_longer_than_a_read_is_found_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(journals, "_CHUNK", 16)  # the end is read in many pieces
    journal = tmp_path / "studies.log"
    long = json.dumps({"op_code": 4, "value": "x" * 100}).encode() + b"\n"
    journal.write_bytes(RECORD + long)
    assert mend(journal, None) is None
    journal.write_bytes(RECORD + long[:-5])
    side = mend(journal, None)
    assert side is not None and side.read_bytes() == long[:-5]
    assert journal.read_bytes() == RECORD
    journal.write_bytes(long[:-5])  # nothing before it: the file is emptied
    assert mend(journal, None) is not None and journal.read_bytes() == b""


def test_a_record_cut_by_another_writer_mid_run_is_set_aside_before_the_next_append(tmp_path):
    # Optuna's reader skips a cut last line, then appends after it, and from then on no
    # reader can read the file: each append of ours, under the lock, mends first.
    journal = tmp_path / "studies.log"
    url = journal_url(journal)
    storage = open_storage(url)
    optuna.create_study(study_name="a", storage=storage)
    with open(journal, "ab") as fh:
        fh.write(b'{"op_code": 0, "worker_id": "killed", "study_na')
    optuna.create_study(study_name="b", storage=storage)  # appends, after the cut record
    assert len(cut_files(journal)) == 1
    names = {s.study_name for s in optuna.get_all_study_summaries(open_storage(url))}
    assert names == {"a", "b"}


def test_a_full_disk_under_a_journal_study_then_space_freed_resumes_whole(tmp_path):
    """The reporter's case: the disk holding the journal fills mid-run (the append cut);
    space is freed; the same command, the journal's path spelled with three slashes or
    four, resumes with nothing repaired by hand and every measurement stored."""
    disk = tmp_path / "disk"
    with full_disk(disk):
        journal = disk / "studies.log"
        backend = _FillsTheDisk(disk)
        with pytest.raises(autoplace.StorageFaultError) as info:
            tune(f"journal:///{journal}", "filling", backend, tmp_path)  # --out elsewhere
        message = str(info.value)
        assert f"the disk holding {journal} is full" in message and "\n" not in message
        spill = tmp_path / "autoplace.unstored.json"
        assert f"kept in {spill}" in message
        (disk / "filler").unlink()  # the user frees some space
        again = SyntheticBackend()
        heard: list[str] = []
        result = tune(f"journal:////{journal}", "filling", again, tmp_path, on_wait=heard.append)
        assert not spill.exists()  # what the full disk would not take is in the study
        trials = study_trials(journal_url(journal), "filling")
        assert not [t for t in trials if t.state.name == "RUNNING"]
        assert sorted(searched(trials)) == sorted(c.label() for c in result.space.configs())
        assert {r.config.label() for r in backend.measured} <= set(searched(trials))
        assert mend(journal, None) is None  # it ends whole
        side_files = {p.name for p in cut_files(journal)}  # the run that met the disk, and this
        assert all(line.split("set aside in ")[1].split()[0] in side_files for line in heard
                   if "set aside" in line)  # fmt: skip


class _FillsTheDisk(SyntheticBackend):
    """Fills the disk at ``disk`` while its second group is measured."""

    def __init__(self, disk) -> None:
        super().__init__()
        self.disk = disk

    def measure_together(self, requests, on_progress=None):
        if len(self.groups) == 1:
            fill(self.disk)
        return super().measure_together(requests)


# -- damage before the last record -----------------------------------------------------------


def test_a_journal_damaged_before_its_last_record_is_named_with_its_line_not_a_password(
    tmp_path,
):
    journal = tmp_path / "studies.log"
    journal.write_bytes(RECORD + b'{"op_code": 4, "wor\n' + RECORD)
    before = journal.read_bytes()
    for reading in (False, True):
        with pytest.raises(StorageError) as info:
            open_storage(journal_url(journal), reading=reading)
        message = str(info.value)
        assert message.startswith(f"the study journal {journal} is damaged at line 2 (not JSON")
        assert "restore it from a copy" in message and "1 record(s) before line 2" in message
        assert "password" not in message and "\n" not in message
        assert info.value.exit_code == 2
    assert journal.read_bytes() == before and cut_files(journal) == []


# -- the lock a writer killed mid-write left ---------------------------------------------------


def _left_lock(journal, age_s: float = 0.0) -> None:
    """The lock file a writer killed mid-append leaves, ``age_s`` old."""
    lock = f"{journal}.lock"
    os.symlink(journal, lock)
    if age_s:
        when = time.time() - age_s
        os.utime(lock, (when, when), follow_symlinks=False)


def test_a_lock_left_long_ago_is_taken_over_at_once_in_one_line(tmp_path, caplog):
    journal = tmp_path / "studies.log"
    tune(journal_url(journal), "locked", SyntheticBackend(), tmp_path, trials=1)
    _left_lock(journal, age_s=10 * journals.STALE_LOCK_S)
    heard: list[str] = []
    with caplog.at_level(logging.WARNING, logger="optuna"):
        tune(journal_url(journal), "locked", SyntheticBackend(), tmp_path, on_wait=heard.append)
    said = [line for line in heard if "lock" in line]
    assert len(said) == 1 and said[0].startswith(
        f"took over the lock of the study journal {journal}: held "
    )
    assert not os.path.lexists(f"{journal}.lock")
    assert not [r for r in caplog.records if r.name.startswith("optuna")]


def test_a_lock_left_just_now_is_waited_for_then_taken_over_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(journals, "STALE_LOCK_S", 2.0)
    journal = tmp_path / "studies.log"
    journal.write_bytes(RECORD)
    _left_lock(journal)
    heard: list[str] = []
    lock = JournalLock(journal, heard.append)
    assert lock.acquire()
    lock.release()
    assert len(heard) == 1 and heard[0].startswith(
        f"waiting for the lock of the study journal {journal} (held "
    )


def test_a_lock_its_holder_releases_is_never_taken_over(tmp_path):
    journal = tmp_path / "studies.log"
    journal.write_bytes(RECORD)
    holder, waiter = JournalLock(journal, None), JournalLock(journal, None)
    holder.acquire()
    timer = threading.Timer(0.3, holder.release)  # raises if the lock was taken from it
    timer.start()
    assert waiter.acquire()
    timer.join()
    waiter.release()
    assert not os.path.lexists(f"{journal}.lock")
