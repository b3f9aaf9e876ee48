"""Does a configuration's step run slow right after a much larger one's, in the same
process, and does settling for a share of that turn undo it? (issue 36)

The search times a group's configurations in one shared worker, their chunks taking
turns. This script builds one workload at three batch sizes in one process, as the
worker does, with a plain loop (a fresh host batch put each step, as
``remeasure.py`` does; none of autoplace's measuring code), and times chunks of the
small batch in three places, in turns over rounds:

- ``after_large``: right after one step of the large batch, with the 0.03 s of its own
  steps a turn settles for (``MeasureSettings.settle_s``);
- ``after_large_settled``: right after one step of the large batch, having run its own
  steps for ``SETTLE_SHARE`` of that step's seconds first
  (``autoplace.measuring._timing``);
- ``after_middle``: right after a 0.05 s turn of the middle batch, with the 0.03 s.

From the repository root, with the venv active::

    python benchmarks/neighbour_benchmark.py --model studies/nnx_encoder.py \\
        --workload encoder --small 32 --middle 16 --large 4096
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import remeasure
from results_file import write_results

import autoplace
from autoplace.measuring._timing import SETTLE_SHARE

RESULTS = Path(__file__).resolve().parent / "results"
SETTLE_S = autoplace.MeasureSettings().settle_s


def _workload(model: str, name: str) -> tuple[Any, int | None]:
    """The workload function and its default width, as ``remeasure.py`` finds them."""
    fn, facts = remeasure._find_workload(remeasure._load_module(Path(model)), name)
    return fn, facts["default_width"]


def loop(fn: Any, width: int | None, batch: int) -> Any:
    """A plain loop of ``batch``: ``run(k)`` runs k steps, each on a host batch put
    afresh, blocks, and returns its seconds."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    w = fn(width, jnp.float32)
    train = w.kind == "train"
    rng = np.random.default_rng(0)
    hosts = [w.make_batch(batch, rng) for _ in range(2)]
    step = jax.jit(w.step, donate_argnums=(0,) if train else ())
    held = {"state": jax.device_put(w.state)}

    def run(k: int) -> float:
        t = time.perf_counter()
        out = None
        for i in range(k):
            out = step(held["state"], jax.device_put(hosts[i % 2]))
            if train:
                held["state"] = out
        jax.block_until_ready(out)
        return time.perf_counter() - t

    run(3)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="studies/nnx_encoder.py")
    parser.add_argument("--workload", default="encoder")
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--small", type=int, default=32)
    parser.add_argument("--middle", type=int, default=16)
    parser.add_argument("--large", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--chunk-s", type=float, default=0.1)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    fn, default_width = _workload(args.model, args.workload)
    width = args.width if args.width is not None else default_width
    small, middle, large = (loop(fn, width, b) for b in (args.small, args.middle, args.large))
    per_step = statistics.median(small(1) for _ in range(5))
    k = max(1, round(args.chunk_s / per_step))
    own = max(1, round(SETTLE_S / per_step))
    rows: dict[str, list[float]] = {"after_large": [], "after_large_settled": [],
                                    "after_middle": []}  # fmt: skip
    large_s = []
    for _ in range(args.rounds):
        large_s.append(large(1))
        small(own)
        rows["after_large"].append(small(k) / k)
        seconds = large(1)
        large_s.append(seconds)
        small(max(own, round(SETTLE_SHARE * seconds / per_step)))
        rows["after_large_settled"].append(small(k) / k)
        middle(max(1, round(args.chunk_s / per_step)))
        small(own)
        rows["after_middle"].append(small(k) / k)
    summary = {
        name: {
            "median_ms": statistics.median(v) * 1e3,
            "low_ms": min(v) * 1e3,
            "high_ms": max(v) * 1e3,
        }
        for name, v in rows.items()
    }
    large_step = statistics.median(large_s)
    print(f"batch {args.small} after batch {args.large} ({large_step:.2f} s a step) or batch "
          f"{args.middle}; chunks of {k} steps, {args.rounds} rounds")  # fmt: skip
    for name, s in summary.items():
        print(
            f"  {name:<20} {s['median_ms']:6.1f} ms a step ({s['low_ms']:.1f}-{s['high_ms']:.1f})"
        )
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    body = {"model": args.model, "workload": args.workload, "small": args.small,
            "middle": args.middle, "large": args.large, "large_step_s": large_s,
            "chunk_steps": k, "settle_share": SETTLE_SHARE, "summary": summary,
            "seconds_per_step": rows, "load_at_start": load,
            "load_at_end": os.getloadavg()}  # fmt: skip
    print(f"written to {write_results('neighbour', devices, RESULTS, body)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
