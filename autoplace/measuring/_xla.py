"""What JAX and XLA tell about a program and a device: dtypes, FLOPs, memory, names."""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autoplace.config import PRECISIONS
from autoplace.devices import canonical_platform

#: How XLA's lowered programs name each precision's element type (``compute_dtypes``).
XLA_NAMES = dict(zip(PRECISIONS, ("f32", "bf16", "f16"), strict=True))

_DOT_RE = re.compile(
    r"stablehlo\.(?:dot_general|dot|convolution)\b.*->\s*tensor<(?:[0-9?]+x)*([a-z0-9]+)>"
)


def compute_dtypes(stablehlo_text: str) -> tuple[str, ...]:
    """Element types of the dot/convolution results in a lowered program, sorted."""
    return tuple(sorted(set(_DOT_RE.findall(stablehlo_text))))


def is_key(x: Any) -> bool:
    """Whether ``x`` is a typed PRNG key array (``jax.random.key``): NumPy cannot hold one,
    and it is no figure to compare or check for NaN (its bits are what they are)."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def tree_bytes(tree: Any) -> int:
    """Bytes of a pytree's arrays (a typed key array counts its key data), on the host or a
    device."""
    # ``nbytes`` of an array on a device is its shape's: nothing is copied to the host.
    leaves = jax.tree.leaves(tree)
    return int(sum(x.nbytes if hasattr(x, "nbytes") else np.asarray(x).nbytes for x in leaves))


def relative_deviation(out: Any, ref: Any) -> float | None:
    """Relative L2 distance between two output pytrees (float leaves only: typed PRNG
    keys, integers and booleans are not compared)."""
    a_leaves, b_leaves = jax.tree.leaves(out), jax.tree.leaves(ref)
    if len(a_leaves) != len(b_leaves):
        return None
    num = den = 0.0
    compared = 0
    for a, b in zip(a_leaves, b_leaves, strict=True):
        if is_key(a) or is_key(b):
            continue
        a64 = np.asarray(a).astype(np.float64)
        b64 = np.asarray(b).astype(np.float64)
        if a64.shape != b64.shape or not np.issubdtype(np.asarray(b).dtype, np.inexact):
            continue
        compared += 1
        num += float(np.sum((a64 - b64) ** 2))
        den += float(np.sum(b64**2))
    if not compared or not (math.isfinite(num) and math.isfinite(den)):
        return None  # a NaN output is not "0% from float32": nothing to compare
    if den == 0.0:
        return 0.0 if num == 0.0 else None
    return math.sqrt(num / den)


def platform_of(d: Any) -> str:
    return canonical_platform(d.platform)


def all_devices() -> list[Any]:
    devices = list(jax.devices())
    if devices[0].platform != "cpu":
        devices += jax.devices("cpu")
    return devices


def device_name(d: Any) -> str:
    """``platform:index``, the index counting devices of that platform from 0."""
    return f"{platform_of(d)}:{jax.devices(d.platform).index(d)}"


def median_transfer(host_batch: Any, device: Any, cap_s: float) -> float:
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (len(times) < 30 and time.perf_counter() - start < cap_s):
        t = time.perf_counter()
        jax.block_until_ready(jax.device_put(host_batch, device))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _cost(compiled: Any, figure: str) -> float | None:
    """One figure of XLA's cost analysis of ``compiled`` (``None`` where it gives none)."""
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax returned one dict per program
        analysis = analysis[0] if analysis else None
    if not analysis or figure not in analysis:
        return None
    return float(analysis[figure])


def flops_of(compiled: Any) -> float | None:
    return _cost(compiled, "flops")


def bytes_accessed_of(compiled: Any) -> float | None:
    """Bytes one call reads and writes: with the FLOPs, a step's arithmetic intensity on
    the roofline."""
    return _cost(compiled, "bytes accessed")


def predicted_bytes(compiled: Any) -> int | None:
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


def memory_limit(device: Any, max_memory: int | None) -> int | None:
    limits = [m for m in (max_memory, device_memory(device)) if m is not None]
    return min(limits) if limits else None


def device_memory(device: Any) -> int | None:
    if device.platform == "cpu":
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    stats = device.memory_stats()
    return int(stats["bytes_limit"]) if stats and "bytes_limit" in stats else None


def memory_in_use(device: Any) -> tuple[int | None, int | None]:
    """The device's high-water mark of memory in use since the process started, and the
    bytes in use now, as it reports them (``None`` where it does not: a CPU)."""
    stats = device.memory_stats() if device.platform != "cpu" else None
    if not stats:
        return None, None
    figures = (stats.get("peak_bytes_in_use"), stats.get("bytes_in_use"))
    return tuple(None if f is None else int(f) for f in figures)  # type: ignore[return-value]


def all_finite(tree: Any) -> bool:
    """Checked on the host: a device-side check would compile a kernel per leaf shape. Only
    float leaves can be NaN or inf (not integers, nor typed PRNG keys)."""
    leaves = [
        x
        for x in jax.tree.leaves(tree)
        if not is_key(x) and jnp.issubdtype(getattr(x, "dtype", None) or type(x), jnp.inexact)
    ]
    return all(bool(np.isfinite(np.asarray(x, dtype=np.float32)).all()) for x in leaves)
