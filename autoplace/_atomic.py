"""Write files whole or not at all, and say in one line why one could not be written."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import tempfile
import time
from pathlib import Path

from autoplace.errors import AutoplaceError, BadInputError, OutputError

#: What a probe writes to learn that a folder takes a file (a recommendation: ~10 KiB).
_PROBE_BYTES = 16384


def check_writable(path: str | os.PathLike[str], what: str, *, make_folders: bool = True) -> Path:
    """Refuse, before any work, a path ``what`` cannot be written to (a folder, a device, a
    missing folder unless ``make_folders``, a read-only or full one). The folder is asked
    by writing a small file in it: permissions alone do not tell (root cannot write
    ``/proc``)."""
    target = Path(path)
    if target.is_dir():
        raise BadInputError(f"{target} is a folder: pass a file name for {what}")
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        raise BadInputError(
            f"{target} is not a regular file (a device or a pipe): pass a file path for {what}"
        )
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
    try:
        probe_room(folder)
    except OSError as exc:
        raise write_error(target, exc, what) from None
    return target


def probe_room(folder: Path) -> None:
    """Write a small file in ``folder``, flush it to the disk and remove it; raise the
    ``OSError`` met."""
    fd, tmp = tempfile.mkstemp(prefix=".autoplace-probe.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\0" * _PROBE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_error(target: Path, exc: OSError, what: str | None = None) -> AutoplaceError:
    """The one line for a file that could not be written, with the fix: a full disk or an
    I/O error is an :class:`OutputError`, a path that cannot take a file bad input."""
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    why = exc.strerror or str(exc)
    other = f"pass another path for {what}" if what else "write it elsewhere"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return OutputError(
            f"cannot write {target}: the disk holding {folder} is full ({why}): free some "
            f"space there, or {other}"
        )
    if exc.errno == errno.EIO:
        return OutputError(f"cannot write {target}: the disk failed ({why}): {other}")
    if exc.errno == errno.EROFS:
        return BadInputError(
            f"cannot write {target}: {folder} is on a read-only file system: {other}"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return BadInputError(f"cannot write {target}: permission denied in {folder}: {other}")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return BadInputError(f"cannot create files in {folder} ({why}): {other}")
    return BadInputError(f"cannot write {target} ({why}): {other}")


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, what: str | None = None
) -> Path:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``: a reader sees
    the old file or the new one, even if the process is killed. The file gets the user's
    umask (``mkstemp``'s is owner-only); a failure is one line (:func:`write_error`)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep(target)
        raw = data.encode() if isinstance(data, str) else data
        fd, tmp = tempfile.mkstemp(prefix=_prefix(target), suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_error(target, exc, what) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_error(target, exc, what) from None
        raise
    return target


#: A temporary file older than this beside the target is a killed writer's leftover.
STALE_S = 600.0


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64] or "host"


def _prefix(target: Path) -> str:
    """A temporary file's name before ``mkstemp``'s: hidden, with the writer's host and
    process id, so that the next write knows a dead writer's leftover at once."""
    return f".{target.name}.{_host()}.{os.getpid()}."


def _sweep(target: Path) -> None:
    """Remove temporary files killed writers left beside ``target``: this host's dead
    process's at once, any other once :data:`STALE_S` old."""
    now, host = time.time(), _host()
    ours = re.compile(rf"\.{re.escape(target.name)}\.([A-Za-z0-9-]+)\.(\d+)\.[a-z0-9_]{{8}}\.tmp")
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        found = ours.fullmatch(leftover.name)
        with contextlib.suppress(OSError):
            dead = found is not None and found[1] == host and not _alive(int(found[2]))
            if dead or now - leftover.stat().st_mtime > STALE_S:
                leftover.unlink()


def _alive(pid: int) -> bool:
    """``autoplace.host.process_alive`` (this module sits below ``host``)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process's umask, from /proc; elsewhere reading it means setting it back."""
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
