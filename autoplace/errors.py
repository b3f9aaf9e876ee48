"""autoplace's exceptions: one root, a few narrow kinds, each message one line with the fix.

A configuration's own failure (out of memory, a crash) is no exception: it comes back as a
:class:`~autoplace.Measurement` with a status and a reason.
"""

from __future__ import annotations


class AutoplaceError(Exception):
    """Root of every error autoplace raises on purpose; ``exit_code`` is the CLI's."""

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
    """The study storage failed during a run (not the input: exit code 1); what was
    recorded is kept."""

    exit_code = 1


class OutputError(AutoplaceError):
    """A file could not be written although its path is fine (a full disk, an I/O error)."""


class NoAnswerError(AutoplaceError):
    """:func:`autoplace.recommend` has no answer it may give (``on_miss``/``on_stale="raise"``)."""


class BusyMachineError(AutoplaceError):
    """The machine was busy and ``--if-busy refuse`` was asked; what was measured is kept."""


class WorkerError(AutoplaceError):
    """The measurement worker broke in a way that is autoplace's fault, not the workload's."""


class KilledFromOutsideError(AutoplaceError):
    """A measurement's process was killed from outside every time it was measured again:
    nothing of it is stored, and the same command measures it again."""


def first_line(exc: BaseException, limit: int | None = 200) -> str:
    """The first line of ``exc``'s message (at most ``limit`` characters), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__
