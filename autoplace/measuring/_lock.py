"""One machine, one timed loop at a time: a file lock per device.

Two tunes timing loops on one machine at the same moment corrupt each other's timings
(two processes on two cores, or on one GPU). So every measurement takes the lock of each
device it runs on, a file in the folder every autoplace process on the host shares
(:func:`autoplace.host.lock_dir`; ``$AUTOPLACE_LOCK_DIR`` moves it), with ``filelock``:
the well-kept library for it (the OS releases the lock of a killed process). The CPU
devices of one host are one lock: JAX's virtual CPU devices share the same cores. A
process that has to wait is told who holds the lock, and says so; a Ctrl-C taken ends the
wait at once. While it waits it leaves a mark beside the lock (``KEY.wait-PID``), so that
the process timing can say how many others wait for it (:func:`waiting`): they count in
``uptime``'s load average, though they do not run while it times.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from autoplace._interrupt import Interrupt
from autoplace.host import lock_dir, process_alive

#: How often a wait for another process's lock looks whether a Ctrl-C was taken.
_INTERRUPT_POLL_S = 0.2


def lock_key(device: str) -> str:
    """The lock a device's timings take: ``cpu`` for every CPU device, else the device."""
    platform = device.split(":", 1)[0]
    return "cpu" if platform == "cpu" else device.replace(":", "-")


@contextlib.contextmanager
def timing_lock(
    devices: Sequence[str],
    on_wait: Callable[[str], None] | None = None,
    interrupt: Interrupt | None = None,
) -> Iterator[None]:
    """Hold the lock of every device in ``devices`` (in one order, so two processes never
    deadlock); while another process holds one, call ``on_wait`` with a line saying so,
    once, then wait for it, or, once ``interrupt`` is set (a Ctrl-C taken), stop with
    ``KeyboardInterrupt``."""
    from filelock import FileLock, Timeout

    folder = lock_dir()
    with contextlib.ExitStack() as held:
        for key in sorted({lock_key(d) for d in devices}):
            lock = FileLock(folder / f"{key}.lock")
            try:
                lock.acquire(timeout=0)
            except Timeout:
                if on_wait is not None:
                    on_wait(f"waiting: {_holder(key)} is timing on {key}")
                mark = folder / f"{key}.wait-{os.getpid()}"
                mark.touch()
                try:
                    _acquire(lock, interrupt)
                finally:
                    mark.unlink(missing_ok=True)
            held.callback(lock.release)
            _owner_file(key).write_text(str(os.getpid()))
        yield


def waiting(devices: Sequence[str]) -> int:
    """How many other processes wait now for the timing lock of any of ``devices``
    (their marks, of processes still alive)."""
    pids: set[int] = set()
    for key in {lock_key(d) for d in devices}:
        for mark in lock_dir().glob(f"{key}.wait-*"):
            with contextlib.suppress(ValueError):
                pid = int(mark.name.rsplit("-", 1)[1])
                if pid != os.getpid() and process_alive(pid):
                    pids.add(pid)
    return len(pids)


def _acquire(lock: Any, interrupt: Interrupt | None) -> None:
    """Wait for ``lock``, looking for a Ctrl-C taken every :data:`_INTERRUPT_POLL_S`."""
    from filelock import Timeout

    if interrupt is None:
        lock.acquire()
        return
    while True:
        interrupt.check()
        try:
            lock.acquire(timeout=_INTERRUPT_POLL_S)
            return
        except Timeout:
            continue


def _owner_file(key: str) -> Path:
    return lock_dir() / f"{key}.owner"


def _holder(key: str) -> str:
    """Who holds ``key``'s lock, as far as its owner file says."""
    with contextlib.suppress(OSError, ValueError):
        return f"another autoplace (pid {int(_owner_file(key).read_text())})"
    return "another autoplace"
