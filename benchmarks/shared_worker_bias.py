"""Why the search's shared worker reads high: one configuration timed by the plain loop
(``remeasure.py``) in four kinds of process, in turns over rounds (issue 36).

- ``fresh``: a process that times only the configuration, as a user's training run is;
- ``after``: a process that first times ``--before`` configurations (1 s each), then
  the configuration, as the search's worker does;
- ``after_reset``: the same, with glibc's allocator told to start over before the
  configuration (``malloc_trim(0)``, then ``mallopt`` setting the mmap and trim thresholds
  back to their starting 128 KiB);
- ``fixed``: a fresh process whose thresholds are set to 128 KiB before anything runs
  (``mallopt`` also turns glibc's dynamic threshold off).

Each kind prints the configuration's samples/s, minor page faults per step and CPU time
per wall second. Glibc raises its mmap threshold to the size of each larger block freed
(up to 32 MiB), and its trim threshold to twice that: a process that has run a larger
batch keeps a smaller batch's buffers in its heap, where a fresh process maps and unmaps
them every step. If one of the resets made the shared worker's figure a fresh process's,
the search could be fixed where it runs.

From the repository root, with the venv active::

    python benchmarks/shared_worker_bias.py --rounds 4
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import remeasure
from results_file import write_results

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
KINDS = ("fresh", "after", "after_reset", "fixed")
MARK = "shared-worker-bias: "
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
START = 128 * 1024  # both thresholds' starting value


def _reset_allocator() -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim(0)
    libc.mallopt(M_MMAP_THRESHOLD, START)
    libc.mallopt(M_TRIM_THRESHOLD, START)


def _child(spec: dict) -> None:
    settings = remeasure.TimingSettings(seconds=spec["seconds"])

    def timing(config: str) -> dict:
        return remeasure._child_time(
            {
                "model": spec["model"],
                "workload": spec["workload"],
                "config": dataclasses.asdict(remeasure.Config.parse(config)),
                "settings": dataclasses.asdict(settings),
            }
        )

    kind = spec["kind"]
    if kind == "fixed":
        _reset_allocator()
    if kind in ("after", "after_reset"):
        for config in spec["before"]:
            timing(config)
        if kind == "after_reset":
            _reset_allocator()
    out = timing(spec["config"])
    print(MARK + json.dumps(out), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "studies" / "mnist_mlp.py"))
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--config", default="cpu:0/2048/float32/128")
    parser.add_argument(
        "--before",
        default="cpu:0/4096/float32/128,cpu:0/4096/bfloat16/128,cpu:0/256/float32/128",
        help="comma-separated configurations the shared worker times first",
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(json.loads(args.child))
        return 0
    load = os.getloadavg()
    rows: dict[str, list[dict]] = {k: [] for k in KINDS}
    for i in range(args.rounds):
        for kind in KINDS if i % 2 == 0 else KINDS[::-1]:
            spec = {
                "model": args.model,
                "workload": args.workload,
                "config": args.config,
                "before": args.before.split(","),
                "seconds": args.seconds,
                "kind": kind,
            }
            done = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps(spec)],
                capture_output=True,
                text=True,
            )
            lines = [x for x in done.stdout.splitlines() if x.startswith(MARK)]
            if not lines:
                print(f"{kind}: no result ({done.stderr.strip().splitlines()[-1:]})")
                continue
            t = json.loads(lines[-1][len(MARK) :])
            if t.get("status") != "ok":
                print(f"{kind}: {t.get('status')} {t.get('reason')}")
                continue
            rows[kind].append(t)
            print(
                f"round {i}  {kind:<11} {t['samples_per_s'] / 1e3:8.1f} k samples/s  "
                f"{t['minor_faults_per_step']:7.0f} faults/step  cpu {t['cpu_per_wall']:.2f}",
                flush=True,
            )
    summary = {}
    fresh = statistics.median(t["samples_per_s"] for t in rows["fresh"]) if rows["fresh"] else None
    for kind, ts in rows.items():
        if not ts:
            continue
        sps = [t["samples_per_s"] for t in ts]
        summary[kind] = {
            "samples_per_s": statistics.median(sps),
            "low": min(sps),
            "high": max(sps),
            "faults_per_step": statistics.median(t["minor_faults_per_step"] for t in ts),
            "to_fresh": statistics.median(sps) / fresh if fresh else None,
        }
        s = summary[kind]
        print(
            f"{kind:<11} median {s['samples_per_s'] / 1e3:7.1f} k ({s['low'] / 1e3:.1f}-"
            f"{s['high'] / 1e3:.1f} k), {s['faults_per_step']:.0f} faults/step"
            + (f", {s['to_fresh']:.2f}x fresh" if s["to_fresh"] else "")
        )
    import autoplace

    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    body = {"config": args.config, "before": args.before, "load_at_start": load,
            "load_at_end": os.getloadavg(), "summary": summary, "timings": rows}  # fmt: skip
    print(f"written to {write_results('shared_worker_bias', devices, RESULTS, body)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
