import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autoplace._atomic import STALE_S, write_atomic
from autoplace.measuring import SubprocessBackend


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


def test_a_killed_owners_worker_folder_is_swept_by_the_next_backend():
    # A process that made a worker folder and was killed before closing its backend.
    code = (
        "import os, tempfile; "
        "print(tempfile.mkdtemp(prefix=f'autoplace-worker-{os.getpid()}-'), flush=True); "
        "os.kill(os.getpid(), 9)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    orphan = Path(done.stdout.strip())
    assert orphan.is_dir() and orphan.parent == Path(tempfile.gettempdir())
    with SubprocessBackend():
        assert not orphan.exists()
