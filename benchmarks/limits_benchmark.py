"""Are the measured limits right? ``autoplace limits`` beside an independent reference.

In ``--rounds`` rounds, the order alternating: autoplace's probe (a fresh process, JAX)
measures this machine's limits anew (``LimitsRequest(refresh=True)``, a throw-away cache),
and a fresh process of the reference times the same two things without JAX: a float32
``n x n`` matrix product with NumPy (its BLAS) and a 64 MiB elementwise ``x * 0.5 + 1``
into a buffer allocated once (128 MiB read and written a call), each in windows of the
same length, their median kept. The figures: each limit per round, and autoplace's over
the reference's (its median over rounds, and the range).

    python benchmarks/limits_benchmark.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from results_file import write_results

import autoplace
from autoplace.host import Cache
from autoplace.limits import LimitsRequest, machine_limits

ROOT = Path(__file__).resolve().parent.parent

REFERENCE = r"""
import json, sys, time, statistics
import numpy as np
n, seconds, windows = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

def per_call(call):
    call()
    out = []
    for _ in range(windows):
        k, start = 0, time.perf_counter()
        while True:
            call(); k += 1
            if time.perf_counter() - start >= seconds:
                break
        out.append((time.perf_counter() - start) / k)
    return statistics.median(out)

rng = np.random.default_rng(0)
a = rng.standard_normal((n, n)).astype(np.float32)
b = rng.standard_normal((n, n)).astype(np.float32)
c = np.empty_like(a)
flops = 2 * n**3 / per_call(lambda: np.matmul(a, b, out=c))
x = np.ones(1 << 24, np.float32)
y = np.empty_like(x)
def copy():
    np.multiply(x, 0.5, out=y)
    np.add(y, 1.0, out=y)
# two passes over y: x read, y written, y read and written again: 4 x 64 MiB a call
bandwidth = 4 * x.nbytes / per_call(copy)
print(json.dumps({"matmul_flops": flops, "copy_bandwidth": bandwidth}))
"""


def uptime() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def reference(n: int, seconds: float, windows: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", REFERENCE, str(n), str(seconds), str(windows)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe(seconds: float, windows: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        limits = machine_limits(
            LimitsRequest(refresh=True, seconds=seconds, windows=windows), cache=Cache(tmp)
        )
    cpu = limits.of("cpu:0")
    return {
        "peak_flops": {p: f.as_dict() for p, f in cpu.peak_flops.items()},
        "matmul_size": cpu.matmul_size,
        "memory_bandwidth": cpu.memory_bandwidth.as_dict(),
        "host_to_device": cpu.host_to_device.as_dict(),
        "dispatch_floor": cpu.dispatch_floor.as_dict(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.25)
    parser.add_argument("--windows", type=int, default=5)
    args = parser.parse_args(argv)
    started = uptime()
    rounds = []
    for r in range(args.rounds):
        row: dict[str, Any] = {"round": r, "uptime": uptime()}
        order = ("autoplace", "reference") if r % 2 == 0 else ("reference", "autoplace")
        for who in order:
            t = time.perf_counter()
            if who == "autoplace":
                row["autoplace"] = probe(args.seconds, args.windows)
                n = row["autoplace"]["matmul_size"]
            else:
                row["reference"] = reference(1024, args.seconds, args.windows)
            row[f"{who}_wall_s"] = time.perf_counter() - t
        mine, ref = row["autoplace"], row["reference"]
        row["flops_ratio"] = mine["peak_flops"]["float32"]["median"] / ref["matmul_flops"]
        row["bandwidth_ratio"] = mine["memory_bandwidth"]["median"] / ref["copy_bandwidth"]
        said = {k: row[k] for k in ("round", "flops_ratio", "bandwidth_ratio")}
        print(f"{json.dumps(said)}  (n={n})", flush=True)
        rounds.append(row)

    def spread(key: str) -> dict[str, float]:
        values = [r[key] for r in rounds]
        return {"median": statistics.median(values), "low": min(values), "high": max(values)}

    body = {
        "rounds": rounds,
        "summary": {
            "flops_ratio": spread("flops_ratio"),
            "bandwidth_ratio": spread("bandwidth_ratio"),
        },
        "uptime": {"start": started, "end": uptime()},
    }
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("limits", devices, ROOT / "benchmarks" / "results", body)
    print(json.dumps(body["summary"], indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
