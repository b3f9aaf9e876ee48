"""Steps per call on the seeds' tiny MLP: K steps in one jitted call against one a call.

The README's tiny MNIST MLP (784 -> 128 -> 10, SGD with momentum, float32) trains at a
batch size the user fixed: 8, 32 and 128. At each, K steps per call (a ``lax.scan`` over
K stacked batches, one host-to-device transfer a call) is timed against K = 1 by
``benchmarks/remeasure.py``, the independent loop: each configuration in a fresh process
of its own, in turns, ``--rounds`` rounds, the order rotating, a fresh host batch put on
the device every call (the loop autoplace's throughput objective scores). Each K's
throughput is compared with K = 1's within rounds (drift cancels), as the median ratio
with its sign-test interval and the rounds it led.

    python benchmarks/fuse_benchmark.py                  # batches 8, 32, 128; K 1, 4, 16, 64
    python benchmarks/fuse_benchmark.py --batches 32 --ks 1,16 --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import remeasure
from results_file import write_results

import autoplace

ROOT = Path(__file__).resolve().parent.parent


def uptime() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def bench(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    for batch in args.batches:
        configs = [
            remeasure.Config("cpu:0", batch, "float32", args.width, steps_per_call=k)
            for k in args.ks
        ]
        before = uptime()
        report = remeasure.remeasure(
            ROOT / "studies" / "mnist_mlp.py",
            "mlp",
            configs,
            rounds=args.rounds,
            settings=remeasure.TimingSettings(seconds=args.seconds, loop="fed"),
            progress=lambda line: print("  " + line, flush=True),
        )
        summaries = {s.config: s for s in remeasure.summarise(report.configs, report.turns)}
        base = report.configs[0]
        row = {"batch": batch, "uptime_before": before, "uptime_after": uptime(), "ks": []}
        for c in report.configs:
            s = summaries[c]
            pair = remeasure.compare(c, base, report.turns)
            interval = pair.interval
            row["ks"].append(
                {
                    "steps_per_call": c.steps_per_call,
                    "samples_per_s": s.samples_per_s,
                    "low": s.low,
                    "high": s.high,
                    "vs_k1": pair.median,
                    "vs_k1_low": interval.low if interval else None,
                    "vs_k1_high": interval.high if interval else None,
                    "led_k1": pair.a_led,
                    "rounds": len(pair.ratios),
                    "minor_faults_per_step": [
                        t.timing.minor_faults_per_step for t in report.turns if t.config == c
                    ],
                }
            )
        rows.append(row)
        for k in row["ks"]:
            vs = "" if k["steps_per_call"] == 1 else (
                f"  {k['vs_k1']:.2f}x K=1 ({k['vs_k1_low']:.2f}-{k['vs_k1_high']:.2f}, "
                f"led {k['led_k1']}/{k['rounds']})"
            )  # fmt: skip
            print(f"batch {batch} K={k['steps_per_call']}: "
                  f"{remeasure.rate(k['samples_per_s'])} samples/s{vs}", flush=True)  # fmt: skip
    return {"rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=lambda s: [int(v) for v in s.split(",")],
                        default=[8, 32, 128])  # fmt: skip
    parser.add_argument("--ks", type=lambda s: [int(v) for v in s.split(",")],
                        default=[1, 4, 16, 64])  # fmt: skip
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    if args.ks[0] != 1:
        parser.error("--ks must start with 1: every K is compared with one step a call")
    started = uptime()
    body = bench(args)
    body["uptime"] = {"start": started, "end": uptime()}
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("fuse", devices, ROOT / "benchmarks" / "results", body)
    ratios = {r["batch"]: {k["steps_per_call"]: k["vs_k1"] for k in r["ks"]} for r in body["rows"]}
    print(json.dumps(ratios))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
