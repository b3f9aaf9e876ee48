"""What the autoplace processes of one host share: the folder of their locks, and whether
a process that left something behind (a lock, a trial, a worker folder) still lives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: Where the locks live: the temporary directory is the host's own.
LOCK_DIR = Path(tempfile.gettempdir()) / "autoplace-locks"


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
