import os
import time

from autoplace._atomic import STALE_S, write_atomic


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
