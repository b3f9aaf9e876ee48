"""Is a forked fresh worker as fresh as a started one?

The verdict's windows time each finalist in a fresh worker process. Those workers are
forked from a process that has imported JAX and nothing more
(``autoplace/measuring/_forkserver.py``), not started as new interpreters. A forked child
inherits its parent's address-space layout, where a new interpreter gets a random one.
Its XLA client, allocator arenas and caches are its own. If the layout mattered to a
step's time, forked workers would run at another speed than the user's training process,
or agree with each other more closely than new processes do, and the verdict would claim
more than it knows.

So, for each configuration, in ``--windows`` windows of ``measure_fresh``: one worker
forked and one started from scratch (forced by an environment variable of its own, which
changes nothing else), their timed loops in turns, the order alternating. Then:

* the ratio forked/started of their step times, per window, with its median and range.
  It is 1 if forking changes nothing;
* each kind's spread across windows (interquartile range over median). It is smaller for
  the forked workers if they share a layout that new processes do not;
* each kind's start-up, median.

Run from the repository root:  python benchmarks/fork_benchmark.py
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from results_file import write_results

import autoplace
from autoplace import Config, MeasureRequest, MeasureSettings
from autoplace.measuring._timing import relative_spread
from autoplace.workload import ModelFile

ROOT = Path(__file__).resolve().parent.parent
#: (model file, workload, batch size, precision): the examples at a batch a tune picks.
CASES = (
    ("studies/mnist_mlp.py", "mlp", 1024, "float32"),
    ("studies/vgg_predict.py", "vgg", 8, "float32"),
    ("studies/lstm_classifier.py", "lstm", 64, "float32"),
)
#: An environment variable nothing reads: a request carrying it is started from scratch.
STARTED = (("AUTOPLACE_FORK_BENCHMARK", "started"),)


def case(backend: Any, model: str, workload: str, batch: int, precision: str,
         windows: int, cap: float) -> dict[str, Any]:  # fmt: skip
    mf = ModelFile.at(ROOT / model)
    settings = MeasureSettings(time_cap_s=cap, fed_time_cap_s=0.0, transfer_cap_s=0.0,
                               deviation=False)  # fmt: skip
    forked = MeasureRequest(str(mf.path), mf.sha256, workload,
                            Config("cpu:0", batch, precision, None), settings)  # fmt: skip
    started = dataclasses.replace(forked, env=STARTED)
    backend.measure_together([forked])  # the compile, into the persistent cache
    rows = []
    for n in range(windows):
        pair = [forked, started] if n % 2 == 0 else [started, forked]
        ms = backend.measure_fresh(pair)
        f, s = (ms[0], ms[1]) if n % 2 == 0 else (ms[1], ms[0])
        if f.status != "ok" or s.status != "ok":
            rows.append({"error": f.reason or s.reason})
            continue
        rows.append({"forked_step_s": f.step_s, "started_step_s": s.step_s,
                     "forked_start_s": f.worker_start_s,
                     "started_start_s": s.worker_start_s})  # fmt: skip
        print(f"  window {n + 1}: forked {f.step_s * 1e3:.3f} ms, started "
              f"{s.step_s * 1e3:.3f} ms, ratio {f.step_s / s.step_s:.3f}", flush=True)  # fmt: skip
    ok = [r for r in rows if "error" not in r]
    ratios = [r["forked_step_s"] / r["started_step_s"] for r in ok]
    return {
        "case": f"{workload} batch={batch} {precision}",
        "windows": rows,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "forked_spread": relative_spread([r["forked_step_s"] for r in ok]),
        "started_spread": relative_spread([r["started_step_s"] for r in ok]),
        "forked_start_s": statistics.median(r["forked_start_s"] for r in ok) if ok else None,
        "started_start_s": statistics.median(r["started_start_s"] for r in ok) if ok else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--cap", type=float, default=0.5, help="timed seconds a loop")
    parser.add_argument(
        "--cases",
        type=lambda s: [tuple(c.split(":")) for c in s.split(",")],
        default=CASES,
        help="MODEL:WORKLOAD:BATCH:PRECISION,... (default: the examples)",
    )
    args = parser.parse_args(argv)

    def uptime() -> str:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    body: dict[str, Any] = {"uptime": {"start": uptime()}, "cases": []}
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
        for model, workload, batch, precision in args.cases:
            batch = int(batch)
            print(f"== {workload} batch={batch} {precision}", flush=True)
            found = case(backend, model, workload, batch, precision, args.windows, args.cap)
            body["cases"].append(found)
            print(f"  forked/started {found['ratio_median']:.3f} "
                  f"({found['ratio_range'][0]:.3f}-{found['ratio_range'][1]:.3f}); spread "
                  f"forked {found['forked_spread']:.1%}, started {found['started_spread']:.1%}; "
                  f"start {found['forked_start_s']:.2f} s against "
                  f"{found['started_start_s']:.2f} s", flush=True)  # fmt: skip
    body["uptime"]["end"] = uptime()
    path = write_results("fork", devices, ROOT / "benchmarks" / "results", body)
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
