"""The caller's handle on one measurement worker process: started, asked, stopped; and
what its death means.

The worker itself runs :func:`~._serve.serve_worker`; the two speak in the messages of
:mod:`._messages`. A round trip ends in the worker's reply or in a :class:`Stop` (it
died, or ran past its time), which :meth:`Stop.measurement` turns into the
configuration's failed measurement. A death's :class:`Death` says whose doing it was: a
death from outside is no failure of the configuration (its caller measures it again).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from autoplace._interrupt import Interrupt
from autoplace.devices import DeviceInfo
from autoplace.errors import WorkerError
from autoplace.measurement import Measurement
from autoplace.measuring._forkserver import Forked, ForkServer, start_python
from autoplace.measuring._messages import (
    Done,
    Exit,
    Failed,
    Internal,
    ListDevices,
    Progressed,
    Raised,
    Reply,
    Request,
)
from autoplace.measuring._progress import Progress
from autoplace.settings import MeasureRequest

#: How a worker process starts: a fresh interpreter calling :func:`~._serve.serve_worker`.
WORKER_BOOT = (
    "import json, sys; from autoplace.measuring._serve import serve_worker; "
    "serve_worker(int(sys.argv[1]), json.loads(sys.argv[2]))"
)
#: How long a worker may take to start (Python, JAX, the devices listed).
START_TIMEOUT_S = 300.0


class Death(enum.Enum):
    """Whose doing a worker's death was, as far as its caller can tell (see
    :func:`death_of`). Only :attr:`OUTSIDE` is no failure of the configuration it was on."""

    #: It exited with a code: its own doing (Python's error, the workload's ``sys.exit``).
    EXITED = "exited"
    #: A signal of its own making: a segfault, an abort, a bus error, a bad instruction.
    FAULT = "fault"
    #: The kernel's out-of-memory killer (its log names the worker, or memory is nearly
    #: full): the configuration's memory.
    OUT_OF_MEMORY = "out_of_memory"
    #: Another process's signal (a ``kill -9``, a ``SIGTERM``), or the fork server it was
    #: forked from went, and the worker with it: nothing the configuration did.
    OUTSIDE = "outside"


#: Signals a process raises on itself when its own code fails (a fault, an abort, a
#: resource limit it ran past); any other signal came from another process.
_OWN_SIGNALS = frozenset(
    {
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGILL,
        signal.SIGABRT,
        signal.SIGTRAP,
        signal.SIGSYS,
        signal.SIGXCPU,
        signal.SIGXFSZ,
    }
)


def death_of(code: int | None, pid: int, orphaned: bool = False) -> tuple[Death, str]:
    """Whose doing the death of worker ``pid`` was, and why in words: ``code`` is its exit
    code as :meth:`subprocess.Popen.poll` gives it, ``orphaned`` whether its fork server
    went before it (see :attr:`Forked.orphaned <._forkserver.Forked.orphaned>`). The one
    place a death is classified."""
    if orphaned:
        return Death.OUTSIDE, "the fork server the worker was forked from is gone, and it with it"
    if code is None or code >= 0:
        return Death.EXITED, f"the worker exited with code {code}"
    number = -code
    name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
    why = f"the worker was killed by {name}"
    if number == signal.SIGKILL:
        death, whom = _killed_by(pid)
        return death, why + whom
    return (Death.FAULT if number in _OWN_SIGNALS else Death.OUTSIDE), why


@dataclasses.dataclass(frozen=True)
class Stop:
    """How a round trip ended without a reply: ``crash`` or ``timeout``, why, the index
    of the configuration the worker last said it was on (``None``: not known), and whose
    doing a crash was (``None``: no death, a timeout)."""

    status: str
    reason: str
    on: int | None = None
    death: Death | None = None

    @property
    def outside(self) -> bool:
        """Whether the worker was killed from outside: no failure of the configuration."""
        return self.death is Death.OUTSIDE

    def measurement(self, request: MeasureRequest) -> Measurement:
        """``request``'s measurement, failed as this round trip did."""
        return Measurement.failed(
            self.status,  # type: ignore[arg-type]
            self.reason,
            request.config,
            workload=request.workload,
        )


class Worker:
    """One worker process: started, asked, stopped; and what its death means.

    Args:
        log: the worker's own log (a crash quotes only it).
        boot: what the worker's engine starts with (see :func:`~._serve.serve_worker`).
        env: the worker's environment over this process's.
        forks: the fork server to fork it from, if any (else it starts from scratch).
        interrupt: a Ctrl-C taken ends a wait for the worker's reply, with
            ``KeyboardInterrupt`` (the worker, busy, is then killed when stopped).
    """

    def __init__(
        self,
        log: Path,
        boot: dict[str, Any],
        env: dict[str, str],
        forks: ForkServer | None = None,
        interrupt: Interrupt | None = None,
    ) -> None:
        self._log, self._boot, self._env, self._forks = log, boot, env, forks
        self._interrupt = interrupt
        self.process: subprocess.Popen | Forked | None = None
        self._conn: Any = None
        self._busy = False
        #: What the worker last said it was doing (for a timeout's reason).
        self._last = ""
        #: Whether the last worker to die was killed by a signal (not an exit of its own).
        self.killed = False
        #: Whose doing the last worker's death was (``None``: none died yet).
        self.death: Death | None = None
        self.devices: list[DeviceInfo] | None = None
        #: Seconds the worker took to start and answer (Python + JAX + devices).
        self.start_s: float | None = None

    def launch(self) -> None:
        """Start the process (not waiting for it: :meth:`ready` does): forked from the
        fork server where the worker has one and it can fork, else from scratch."""
        ours, theirs = socket.socketpair()
        self._log.parent.mkdir(parents=True, exist_ok=True)  # close() removes it
        self._started = time.perf_counter()
        forked = None
        if self._forks is not None:
            forked = self._forks.fork(theirs.fileno(), self._log, self._boot)
        if forked is not None:
            self.process = forked
        else:  # each worker's own log: a crash quotes only it
            boot = [json.dumps(self._boot)]
            self.process = start_python(WORKER_BOOT, theirs.fileno(), boot, self._log, self._env)
        theirs.close()
        self._conn = Connection(ours.detach())

    def ready(self) -> Reply | Stop:
        """Wait for the launched worker's list of devices."""
        reply = self.roundtrip(ListDevices(), timeout=START_TIMEOUT_S)
        if isinstance(reply, Done):
            self.devices = reply.value
            self.start_s = time.perf_counter() - self._started
        return reply

    def start(self) -> float:
        """Start and wait; one killed by a signal on the way (from outside: a worker killed
        at start-up) is replaced once before the start counts as failed."""
        self.launch()
        reply = self.ready()
        if isinstance(reply, Stop) and self.killed:
            self.launch()
            reply = self.ready()
        if not isinstance(reply, Done):
            raise WorkerError(
                f"the measurement worker failed to start: {why_not_started(reply)}{self.log_hint()}"
            )
        assert self.start_s is not None
        return self.start_s

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        kill = kill or self._busy  # a worker mid-measurement would not read Exit
        self._busy = False
        with contextlib.suppress(OSError):
            if not kill and self.process.poll() is None:
                self._conn.send(Exit())
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        with contextlib.suppress(OSError):
            self._conn.close()
        self.process = self._conn = None

    def kept_log(self) -> Path | None:
        """A copy of the worker's log that outlives close(), for an error that names it;
        ``None`` when the worker wrote nothing (no empty file is left to point to)."""
        try:
            if self._log.stat().st_size == 0:
                return None
        except OSError:
            return None
        kept = (
            Path(tempfile.gettempdir())
            / f"autoplace-failed-worker-{os.getpid()}-{time.time_ns()}.log"
        )
        try:
            shutil.copyfile(self._log, kept)
        except OSError:
            kept.unlink(missing_ok=True)
            return None
        return kept

    def log_hint(self) -> str:
        """The end of an error about this worker: where its log is kept, or that it wrote
        nothing."""
        kept = self.kept_log()
        return f"; see {kept}" if kept is not None else "; it wrote nothing to its log"

    def roundtrip(
        self,
        message: Request,
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Reply | Stop:
        """Send ``message``; return the reply, or a :class:`Stop` (see :meth:`receive`)."""
        return self.send(message) or self.receive(timeout, on_progress)

    def send(self, message: Request) -> Stop | None:
        """Send ``message`` without waiting for its reply; a :class:`Stop` if the worker is
        gone."""
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError):
            return self._died()
        self._busy = True
        return None

    def receive(
        self, timeout: float, on_progress: Callable[[Progress], None] | None = None
    ) -> Reply | Stop:
        """The reply to what was sent, or a :class:`Stop`. ``timeout`` counts from the last
        sign of life: the request, or a progress message the worker sent (each
        configuration's set-up, each turn of the timed loops), which also goes to
        ``on_progress``. A Ctrl-C taken (the worker's ``interrupt``) ends the wait within
        half a second, with ``KeyboardInterrupt``."""
        deadline, on = time.monotonic() + timeout, None
        while True:
            if self._interrupt is not None:
                self._interrupt.check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop(kill=True)
                where = "" if on is None else f" (while {self._last})"
                return Stop(
                    "timeout", f"no result within {timeout:g} s{where}; the worker was killed", on
                )
            try:
                if self._conn.poll(min(remaining, 0.5)):
                    reply = self._conn.recv()
                    if isinstance(reply, Progressed):
                        on, self._last = reply.progress.index, reply.progress.what
                        deadline = time.monotonic() + timeout
                        if on_progress is not None:
                            on_progress(reply.progress)
                        continue
                    self._busy = False
                    return reply
            except (EOFError, OSError):
                return self._died(on)
            if self.process is None or self.process.poll() is not None:
                return self._died(on)

    def _died(self, on: int | None = None) -> Stop:
        """The :class:`Stop` of a worker that died (on configuration ``on``, if known)."""
        reason = self.death_reason()
        return Stop("crash", reason, on, self.death)

    def death_reason(self) -> str:
        """Why the worker died, in words; sets :attr:`killed` and :attr:`death`."""
        process = self.process
        assert process is not None  # it ran: it died
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        code = process.poll()
        orphaned = isinstance(process, Forked) and process.orphaned
        self.killed = code is not None and code < 0
        self.death, why = death_of(code, process.pid, orphaned)
        last = _last_line(self._log)
        self.stop(kill=True)
        return f"{why}: {last}" if last else why

    def call(
        self,
        message: Request,
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Done | Failed | Stop:
        """A round trip that raises what the worker raised on purpose, and a
        :class:`WorkerError` for autoplace's own bugs."""
        return self.send(message) or self.answer(timeout, on_progress)

    def answer(
        self, timeout: float, on_progress: Callable[[Progress], None] | None = None
    ) -> Done | Failed | Stop:
        """The reply to a request :meth:`send` sent, as :meth:`call` returns it."""
        reply = self.receive(timeout, on_progress)
        if isinstance(reply, Raised):
            raise reply.error()
        if isinstance(reply, Internal):
            self.stop(kill=True)
            raise WorkerError(f"autoplace bug in the measurement worker:\n{reply.traceback}")
        return reply


def why_not_started(reply: Reply | Stop) -> str:
    """Why a worker that answered ``reply`` to :class:`ListDevices` did not start."""
    if isinstance(reply, Stop):
        return reply.reason
    if isinstance(reply, Internal):
        return reply.traceback
    if isinstance(reply, Raised):
        return reply.name
    return repr(reply)


def _killed_by(pid: int) -> tuple[Death, str]:
    """What killed worker ``pid`` with SIGKILL, as far as this process can tell, and that
    in words. The out-of-memory killer only where the kernel's log names this worker or
    the memory is nearly all taken; else another process's kill -9."""
    oom, free = _oom_killed(pid), _memory_free()
    if oom or (free is not None and free[0] < 0.05 * free[1]):
        why = " (the kernel's out-of-memory killer"
        why += ": its log names this worker)" if oom else ": memory is nearly full)"
        return Death.OUT_OF_MEMORY, why
    shown = "" if free is None else f"; {free[0] / 2**30:.1f} GiB of memory free"
    return Death.OUTSIDE, f" (from outside; the kernel's log names no out-of-memory kill{shown})"


def _oom_killed(pid: int) -> bool:
    """Whether the kernel's log (``/dev/kmsg``, where this process may read it) says its
    out-of-memory killer killed process ``pid``."""
    marks = (f"Killed process {pid} ".encode(), f",pid={pid},".encode())
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        while True:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:  # the end of the log
                return False
            except OSError:  # a record overwritten as it was read: read on
                continue
            if not record:
                return False
            if any(mark in record for mark in marks):
                return True
    finally:
        os.close(fd)


def _memory_free() -> tuple[int, int] | None:
    """Bytes of memory available now, and in all (``/proc/meminfo``), where known."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        return (
            int(fields["MemAvailable"].split()[0]) * 1024,
            int(fields["MemTotal"].split()[0]) * 1024,
        )
    except (OSError, KeyError, ValueError):
        return None


def _last_line(log: Path) -> str:
    """The last informative line the worker wrote (a fatal error, usually)."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        line = line.strip()
        skip = ("File ", "Current thread", "Thread ", "Extension modules:", "  ")  # faulthandler
        if line and not line.startswith(skip):
            return line[:300]
    return ""
