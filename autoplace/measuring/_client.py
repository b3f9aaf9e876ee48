"""The default backend: worker processes that no configuration can take down.

:class:`SubprocessBackend` runs measurements in worker processes, so the calling process
never imports JAX or touches an accelerator, and a workload that crashes, hangs or
exhausts memory takes down only a worker. This is the caller's side: each worker is a
:class:`~._worker.Worker` here, running :func:`~._serve.serve_worker` there, the two
speaking in the messages of :mod:`._messages`. Two kinds of worker:

* one *shared* worker, started once and reused, imports JAX once: the search's many
  quick measurements (:meth:`~SubprocessBackend.measure_together`) do not pay Python+JAX
  start-up each time;
* *fresh* workers, one per configuration, for the measurements a verdict rests on
  (:meth:`~SubprocessBackend.measure_fresh`, a :class:`~._window.FreshWindow` of them):
  each measures one configuration and nothing else, as the user's training process
  will, while the caller has their timed chunks take turns across the processes. A
  step's time can depend on what ran before in the same process (allocator state alone
  moved one by 2.7x). They load the shared worker's compiles from JAX's persistent
  compilation cache, kept for this backend, and are forked from a process that has
  imported JAX and nothing more (:mod:`._forkserver`), unless a request's environment
  must be there when its process starts (``MeasureRequest.env``): such a worker is
  started from scratch with it.

What a worker survives:

* it dies (segfault, abort, kill): the configuration it was on is measured once more,
  alone, in a fresh worker (a kill from outside is not the configuration's doing); dying
  again of its own (see :class:`~._worker.Death`), it is stored as ``crash``, with the
  signal and the last line the worker printed. Killed by a signal while importing the
  model file, it imports it once more in a fresh worker before the file is blamed;
* a process of a window is killed from outside (another process's signal, not the
  out-of-memory killer's), or the fork server it came from goes: the window is measured
  again in new processes, up to twice. A kill from outside that outlasts the tries, here
  or in the shared worker, fails no configuration: :class:`KilledFromOutsideError` ends
  the call, and the same command measures it again;
* it runs past the time limit: the worker is killed, status ``timeout``. The worker says
  which configuration and phase it is on (:class:`Progress`), so a hang is that
  configuration's alone, found after one limit: the others of its group are measured
  again without it;
* out of memory: status ``oom``; the worker is replaced, because an allocator that
  has failed once is not trusted for the next timing;
* the user's code raises: status ``error``; the worker is kept (Python state is intact).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from autoplace._interrupt import Interrupt
from autoplace.devices import DeviceInfo
from autoplace.errors import BadInputError, KilledFromOutsideError, ModelFileError
from autoplace.host import process_alive
from autoplace.measurement import Measurement
from autoplace.measuring._backend import with_figures
from autoplace.measuring._forkserver import Forked, ForkServer
from autoplace.measuring._messages import Catalog, Done, MeasureGroup, Request
from autoplace.measuring._progress import Progress
from autoplace.measuring._window import FreshWindow, KilledFromOutside
from autoplace.measuring._worker import START_TIMEOUT_S, Stop, Worker
from autoplace.settings import MeasureRequest
from autoplace.workload import WorkloadInfo

#: Statuses after which the worker is not reused.
_RESTART_AFTER = frozenset({"oom", "crash", "timeout"})
#: How many times a window is measured in all when its processes are killed from outside.
_WINDOW_TRIES = 3


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
    """Measures in worker processes; see the module docstring for what it survives.

    Args:
        jax_config: ``jax.config`` settings the workers apply before first use of JAX
            (e.g. ``{"jax_num_cpu_devices": 4}``).
        env: extra environment variables for the workers.
        interrupt: a Ctrl-C taken (see :mod:`autoplace._interrupt`) ends a wait for a
            worker at once, with ``KeyboardInterrupt``: the measurement in flight is
            abandoned (a tune measures it again on resume).
    """

    def __init__(
        self,
        jax_config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        interrupt: Interrupt | None = None,
    ) -> None:
        self._jax_config = dict(jax_config or {})
        self._env = dict(env or {})
        self._interrupt = interrupt
        _sweep_orphans()
        self._folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        self._cache = self._folder / "xla-cache"
        self._worker = Worker(
            self._folder / "worker.log", self._boot(), self._env, interrupt=interrupt
        )
        self._forks = ForkServer(self._folder / "forkserver.log", self._env)
        self._fresh: list[Worker] = []
        #: The real compile of each configuration this backend measured: a fresh worker
        #: loads it from the persistent cache, and reports these figures for it.
        self._compiles: dict[tuple, float] = {}
        self.starts = 0
        #: Seconds the most recent shared worker took to start and answer.
        self.last_start_s: float | None = None
        #: Start-up time not yet reported in a measurement's ``worker_start_s``.
        self._unbilled_start_s = 0.0

    def _boot(self, fresh: bool = False) -> dict[str, Any]:
        return {"jax_config": self._jax_config, "compile_cache": str(self._cache), "fresh": fresh}

    @property
    def process(self) -> subprocess.Popen | Forked | None:
        """The shared worker process now running, or ``None`` before the first call or
        once closed."""
        return self._worker.process

    @property
    def _log(self) -> Path:
        return self._folder / "worker.log"

    # --- lifecycle ---------------------------------------------------------------------

    def _start(self) -> float:
        """Start the shared worker and wait until it has JAX loaded and its devices listed.

        The worker is a fresh interpreter (running :func:`~._serve.serve_worker`), not a
        ``multiprocessing`` child: it never re-imports the caller's ``__main__``,
        so an embedding script needs no ``if __name__ == "__main__"`` guard. It runs
        in its own session, so a Ctrl-C at the terminal reaches only the caller.
        The fork server of the fresh workers starts beside it (its imports are the shorter),
        and is ready when this returns: the verdict's first window does not wait for it, and
        its imports never overlap a timed loop.
        """
        self._forks.launch()
        self.last_start_s = self._worker.start()
        self._forks.ready()
        self.starts += 1
        self._unbilled_start_s += self.last_start_s
        return self.last_start_s

    def close(self) -> None:
        self._worker.stop()
        for worker in self._fresh:
            worker.stop(kill=True)
        self._fresh.clear()
        self._forks.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> SubprocessBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._worker.stop(kill=True)
            for worker in self._fresh:
                worker.stop(kill=True)
            self._forks.close()

    def _call(
        self,
        message: Request,
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Done | Stop:
        """A call to the shared worker, started first if need be."""
        if self._worker.process is not None and not self._worker.alive:
            self._worker.stop(kill=True)  # died while idle (killed from outside)
        if self._worker.process is None:
            self._start()
        return self._worker.call(message, timeout, on_progress)  # type: ignore[return-value]

    # --- Backend -----------------------------------------------------------------------

    def devices(self) -> list[DeviceInfo]:
        if self._worker.devices is None:
            self._start()
        assert self._worker.devices is not None
        return self._worker.devices

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]:
        reply = self._call(Catalog(model_file, sha256), timeout=START_TIMEOUT_S)
        if isinstance(reply, Stop) and reply.status == "crash" and self._worker.killed:
            # Died of a signal while importing it (from outside, or the file's own
            # segfault; ``killed`` is this death's, a timeout's is not retried): once more
            # in a fresh worker before the file is blamed, as a configuration that dies is
            # measured once more.
            reply = self._call(Catalog(model_file, sha256), timeout=START_TIMEOUT_S)
        if isinstance(reply, Stop):
            raise ModelFileError(
                f"importing model file {model_file} ended the worker ({reply.reason}); "
                "fix the file's top-level code"
            )
        return reply.value

    def measure(self, request: MeasureRequest) -> Measurement:
        return self.measure_together([request])[0]

    def measure_together(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        if any(r.env for r in requests):
            raise BadInputError(
                "the shared worker cannot take an environment of its own (MeasureRequest.env): "
                "it is read when a process starts; use measure_fresh"
            )
        return self._measure(list(requests), on_progress, retry=True)

    def _measure(
        self,
        requests: list[MeasureRequest],
        on_progress: Callable[[Progress], None] | None,
        retry: bool,
    ) -> list[Measurement]:
        t = time.perf_counter()
        timeout = max(r.settings.timeout_s for r in requests)
        reply = self._call(MeasureGroup(requests), timeout, on_progress)
        if isinstance(reply, Stop) and reply.outside and not retry:
            raise _killed_from_outside(2, reply.reason)
        # The start-up this call waited for, even if a catalog call triggered it.
        started, self._unbilled_start_s = self._unbilled_start_s, 0.0
        if isinstance(reply, Stop) and reply.on is not None and len(requests) > 1:
            # The worker said which configuration it was setting up: that one failed, alone;
            # the others are measured again without it (a crash: it once more, alone).
            culprit = requests[reply.on]
            rest = [r for i, r in enumerate(requests) if i != reply.on]
            again = dict(zip(map(id, rest), self._measure(rest, on_progress, retry), strict=True))
            if reply.status == "crash" and retry:
                again[id(culprit)] = self._measure([culprit], on_progress, retry=False)[0]
            else:
                failed = reply.measurement(culprit)
                again[id(culprit)] = with_figures(failed, worker_start_s=started, wall_s=None)
            return [again[id(r)] for r in requests]
        if isinstance(reply, Stop):
            results = [reply.measurement(r) for r in requests]
        else:
            results = list(reply.value)
        if any(m.status in _RESTART_AFTER for m in results):
            self._worker.stop(kill=True)
        share = (time.perf_counter() - t) / len(requests)
        results = [
            self._real_compile(with_figures(m, worker_start_s=started, wall_s=share), r)
            for m, r in zip(results, requests, strict=True)
        ]
        if len(requests) > 1:
            # Out of memory, a crash or a timeout among several, not pinned to one of them,
            # may be the neighbours' doing (their memory, their time): measure them alone.
            results = [
                self._measure([r], on_progress, retry)[0] if m.status in _RESTART_AFTER else m
                for r, m in zip(requests, results, strict=True)
            ]
        elif results[0].status == "crash" and retry:
            # Alone, and dead: once more in a fresh worker before the crash is the
            # configuration's (a worker killed from outside, twice in a row, is not).
            results = self._measure(requests, on_progress, retry=False)
        return results

    def measure_fresh(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        """Each configuration in a fresh worker process of its own, their timed chunks taking
        turns across the processes (see :meth:`autoplace.Backend.measure_fresh`). A worker is
        forked from the fork server, or, when its request has an environment of its own
        (``MeasureRequest.env``: read as a process starts), started from scratch with it."""
        requests = list(requests)
        for tries in range(1, _WINDOW_TRIES + 1):
            window = FreshWindow(self._fresh_workers(requests), requests, on_progress)
            self._fresh = window.workers
            try:
                results = window.run()
                break
            except KilledFromOutside as killed:
                # No configuration failed: the window again, each in a new process (a fork
                # server gone, they start from scratch).
                if tries == _WINDOW_TRIES:
                    raise _killed_from_outside(tries, killed.reason) from None
                if on_progress is not None:
                    on_progress(
                        Progress(None, f"{killed.reason}; the window again in new processes")
                    )
            finally:
                for worker in window.workers:
                    worker.stop(kill=True)
                self._fresh = []
        return [self._real_compile(m, r) for m, r in zip(results, requests, strict=True)]

    def _fresh_workers(self, requests: list[MeasureRequest]) -> list[Worker]:
        """A worker per request, not yet launched: forked from the fork server, or started
        from scratch where its request has an environment of its own."""
        return [
            Worker(
                self._folder / f"fresh-{uuid.uuid4().hex[:8]}.log",
                self._boot(True),
                {**self._env, **dict(r.env)},
                forks=None if r.env else self._forks,
                interrupt=self._interrupt,
            )
            for r in requests
        ]

    def _real_compile(self, m: Measurement, request: MeasureRequest) -> Measurement:
        """``m`` with the figures of the real compile when its executable was loaded from
        the persistent cache (a fresh worker's, or a replaced shared worker's): the
        compile a user's process pays is the one that filled the cache."""
        c = request.config
        key = (request.model_file, request.sha256, request.workload, m.width, c.precision,
               c.batch_size, c.device, request.steps_per_call)  # fmt: skip
        if m.compile_s is None:
            return m
        if m.compile_cache != "hit":
            self._compiles.setdefault(key, m.compile_s)
            return m
        real = self._compiles.get(key)
        return m if real is None else dataclasses.replace(m, compile_s=real, compile_cached=True)


def _killed_from_outside(tries: int, reason: str) -> KilledFromOutsideError:
    """The error of a measurement whose process was killed from outside ``tries`` times in
    a row, the last time as ``reason`` says."""
    return KilledFromOutsideError(
        f"a measurement's process was killed from outside {tries} times in a row (the last: "
        f"{reason}); that is no failure of the configuration, so none is stored: stop what "
        "kills autoplace's processes, then run the same command again (a tune resumes, "
        "measuring it again)"
    )
