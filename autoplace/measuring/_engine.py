"""The measuring itself. Runs inside a worker process; the one module that imports JAX.

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
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autoplace.devices import DeviceInfo
from autoplace.errors import BadInputError, first_line
from autoplace.measurement import Measurement
from autoplace.measuring._timing import summarize, time_interleaved
from autoplace.measuring._xla import (
    all_devices,
    all_finite,
    compute_dtypes,
    device_name,
    flops_of,
    median_transfer,
    memory_limit,
    peak_bytes_in_use,
    platform_of,
    predicted_bytes,
    relative_deviation,
    tree_bytes,
)
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.workload import (
    Workload,
    WorkloadInfo,
    describe_exception,
    find_workloads,
    import_model_file,
    pick_workload,
)

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class ConfigFailure(Exception):
    """A failure that belongs to the configuration: ends the measurement with a status."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc)


@contextlib.contextmanager
def user_phase(what: str, path: Path) -> Iterator[None]:
    """Turn an exception raised while ``what`` into a :class:`ConfigFailure`.

    Only code that runs the user's workload, or XLA on the user's program, goes
    inside: an exception there is the configuration's, not autoplace's.
    """
    try:
        yield
    except ConfigFailure:
        raise
    except Exception as exc:
        if _is_oom(exc):
            raise ConfigFailure("oom", f"out of memory while {what}: {first_line(exc)}") from exc
        raise ConfigFailure("error", f"{what} raised {describe_exception(exc, path)}") from exc


class _Run:
    """One configuration inside :meth:`Engine.measure_together`: set up, then timed."""

    def __init__(
        self, request: MeasureRequest, fn: Callable, width: int | None, device: Any, fig: dict
    ) -> None:
        self.request, self.fn, self.width, self.device, self.fig = request, fn, width, device, fig
        self.failure: ConfigFailure | None = None
        self.compiled: Any = None
        self.host: list[Any] = []
        self.batch: Any = None
        self.state: Any = None
        self.out: Any = None
        self.train = False
        self.first_out: Any = None
        self.peak_before: int | None = None

    def chunk(self, k: int, fed: bool = False) -> float:
        """Run ``k`` steps (putting a fresh host batch on the device each step when
        ``fed``), block until done, return the seconds. Marks the run failed on a
        failure of the user's program, and raises it."""
        what = "running the fed steady-state loop" if fed else "running the steady-state loop"
        try:
            with user_phase(what, Path(self.request.model_file)):
                st, o = self.state, self.out
                t0 = time.perf_counter()
                for i in range(k):
                    b = jax.device_put(self.host[i % 2], self.device) if fed else self.batch
                    o = self.compiled(st, b)
                    if self.train:
                        st = o
                jax.block_until_ready(o)
                elapsed = time.perf_counter() - t0
        except ConfigFailure as failure:
            self.failure = failure
            raise
        self.state, self.out = st, o
        return elapsed

    def warm(self, fed: bool) -> float:
        """Warm-up steps (before the first loop only: the fed loop runs the same warm
        executable), then one timed step: the guess that sizes the chunks."""
        if not fed:
            self.chunk(self.request.settings.warmup_steps)
        return self.chunk(1, fed)

    def result(self) -> Measurement:
        if self.failure is not None:
            status, reason = self.failure.status, self.failure.reason
        elif self.fig["finite"]:
            status, reason = "ok", ""
        else:
            status, reason = "nonfinite", "the step produced NaN or inf"
        return Measurement(status=status, reason=reason, **self.fig)


class Engine:
    """Measures configurations inside one process. Holds caches, so keep one per worker.

    Not thread-safe: one measurement at a time, as timings demand anyway.
    """

    def __init__(self, jax_config: dict[str, Any] | None = None) -> None:
        for key, value in (jax_config or {}).items():
            jax.config.update(key, value)
        # A persistent-cache hit would pass for a fast compile: never allow one.
        jax.config.update("jax_enable_compilation_cache", False)
        self._compiles = 0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        self._modules: dict[tuple[str, str], dict[str, tuple[WorkloadInfo, Callable]]] = {}
        self._references: OrderedDict[tuple, Any] = OrderedDict()
        self._built: OrderedDict[tuple, tuple[Workload, float]] = OrderedDict()
        self._executables: OrderedDict[tuple, tuple[Any, dict[str, Any]]] = OrderedDict()

    def _on_event(self, event: str, duration: float, **_: Any) -> None:
        if event == _COMPILE_EVENT:
            self._compiles += 1

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

    def _device(self, name: str) -> Any:
        for d in all_devices():
            if device_name(d) == name:
                return d
        known = ", ".join(d.name for d in self.devices())
        raise BadInputError(f"unknown device {name!r}: this machine has {known}")

    # --- measuring ---------------------------------------------------------------------

    def measure(self, request: MeasureRequest) -> Measurement:
        return self.measure_together([request])[0]

    def measure_together(self, requests: Sequence[MeasureRequest]) -> list[Measurement]:
        """Measure several configurations, their timed loops interleaved chunk by chunk.

        Each configuration goes through phases 1-6 on its own; then the steady-state
        loops of all of them take turns (A B C A B C, about ``sample_min_s`` a turn),
        and then their fed loops do, so drift on the machine slows all alike and
        their comparison is fair. The loop settings (caps, samples) are the first
        request's. A configuration that fails drops out; the others go on.
        """
        runs = [self._prepare(r) for r in requests]
        loop = requests[0].settings
        compiles_before = self._compiles
        for fed, cap in ((False, loop.time_cap_s), (True, loop.fed_time_cap_s)):
            self._time_group(runs, fed, loop, cap)
        compiles = self._compiles - compiles_before
        if compiles:
            raise RuntimeError("a compile happened inside the timed loop: autoplace bug")
        out = []
        together = uuid.uuid4().hex if len(runs) > 1 else None
        for run in runs:
            run.fig["interleaved_with"] = len(runs) - 1
            run.fig["interleave_id"] = together
            run.fig["timing_compiles"] = compiles
            if run.failure is None:
                try:
                    self._finish(run)
                except ConfigFailure as failure:
                    run.failure = failure
            out.append(run.result())
        if any(run.failure is not None for run in runs):
            gc.collect()  # a failure's traceback holds its buffers in reference cycles
        return out

    def _time_group(
        self, runs: list[_Run], fed: bool, settings: MeasureSettings, cap: float
    ) -> None:
        """Time one loop of every live run, interleaved; a run that fails drops out and
        the others are timed again without it."""
        while live := [r for r in runs if r.failure is None]:
            t = time.perf_counter()
            try:
                guesses = [r.warm(fed) for r in live]
                timed = time_interleaved(
                    [functools.partial(r.chunk, fed=fed) for r in live], guesses, settings, cap
                )
            except ConfigFailure:
                continue  # the failing run marked itself
            share = (time.perf_counter() - t) / len(live)
            for r, chunks in zip(live, timed, strict=True):
                median, spread, n = summarize(chunks)
                prefix = "fed_" if fed else ""
                r.fig[f"{prefix}step_s"], r.fig[f"{prefix}step_spread"] = median, spread
                r.fig[f"{prefix}step_chunk_s"] = tuple(chunks)
                if not fed:
                    r.fig["step_samples"] = n
                r.fig["timing_s"] += share
            return

    def _prepare(self, request: MeasureRequest) -> _Run:
        """Phases 1-6 for one configuration: a run ready to be timed, or a failed one."""
        found = self._load(request.model_file, request.sha256)
        info, fn = found[pick_workload(found, Path(request.model_file), request.workload)]
        config = request.config
        width = config.width if config.width is not None else info.default_width
        device = self._device(config.device)
        figures: dict[str, Any] = {
            "device": config.device,
            "batch_size": config.batch_size,
            "precision": config.precision,
            "width": width,
            "workload": request.workload,
            "device_kind": device.device_kind,
            "compile_cache": "disabled",
        }
        run = _Run(request, fn, width, device, figures)
        try:
            self._set_up(run)
        except ConfigFailure as failure:
            run.failure = failure
        return run

    def _build(
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
            t = time.perf_counter()
            with user_phase("building the workload", Path(request.model_file)):
                workload = fn(width, jnp.dtype(precision))
            if not isinstance(workload, Workload):
                raise ConfigFailure(
                    "error",
                    f"the workload function returned {type(workload).__name__}, "
                    "not autoplace.Workload",
                )
            self._built[key] = (workload, time.perf_counter() - t)
            while len(self._built) > 4:
                self._built.popitem(last=False)
        self._built.move_to_end(key)
        return (*self._built[key], cached)

    def _host_batch(self, workload: Workload, batch_size: int, seed: int, path: Path) -> Any:
        with user_phase("making a batch", path):
            batch = workload.make_batch(batch_size, np.random.default_rng(seed))
            return jax.tree.map(np.asarray, batch)

    def _set_up(self, run: _Run) -> None:
        request, fig, device = run.request, run.fig, run.device
        s = request.settings
        path = Path(request.model_file)
        config = request.config

        workload, fig["build_s"], fig["build_cached"] = self._build(
            request, run.fn, run.width, config.precision
        )
        host = [self._host_batch(workload, config.batch_size, s.seed + i, path) for i in (0, 1)]
        fig["batch_bytes"] = tree_bytes(host[0])

        with user_phase("putting the state and a batch on the device", path):
            state = jax.block_until_ready(jax.device_put(workload.state, device, may_alias=False))
            batch = jax.block_until_ready(jax.device_put(host[0], device))
            t = time.perf_counter()
            fig["transfer_s"] = median_transfer(host[0], device, s.transfer_cap_s)
            fig["timing_s"] = time.perf_counter() - t

        compiled, kept = self._compile(request, workload, run.width, device, state, batch, fig)
        limit = memory_limit(device, s.max_memory)
        predicted = fig["predicted_bytes"]
        if predicted is not None and limit is not None and predicted > limit:
            raise ConfigFailure(
                "too_big",
                f"XLA predicts {predicted / 2**20:.1f} MiB, over the {limit / 2**20:.1f} MiB limit",
            )

        run.peak_before = peak_bytes_in_use(device)
        t = time.perf_counter()
        with user_phase("running the first step", path):
            out = jax.block_until_ready(compiled(state, batch))
        # A reused executable's first call here is not its first ever (that one may
        # include lazy device set-up): report the first ever, which this engine timed.
        kept.setdefault("first_call_s", time.perf_counter() - t)
        fig["first_call_s"] = kept["first_call_s"]
        run.first_out = jax.device_get(out) if s.deviation else None
        run.compiled, run.host, run.batch = compiled, host, batch
        run.train = workload.kind == "train"
        run.state, run.out = (out if run.train else state), out

    def _finish(self, run: _Run) -> None:
        """Phase 9 and the derived figures, once the loops are timed."""
        fig, device, config = run.fig, run.device, run.request.config
        peak_after = peak_bytes_in_use(device)
        if peak_after is not None and (run.peak_before is None or peak_after > run.peak_before):
            fig["peak_bytes"], fig["peak_bytes_source"] = peak_after, "measured"
        fig["samples_per_s"] = config.batch_size / fig["step_s"]
        fig["fed_samples_per_s"] = config.batch_size / fig["fed_step_s"]
        if fig["flops"] is not None:
            fig["flops_per_s"] = fig["flops"] / fig["step_s"]
        with user_phase("checking the outputs", Path(run.request.model_file)):
            fig["finite"] = all_finite(run.out)
        if run.first_out is not None:
            t = time.perf_counter()
            fig["deviation_vs_float32"] = self._deviation(
                run.request, run.fn, run.width, device, run.first_out
            )
            fig["reference_s"] = time.perf_counter() - t

    def _compile(
        self,
        request: MeasureRequest,
        workload: Workload,
        width: int | None,
        device: Any,
        state: Any,
        batch: Any,
        fig: dict[str, Any],
    ) -> tuple[Any, dict[str, Any]]:
        """The step compiled for this configuration, and the figures kept with it.

        Compiled executables are cached (least recently used out): measuring the same
        configuration again (a confirmation, a re-measurement) reuses the executable
        and reports the figures of the compile that made it, with ``compile_cached``.
        """
        key = _executable_key(request, width, request.config.precision)
        hit = self._executables.get(key)
        fig["compile_cached"] = hit is not None
        if hit is None:
            path = Path(request.model_file)
            train = workload.kind == "train"

            def step(state: Any, batch: Any) -> Any:
                return workload.step(state, batch)

            # A new function object per compile: JAX's tracing caches are keyed on the
            # function, so the trace and lowering timed below are never a cache hit,
            # while its caches stay warm for everything else (the user's eager build).
            jitted = jax.jit(step, donate_argnums=(0,) if train else ())
            t = time.perf_counter()
            with user_phase("tracing and lowering the step", path):
                lowered = jitted.trace(state, batch).lower()
            lower_s = time.perf_counter() - t
            dtypes = compute_dtypes(lowered.as_text())
            compiles_before = self._compiles
            t = time.perf_counter()
            with user_phase("compiling the step", path):
                compiled = lowered.compile()
            compile_s = time.perf_counter() - t
            if self._compiles == compiles_before:
                raise RuntimeError("the step's compile was a cache hit, so compile_s is not real")
            figures: dict[str, Any] = {
                "lower_s": lower_s,
                "compile_s": compile_s,
                "compute_dtypes": dtypes,
                "flops": flops_of(compiled),
                "predicted_bytes": predicted_bytes(compiled),
            }
            hit = self._executables[key] = (compiled, figures)
            while len(self._executables) > 16:
                self._executables.popitem(last=False)
        self._executables.move_to_end(key)
        compiled, figures = hit
        fig.update(figures)
        fig["peak_bytes"], fig["peak_bytes_source"] = figures["predicted_bytes"], "predicted"
        return compiled, figures

    def _deviation(
        self, request: MeasureRequest, fn: Callable, width: int | None, device: Any, out: Any
    ) -> float | None:
        """Deviation of ``out`` from the float32 workload's first output on the same batch."""
        config = request.config
        key = (request.model_file, request.sha256, request.workload, width, config.batch_size)
        key += (request.settings.seed,)  # the reference must see the same batch
        if config.precision == "float32":
            self._remember(key, out)
            return 0.0
        ref = self._references.get(key)
        if ref is None:
            path = Path(request.model_file)
            workload, _, _ = self._build(request, fn, width, "float32")
            host = self._host_batch(workload, config.batch_size, request.settings.seed, path)
            # The float32 executable of this configuration, if the worker has it: the
            # same program, without compiling it again.
            cached = self._executables.get(_executable_key(request, width, "float32"))
            step = cached[0] if cached is not None else jax.jit(workload.step)
            with user_phase("running the float32 reference", path):
                state = jax.device_put(workload.state, device, may_alias=False)
                ref = jax.device_get(step(state, jax.device_put(host, device)))
            self._remember(key, ref)
        return relative_deviation(out, ref)

    def _remember(self, key: tuple, value: Any) -> None:
        self._references[key] = value
        self._references.move_to_end(key)
        while len(self._references) > 8:
            self._references.popitem(last=False)


def _executable_key(request: MeasureRequest, width: int | None, precision: str) -> tuple:
    """What a compiled step depends on: the workload, its width and precision, the batch
    size and the device."""
    r, c = request, request.config
    return (r.model_file, r.sha256, r.workload, width, precision, c.batch_size, c.device)


