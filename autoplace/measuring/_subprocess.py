"""The default backend: worker processes that no configuration can take down.

:class:`SubprocessBackend` runs measurements in worker processes, so the calling process
never imports JAX or touches an accelerator, and a workload that crashes, hangs or
exhausts memory takes down only a worker. Two kinds of worker:

* one *shared* worker, started once and reused, imports JAX once: the search's many
  quick measurements (:meth:`~SubprocessBackend.measure_together`) do not pay Python+JAX
  start-up each time;
* *fresh* workers, one per configuration, for the measurements a verdict rests on
  (:meth:`~SubprocessBackend.measure_fresh`): each measures one configuration and
  nothing else, as the user's training process will, while the caller has their timed
  chunks take turns across the processes. A step's time can depend on what ran before
  in the same process (allocator state alone moved one by 2.7x). They load the shared
  worker's compiles from JAX's persistent compilation cache, kept for this backend, and
  are forked from a process that has imported JAX and nothing more
  (:mod:`._forkserver`), unless a request's environment must be there when its process
  starts (``MeasureRequest.env``): such a worker is started from scratch with it.

What a worker survives:

* it dies (segfault, abort, kill): the configuration it was on is measured once more,
  alone, in a fresh worker (a kill from outside is not the configuration's doing); dying
  again, it is stored as ``crash``, with the signal and the last line the worker printed.
  Killed by a signal while importing the model file, it imports it once more in a fresh
  worker before the file is blamed;
* it runs past the time limit: the worker is killed, status ``timeout``. The worker says
  which configuration and phase it is on (:data:`Progress`), so a hang is that
  configuration's alone, found after one limit: the others of its group are measured
  again without it;
* out of memory: status ``oom``; the worker is replaced, because an allocator that
  has failed once is not trusted for the next timing;
* the user's code raises: status ``error``; the worker is kept (Python state is intact).
"""

from __future__ import annotations

import contextlib
import dataclasses
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
import uuid
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from autoplace._host import process_alive
from autoplace.devices import DeviceInfo
from autoplace.errors import AutoplaceError, BadInputError, ModelFileError, WorkerError
from autoplace.measurement import Measurement
from autoplace.measuring._backend import with_figures
from autoplace.measuring._forkserver import Forked, ForkServer, start_python
from autoplace.measuring._progress import Progress
from autoplace.measuring._timing import compiles_alone, loops, time_interleaved
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
#: How long a worker may take to start (Python, JAX, the devices listed).
_START_TIMEOUT_S = 300.0


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


@dataclasses.dataclass(frozen=True)
class _Stop:
    """How a round trip ended without a reply: ``crash`` or ``timeout``, why, and the
    index of the configuration the worker last said it was on (``None``: not known)."""

    status: str
    reason: str
    on: int | None = None


class _Worker:
    """One worker process: started, asked, stopped; and what its death means."""

    def __init__(
        self,
        log: Path,
        boot: dict[str, Any],
        env: dict[str, str],
        forks: ForkServer | None = None,
    ) -> None:
        self._log, self._boot, self._env, self._forks = log, boot, env, forks
        self.process: subprocess.Popen | Forked | None = None
        self._conn: Any = None
        self._busy = False
        #: Whether the last worker to die was killed by a signal (not an exit of its own).
        self.killed = False
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
            self.process = start_python(_WORKER_BOOT, theirs.fileno(), boot, self._log, self._env)
        theirs.close()
        self._conn = Connection(ours.detach())

    def ready(self) -> tuple[Any, ...] | _Stop:
        """Wait for the launched worker's list of devices."""
        reply = self.roundtrip(("devices", None), timeout=_START_TIMEOUT_S)
        if not isinstance(reply, _Stop) and reply[0] == "ok":
            self.devices = reply[1]
            self.start_s = time.perf_counter() - self._started
        return reply

    def start(self) -> float:
        """Start and wait; one killed by a signal on the way (from outside: a worker killed
        at start-up) is replaced once before the start counts as failed."""
        self.launch()
        reply = self.ready()
        if isinstance(reply, _Stop) and self.killed:
            self.launch()
            reply = self.ready()
        if isinstance(reply, _Stop) or reply[0] != "ok":
            why = reply.reason if isinstance(reply, _Stop) else reply[1]
            raise WorkerError(
                f"the measurement worker failed to start: {why}; see {self.kept_log()}"
            )
        assert self.start_s is not None
        return self.start_s

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        kill = kill or self._busy  # a worker mid-measurement would not read "exit"
        self._busy = False
        with contextlib.suppress(OSError):
            if not kill and self.process.poll() is None:
                self._conn.send(("exit", None))
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        with contextlib.suppress(OSError):
            self._conn.close()
        self.process = self._conn = None

    def kept_log(self) -> Path:
        """A copy of the worker's log that outlives close(), for an error that names it."""
        kept = (
            Path(tempfile.gettempdir())
            / f"autoplace-failed-worker-{os.getpid()}-{time.time_ns()}.log"
        )
        with contextlib.suppress(OSError):
            shutil.copyfile(self._log, kept)
        return kept

    def roundtrip(
        self,
        message: tuple[str, Any],
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> tuple[Any, ...] | _Stop:
        """Send ``message``; return the reply, or a :class:`_Stop` (see :meth:`receive`)."""
        return self.send(message) or self.receive(timeout, on_progress)

    def send(self, message: tuple[str, Any]) -> _Stop | None:
        """Send ``message`` without waiting for its reply; a :class:`_Stop` if the worker is
        gone."""
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError):
            return _Stop("crash", self.death_reason())
        self._busy = True
        return None

    def receive(
        self, timeout: float, on_progress: Callable[[Progress], None] | None = None
    ) -> tuple[Any, ...] | _Stop:
        """The reply to what was sent, or a :class:`_Stop`. ``timeout`` counts from the last
        sign of life: the request, or a progress message the worker sent (each
        configuration's set-up, each turn of the timed loops), which also goes to
        ``on_progress``."""
        deadline, on = time.monotonic() + timeout, None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop(kill=True)
                where = "" if on is None else f" (while {self._last})"
                return _Stop(
                    "timeout", f"no result within {timeout:g} s{where}; the worker was killed", on
                )
            try:
                if self._conn.poll(min(remaining, 0.5)):
                    reply = self._conn.recv()
                    if reply[0] == "progress":
                        on, progress = reply[1], reply[2]
                        self._last = progress.what
                        deadline = time.monotonic() + timeout
                        if on_progress is not None:
                            on_progress(progress)
                        continue
                    self._busy = False
                    return reply
            except (EOFError, OSError):
                return _Stop("crash", self.death_reason(), on)
            if self.process.poll() is not None:
                return _Stop("crash", self.death_reason(), on)

    _last = ""

    def death_reason(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        code = self.process.poll()
        self.killed = code is not None and code < 0
        if self.killed:
            why = f"the worker was killed by {signal.Signals(-code).name}"
            if -code == signal.SIGKILL:
                # The out-of-memory killer only where the kernel's log names this worker or
                # the memory is nearly all taken; else another process's kill -9 is as likely.
                oom, free = _oom_killed(self.process.pid), _memory_free()
                if oom or (free is not None and free[0] < 0.05 * free[1]):
                    why += " (the kernel's out-of-memory killer"
                    why += ": its log names this worker)" if oom else ": memory is nearly full)"
                else:
                    shown = "" if free is None else f"; {free[0] / 2**30:.1f} GiB of memory free"
                    why += f" (from outside; the kernel's log names no out-of-memory kill{shown})"
        else:
            why = f"the worker exited with code {code}"
        last = _last_line(self._log)
        self.stop(kill=True)
        return f"{why}: {last}" if last else why

    def call(
        self,
        op: str,
        payload: Any,
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> tuple[Any, ...] | _Stop:
        """A round trip that raises what the worker raised on purpose, and a
        :class:`WorkerError` for autoplace's own bugs."""
        return self.send((op, payload)) or self.answer(timeout, on_progress)

    def answer(
        self, timeout: float, on_progress: Callable[[Progress], None] | None = None
    ) -> tuple[Any, ...] | _Stop:
        """The reply to a request :meth:`send` sent, as :meth:`call` returns it."""
        reply = self.receive(timeout, on_progress)
        if isinstance(reply, _Stop):
            return reply
        if reply[0] == "raise":
            name, message = reply[1], reply[2]
            raise _PASSED_ERRORS.get(name, WorkerError)(message)
        if reply[0] == "internal":
            self.stop(kill=True)
            raise WorkerError(f"autoplace bug in the measurement worker:\n{reply[1]}")
        return reply


class SubprocessBackend:
    """Measures in worker processes; see the module docstring for what it survives.

    Args:
        jax_config: ``jax.config`` settings the workers apply before first use of JAX
            (e.g. ``{"jax_num_cpu_devices": 4}``).
        env: extra environment variables for the workers.
    """

    def __init__(
        self, jax_config: dict[str, Any] | None = None, env: dict[str, str] | None = None
    ) -> None:
        self._jax_config = dict(jax_config or {})
        self._env = dict(env or {})
        _sweep_orphans()
        self._folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        self._cache = self._folder / "xla-cache"
        self._worker = _Worker(self._folder / "worker.log", self._boot(), self._env)
        self._forks = ForkServer(self._folder / "forkserver.log", self._env)
        self._fresh: list[_Worker] = []
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
    def process(self) -> subprocess.Popen | None:
        """The shared worker process now running, or ``None`` before the first call or
        once closed."""
        return self._worker.process

    @property
    def _log(self) -> Path:
        return self._folder / "worker.log"

    # --- lifecycle ---------------------------------------------------------------------

    def _start(self) -> float:
        """Start the shared worker and wait until it has JAX loaded and its devices listed.

        The worker is a fresh interpreter (running :func:`_worker_main`), not a
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
        op: str,
        payload: Any,
        timeout: float,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> tuple[Any, ...] | _Stop:
        """A call to the shared worker, started first if need be."""
        if self._worker.process is not None and not self._worker.alive:
            self._worker.stop(kill=True)  # died while idle (killed from outside)
        if self._worker.process is None:
            self._start()
        return self._worker.call(op, payload, timeout, on_progress)

    # --- Backend -----------------------------------------------------------------------

    def devices(self) -> list[DeviceInfo]:
        if self._worker.devices is None:
            self._start()
        assert self._worker.devices is not None
        return self._worker.devices

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]:
        reply = self._call("catalog", (model_file, sha256), timeout=_START_TIMEOUT_S)
        if isinstance(reply, _Stop) and reply.status == "crash" and self._worker.killed:
            # Died of a signal while importing it (from outside, or the file's own
            # segfault; ``killed`` is this death's, a timeout's is not retried): once more
            # in a fresh worker before the file is blamed, as a configuration that dies is
            # measured once more.
            reply = self._call("catalog", (model_file, sha256), timeout=_START_TIMEOUT_S)
        if isinstance(reply, _Stop):
            raise ModelFileError(
                f"importing model file {model_file} ended the worker ({reply.reason}); "
                "fix the file's top-level code"
            )
        return reply[1]

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
        reply = self._call("measure", requests, timeout, on_progress)
        # The start-up this call waited for, even if a catalog call triggered it.
        started, self._unbilled_start_s = self._unbilled_start_s, 0.0
        if isinstance(reply, _Stop) and reply.on is not None and len(requests) > 1:
            # The worker said which configuration it was setting up: that one failed, alone;
            # the others are measured again without it (a crash: it once more, alone).
            culprit = requests[reply.on]
            rest = [r for i, r in enumerate(requests) if i != reply.on]
            again = dict(zip(map(id, rest), self._measure(rest, on_progress, retry), strict=True))
            if reply.status == "crash" and retry:
                again[id(culprit)] = self._measure([culprit], on_progress, retry=False)[0]
            else:
                failed = _failed(culprit, reply.status, reply.reason)
                again[id(culprit)] = with_figures(failed, worker_start_s=started, wall_s=None)
            return [again[id(r)] for r in requests]
        if isinstance(reply, _Stop):
            results = [_failed(r, reply.status, reply.reason) for r in requests]
        else:
            results = list(reply[1])
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
        window = _FreshWindow(
            [
                _Worker(
                    self._folder / f"fresh-{uuid.uuid4().hex[:8]}.log",
                    self._boot(True),
                    {**self._env, **dict(r.env)},
                    forks=None if r.env else self._forks,
                )
                for r in requests
            ],
            requests,
            on_progress,
        )
        self._fresh = window.workers
        try:
            results = window.run()
        finally:
            for worker in window.workers:
                worker.stop(kill=True)
            self._fresh = []
        return [self._real_compile(m, r) for m, r in zip(results, requests, strict=True)]

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


class _Dropped(Exception):
    """A fresh worker's configuration failed while its loops were timed."""

    def __init__(self, index: int, measurement: Measurement) -> None:
        super().__init__(measurement.reason)
        self.index, self.measurement = index, measurement


class _FreshWindow:
    """One call of :meth:`SubprocessBackend.measure_fresh`: a fresh worker per request,
    started together, each set up alone, then their timed loops in turns from here."""

    def __init__(
        self,
        workers: list[_Worker],
        requests: list[MeasureRequest],
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        self.workers, self.requests, self.on_progress = workers, requests, on_progress
        self.results: dict[int, Measurement] = {}
        self.timeout = max(r.settings.timeout_s for r in requests)

    def _tell(self, i: int | None, what: str) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(i, what))

    def _ask(self, i: int, op: str, payload: Any) -> Any:
        """A worker's answer to ``op``, or :class:`_Dropped` when it failed."""
        return self._answer(i, self.workers[i].call(op, payload, self.timeout, self.on_progress))

    def _answer(self, i: int, reply: tuple[Any, ...] | _Stop) -> Any:
        if isinstance(reply, _Stop):
            raise _Dropped(i, _failed(self.requests[i], reply.status, reply.reason))
        if reply[0] == "failed":
            raise _Dropped(i, reply[1])
        return reply[1]

    def run(self) -> list[Measurement]:
        t = time.perf_counter()
        self._tell(None, f"starting {len(self.workers)} fresh worker process(es)")
        for worker in self.workers:
            worker.launch()
        for worker in self.workers:
            reply = worker.ready()
            if isinstance(reply, _Stop) or reply[0] != "ok":
                why = reply.reason if isinstance(reply, _Stop) else reply[1]
                raise WorkerError(
                    f"a fresh measurement worker failed to start: {why}; see {worker.kept_log()}"
                )
        live = self._prepare()
        settings = self.requests[0].settings
        timed: dict[int, dict[str, list[float]]] = {i: {} for i in live}
        start = time.perf_counter()
        for loop, cap in loops(settings):
            live = self._time(live, loop, cap, timed)
        share = (time.perf_counter() - start) / max(len(live), 1)
        together = uuid.uuid4().hex
        for i in live:
            payload = {
                "loops": timed[i],
                "together": together,
                "others": len(self.requests) - 1,
                "timing_s": share,
            }
            try:
                self.results[i] = self._ask(i, "finish", payload)
            except _Dropped as dropped:
                self.results[i] = dropped.measurement
        wall = (time.perf_counter() - t) / len(self.requests)
        return [
            with_figures(self.results[i], worker_start_s=w.start_s, wall_s=wall)
            for i, w in enumerate(self.workers)
        ]

    def _prepare(self) -> list[int]:
        """Every worker sets its configuration up; the workers whose set-up ran. On CPUs
        together (no timing runs yet); where an accelerator is among them, one at a time
        (see :func:`~._engine.compiles_alone`: XLA's autotuner times kernels as it
        compiles)."""
        platforms = [r.config.device.split(":", 1)[0] for r in self.requests]
        pairs = list(zip(self.workers, self.requests, strict=True))
        live = []
        if compiles_alone(platforms):
            sent = []
            for w, r in pairs:  # each answers before the next is sent
                stop = w.send(("prepare", r))
                sent.append(stop or w.answer(self.timeout, self.on_progress))
        else:
            stops = [w.send(("prepare", r)) for w, r in pairs]
            sent = [
                stop or w.answer(self.timeout, self.on_progress)
                for (w, _), stop in zip(pairs, stops, strict=True)
            ]
        for i, reply in enumerate(sent):
            try:
                self._answer(i, reply)
                live.append(i)
            except _Dropped as dropped:
                self.results[i] = dropped.measurement
        return live

    def _time(
        self, live: list[int], loop: str, cap: float, timed: dict[int, dict[str, list[float]]]
    ) -> list[int]:
        """One loop of every live worker's configuration, interleaved across the workers; a
        configuration that fails drops out, and the others are timed again without it.
        Returns the workers still live."""
        settings = self.requests[0].settings
        while live:
            try:
                guesses = [self._ask(i, "warm", loop) for i in live]

                def chunk(i: int) -> Callable[[int], float]:
                    return lambda k: self._ask(i, "chunk", (loop, k))

                chunks = time_interleaved(
                    [chunk(i) for i in live],
                    guesses,
                    settings,
                    cap,
                    on_turn=lambda n: self._tell(None, f"timing in turns, turn {n + 1}"),
                )
            except _Dropped as dropped:
                self.results[dropped.index] = dropped.measurement
                self.workers[dropped.index].stop(kill=True)
                live = [i for i in live if i != dropped.index]
                continue
            for i, c in zip(live, chunks, strict=True):
                timed[i][loop] = c
            return live
        return live


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


def _worker_main(fd: int, boot: dict[str, Any]) -> None:
    """The worker's loop: answer requests on the connection until told to exit.

    A shared worker measures groups (``measure``); a fresh one sets up one configuration
    (``prepare``) whose loops its caller then times chunk by chunk (``warm``, ``chunk``),
    and ends it (``finish``)."""
    import faulthandler

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    faulthandler.enable()
    conn = Connection(fd)
    _exit_with_caller()

    from autoplace.measuring._engine import Engine
    from autoplace.measuring._setup import ConfigFailure
    from autoplace.measuring._timing import LoopTiming

    engine = Engine(boot.get("jax_config"), boot.get("compile_cache"))
    run: Any = None

    def progress(p: Progress) -> None:
        conn.send(("progress", p.index, p))

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
                reply = ("ok", engine.measure_together(payload, progress))
            elif op == "prepare":
                run = engine.prepare(payload, fresh_process=True)
                failed = run.failure is not None
                reply = ("failed", run.result()) if failed else ("ok", None)
            elif op in ("warm", "chunk"):
                try:
                    value = run.warm(payload) if op == "warm" else run.chunk(payload[1], payload[0])
                    reply = ("ok", value)
                except ConfigFailure:
                    reply = ("failed", run.result())
            elif op == "finish":
                for loop, chunks in payload["loops"].items():
                    run.timed(loop, LoopTiming.of(chunks))
                run.timing_s = (run.timing_s or 0.0) + payload["timing_s"]
                reply = ("ok", engine.finish([run], payload["together"], payload["others"])[0])
            else:
                reply = ("internal", f"unknown operation {op!r}")
        except (BadInputError, ModelFileError) as exc:
            reply = ("raise", type(exc).__name__, str(exc))
        except Exception:
            reply = ("internal", traceback.format_exc())
        sys.stdout.flush()
        conn.send(reply)
