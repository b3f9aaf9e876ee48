"""Who measures a trial, and when that owner can be known dead without waiting.

Every trial a worker begins records its :class:`Owner`: a random token made with the
worker's study log (no two logs share one: not two processes, not two containers or
machines of the same host name, not a process and its fork), and, for diagnostics and the
one check that is sound, the host name, the process id, the kernel's boot id, the pid
namespace and the process's start time. A process id names a process only within one
boot and one pid namespace, so only there may a reader conclude from a missing process
that the owner is dead (and from a process started at another time, that the id was
reused); anywhere else it goes by the owner's heartbeat.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autoplace.host import process_alive


@dataclasses.dataclass(frozen=True)
class Owner:
    """A study log's identity, as recorded with each trial it begins."""

    token: str
    host: str
    pid: int
    boot: str | None
    pidns: str | None
    started: int | None

    @classmethod
    def here(cls) -> Owner:
        """A new identity for the calling process (a new token each call)."""
        pid = os.getpid()
        return cls(
            token=uuid.uuid4().hex,
            host=socket.gethostname(),
            pid=pid,
            boot=_read("/proc/sys/kernel/random/boot_id"),
            pidns=_pid_namespace(),
            started=_start_time(pid),
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def sees_gone(self, held: Mapping[str, Any]) -> bool:
        """Whether the process of ``held`` (a trial's owner, as recorded) is known, from
        here, to be gone: only when both share this boot and pid namespace (a process id
        means nothing elsewhere), and its process is missing or started at another time
        (the id was reused). ``False`` means "not known": ask the heartbeat."""
        if self.boot is None or self.pidns is None:
            return False
        if held.get("boot") != self.boot or held.get("pidns") != self.pidns:
            return False
        try:
            pid = int(held.get("pid", 0))
        except (TypeError, ValueError):
            return False
        if pid <= 0 or not process_alive(pid):
            return True
        started = held.get("started")
        now = _start_time(pid)
        return started is not None and now is not None and now != started


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    """The pid namespace's identity (``pid:[4026531836]``); ``None`` where unreadable."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``, field
    22); ``None`` where there is no such process or no ``/proc``."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    try:  # the command name (field 2) may hold spaces and parentheses: split after it
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None
