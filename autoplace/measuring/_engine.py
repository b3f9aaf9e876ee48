"""The measuring itself. Runs inside a worker process and imports JAX (as ``_setup``,
``_run`` and ``_xla`` do; ``import autoplace`` loads none of them).

One :meth:`Engine.measure` call takes a configuration through these phases, each
timed on its own so the costs the seeds' authors saw mixed together come apart:

1. build: call the user's workload function (``width``, ``dtype``).
2. transfer: put one host batch on the device, repeatedly (median).
3. lower: trace the step to a jaxpr and lower it to StableHLO.
4. compile: XLA compiles the lowered program (the persistent cache is off, so
   this is always a real compile).
5. memory and FLOPs: XLA's memory and cost analyses of the compiled program.
   A configuration predicted not to fit is stopped here as ``too_big``.
6. first call: one execution, batch already on the device.
7. steady state: chunks of steps of the *same* compiled executable, each ended
   by ``block_until_ready``; a compile counter proves none happened meanwhile.
8. fed steady state: the same, putting a fresh host batch on the device each step.
9. checks: outputs finite; deviation of a lower precision from float32.

Failures the configuration owns (out of memory, errors in the user's code) come
back as statuses; anything else is autoplace's bug and propagates.

Phases 1-6 live in ``_setup``, taken in order by ``_preparing`` (which keeps the builds
and executables), the timed loops (7, 8) in ``_timing``; the engine runs the phases in
order, times the loops and checks the outputs. ``_compiles`` counts XLA's compiles. A
``_run.Run`` holds one configuration's figures as each phase sets them, and turns them
into a ``Measurement`` in one place.
"""

from __future__ import annotations

import functools
import gc
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from autoplace.devices import DeviceInfo, check_device
from autoplace.measurement import Measurement
from autoplace.measuring._compiles import CompileCounter
from autoplace.measuring._placement import Placement
from autoplace.measuring._preparing import Preparer, executable_key
from autoplace.measuring._progress import Progress
from autoplace.measuring._run import Loop, Run
from autoplace.measuring._setup import ConfigFailure, host_batch, user_phase
from autoplace.measuring._shelf import Shelf
from autoplace.measuring._timing import loop_figures, loops, time_interleaved
from autoplace.measuring._xla import (
    all_devices,
    all_finite,
    device_name,
    platform_of,
    relative_deviation,
)
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.workload import WorkloadInfo, find_workloads, import_model_file, pick_workload


class Engine:
    """Measures configurations inside one process. Holds caches, so keep one per worker.

    Not thread-safe: one measurement at a time, as timings demand anyway.

    Args:
        jax_config: ``jax.config`` settings applied first.
        compile_cache: a folder for JAX's persistent compilation cache, shared by the
            workers of one tune (``None``: no persistent cache). A compile stored there by
            one worker is loaded by a fresh one, which reports it as a ``hit``: never as a
            fast compile (see :attr:`autoplace.Measurement.compile_cache`).
    """

    def __init__(
        self, jax_config: dict[str, Any] | None = None, compile_cache: str | None = None
    ) -> None:
        for key, value in (jax_config or {}).items():
            jax.config.update(key, value)
        # Where the shared worker keeps each compiled step for the fresh workers (:mod:`._shelf`).
        shelf = Shelf(Path(compile_cache) / "executables") if compile_cache else None
        if compile_cache is None:
            jax.config.update("jax_enable_compilation_cache", False)
        else:
            jax.config.update("jax_enable_compilation_cache", True)
            jax.config.update("jax_compilation_cache_dir", compile_cache)
            # Every compile is stored, however quick or small: a fresh worker loads it.
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        self._counter = CompileCounter()
        self._preparer = Preparer(self._counter, shelf, counts_hits=compile_cache is not None)
        self._modules: dict[tuple[str, str], dict[str, tuple[WorkloadInfo, Callable]]] = {}
        self._references: OrderedDict[tuple, Any] = OrderedDict()

    @property
    def compiles(self) -> int:
        """Compiles XLA has reported in this process since the engine started, of any
        function (a load from the persistent cache counts): the counter that proves the
        timed loops compiled nothing."""
        return self._counter.compiles

    def forget_executables(self) -> None:
        """Drop the cached executables: a configuration measured again compiles anew."""
        self._preparer.forget_executables()

    # --- catalogue -------------------------------------------------------------------

    def devices(self) -> list[DeviceInfo]:
        out = []
        for d in all_devices():
            memory = None
            stats = d.memory_stats() if d.platform != "cpu" else None
            if stats and "bytes_limit" in stats:
                memory = int(stats["bytes_limit"])
            elif d.platform == "cpu":
                memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            out.append(
                DeviceInfo(
                    name=device_name(d),
                    platform=platform_of(d),
                    kind=d.device_kind,
                    memory_bytes=memory,
                )
            )
        return out

    def catalog(self, path: str, sha256: str) -> dict[str, WorkloadInfo]:
        return {name: info for name, (info, _) in self._load(path, sha256).items()}

    def _load(self, path: str, sha256: str) -> dict[str, tuple[WorkloadInfo, Callable]]:
        key = (path, sha256)
        if key not in self._modules:
            p = Path(path)
            self._modules[key] = find_workloads(import_model_file(p), p)
        return self._modules[key]

    def _placement(self, request: MeasureRequest) -> Placement:
        check_device(self.devices(), request.config.device)
        by_name = {device_name(d): d for d in all_devices()}
        return Placement.of(request.config.device, by_name, request.steps_per_call)

    # --- measuring ---------------------------------------------------------------------

    def measure(self, request: MeasureRequest) -> Measurement:
        return self.measure_together([request])[0]

    def measure_together(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        """Measure several configurations, their timed loops interleaved chunk by chunk.

        Each configuration goes through phases 1-6 on its own; then the steady-state
        loops of all of them take turns (A B C A B C, about ``sample_min_s`` a turn),
        and then their fed loops do, so drift on the machine slows all alike and
        their comparison is fair. The loop settings (caps, samples) are the first
        request's. A configuration that fails drops out; the others go on.
        ``on_progress`` hears of each configuration's set-up and each turn of the loops.
        """
        runs = []
        for i, r in enumerate(requests):
            if on_progress is not None:
                on_progress(Progress(i, f"setting up {r.config.label()}"))
            runs.append(self._start(r))
        # Compiled side by side, ahead of any timing (XLA compiles outside Python's lock):
        # the group's compiles take the longest one's time, not their sum, on several cores.
        pending = [r for r in runs if r.failure is None and r.lowered is not None]
        if pending:
            if on_progress is not None:
                on_progress(Progress(None, f"compiling {len(pending)} side by side"))
            self._preparer.compile_all(pending)
        for i, run in enumerate(runs):
            if on_progress is not None and run.failure is None:
                on_progress(Progress(i, f"first call of {run.request.config.label()}"))
            self._preparer.finish_set_up(run)
        loop = requests[0].settings

        def turn(n: int) -> None:
            if on_progress is not None:
                on_progress(Progress(None, f"timing {len(runs)} in turns, turn {n + 1}"))

        for name, cap in loops(loop):
            self._time(runs, name, loop, cap, turn)
        together = uuid.uuid4().hex if len(runs) > 1 else None
        return self.finish(runs, together)

    def prepare(self, request: MeasureRequest, fresh_process: bool = False) -> Run:
        """Phases 1-6 for one configuration: a run ready to be timed (its chunks, by
        :meth:`Run.warm` and :meth:`Run.chunk`), or a failed one. ``fresh_process``: it is
        the only configuration this process measures (a fresh worker's)."""
        run = self._start(request)
        if run.failure is None and run.lowered is not None:
            self._preparer.compile_all([run])
        self._preparer.finish_set_up(run)
        run.fresh_process = fresh_process
        return run

    def finish(
        self, runs: Sequence[Run], together: str | None, others: int | None = None
    ) -> list[Measurement]:
        """Phase 9 for timed runs (their loops' chunks set): each one's measurement.
        ``together`` names the call that timed them in turns (``None``: alone), ``others``
        how many configurations took turns with each (default: the rest of ``runs``).

        A compile after the runs were prepared fails them: the loops call one compiled
        executable each, so only the step's own code (a host callback that jits) or another
        thread of the model file's can compile meanwhile, and the timings would hold it."""
        # Runs are prepared one after another: the last one's count is where timing began.
        marks = [r.compiles_before_timing for r in runs if r.compiles_before_timing is not None]
        started = max(marks, default=self._counter.compiles)
        compiles = self._counter.compiles - started
        out = []
        for run in runs:
            run.close()
            run.interleaved_with = len(runs) - 1 if others is None else others
            run.interleave_id = together
            run.timing_compiles = compiles
            if compiles and run.failure is None:
                # The loops call one compiled executable: only the step's own code (a host
                # callback that jits) or another thread can compile meanwhile, and the
                # timings would hold it.
                run.failure = ConfigFailure(
                    "error",
                    f"XLA compiled {compiles} time(s) while the steps were timed, so the "
                    "timings hold a compile: a host callback in the step that jits, or "
                    "another thread of the model file's, compiles meanwhile; move it out",
                )
            if run.failure is None:
                try:
                    self._check(run)
                except ConfigFailure as failure:
                    run.failure = failure
            out.append(run.result())
        if any(run.failure is not None for run in runs):
            gc.collect()  # a failure's traceback holds its buffers in reference cycles
        return out

    def _start(self, request: MeasureRequest) -> Run:
        """Phases 1-3 for one configuration: built, batches made and put on the device, its
        step traced and lowered (or its executable found in the cache); or a failed run."""
        found = self._load(request.model_file, request.sha256)
        info, fn = found[pick_workload(found, Path(request.model_file), request.workload)]
        width = request.config.width if request.config.width is not None else info.default_width
        run = Run(request, fn, width, self._placement(request))
        self._preparer.start(run)
        return run

    def _time(
        self,
        runs: list[Run],
        loop: Loop,
        settings: MeasureSettings,
        cap: float,
        on_turn: Callable[[int], None] | None = None,
    ) -> None:
        """Time one loop of every live run, interleaved; a run that fails drops out and
        the others are timed again without it."""
        while live := [r for r in runs if r.failure is None]:
            t = time.perf_counter()
            try:
                guesses = [r.warm(loop) for r in live]
                timed = time_interleaved(
                    [functools.partial(r.chunk, loop=loop) for r in live],
                    guesses,
                    settings,
                    cap,
                    on_turn,
                    [r.request.samples_per_call for r in live] if live[0] is runs[0] else None,
                )
            except ConfigFailure:
                continue  # the failing run marked itself
            share = (time.perf_counter() - t) / len(live)
            for r, chunks in zip(live, timed, strict=True):
                r.timed(loop, loop_figures(chunks))
                assert r.timing_s is not None  # the transfer, timed before any loop
                r.timing_s += share
            return

    def _check(self, run: Run) -> None:
        """Phase 9 once the loops are timed: outputs finite, deviation. (Its peak memory was
        read at its first call: after the loops, the device's high-water mark is the whole
        group's.)"""
        with user_phase("checking the outputs", Path(run.request.model_file)):
            run.finite = all_finite(run.out)
        if run.first_out is not None:
            t = time.perf_counter()
            run.deviation_vs_float32 = self._deviation(
                run.request, run.fn, run.width, run.placement, run.first_out
            )
            run.reference_s = time.perf_counter() - t

    def _deviation(
        self,
        request: MeasureRequest,
        fn: Callable,
        width: int | None,
        placement: Placement,
        out: Any,
    ) -> float | None:
        """Deviation of ``out`` from the float32 workload's first output on the same batch
        (``None`` where either is not finite: nothing to compare)."""
        if not all_finite(out):
            return None
        config = request.config
        # the reference must see the same batch: its seed is part of the key
        key = (request.model_file, request.sha256, request.workload, width, config.batch_size,
               request.settings.seed)  # fmt: skip
        if config.precision == "float32":
            self._remember(key, out)
            return 0.0
        ref = self._references.get(key)
        if ref is None:
            path = Path(request.model_file)
            workload, _, _ = self._preparer.built(request, fn, width, "float32")
            host = host_batch(workload, config.batch_size, request.settings.seed, path)
            # The float32 executable of this configuration, if the worker has it: the
            # same program, without compiling it again.
            key32 = executable_key(request, width, "float32")
            cached = self._preparer.executable(key32, placement.devices)
            step = cached.compiled if cached is not None else jax.jit(workload.step)
            with user_phase("running the float32 reference", path):
                state = placement.put_state(workload.state)
                ref = jax.device_get(step(state, jax.device_put(host, placement.batch)))
            self._remember(key, ref)
        return relative_deviation(out, ref)

    def _remember(self, key: tuple, value: Any) -> None:
        self._references[key] = value
        self._references.move_to_end(key)
        while len(self._references) > 8:
            self._references.popitem(last=False)
