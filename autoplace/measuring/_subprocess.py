"""The default backend: a reusable worker process that no configuration can take down.

:class:`SubprocessBackend` runs measurements in a worker process that imports JAX
once and is reused, so a measurement does not pay Python+JAX start-up each time.
The calling process never imports JAX or touches an accelerator, so a workload
that crashes, hangs or exhausts memory takes down only the worker:

* the worker dies (segfault, abort, kill): the configuration is measured once more, alone,
  in a fresh worker (a kill from outside is not the configuration's doing); dying again,
  it is stored as ``crash``, with the signal and the last line the worker printed;
* it runs past the time limit: the worker is killed, status ``timeout``;
* out of memory: status ``oom``; the worker is replaced, because an allocator that
  has failed once is not trusted for the next timing;
* the user's code raises: status ``error``; the worker is kept (Python state is intact).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from autoplace._host import process_alive
from autoplace.devices import DeviceInfo
from autoplace.errors import AutoplaceError, BadInputError, ModelFileError, WorkerError
from autoplace.measurement import Measurement
from autoplace.measuring._backend import with_figures
from autoplace.settings import MeasureRequest
from autoplace.workload import WorkloadInfo

#: Exceptions a worker may raise on purpose; they cross the process boundary by name.
_PASSED_ERRORS: dict[str, type[AutoplaceError]] = {
    cls.__name__: cls for cls in (BadInputError, ModelFileError)
}
#: How a worker process starts: a fresh interpreter calling :func:`_worker_main`.
_WORKER_BOOT = (
    "import json, sys; from autoplace.measuring._subprocess import _worker_main; "
    "_worker_main(int(sys.argv[1]), json.loads(sys.argv[2]))"
)
#: Statuses after which the worker is not reused.
_RESTART_AFTER = frozenset({"oom", "crash", "timeout"})


#: A worker's folder in the temporary directory: the prefix, the owning process's id, and
#: a random part. Its owner removes it on close; one a killed owner left is swept.
_PREFIX = "autoplace-worker-"


def _sweep_orphans() -> None:
    """Remove the worker folders whose owning process is gone (killed before its close())."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        pid, orphan = folder.name[len(_PREFIX) :].split("-", 1)[0], False
        if pid.isdigit() and "-" in folder.name[len(_PREFIX) :]:
            orphan = not process_alive(int(pid))
        else:  # named before owners were: a day old is no live worker's
            with contextlib.suppress(OSError):
                orphan = time.time() - folder.stat().st_mtime > 86400
        if orphan:
            shutil.rmtree(folder, ignore_errors=True)


class SubprocessBackend:
    """Measures in a reusable worker process; see the module docstring for what it survives.

    Args:
        jax_config: ``jax.config`` settings the worker applies before first use of JAX
            (e.g. ``{"jax_num_cpu_devices": 4}``).
        env: extra environment variables for the worker.
    """

    def __init__(
        self, jax_config: dict[str, Any] | None = None, env: dict[str, str] | None = None
    ) -> None:
        self._jax_config = dict(jax_config or {})
        self._env = dict(env or {})
        self._process: Any = None
        self._conn: Any = None
        _sweep_orphans()
        folder = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
        self._log = Path(folder) / "worker.log"
        self._devices: list[DeviceInfo] | None = None
        self._busy = False
        #: Whether the last worker to die was killed by a signal (not an exit of its own).
        self._killed = False
        #: Seconds the most recent worker took to start and answer (Python + JAX + devices).
        self.last_start_s: float | None = None
        self.starts = 0
        #: Start-up time not yet reported in a measurement's ``worker_start_s``.
        self._unbilled_start_s = 0.0

    @property
    def process(self) -> subprocess.Popen | None:
        """The worker process now running, or ``None`` before the first call or once closed."""
        return self._process

    # --- lifecycle ---------------------------------------------------------------------

    def _start(self) -> float:
        """Start a worker and wait until it has JAX loaded and its devices listed; one
        killed by a signal on the way (from outside: a worker killed at start-up) is
        replaced once before the start counts as failed.

        The worker is a fresh interpreter (running :func:`_worker_main`), not a
        ``multiprocessing`` child: it never re-imports the caller's ``__main__``,
        so an embedding script needs no ``if __name__ == "__main__"`` guard. It runs
        in its own session, so a Ctrl-C at the terminal reaches only the caller.
        """
        t = time.perf_counter()
        reply = self._spawn()
        if reply[0] != "ok" and self._killed:
            reply = self._spawn()
        if reply[0] != "ok":
            raise WorkerError(
                f"the measurement worker failed to start: {reply[1]}; see {self._kept_log()}"
            )
        self._devices = reply[1]
        self.last_start_s = time.perf_counter() - t
        self.starts += 1
        self._unbilled_start_s += self.last_start_s
        return self.last_start_s

    def _spawn(self) -> tuple[Any, ...]:
        """Start a worker process; its reply to ``devices``."""
        ours, theirs = socket.socketpair()
        env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **self._env}
        self._log.parent.mkdir(parents=True, exist_ok=True)  # close() removes it
        with open(self._log, "wb") as log:  # each worker's own log: a crash quotes only it
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WORKER_BOOT,
                    str(theirs.fileno()),
                    json.dumps(self._jax_config),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(theirs.fileno(),),
                env=env,
                start_new_session=True,
            )
        theirs.close()
        self._conn = Connection(ours.detach())
        return self._roundtrip(("devices", None), timeout=300.0)

    def _stop(self, kill: bool = False) -> None:
        if self._process is None:
            return
        kill = kill or self._busy  # a worker mid-measurement would not read "exit"
        self._busy = False
        with contextlib.suppress(OSError):
            if not kill and self._process.poll() is None:
                self._conn.send(("exit", None))
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=5)
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(timeout=30)
        with contextlib.suppress(OSError):
            self._conn.close()
        self._process = self._conn = None

    def _kept_log(self) -> Path:
        """A copy of the worker's log that outlives close(), for an error that names it."""
        kept = (
            Path(tempfile.gettempdir())
            / f"autoplace-failed-worker-{os.getpid()}-{time.time_ns()}.log"
        )
        with contextlib.suppress(OSError):
            shutil.copyfile(self._log, kept)
        return kept

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self._log.parent, ignore_errors=True)

    def __enter__(self) -> SubprocessBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._stop(kill=True)

    # --- protocol ----------------------------------------------------------------------

    def _roundtrip(self, message: tuple[str, Any], timeout: float) -> tuple[Any, ...]:
        """Send ``message``; return the reply, or ``("crash", why)`` / ``("timeout", why)``."""
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError):
            return ("crash", self._death_reason())
        self._busy = True
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop(kill=True)
                return ("timeout", f"no result within {timeout:g} s; the worker was killed")
            try:
                if self._conn.poll(min(remaining, 0.5)):
                    reply = self._conn.recv()
                    self._busy = False
                    return reply
            except (EOFError, OSError):
                return ("crash", self._death_reason())
            if self._process.poll() is not None:
                return ("crash", self._death_reason())

    def _death_reason(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)
        code = self._process.poll()
        self._killed = code is not None and code < 0
        if self._killed:
            why = f"the worker was killed by {signal.Signals(-code).name}"
            if -code == signal.SIGKILL:
                # The out-of-memory killer only where the kernel's log names this worker or
                # the memory is nearly all taken; else another process's kill -9 is as likely.
                oom, free = _oom_killed(self._process.pid), _memory_free()
                if oom or (free is not None and free[0] < 0.05 * free[1]):
                    why += " (the kernel's out-of-memory killer"
                    why += ": its log names this worker)" if oom else ": memory is nearly full)"
                else:
                    shown = "" if free is None else f"; {free[0] / 2**30:.1f} GiB of memory free"
                    why += f" (from outside; the kernel's log names no out-of-memory kill{shown})"
        else:
            why = f"the worker exited with code {code}"
        last = _last_line(self._log)
        self._stop(kill=True)
        return f"{why}: {last}" if last else why

    def _call(self, op: str, payload: Any, timeout: float) -> tuple[Any, ...]:
        if self._process is not None and self._process.poll() is not None:
            self._stop(kill=True)  # died while idle (killed from outside): not this request's fault
        if self._process is None:
            self._start()
        reply = self._roundtrip((op, payload), timeout)
        if reply[0] == "raise":
            name, message = reply[1], reply[2]
            raise _PASSED_ERRORS.get(name, WorkerError)(message)
        if reply[0] == "internal":
            self._stop(kill=True)
            raise WorkerError(f"autoplace bug in the measurement worker:\n{reply[1]}")
        return reply

    # --- Backend -----------------------------------------------------------------------

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            self._start()
        assert self._devices is not None
        return self._devices

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]:
        reply = self._call("catalog", (model_file, sha256), timeout=300.0)
        if reply[0] in ("crash", "timeout"):
            raise ModelFileError(
                f"importing model file {model_file} ended the worker ({reply[1]}); "
                "fix the file's top-level code"
            )
        return reply[1]

    def measure(self, request: MeasureRequest) -> Measurement:
        return self.measure_together([request])[0]

    def measure_together(self, requests: Sequence[MeasureRequest]) -> list[Measurement]:
        return self._measure(list(requests), retry=True)

    def _measure(self, requests: list[MeasureRequest], retry: bool) -> list[Measurement]:
        t = time.perf_counter()
        timeout = sum(r.settings.timeout_s for r in requests)
        reply = self._call("measure", requests, timeout=timeout)
        # The start-up this call waited for, even if a catalog call triggered it.
        started, self._unbilled_start_s = self._unbilled_start_s, 0.0
        if reply[0] == "ok":
            results: list[Measurement] = list(reply[1])
        else:
            results = [_failed(r, reply[0], reply[1]) for r in requests]
        if any(m.status in _RESTART_AFTER for m in results):
            self._stop(kill=True)
        share = (time.perf_counter() - t) / len(requests)
        results = [with_figures(m, worker_start_s=started, wall_s=share) for m in results]
        if len(requests) > 1:
            # Out of memory, a crash or a timeout among several may be the neighbours'
            # doing (their memory, their time): measure those configurations alone.
            results = [
                self.measure(r) if m.status in _RESTART_AFTER else m
                for r, m in zip(requests, results, strict=True)
            ]
        elif results[0].status == "crash" and retry:
            # Alone, and dead: once more in a fresh worker before the crash is the
            # configuration's (a worker killed from outside, twice in a row, is not).
            results = self._measure(requests, retry=False)
        return results


def _failed(request: MeasureRequest, status: str, reason: str) -> Measurement:
    c = request.config
    return Measurement.failed(
        status,  # type: ignore[arg-type]
        reason,
        device=c.device,
        batch_size=c.batch_size,
        precision=c.precision,
        width=c.width,
        workload=request.workload,
    )


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


#: How often a worker looks whether its caller still lives.
_CALLER_POLL_S = 0.2


def _exit_with_caller() -> None:
    """End this worker within :data:`_CALLER_POLL_S` of its caller's death (a ``kill -9``
    of the tune): mid-measurement it would not read the closed connection, and its timed
    loops would overlap those of the tune that resumes, which the caller's device lock
    (released by the OS with the caller) no longer keeps apart."""
    import threading

    caller = os.getppid()

    def watch() -> None:
        while os.getppid() == caller:
            time.sleep(_CALLER_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="autoplace-caller-watch", daemon=True).start()


def _worker_main(fd: int, jax_config: dict[str, Any]) -> None:
    """The worker's loop: answer requests on the connection until told to exit."""
    import faulthandler

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    faulthandler.enable()
    conn = Connection(fd)
    _exit_with_caller()

    from autoplace.measuring._engine import Engine

    engine = Engine(jax_config)
    while True:
        try:
            op, payload = conn.recv()
        except (EOFError, OSError):
            return  # the caller is gone
        if op == "exit":
            return
        try:
            if op == "devices":
                reply: tuple[Any, ...] = ("ok", engine.devices())
            elif op == "catalog":
                reply = ("ok", engine.catalog(*payload))
            elif op == "measure":
                reply = ("ok", engine.measure_together(payload))
            else:
                reply = ("internal", f"unknown operation {op!r}")
        except (BadInputError, ModelFileError) as exc:
            reply = ("raise", type(exc).__name__, str(exc))
        except Exception:
            reply = ("internal", traceback.format_exc())
        sys.stdout.flush()
        conn.send(reply)
