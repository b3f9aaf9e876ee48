"""A Journal file study: Optuna's file backend, with what a writer stopped mid-write leaves
behind mended the first time a writer meets it, and a damaged file named in one line.

Optuna appends each record as one JSON line, under a lock file beside the journal. A writer
killed mid-append, or stopped by a full disk, leaves two things behind:

* **Its lock** (``<journal>.lock``). Optuna's lock waits 30 s for it, warning twice. Ours
  takes the same lock (the same file, made the same way, so that plain Optuna and older
  autoplace workers on the journal take turns with us) and, when it is held by no one
  (unchanged for :data:`STALE_LOCK_S`), takes it over, saying so in one line; one older than
  that by the file system's own clock is taken over at once.
* **A cut last record.** Optuna's reader skips a last line without its newline, but
  appends after it, and then no reader can read the file at all. Whoever holds the lock to
  write first sets the last record aside when it is not whole (:func:`mend`): it goes to
  ``<journal>.cut-<time>`` beside it, a line says so, and the rest is read and written as
  ever. No reader has applied such a record (Optuna's skips it), so nothing anyone read
  changes.

Damage before the last record (a line that is not a whole record, with records after it)
is not mended: it ends the command in one line naming the file and the line, with the fix
(:class:`JournalDamaged`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from optuna.storages.journal._file import BaseJournalFileLock

from autoplace.errors import StorageError

#: How long a lock of the journal may stay as it is before it is taken for a dead writer's:
#: an append holds it for milliseconds. Optuna's own lock waits as long (its grace period).
STALE_LOCK_S = 30.0
#: The lock file beside the journal: Optuna's ``JournalFileSymlinkLock``'s, so that every
#: writer of the journal takes turns on the same one.
LOCK_SUFFIX = ".lock"
#: What a cut last record set aside is named after: ``<journal>.cut-<UTC time>``.
CUT_INFIX = ".cut-"
#: How much of the journal's end is read at a time, looking for its last record.
_CHUNK = 65536
#: The longest pause between two looks at a lock someone holds.
_MAX_PAUSE_S = 0.1


class JournalDamaged(StorageError):
    """A Journal file that cannot be read: a line that is not a whole record, with records
    after it."""


def journal_backend(path: Path, *, say: Callable[[str], None] | None, reading: bool) -> Any:
    """Optuna's backend for the Journal file ``path``, on :class:`JournalLock`; unless only
    ``reading``, the file mended first (:func:`mend`, under the lock). ``say`` hears the
    line for a lock taken over or a record set aside."""
    from optuna.storages.journal import JournalFileBackend

    class Backend(JournalFileBackend):
        def read_logs(self, log_number_from: int) -> Generator[dict[str, Any], None, None]:
            try:
                yield from super().read_logs(log_number_from)
            except ValueError:  # Optuna's "Invalid log format", or a JSONDecodeError
                raise damaged(path) from None

    lock = JournalLock(path, say)
    if not reading:
        lock.acquire()  # mends
        lock.release()
    return Backend(str(path), lock_obj=cast("BaseJournalFileLock", lock))  # acquire, release


class JournalLock:
    """The lock of a Journal file, as Optuna's ``JournalFileSymlinkLock`` takes it (a
    symbolic link ``<journal>.lock``, released by a rename and an unlink), with what a dead
    holder left mended on taking it: its lock taken over, said in one line, and the
    journal's cut last record set aside (:func:`mend`). Optuna's backend asks a lock for
    ``acquire()`` and ``release()`` only."""

    def __init__(self, path: Path, say: Callable[[str], None] | None) -> None:
        self.path, self.lock_file, self._say = path, Path(f"{path}{LOCK_SUFFIX}"), say

    def acquire(self) -> bool:
        pause = 0.001
        seen: tuple[int, int] | None = None
        since = 0.0
        said = False
        while True:
            try:
                os.symlink(self.path, self.lock_file)
                break
            except FileExistsError:
                pass
            try:
                held = os.lstat(self.lock_file)
            except FileNotFoundError:
                continue  # released meanwhile
            if (held.st_ino, held.st_mtime_ns) != seen:  # another holder: how old is it?
                seen = (held.st_ino, held.st_mtime_ns)
                since = time.monotonic() - _age(held, self.path.parent)
            age = time.monotonic() - since
            if age >= STALE_LOCK_S:
                self._take_over(seen, age, said)
                continue
            if not said and age >= 1.0:
                said = True
                self._tell(
                    f"waiting for the lock of the study journal {self.path} (held {age:.0f} s; "
                    f"one held {STALE_LOCK_S:.0f} s is a writer's that ended mid-write, and "
                    "is taken over)"
                )
            time.sleep(pause)
            pause = min(2 * pause, _MAX_PAUSE_S)
        try:
            mend(self.path, self._say)
        except BaseException:
            self.release()
            raise
        return True

    def release(self) -> None:
        """Release the lock as Optuna does: renamed to a name of its own, then removed (a
        rename is atomic: of two processes releasing one lock, one does)."""
        aside = self.lock_file.with_name(f"{self.lock_file.name}{os.urandom(8).hex()}.rename")
        try:
            os.rename(self.lock_file, aside)
        except OSError:
            raise RuntimeError(f"did not hold the lock {self.lock_file}") from None
        aside.unlink()

    def _take_over(self, seen: tuple[int, int] | None, age: float, said: bool) -> None:
        """Release the lock a dead writer left (when it is still the one seen)."""
        with contextlib.suppress(FileNotFoundError):
            held = os.lstat(self.lock_file)
            if (held.st_ino, held.st_mtime_ns) != seen:
                return
            with contextlib.suppress(RuntimeError):  # another waiter took it over first
                self.release()
                if not said:
                    self._tell(
                        f"took over the lock of the study journal {self.path}: held "
                        f"{age:.0f} s, by a writer that ended mid-write"
                    )

    def _tell(self, line: str) -> None:
        if self._say is not None:
            self._say(line)


def _age(held: os.stat_result, folder: Path) -> float:
    """How old a lock is, by the clock of the file system that holds it (a file made there
    now tells its time: another machine's clock may be off); 0 when none can be made."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".autoplace-clock.", suffix=".tmp", dir=folder)
    except OSError:
        return 0.0
    try:
        now = os.fstat(fd).st_mtime
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return max(0.0, now - held.st_mtime)


def mend(path: Path, say: Callable[[str], None] | None) -> Path | None:
    """Set the journal's last record aside when it is not whole (cut before its newline, or
    not a JSON object), to ``<journal>.cut-<UTC time>`` beside it, and say so; the file it
    went to, or ``None`` when the journal ends whole. Only under the journal's lock: a
    writer holding it may be mid-append."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "r+b") as fh:
        start, last = _last_line(fh, size)
        if _whole(last):
            return None
        side = _side_file(path)
        with open(side, "xb") as out:
            out.write(last)
            out.flush()
            os.fsync(out.fileno())
        fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())
    if say is not None:
        say(
            f"the study journal {path} ended in a record cut mid-write (a full disk, or a "
            f"writer killed): set aside in {side.name} beside it; the rest is read"
        )
    return side


def _last_line(fh: Any, size: int) -> tuple[int, bytes]:
    """Where the file's last line starts, and its bytes (its newline, if it has one)."""
    end = size - 1  # a newline ending the file ends the last line, not the one before
    tail = b""
    position = size
    while position > 0:
        position = max(0, position - _CHUNK)
        fh.seek(position)
        tail = fh.read(size - position)
        cut = tail.rfind(b"\n", 0, end - position)
        if cut >= 0:
            return position + cut + 1, tail[cut + 1 :]
    return 0, tail


def _whole(line: bytes) -> bool:
    """Whether ``line`` is a whole record: a JSON object, ended by its newline."""
    if not line.endswith(b"\n"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _side_file(path: Path) -> Path:
    """A name for a record set aside that no file has yet."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    side = path.with_name(f"{path.name}{CUT_INFIX}{stamp}")
    n = 1
    while side.exists():
        n += 1
        side = path.with_name(f"{path.name}{CUT_INFIX}{stamp}-{n}")
    return side


def damaged(path: Path) -> JournalDamaged:
    """The line for a journal Optuna could not read: the first line that is not a whole
    record, and the fix."""
    number, why = _first_bad_line(path)
    at = f" at line {number} ({why})" if number else ""
    before = f"the {number - 1} record(s) before line {number}" if number else "what it holds"
    return JournalDamaged(
        f"the study journal {path} is damaged{at}: restore it from a copy; or, to keep "
        f"{before}, move that line and those after it into a side file (the study loses "
        "them) and run again"
    )


def _first_bad_line(path: Path) -> tuple[int, str]:
    """The number of the journal's first line that is not a whole record (from 1), and
    why; ``(0, "")`` when every line is (the file changed since)."""
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.endswith(b"\n"):
                return number, "cut before its end"
            try:
                record = json.loads(line)
            except ValueError as exc:
                return number, f"not JSON: {str(exc).split(':')[0]}"
            if not isinstance(record, dict):
                return number, "not a record"
    return 0, ""
