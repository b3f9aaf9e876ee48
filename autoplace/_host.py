"""What the autoplace processes of one host share: the folder of their locks, and whether
a process that left something behind (a lock, a trial, a worker folder) still lives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The environment variable that moves the locks' folder (tests give each run its own, so
#: that no test waits on another process's timing).
LOCK_DIR_ENV = "AUTOPLACE_LOCK_DIR"


def lock_dir() -> Path:
    """Where the locks live, created if missing: ``$AUTOPLACE_LOCK_DIR``, else a folder in
    the temporary directory, which is the host's own (every autoplace process there shares
    it, which is the point: one timed loop per device and machine)."""
    folder = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "autoplace-locks")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
