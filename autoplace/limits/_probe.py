"""The probe: time what each device can do at best. Runs in a fresh process of its own
(``python -m autoplace.limits._probe``), nothing else of autoplace's in it, and prints the
devices' limits as JSON on its last line.

Each figure is timed in ``windows`` windows of about ``seconds`` each, the calls back to
back and the device waited on at the end of the window (as a training loop runs): a
window's figure is its work over its wall time, and the limit is their median, with the
slowest and the fastest window as its spread.

* peak FLOP/s: ``a @ b`` of two ``n x n`` matrices in each precision, ``2n³`` FLOPs a call;
* memory bandwidth: ``x * 0.5 + 1`` over a 64 MiB float32 array, its buffer donated (no
  fresh memory mapped each call), 128 MiB read and written a call (larger than any
  cache);
* host-to-device: ``device_put`` of a 64 MiB host array, waited on;
* dispatch floor: ``x + 1`` of one float32, each call's output the next one's input;
* all-reduce, where a kind has several devices: the sum over all of them of a 64 MiB
  float32 array each holds, left on every device (the reduction of a data-parallel step's
  gradients), as bus bandwidth: ``2(n-1)/n`` of the bytes over the time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

#: Matrix side for the peak: big enough to fill a device, small enough to time quickly.
MATMUL_N = {"cpu": 1024, "gpu": 8192, "tpu": 8192}
#: Elements of the bandwidth array and of the transfer (float32: 64 MiB each).
COPY_ELEMENTS = 1 << 24
TRANSFER_ELEMENTS = 1 << 24


def _windows(call: Callable[[], Any], wait: Callable[[Any], Any], seconds: float, windows: int
             ) -> list[float]:  # fmt: skip
    """Seconds per call in each window (``call`` repeated back to back, waited on at the
    end of the window), after one call to warm up. A window makes as many calls as one
    waited-on call says fit in ``seconds``: JAX dispatches calls before they run, so a loop
    that stopped on the clock would queue far more work than the window holds."""
    wait(call())
    started = time.perf_counter()
    wait(call())
    calls = max(1, int(seconds / max(time.perf_counter() - started, 1e-7)))
    out = []
    for _ in range(windows):
        start = time.perf_counter()
        for _ in range(calls):
            result = call()
        wait(result)
        out.append((time.perf_counter() - start) / calls)
    return out


def _chain(f: Callable[[Any], Any], x: Any, seconds: float, windows: int) -> list[float]:
    """Seconds per call of ``f`` applied to its own output, back to back."""
    import jax

    state = {"x": jax.block_until_ready(f(x))}

    def call() -> Any:
        state["x"] = f(state["x"])
        return state["x"]

    return _windows(call, jax.block_until_ready, seconds, windows)


def device_limits(device: Any, seconds: float, windows: int) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from autoplace.config import PRECISIONS

    platform = "gpu" if device.platform in ("cuda", "rocm", "gpu") else device.platform
    n = MATMUL_N.get(platform, 1024)
    peak = {}
    with jax.default_device(device):
        for precision in PRECISIONS:
            a = jnp.asarray(np.random.default_rng(0).standard_normal((n, n)), precision)
            matmul = jax.jit(lambda x, a=a: (x @ a) * (1.0 / n))  # scaled: stays finite
            per_call = _chain(matmul, a, seconds, windows)
            peak[precision] = [2 * n**3 / s for s in per_call]
        x = jnp.ones((COPY_ELEMENTS,), jnp.float32)
        copy = jax.jit(lambda x: x * 0.5 + 1.0, donate_argnums=0)
        bandwidth = [2 * COPY_ELEMENTS * 4 / s for s in _chain(copy, x, seconds, windows)]
        del x
        host = np.ones((TRANSFER_ELEMENTS,), np.float32)
        put = _windows(lambda: jax.device_put(host, device), jax.block_until_ready,
                       seconds, windows)  # fmt: skip
        floor = _chain(jax.jit(lambda x: x + 1), jnp.zeros((), jnp.float32), seconds, windows)
    index = jax.devices(device.platform).index(device)
    return {
        "device": f"{platform}:{index}",
        "kind": device.device_kind,
        "peak_flops": peak,
        "matmul_size": n,
        "memory_bandwidth": bandwidth,
        "host_to_device": [host.nbytes / s for s in put],
        "dispatch_floor": floor,
    }


def all_reduce(devices: list[Any], seconds: float, windows: int) -> list[float]:
    """Bus bandwidth, bytes/s, of all-reducing a 64 MiB float32 array over ``devices``."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    n = len(devices)
    mesh = jax.make_mesh((n,), ("d",), devices=devices)
    x = jax.device_put(jnp.ones((n, COPY_ELEMENTS), jnp.float32),
                       NamedSharding(mesh, PartitionSpec("d")))  # fmt: skip
    total = jax.jit(lambda x: x.sum(0), out_shardings=NamedSharding(mesh, PartitionSpec()))
    per_call = _windows(lambda: total(x), jax.block_until_ready, seconds, windows)
    return [COPY_ELEMENTS * 4 * 2 * (n - 1) / n / s for s in per_call]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=0.25)
    parser.add_argument("--windows", type=int, default=5)
    args = parser.parse_args(argv)
    import jax

    every = list(jax.devices())
    if every[0].platform != "cpu":
        every.append(jax.devices("cpu")[0])
    # One device of each kind: identical devices have identical limits.
    devices = list({(d.platform, d.device_kind): d for d in reversed(every)}.values())[::-1]
    found = [device_limits(d, args.seconds, args.windows) for d in devices]
    group = jax.devices()
    if len(group) > 1:  # the first device of the kind speaks for the link between them
        found[0].update(all_reduce=all_reduce(group, args.seconds, args.windows),
                        all_reduce_devices=len(group))  # fmt: skip
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
