"""Phases 1-6 of a measurement: a configuration built, fed, lowered, compiled and called
once, ready for its loops to be timed. Runs inside a worker process and imports JAX.

:class:`Preparer` takes each :class:`~._run.Run` through the phases (each in ``_setup``)
and keeps what a later configuration can reuse: the builds, the compiled executables
(and, in a tune's workers, the shelf they share, :mod:`._shelf`) and the devices this
process has used. The engine (:mod:`._engine`) times the prepared runs and checks them.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from autoplace.fusing import fuse, stack
from autoplace.machine import cores
from autoplace.measuring._compiles import CompileCounter
from autoplace.measuring._run import Run
from autoplace.measuring._setup import (
    ConfigFailure,
    Executable,
    build,
    check_fits,
    check_next_state,
    check_precision,
    compile_lowered,
    first_call,
    host_batch,
    lower_step,
    transfer,
)
from autoplace.measuring._shelf import Shelf
from autoplace.measuring._timing import compiles_alone
from autoplace.measuring._xla import device_name, memory_in_use, platform_of, tree_bytes
from autoplace.settings import MeasureRequest
from autoplace.workload import Workload

#: At most this many steps compile at once: one per core, up to four.
_COMPILE_THREADS = max(1, min(4, cores()))
#: The seconds from which a compile is written to JAX's persistent compilation cache.
_STORED_FROM = "jax_persistent_cache_min_compile_time_secs"


class Preparer:
    """Takes configurations through phases 1-6, keeping builds and executables for the
    next. Not thread-safe but for :meth:`compile_all`'s own threads (one engine's).

    Args:
        counter: the engine's compile counter (a run's compiles before timing; each
            compiling thread's own compile).
        shelf: where a tune's shared worker keeps each compiled step for the fresh workers
            (``None``: none kept).
        counts_hits: whether JAX's persistent compilation cache is on (a compile may then
            be a load from it).
    """

    def __init__(self, counter: CompileCounter, shelf: Shelf | None, counts_hits: bool) -> None:
        self._counter, self._shelf = counter, shelf
        #: Whether a compile may be a load from the persistent cache (one is kept).
        self._counts_hits = counts_hits
        self._built: OrderedDict[tuple, tuple[Workload, float]] = OrderedDict()
        self._executables: OrderedDict[tuple, Executable] = OrderedDict()
        #: The devices this process has used (see :meth:`_first_use`).
        self._used: set[str] = set()

    def forget_executables(self) -> None:
        """Drop the cached executables: a configuration measured again compiles anew."""
        self._executables.clear()

    def start(self, run: Run) -> None:
        """Phases 1-3 for ``run``: built, batches made and put on the device, its step traced
        and lowered (or its executable found); a failure is the run's own."""
        try:
            run.device_init_s = self._first_use(run.placement.devices)
            self._set_up_to_lowering(run)
        except ConfigFailure as failure:
            run.failure = failure

    def compile_all(self, runs: Sequence[Run]) -> None:
        """Compile the runs' lowered steps (a failure is the run's own): side by side in
        threads on CPUs when there are several, one at a time where any is for an
        accelerator (see :func:`compiles_alone`)."""

        def one(run: Run) -> None:
            try:
                self._compile(run)
            except ConfigFailure as failure:
                run.failure = failure

        if len(runs) == 1 or compiles_alone(platform_of(r.placement.device) for r in runs):
            for run in runs:
                one(run)
            return
        with concurrent.futures.ThreadPoolExecutor(min(len(runs), _COMPILE_THREADS)) as pool:
            for done in [pool.submit(one, run) for run in runs]:
                done.result()  # autoplace's own errors raise here

    def _first_use(self, devices: Sequence[Any]) -> float | None:
        """The seconds this process's first use of ``devices`` takes, once per device and
        process (``None`` when each was used before), as a user's fresh process pays it: one
        small put (its allocator and context), and on an accelerator one small jitted
        product too, compiled anew (:func:`start_compiler`: its compiler, its libraries'
        handles, its autotuner). Not on a CPU: a fresh worker that loads its step from the
        shelf compiles nothing, and a CPU has no context to start (0.2 s a process here went
        to the compiler's start alone)."""
        new = [d for d in devices if device_name(d) not in self._used]
        if not new:
            return None
        t = time.perf_counter()
        for device in new:
            self._used.add(device_name(device))
            x = jax.block_until_ready(jax.device_put(jnp.ones((8, 8), jnp.float32), device))
            if platform_of(device) != "cpu":
                start_compiler(x)
        return time.perf_counter() - t

    def finish_set_up(self, run: Run) -> None:
        """Phases 5-6 once compiled: fits, first call; the run is then ready to be timed."""
        if run.failure is None:
            try:
                self._set_up_after_compile(run)
            except ConfigFailure as failure:
                run.failure = failure
        run.workload = run.lowered = None
        run.compiles_before_timing = self._counter.compiles

    def _set_up_to_lowering(self, run: Run) -> None:
        """Build, batches, transfer, trace and lower: each phase's figures go into the run."""
        request, placement, path = run.request, run.placement, Path(run.request.model_file)
        s, config = request.settings, request.config
        workload, run.build_s, run.build_cached = self.built(
            request, run.fn, run.width, config.precision
        )
        host, made = [], []
        for i in (0, 1):
            t = time.perf_counter()
            host.append(host_batch(workload, config.batch_size, s.seed + i, path))
            made.append(time.perf_counter() - t)
        run.batch_s = max(made)
        if request.steps_per_call > 1:
            workload, host = fused(workload, host, request.steps_per_call)
        run.batch_bytes = tree_bytes(host[0])
        state, batch, run.transfer_s, run.timing_s = transfer(
            workload, host[0], placement, s.transfer_cap_s, path
        )
        run.workload, run.host, run.state, run.batch = workload, host, state, batch
        key = executable_key(run.request, run.width, run.request.config.precision)
        executable = self.executable(key, placement.devices)
        run.compile_cached = executable is not None
        if executable is None:
            run.lowered = lower_step(workload, state, batch, path, placement)
        else:
            self._executables.move_to_end(key)
            self._use(run, executable)

    def executable(self, key: tuple, devices: Sequence[Any]) -> Executable | None:
        """The executable for ``key`` (see :func:`executable_key`), if this process has it:
        compiled here, or taken from the shelf."""
        return self._executables.get(key) or self._taken(key, devices)

    def _taken(self, key: tuple, devices: Sequence[Any]) -> Executable | None:
        """The executable the tune's shared worker compiled for ``key``, from the shelf
        (a fresh worker's: no trace, no lowering, no compile), kept with this engine's."""
        found = self._shelf.take(key, devices) if self._shelf is not None else None
        if found is not None:
            self._executables[key] = found
        return found

    def _set_up_after_compile(self, run: Run) -> None:
        """Check it fits, first call: each phase's figures go into the run as it ends."""
        request, device, path = run.request, run.placement.device, Path(run.request.model_file)
        s, config = request.settings, request.config
        workload, host, state, batch = run.workload, run.host, run.state, run.batch
        executable = run.executable
        assert executable is not None and workload is not None
        check_precision(workload.state, host[0], executable.compute_dtypes, config.precision, path)
        check_fits(executable, device, s.max_memory)
        # What the state looks like, for the check of the next state (the call donates it).
        before = jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), x.dtype), state)
        mark, in_use = memory_in_use(device)
        resident = tree_bytes(state) + tree_bytes(batch)  # before a donation takes the state
        out, run.first_call_s = first_call(executable, state, batch, path)
        if workload.kind == "train":
            check_next_state(before, out, path)
        # Its own peak: the first call runs alone (configurations measured together are set
        # up one after another), so when the device's high-water mark rose during it, the
        # rise over what was in use before, plus its own state and batch (in use before), is
        # this configuration's. Otherwise (the mark is the process's, and another call set
        # it higher) XLA's prediction stands, and the source says so.
        after, _ = memory_in_use(device)
        if None not in (mark, in_use, after) and after > mark:  # type: ignore[operator]
            own = after - in_use + resident  # type: ignore[operator]
            run.peak_bytes, run.peak_bytes_source = own, "measured"
        # A fused call's output is K steps' (a state K steps on, or K stacked predictions),
        # never float32's one step: its precision is compared unfused.
        compare = s.deviation and request.steps_per_call == 1
        run.first_out = jax.device_get(out) if compare else None
        run.compiled = executable.compiled
        run.train = workload.kind == "train"
        run.state, run.out = (out if run.train else state), out

    def built(
        self, request: MeasureRequest, fn: Callable, width: int | None, precision: str
    ) -> tuple[Workload, float, bool]:
        """The workload for (width, precision), the seconds its build took, and if cached.

        Builds are cached (a few, least recently used first out): they depend on
        neither batch size nor device, and a user's eager initialisation can cost
        seconds. The cached state is never donated; each run gets its own copy.
        """
        key = (request.model_file, request.sha256, request.workload, width, precision)
        cached = key in self._built
        if not cached:
            self._built[key] = build(fn, width, precision, Path(request.model_file))
            while len(self._built) > 4:
                self._built.popitem(last=False)
        self._built.move_to_end(key)
        return (*self._built[key], cached)

    def _compile(self, run: Run) -> None:
        """XLA compiles the run's lowered step (phases 4-5; any thread), and the executable
        is kept: measuring the same configuration again (a reference, a re-measurement)
        reuses it and reports the figures of the compile that made it (``compile_cached``).
        """
        assert run.lowered is not None
        executable = compile_lowered(
            run.lowered,
            Path(run.request.model_file),
            self._counter.this_thread,
            self._counter.this_thread_hits if self._counts_hits else None,
        )
        key = executable_key(run.request, run.width, run.request.config.precision)
        with self._counter.lock:
            self._executables[key] = executable
            while len(self._executables) > 16:
                self._executables.popitem(last=False)
        if self._shelf is not None:
            self._shelf.put(key, executable)
        self._use(run, executable)

    def _use(self, run: Run, executable: Executable) -> None:
        run.executable = executable
        run.peak_bytes, run.peak_bytes_source = executable.predicted_bytes, "predicted"


def fused(workload: Workload, host: Sequence[Any], k: int) -> tuple[Workload, list[Any]]:
    """The workload running ``k`` steps a call (:func:`autoplace.fuse`), and its two host
    batches each made ``k`` batches stacked along a new leading axis (the two alternating,
    so that every step still sees a batch of its own shape and values)."""
    step = fuse(workload.step, k, workload.kind)
    stacks = [stack([host[(i + j) % len(host)] for j in range(k)]) for i in range(len(host))]
    return dataclasses.replace(workload, step=step), stacks


def executable_key(request: MeasureRequest, width: int | None, precision: str) -> tuple:
    """What a compiled step depends on: the workload, its width and precision, the batch
    size, the device and the steps per call."""
    r, c = request, request.config
    key = (r.model_file, r.sha256, r.workload, width, precision, c.batch_size, c.device)
    return key if r.steps_per_call == 1 else (*key, r.steps_per_call)


def start_program() -> Callable[[Any], Any]:
    """A small product whose program is this call's own: a constant drawn now is in it,
    so no other process's program is the same, and no persistent compilation cache can
    serve it in place of a compile."""
    salt = 1.0 + secrets.randbits(23) / 2**23  # exact in float32
    return lambda a: a @ a * salt


def start_compiler(x: Any) -> None:
    """Compile and run :func:`start_program` on ``x``'s device: the compiler's own start
    (and an accelerator's libraries', its autotuner's), as a user's fresh process pays it.

    A tune's workers share a persistent compilation cache, which served the same small
    product to every process after the first: an H200's start-up read 55-74 ms in a fresh
    window against 434-530 ms in a first process, while a user's process, with no such
    cache, pays the latter. Its program is therefore unique (never read from the cache),
    and not written there either: a user's process writes no such file, and a tune's
    hundred processes would leave a hundred programs nobody reads."""
    stored = getattr(jax.config, _STORED_FROM)
    jax.config.update(_STORED_FROM, math.inf)
    try:
        jax.block_until_ready(jax.jit(start_program())(x))
    finally:
        jax.config.update(_STORED_FROM, stored)
