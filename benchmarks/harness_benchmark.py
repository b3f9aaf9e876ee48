"""How accurate and how cheap is autoplace's measurement harness?

For each example workload, at one configuration (float32, its default width):

1. accuracy: the core's steady-state ``step_s`` against a minimal, independent
   timing loop of the same jitted step: a Python process of its own that imports
   the model file by itself, jits the step (donating the state for training, as
   the core does), and, each time it is asked, warms up and times chunks of steps
   ended by ``block_until_ready``. Core and minimal loop alternate (B A B A ...,
   about 1 s each), a round being one of each; the median over rounds of their
   ratio within a round is reported, where drift between rounds cancels, with its
   90% confidence interval (sign test) (target: within 5%).
2. overhead: with a warm worker (workload built, step compiled), each measurement's
   wall time minus its timed loops and float32 reference (and minus lowering,
   compile and first call where the worker did not reuse the executable): what the
   harness itself costs per measurement (target: at most 0.5 s).

Run from the repository root:  python benchmarks/harness_benchmark.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

from results_file import write_results

import autoplace
from autoplace.tuning import lower_bound

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "mlp": ("studies/mnist_mlp.py", "mlp", 256),
    "mlp_wide": ("studies/mnist_mlp.py", "mlp_wide", 256),
    "vgg": ("studies/vgg_predict.py", "vgg", 32),
    "lstm": ("studies/lstm_classifier.py", "lstm", 64),
    "classify": ("studies/single_image.py", "classify", 1),
}

MINIMAL_LOOP = textwrap.dedent(
    """
    import importlib.util, statistics, sys, time
    import jax, jax.numpy as jnp, numpy as np
    path, name, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = importlib.util.spec_from_file_location("model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name)
    w = fn(fn.__autoplace_workload__.default_width, jnp.float32)
    train = w.kind == "train"
    x = jax.device_put(w.make_batch(batch, np.random.default_rng(0)))
    state = jax.device_put(w.state, may_alias=False)
    step = jax.jit(w.step, donate_argnums=(0,) if train else ())
    out = step(state, x)
    state = out if train else state
    print("ready", flush=True)
    for _ in sys.stdin:  # one timing per line read
        for _ in range(5):
            out = step(state, x)
            state = out if train else state
        jax.block_until_ready(out)
        t = time.perf_counter(); out = step(state, x); state = out if train else state
        jax.block_until_ready(out); one = time.perf_counter() - t
        k = max(1, int(0.05 / max(one, 1e-7)))
        samples = []
        start = time.perf_counter()
        while len(samples) < 5 or (time.perf_counter() - start < 1.0 and len(samples) < 40):
            t = time.perf_counter()
            for _ in range(k):
                out = step(state, x)
                state = out if train else state
            jax.block_until_ready(out)
            samples.append((time.perf_counter() - t) / k)
        print(statistics.median(samples), flush=True)
    """
)


class MinimalLoop:
    """The minimal timing loop, in a process of its own that stays up between rounds
    (so the two loops alternate at the pace of their timings, not of process start-up):
    ``time()`` warms up with 5 steps and returns the median of its chunks."""

    def __init__(self, path: str, name: str, batch: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MINIMAL_LOOP, str(ROOT / path), name, str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._read()

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the minimal loop exited with {self.proc.wait()}")
        return line

    def time(self) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return float(self._read())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def median_interval(values: list[float], alpha: float = 0.05) -> tuple[float, float]:
    """A two-sided ``1 - 2 * alpha`` confidence interval for the median of ``values``,
    from the sign test (distribution-free), as the tuner compares finalists."""
    low = lower_bound(values, alpha)
    high = -lower_bound([-v for v in values], alpha)
    return low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    results = []
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
        for key in args.cases.split(","):
            path, name, batch = CASES[key]

            def core(
                path: str = path, name: str = name, batch: int = batch
            ) -> autoplace.Measurement:
                return autoplace.measure(
                    ROOT / path,
                    workload=name,
                    batch_size=batch,
                    backend=backend,
                    settings=autoplace.MeasureSettings(deviation=False),
                )

            core()  # build once, so every timed round runs with a warm worker
            loop = MinimalLoop(path, name, batch)
            core_steps, minimal_steps, overheads = [], [], []
            for _ in range(args.rounds):
                minimal_steps.append(loop.time())
                m = core()
                assert m.status == "ok", m.reason
                core_steps.append(m.step_s)
                # A reused executable spent no lowering or compile here, and its
                # first_call_s is the first-ever call's: count none of them as spent
                # (this run's first call, one step, then counts as overhead).
                compiled = 0.0 if m.compile_cached else m.lower_s + m.compile_s + m.first_call_s
                accounted = compiled + m.timing_s
                overheads.append(m.wall_s - accounted - (m.reference_s or 0.0))
            loop.close()
            per_round = [c / m for c, m in zip(core_steps, minimal_steps, strict=True)]
            ratio = statistics.median(per_round)
            low, high = median_interval(per_round)
            row = {
                "case": key,
                "config": f"batch {batch}, float32",
                "core_step_s": core_steps,
                "minimal_step_s": minimal_steps,
                "ratio_core_to_minimal": ratio,
                "ratio_per_round": per_round,
                "ratio_interval_90": [low, high],
                "overhead_s": overheads,
                "median_overhead_s": statistics.median(overheads),
            }
            results.append(row)
            print(
                f"{key:9} core {statistics.median(core_steps) * 1e3:8.3f} ms  minimal "
                f"{statistics.median(minimal_steps) * 1e3:8.3f} ms  ratio {ratio:5.3f} "
                f"(90% interval {low:5.3f}-{high:5.3f})  "
                f"overhead {row['median_overhead_s']:.3f} s "
                f"(max {max(overheads):.3f})",
                flush=True,
            )
    summary = {
        "max_abs_ratio_error": max(abs(r["ratio_core_to_minimal"] - 1) for r in results),
        "median_overhead_s": statistics.median(r["median_overhead_s"] for r in results),
        "max_median_overhead_s": max(r["median_overhead_s"] for r in results),
    }
    out = write_results("harness", devices, args.out, {"summary": summary, "cases": results})
    print(f"summary: {json.dumps(summary)}\nwritten to {out}")


if __name__ == "__main__":
    main()
