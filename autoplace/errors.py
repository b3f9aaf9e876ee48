"""autoplace's exceptions: one root, a few narrow kinds.

Every message says what happened, why, and how to fix it, in one line, because the
CLI prints it as the whole of its error output.

Expected failures of a *configuration* (out of memory, a crash, a hang, an exception
in the user's step) are not exceptions: they come back as a
:class:`~autoplace.Measurement` with a status and a reason. These classes are for
problems with what the user asked for, and for autoplace's own bugs.
"""

from __future__ import annotations


class AutoplaceError(Exception):
    """Root of every error autoplace raises on purpose."""

    #: The CLI's exit code for this kind of error.
    exit_code: int = 1


class BadInputError(AutoplaceError):
    """The user asked for something impossible: an unknown device, batch size 0, ..."""

    exit_code = 2


class ModelFileError(BadInputError):
    """The model file is missing, does not import, or holds no usable workload."""


class ConfigFileError(BadInputError):
    """A recommendation file is damaged or of a schema version this autoplace cannot read."""


class StorageError(BadInputError):
    """The study storage cannot be opened: bad URL, missing driver, unreachable or corrupt."""


class StorageFaultError(StorageError):
    """The study storage failed during a run (locked past the retries, connection lost):
    not the user's input, so exit code 1. What was recorded before is kept."""

    exit_code = 1


class OutputError(AutoplaceError):
    """A file autoplace writes could not be written although its path is fine: a full
    disk, an I/O error. Not the user's input, so exit code 1; what was measured is kept."""


class NoAnswerError(AutoplaceError):
    """:func:`autoplace.recommend` has no answer it may give: none is cached or stored and
    it was told not to tune (``on_miss="raise"``), or the one it has is stale and it was
    told to refuse that (``on_stale="raise"``). The message names the command that fills
    the cache."""


class BusyMachineError(AutoplaceError):
    """The machine was busy and the user asked autoplace not to measure on a busy one
    (``--if-busy refuse``, or ``wait`` past its limit with ``refuse`` after). Exit code 1:
    not the input's fault. Everything measured before is kept in the study."""


class WorkerError(AutoplaceError):
    """The measurement worker broke in a way that is autoplace's fault, not the workload's."""


class KilledFromOutsideError(AutoplaceError):
    """A measurement's process was killed from outside (another process's signal, not the
    kernel's out-of-memory killer; or the fork server it came from went) every time it
    was measured again. No failure of the configuration: nothing of it is stored, and the
    same command measures it again. Exit code 1; everything finished before is kept."""


def first_line(exc: BaseException, limit: int | None = 200) -> str:
    """The first line of ``exc``'s message (at most ``limit`` characters), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__
