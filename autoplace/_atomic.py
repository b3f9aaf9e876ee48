"""Write files whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from autoplace.errors import BadInputError


def check_writable(path: str | os.PathLike[str], what: str, *, make_folders: bool = True) -> Path:
    """Refuse, before any work, a path ``what`` cannot be written to: a folder, a missing
    folder (unless ``make_folders``: then the nearest existing one must be writable), a
    folder or file the user may not write. Raises :class:`~autoplace.BadInputError`."""
    target = Path(path)
    if target.is_dir():
        raise BadInputError(f"{target} is a folder: pass a file name for {what}")
    folder = target.parent
    if not make_folders and not folder.is_dir():
        raise BadInputError(f"no folder {folder} for {what}: create it or pass another path")
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise BadInputError(f"{folder} is not a folder: pass another path for {what}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise BadInputError(
            f"cannot write {target} ({folder} is not writable): pass a path for {what} "
            "in a folder you can write"
        )
    return target


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader sees the old file or the new one, never half of one, even if the
    process is killed mid-write. The file gets the permissions a new file gets under
    the user's umask (``mkstemp`` alone would make it readable by its owner only).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep(target)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


#: A temporary file older than this beside the target is a killed writer's leftover (a
#: live writer's is seconds old at most).
STALE_S = 600.0


def _sweep(target: Path) -> None:
    """Remove the temporary files a writer killed mid-write left beside ``target``."""
    now = time.time()
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_S:
                leftover.unlink()


def _umask() -> int:
    """The process's umask: read from /proc where it can be; elsewhere reading it means
    setting it, so it is set straight back."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
