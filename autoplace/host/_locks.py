"""The folder of the locks every autoplace process on one host shares."""

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
