import os
import time

import pytest
from study.storage_faults import fill, full_disk
from test_cli import TINY, assert_one_line_error, run_cli

from autoplace import BadInputError
from autoplace._atomic import STALE_S, check_writable, write_atomic
from autoplace.errors import OutputError


def test_a_killed_writers_temporary_file_is_swept_by_the_next_write(tmp_path):
    target = tmp_path / "autoplace.toml"
    stale = tmp_path / ".autoplace.toml.abc123.tmp"  # as a writer killed mid-write left it
    fresh = tmp_path / ".autoplace.toml.def456.tmp"  # a writer at work right now
    for leftover in (stale, fresh):
        leftover.write_text("half")
    old = time.time() - STALE_S - 60
    os.utime(stale, (old, old))
    write_atomic(target, "whole")
    assert target.read_text() == "whole"
    assert not stale.exists() and fresh.exists()


def test_a_temporary_file_whose_writer_died_is_swept_at_once_and_no_other(tmp_path):
    import subprocess

    from autoplace._atomic import _host, _prefix

    target = tmp_path / "autoplace.toml"
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = gone.pid  # a writer killed mid-write: its process is no more
    prefix = _prefix(target)
    assert prefix == f".autoplace.toml.{_host()}.{os.getpid()}."
    killed = tmp_path / f".autoplace.toml.{_host()}.{dead}.abcd1234.tmp"
    alive = tmp_path / f"{prefix}efgh5678.tmp"  # a writer of this process, at work
    elsewhere = tmp_path / f".autoplace.toml.other-host.{dead}.ijkl9012.tmp"  # can't tell
    another = tmp_path / f".autoplace.toml.bak.{_host()}.{dead}.mnop3456.tmp"  # not ours
    for leftover in (killed, alive, elsewhere, another):
        leftover.write_text("half")
    write_atomic(target, "whole")
    assert target.read_text() == "whole"
    assert not killed.exists() and alive.exists() and elsewhere.exists() and another.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")].count(alive.name) == 1


@pytest.mark.slow  # starts a Python process, and kills it
def test_a_writer_killed_mid_write_leaves_nothing_after_the_next_write(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "autoplace.toml"
    killed = subprocess.run(
        [sys.executable, "-c", (
            "import os, signal, sys\n"
            "import autoplace._atomic as a\n"
            "a.os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
            "a.write_atomic(sys.argv[1], 'half')\n"
        ), str(target)],
        capture_output=True,
    )  # fmt: skip
    assert killed.returncode == -9
    (left,) = tmp_path.glob(".autoplace.toml.*.tmp")  # what the kill left
    write_atomic(target, "whole")
    assert target.read_text() == "whole" and not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autoplace.toml"]


# -- what cannot be written is one line, before any work where it can be -------------------


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/proc/x.toml", "cannot create files in /proc"),
        ("/dev/full", "is not a regular file"),
        ("/dev/null", "is not a regular file"),
    ],
)
def test_a_path_where_no_file_can_be_made_is_refused_before_any_work(path, fragment):
    # os.access says yes to root for /proc; only trying tells
    with pytest.raises(BadInputError, match=fragment) as info:
        check_writable(path, "the recommendation (--out)")
    assert "\n" not in str(info.value) and "--out" in str(info.value)


def test_tune_and_report_refuse_such_an_out_in_one_line(capsys, tmp_path):
    for args in (
        ["tune", TINY, "--out", "/proc/x.toml", "--storage", f"sqlite:///{tmp_path / 's.db'}"],
        ["report", str(tmp_path / "any.toml"), "--out", "/proc/x.html"],
    ):
        code, out, err = run_cli(capsys, *args)
        assert_one_line_error(code, out, err, "cannot create files in /proc", exit_code=2)
    assert not (tmp_path / "s.db").exists()  # refused before the study was opened


def test_a_full_disk_is_named_before_any_work_and_when_it_fills_later(tmp_path):
    disk = tmp_path / "disk"
    with full_disk(disk):
        target = disk / "autoplace.toml"
        write_atomic(target, "old")
        fill(disk)
        with pytest.raises(OutputError, match=r"the disk holding .* is full") as info:
            check_writable(target, "the recommendation (--out)")
        assert "No space left on device" in str(info.value) and "\n" not in str(info.value)
        with pytest.raises(OutputError, match="is full") as info:
            write_atomic(target, "new" * 100_000, what="the recommendation (--out)")
        assert info.value.exit_code == 1 and "pass another path for the recommendation" in str(
            info.value
        )
        assert target.read_text() == "old"  # the old file whole
        assert sorted(p.name for p in disk.iterdir()) == ["autoplace.toml", "filler"]


def test_tune_on_a_full_disk_is_one_line_before_measuring(capsys, tmp_path):
    disk = tmp_path / "disk"
    with full_disk(disk):
        fill(disk)
        code, out, err = run_cli(
            capsys, "tune", TINY, "--out", str(disk / "a.toml"),
            "--storage", f"sqlite:///{tmp_path / 's.db'}",
        )  # fmt: skip
    assert_one_line_error(code, out, err, "is full", "No space left on device", exit_code=1)
