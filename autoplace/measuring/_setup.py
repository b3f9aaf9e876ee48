"""The set-up phases of one configuration, in the order the engine runs them.

build, host batches, transfer, compile (trace, lower, compile, XLA's analyses), check it
fits, first call. Each phase takes what the ones before gave and returns its figures;
the engine (``_engine``) keeps the caches and puts the figures into the run. Code that
runs the user's workload, or XLA on the user's program, runs inside :func:`user_phase`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autoplace.errors import ModelFileError, first_line
from autoplace.measurement import Status
from autoplace.measuring._placement import Placement, reduced_bytes
from autoplace.measuring._xla import (
    XLA_NAMES,
    bytes_accessed_of,
    compute_dtypes,
    flops_of,
    is_key,
    median_transfer,
    memory_limit,
    predicted_bytes,
)
from autoplace.units import size
from autoplace.workload import Workload, describe_exception, located


class ConfigFailure(Exception):
    """A failure that belongs to the configuration: ends the measurement with a status."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status: Status = status
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
    except ModelFileError as exc:  # the file broke autoplace's contract: bad input, not a status
        raise ModelFileError(located(exc, path)) from exc
    except Exception as exc:
        if _is_oom(exc):
            raise ConfigFailure("oom", f"out of memory while {what}: {first_line(exc)}") from exc
        raise ConfigFailure("error", f"{what} raised {describe_exception(exc, path)}") from exc


@dataclasses.dataclass(slots=True)
class FirstCall:
    """The seconds of an executable's first-ever call, set once by the call that made it."""

    seconds: float | None = None

    def record(self, seconds: float) -> float:
        """Keep ``seconds`` unless a first call was recorded already; return the kept one."""
        if self.seconds is None:
            self.seconds = seconds
        return self.seconds


@dataclasses.dataclass(frozen=True)
class Executable:
    """What one compile yields, cached with it: a configuration measured again reuses the
    executable and reports the figures of the compile that made it."""

    compiled: Any
    lower_s: float
    compile_s: float
    compute_dtypes: tuple[str, ...]
    flops: float | None
    predicted_bytes: int | None
    bytes_accessed: float | None = None
    #: Bytes each device all-reduces a step (several devices: the gradients).
    reduced_bytes: int = 0
    #: JAX's persistent compilation cache for this compile: ``off``, ``miss`` or ``hit``.
    cache: str = "off"
    #: The one figure set after the compile: kept in a small mutable holder so that the
    #: rest stays frozen. A reused executable's first call is not its first ever (that
    #: one may include lazy device set-up): the first ever is the one reported.
    first_call: FirstCall = dataclasses.field(default_factory=FirstCall)


def build(fn: Callable, width: int | None, precision: str, path: Path) -> tuple[Workload, float]:
    """Phase 1: the user's workload function called; the workload and the seconds it took."""
    t = time.perf_counter()
    with user_phase("building the workload", path):
        workload = fn(width, jnp.dtype(precision))
    if not isinstance(workload, Workload):
        raise ModelFileError(
            f"the workload function in {path} returned {type(workload).__name__}, not "
            "autoplace.Workload: end it with `return autoplace.Workload(state=..., step=..., "
            "make_batch=...)`"
        )
    held = not_numbers(workload.state)
    if held is not None:
        raise ModelFileError(
            f"the workload function in {path} returned a state holding {held}, which JAX cannot "
            "put on a device: the state is the arrays the step reads and updates (parameters, "
            "optimiser state); keep names and settings out of it (in the step's closure)"
        )
    return workload, time.perf_counter() - t


def not_numbers(tree: Any) -> str | None:
    """The first leaf of ``tree`` that is not an array of numbers (a ``str``, an object), in
    words with its path in the tree (``a str ('relu') at ['act']``); ``None``: every leaf is."""
    for where, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if isinstance(leaf, jax.Array) or np.asarray(leaf).dtype.kind not in "OSU":
            continue  # JAX's arrays (typed PRNG keys too), numpy's and Python's numbers
        if isinstance(leaf, np.ndarray):
            what = f"an array of {leaf.dtype}"
        else:
            text = repr(leaf)
            what = f"a {type(leaf).__name__} ({text if len(text) <= 40 else text[:37] + '...'})"
        at = jax.tree_util.keystr(where)
        return f"{what} at {at}" if at else what
    return None


def host_batch(workload: Workload, batch_size: int, seed: int, path: Path) -> Any:
    """A batch made by the workload, as numpy arrays on the host.

    Raises :class:`~autoplace.errors.ModelFileError` when ``make_batch`` breaks its
    contract (host arrays, leading axis the batch size): a batch already on a device
    would make the transfer time nothing, and a short one overstate samples/s.
    """
    with user_phase("making a batch", path):
        batch = workload.make_batch(batch_size, np.random.default_rng(seed))
    leaves = jax.tree.leaves(batch)
    if not leaves:
        raise ModelFileError(f"make_batch in {path} returned no arrays: return numpy arrays")
    if any(isinstance(leaf, jax.Array) for leaf in leaves):
        raise ModelFileError(
            f"make_batch in {path} returned JAX arrays: return numpy arrays (host memory), "
            "so that autoplace times putting them on the device (np.asarray(x) converts)"
        )
    held = not_numbers(batch)
    if held is not None:
        raise ModelFileError(
            f"make_batch({batch_size}, rng) in {path} returned {held}, not an array of numbers: "
            "a batch is numpy arrays of numbers whose leading axis is batch_size (labels as "
            "integers); return e.g. (rng.random((batch_size, n)).astype(dtype),)"
        )
    with user_phase("making a batch", path):
        batch = jax.tree.map(np.asarray, batch)
    wide = [leaf for leaf in jax.tree.leaves(batch) if leaf.dtype == np.float64]
    if wide and not jax.config.read("jax_enable_x64"):
        raise ModelFileError(
            f"make_batch in {path} returned float64 arrays (shape {wide[0].shape}), which JAX "
            "turns into float32 on the device (64-bit is off), so every step would time a "
            "conversion: return the dtype asked (x.astype(dtype)), or float32"
        )
    rows = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree.leaves(batch)}
    wrong = sorted(("a scalar" if r is None else f"{r} rows") for r in rows - {batch_size})
    if wrong:
        raise ModelFileError(
            f"make_batch({batch_size}, rng) in {path} returned an array of {' and '.join(wrong)}"
            f", not {batch_size}: every array of a batch has batch_size rows (leading axis)"
        )
    return batch


def transfer(
    workload: Workload, host: Any, placement: Placement, cap_s: float, path: Path
) -> tuple[Any, Any, float, float]:
    """Phase 2: the state and the batch ``host`` put where ``placement`` says; then the
    median seconds of putting the batch there again and again, and the seconds that timing
    took."""
    with user_phase("putting the state and a batch on the device", path):
        state = jax.block_until_ready(placement.put_state(workload.state))
        batch = jax.block_until_ready(jax.device_put(host, placement.batch))
        t = time.perf_counter()
        transfer_s = median_transfer(host, placement.batch, cap_s)
        return state, batch, transfer_s, time.perf_counter() - t


@dataclasses.dataclass(frozen=True)
class Lowered:
    """A step traced and lowered (phase 3), ready for XLA to compile."""

    lowered: Any
    lower_s: float
    compute_dtypes: tuple[str, ...]


def lower_step(
    workload: Workload, state: Any, batch: Any, path: Path, placement: Placement
) -> Lowered:
    """Phase 3: the step traced to a jaxpr and lowered to StableHLO, timed. Over several
    devices, jitted over its inputs' shardings (a training step's next state replicated);
    a step that cannot be split so fails here, with what JAX said."""
    train = workload.kind == "train"

    def step(state: Any, batch: Any) -> Any:
        return workload.step(state, batch)

    # A new function object per compile: JAX's tracing caches are keyed on the
    # function, so the trace and lowering timed below are never a cache hit,
    # while its caches stay warm for everything else (the user's eager build).
    donate = (0,) if train else ()
    jitted = jax.jit(step, donate_argnums=donate, out_shardings=placement.out_shardings(train))
    what = "tracing and lowering the step"
    if placement.several:
        what += f" split across {len(placement.devices)} devices (batch sharded, state replicated)"
    t = time.perf_counter()
    with user_phase(what, path):
        lowered = jitted.trace(state, batch).lower()
    lower_s = time.perf_counter() - t
    return Lowered(lowered, lower_s, compute_dtypes(lowered.as_text()))


def compile_lowered(
    lowered: Lowered,
    path: Path,
    compiles: Callable[[], int],
    cache_hits: Callable[[], int] | None = None,
) -> Executable:
    """Phases 4-5: XLA compiles the lowered step, and its analyses of the program.

    ``compiles()`` counts the compiles XLA has done in this thread (a load from the
    persistent cache does not count): one must happen here, or the step came from a
    persistent compilation cache. ``cache_hits()`` counts loads from the cache the engine
    keeps for a tune (``None``: it keeps none): a load from it is reported as such
    (:attr:`Executable.cache`), never as a fast compile; a load from any other cache (the
    model file turned JAX's on) is refused. Safe to call from several threads at once (XLA
    compiles outside Python's lock): the engine compiles a group's steps side by side.
    """
    compiles_before = compiles()
    hits_before = cache_hits() if cache_hits is not None else 0
    t = time.perf_counter()
    with user_phase("compiling the step", path):
        compiled = lowered.lowered.compile()
    compile_s = time.perf_counter() - t
    if compiles() == compiles_before:
        if cache_hits is None or cache_hits() == hits_before:
            raise ModelFileError(
                f"XLA served the step of {path} from a persistent compilation cache autoplace "
                "did not set, so its compile time would not be real: something turned JAX's "
                "cache on (jax_compilation_cache_dir or jax_enable_compilation_cache set by "
                "the model file?); remove that from the file"
            )
        cache = "hit"  # from the tune's own cache: reported as such, never as a compile
    else:
        cache = "off" if cache_hits is None else "miss"
    return Executable(
        compiled=compiled,
        lower_s=lowered.lower_s,
        compile_s=compile_s,
        compute_dtypes=lowered.compute_dtypes,
        flops=flops_of(compiled),
        predicted_bytes=predicted_bytes(compiled),
        bytes_accessed=bytes_accessed_of(compiled),
        reduced_bytes=reduced_bytes(compiled.as_text() or ""),
        cache=cache,
    )


def check_fits(executable: Executable, device: Any, max_memory: int | None) -> None:
    """Phase 5's verdict: a step XLA predicts over the memory limit is not run."""
    limit = memory_limit(device, max_memory)
    predicted = executable.predicted_bytes
    if predicted is not None and limit is not None and predicted > limit:
        raise ConfigFailure(
            "too_big",
            f"XLA predicts {size(predicted)}, over the {size(limit)} limit",
        )


def check_precision(
    state: Any, batch: Any, compute_dtypes: Sequence[str], precision: str, path: Path
) -> None:
    """Refuse a workload that ignores ``dtype``: asked for a lower precision, its state
    and batch hold no array of it and XLA computes in none of it, so the "bfloat16"
    configuration would measure the float32 model under another name (a model whose
    parameters stay float32 but computes in bfloat16, Flax's ``param_dtype``, passes)."""
    if precision == "float32":
        return
    floats = {
        str(x.dtype)
        for x in jax.tree.leaves((state, batch))
        if not is_key(x) and jnp.issubdtype(x.dtype, jnp.floating)
    }
    if precision in floats or XLA_NAMES[precision] in compute_dtypes:
        return
    held = ", ".join(sorted(floats)) or "no floats"
    raise ModelFileError(
        f"the workload function in {path} ignores dtype: asked for {precision}, its state and "
        f"batch hold {held} and XLA computes in {', '.join(compute_dtypes) or 'no dots'}, so "
        f"every precision measures one model: cast the parameters and inputs to dtype "
        "(the README's 'Model files'), or tune with --precisions float32"
    )


def check_next_state(state: Any, out: Any, path: Path) -> None:
    """A training step's output goes back in as the next state: refuse one whose structure,
    shapes or dtypes differ from the state's (JAX would stop the timed loop with a message
    cut at "There are 1 mismatches, including:")."""
    difference = _difference(state, out)
    if difference:
        raise ModelFileError(
            f"the training step in {path} returned {difference}: a training step "
            "(kind='train', the default) returns the next state, of the state's structure, "
            "shapes and dtypes; return it, or give kind='infer' to a step that returns "
            "predictions"
        )


def _difference(state: Any, out: Any) -> str | None:
    """How ``out`` differs from ``state`` (the first difference), in words; ``None``: alike."""
    if jax.tree.structure(state) != jax.tree.structure(out):  # type: ignore[operator]
        return f"{_brief(out)} where its state is {_brief(state)}"
    pairs = zip(jax.tree_util.tree_leaves_with_path(state), jax.tree.leaves(out), strict=True)
    for (where, a), b in pairs:
        if (np.shape(a), a.dtype) != (np.shape(b), b.dtype):
            return (
                f"{jax.tree_util.keystr(where) or 'its output'} as {b.dtype}{list(np.shape(b))} "
                f"where the state holds {a.dtype}{list(np.shape(a))}"
            )
    return None


def _brief(tree: Any) -> str:
    leaves = jax.tree.leaves(tree)
    if len(leaves) == 1 and jax.tree.structure(tree).num_nodes == 1:  # type: ignore[attr-defined]
        x = leaves[0]
        return f"one {getattr(x, 'dtype', type(x).__name__)} array of shape {list(np.shape(x))}"
    shown = str(jax.tree.structure(tree)).removeprefix("PyTreeDef(").removesuffix(")")
    return f"{len(leaves)} arrays as {shown if len(shown) <= 80 else shown[:77] + '...'}"


def first_call(executable: Executable, state: Any, batch: Any, path: Path) -> tuple[Any, float]:
    """Phase 6: one execution, the batch already on the device. Its output, and the
    seconds of the executable's first-ever call (this one, unless it was reused)."""
    t = time.perf_counter()
    with user_phase("running the first step", path):
        out = jax.block_until_ready(executable.compiled(state, batch))
    return out, executable.first_call.record(time.perf_counter() - t)
