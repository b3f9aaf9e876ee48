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
import itertools
import math
import os
import re
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
from autoplace.errors import BadInputError
from autoplace.measurement import Measurement
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
_DOT_RE = re.compile(
    r"stablehlo\.(?:dot_general|dot|convolution)\b.*->\s*tensor<(?:[0-9?]+x)*([a-z0-9]+)>"
)


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
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise ConfigFailure("oom", f"out of memory while {what}: {first}") from exc
        raise ConfigFailure("error", f"{what} raised {describe_exception(exc, path)}") from exc


def relative_spread(samples: list[float]) -> float:
    """Interquartile range over median: 0.05 means the middle half lies within 5%."""
    if len(samples) < 2:
        return 0.0
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else 0.0


def time_steps(
    run_chunk: Callable[[int], float],
    per_step_guess: float,
    settings: MeasureSettings,
    cap_s: float,
) -> tuple[float, float, int]:
    """Median seconds per step, its relative spread, and the number of chunks timed.

    Stops once ``settings.min_samples`` chunks agree within ``settings.target_spread``,
    or at ``settings.max_samples``, or past ``cap_s`` with at least three chunks; a
    ``cap_s`` of 0 times a single chunk.

    ``run_chunk(k)`` runs ``k`` steps, blocks until they are done and returns the
    seconds it took. Chunks are sized to last at least ``settings.sample_min_s``
    so timer resolution and the final synchronisation are amortised; the size
    comes from ``per_step_guess``, the seconds of one step timed just before, which
    counts as the first chunk when it lasted ``sample_min_s`` already (a step that
    slow is timed one step a chunk anyway).
    """
    return summarize(time_interleaved([run_chunk], [per_step_guess], settings, cap_s)[0])


def summarize(samples: Sequence[float]) -> tuple[float, float, int]:
    """(median, relative spread, count) of per-step seconds, one per timed chunk."""
    return float(np.median(samples)), relative_spread(list(samples)), len(samples)


def time_interleaved(
    run_chunks: Sequence[Callable[[int], float]],
    per_step_guesses: Sequence[float],
    settings: MeasureSettings,
    cap_s: float,
) -> list[list[float]]:
    """:func:`time_steps` for several loops at once, their chunks taking turns (A B C A B C).

    Every loop gets the same number of chunks, each about ``settings.sample_min_s``
    long, so a machine that drifts (another process, clocks, heat) slows them
    alike and their comparison keeps what the drift would have spoilt when timed
    one after the other. With several loops, each timed chunk follows about
    ``settings.settle_s`` of untimed steps of its own loop: resumed after another
    loop's turn, a loop runs slow for its first few steps (on the 2-core CI
    machine, VGG at batch 4 lost 10 to 13 ms over its first 25 ms after a turn of
    batch 256), which would count against the loop with the shorter steps. Chunks
    and settling are sized from the guess at first, then from the loop's median so
    far: a guess timed just after another loop's turn runs long.

    Stops after ``min_samples`` turns once the comparison is settled: every loop's
    chunks agree within ``settings.target_spread``, or, with several loops, every
    two loops' turn-by-turn ratios do (drift moves both loops of a turn, so their
    ratio settles long before their times do); else at ``max_samples``, or past
    ``cap_s`` per loop with at least three chunks each. A ``cap_s`` of 0 is a glance,
    for a loop nothing is ranked on: each loop's one sample is the step timed for its
    guess. Returns, per loop, the seconds per step of each chunk in the order timed:
    chunk ``i`` of every loop ran within one turn, so loops can be compared chunk by
    chunk.
    """
    if cap_s <= 0:
        return [[g] for g in per_step_guesses]
    alone = len(run_chunks) == 1

    def sizes(per_step: float) -> tuple[int, int]:
        """Steps to settle (none alone, nor for a step over twice ``settle_s``) and to time."""
        per_step = max(per_step, 1e-7)
        k = max(1, math.ceil(settings.sample_min_s / per_step))
        return (0 if alone else round(settings.settle_s / per_step)), k

    # A guess that is a one-step chunk already is a sample: slow steps are costly.
    samples: list[list[float]] = [[] for _ in run_chunks]
    if all(sizes(g)[1] == 1 for g in per_step_guesses):
        samples = [[g] for g in per_step_guesses]
    start = time.perf_counter()

    def settled() -> bool:
        if all(relative_spread(t) <= settings.target_spread for t in samples):
            return True
        ratios = (
            [x / y for x, y in zip(a, b, strict=True)]
            for a, b in itertools.combinations(samples, 2)
        )
        return len(samples) > 1 and all(
            relative_spread(r) <= settings.target_spread for r in ratios
        )

    def enough(n: int) -> bool:
        if n == 0:
            return False
        if n >= settings.min_samples and settled():
            return True
        return n >= settings.max_samples or (
            n >= 3 and time.perf_counter() - start >= cap_s * len(run_chunks)
        )

    while not enough(len(samples[0])):
        for run, guess, taken in zip(run_chunks, per_step_guesses, samples, strict=True):
            untimed, k = sizes(float(np.median(taken)) if taken else guess)
            if untimed:
                run(untimed)
            taken.append(run(k) / k)
    return samples


def compute_dtypes(stablehlo_text: str) -> tuple[str, ...]:
    """Element types of the dot/convolution results in a lowered program, sorted."""
    return tuple(sorted(set(_DOT_RE.findall(stablehlo_text))))


def tree_bytes(tree: Any) -> int:
    return int(sum(np.asarray(x).nbytes for x in jax.tree.leaves(tree)))


def relative_deviation(out: Any, ref: Any) -> float | None:
    """Relative L2 distance between two output pytrees (float leaves only)."""
    a_leaves, b_leaves = jax.tree.leaves(out), jax.tree.leaves(ref)
    if len(a_leaves) != len(b_leaves):
        return None
    num = den = 0.0
    compared = 0
    for a, b in zip(a_leaves, b_leaves, strict=True):
        a64 = np.asarray(a).astype(np.float64)
        b64 = np.asarray(b).astype(np.float64)
        if a64.shape != b64.shape or not np.issubdtype(np.asarray(b).dtype, np.inexact):
            continue
        compared += 1
        num += float(np.sum((a64 - b64) ** 2))
        den += float(np.sum(b64**2))
    if not compared:
        return None
    if den == 0.0:
        return 0.0 if num == 0.0 else None
    return math.sqrt(num / den)


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
        for d in _all_devices():
            memory = None
            stats = d.memory_stats() if d.platform != "cpu" else None
            if stats and "bytes_limit" in stats:
                memory = int(stats["bytes_limit"])
            elif d.platform == "cpu":
                memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            out.append(
                DeviceInfo(
                    name=_name(d),
                    platform=_platform(d),
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
        for d in _all_devices():
            if _name(d) == name:
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
            fig["transfer_s"] = _median_transfer(host[0], device, s.transfer_cap_s)
            fig["timing_s"] = time.perf_counter() - t

        compiled, kept = self._compile(request, workload, run.width, device, state, batch, fig)
        limit = _memory_limit(device, s.max_memory)
        predicted = fig["predicted_bytes"]
        if predicted is not None and limit is not None and predicted > limit:
            raise ConfigFailure(
                "too_big",
                f"XLA predicts {predicted / 2**20:.1f} MiB, over the {limit / 2**20:.1f} MiB limit",
            )

        run.peak_before = _peak(device)
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
        peak_after = _peak(device)
        if peak_after is not None and (run.peak_before is None or peak_after > run.peak_before):
            fig["peak_bytes"], fig["peak_bytes_source"] = peak_after, "measured"
        fig["samples_per_s"] = config.batch_size / fig["step_s"]
        fig["fed_samples_per_s"] = config.batch_size / fig["fed_step_s"]
        if fig["flops"] is not None:
            fig["flops_per_s"] = fig["flops"] / fig["step_s"]
        with user_phase("checking the outputs", Path(run.request.model_file)):
            fig["finite"] = _all_finite(run.out)
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
                "flops": _flops(compiled),
                "predicted_bytes": _predicted_bytes(compiled),
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


def _platform(d: Any) -> str:
    return "gpu" if d.platform in ("cuda", "rocm", "gpu") else d.platform


def _all_devices() -> list[Any]:
    devices = list(jax.devices())
    if devices[0].platform != "cpu":
        devices += jax.devices("cpu")
    return devices


def _name(d: Any) -> str:
    """``platform:index``, the index counting devices of that platform from 0."""
    return f"{_platform(d)}:{jax.devices(d.platform).index(d)}"


def _median_transfer(host_batch: Any, device: Any, cap_s: float) -> float:
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (len(times) < 30 and time.perf_counter() - start < cap_s):
        t = time.perf_counter()
        jax.block_until_ready(jax.device_put(host_batch, device))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _flops(compiled: Any) -> float | None:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax returned one dict per program
        analysis = analysis[0] if analysis else None
    if not analysis or "flops" not in analysis:
        return None
    return float(analysis["flops"])


def _predicted_bytes(compiled: Any) -> int | None:
    stats = compiled.memory_analysis()
    if stats is None:
        return None
    return int(
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
        + stats.generated_code_size_in_bytes
    )


def _memory_limit(device: Any, max_memory: int | None) -> int | None:
    limits = [m for m in (max_memory, _device_memory(device)) if m is not None]
    return min(limits) if limits else None


def _device_memory(device: Any) -> int | None:
    if device.platform == "cpu":
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    stats = device.memory_stats()
    return int(stats["bytes_limit"]) if stats and "bytes_limit" in stats else None


def _peak(device: Any) -> int | None:
    stats = device.memory_stats() if device.platform != "cpu" else None
    return int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None


def _all_finite(tree: Any) -> bool:
    """Checked on the host: a device-side check would compile a kernel per leaf shape."""
    leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return all(bool(np.isfinite(np.asarray(x, dtype=np.float32)).all()) for x in leaves)
