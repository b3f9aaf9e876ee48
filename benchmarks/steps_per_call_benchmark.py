"""Steps per call as a searched knob: what ``autoplace tune`` recommends, re-measured, and
what the knob costs where fusing cannot help.

1. **The recommended K, re-measured.** The README's tiny MNIST MLP at a batch size the user
   fixed (``--batch-sizes B --precisions float32``; 8, 32 and 128): one ``autoplace tune``
   each, in a fresh process; then the recommended K (or, where the tune kept one a call,
   the best K it tried) against K = 1 by ``benchmarks/remeasure.py``, the independent loop:
   each in a fresh process of its own, in turns, ``--rounds`` rounds, the order rotating, a
   fresh host batch put on the device every call. A claim holds when the re-measured ratio
   is above 1 in every round; a K kept at one a call is checked the same way (did it leave
   a gain the rounds show?).
2. **The cost of the knob.** Tunes with the defaults against tunes with ``--steps-per-call
   1`` (the knob off), in turns, ``--tunes`` each, on workloads whose pick has a small fixed
   cost (``mlp``, ``vgg``, ``lstm``, the whole batch range), and on the LSTM at a fixed batch
   of 64 (a batch that is fixed always has its steps per call timed, where a step long
   enough to hide its fixed cost pays one window). Reported: the K picked and the wall time
   against the knob off (median, min, max of the tunes paired in turn).

    python benchmarks/steps_per_call_benchmark.py
    python benchmarks/steps_per_call_benchmark.py --batches 32 --rounds 5 --tunes 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import remeasure
from results_file import write_results
from tune_runs import ROOT, WORKLOADS, run_tune

import autoplace
from autoplace import recommendation

#: The cost part's cases: (name, workload, options of the tune).
COST_CASES = (
    ("mlp", "mlp", ()),
    ("vgg", "vgg", ()),
    ("lstm", "lstm", ()),
    ("lstm@64", "lstm", ("--batch-sizes", "64", "--precisions", "float32")),
)


def uptime() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def recommended(out: Path) -> dict[str, Any]:
    """What a tune's file says about steps per call."""
    rec = recommendation.read(out)["recommendation"]
    fusing = rec.get("fusing") or {}
    return {
        "batch": rec["batch_size"],
        "precision": rec["precision"],
        "width": rec.get("width"),
        "steps_per_call": rec.get("steps_per_call", 1),
        "best_tried": fusing.get("best_tried"),
        "claim": {k: fusing.get(k) for k in ("ratio", "low", "high", "verdict", "windows")},
        "fixed_share": fusing.get("fixed_share"),
    }


def recommend_and_remeasure(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    rows = []
    model, workload = WORKLOADS["mlp"]
    for batch in args.batches:
        options = ("--batch-sizes", str(batch), "--precisions", "float32")
        run = run_tune(None, model, workload, folder, f"pick-{batch}", options)
        if run.error is not None:
            rows.append({"batch": batch, "error": run.error})
            print(f"batch {batch}: the tune failed: {run.error}", flush=True)
            continue
        found = recommended(run.out)
        k = found["steps_per_call"] if found["steps_per_call"] > 1 else found["best_tried"]
        row = {"batch": batch, "tune_wall_s": run.wall_s, **found, "remeasured": None}
        if k:
            configs = [
                remeasure.Config("cpu:0", batch, "float32", found["width"], steps_per_call=n)
                for n in (1, k)
            ]
            before = uptime()
            report = remeasure.remeasure(
                ROOT / model,
                workload,
                configs,
                rounds=args.rounds,
                settings=remeasure.TimingSettings(seconds=args.seconds, loop="fed"),
                progress=lambda line: print("  " + line, flush=True),
            )
            pair = remeasure.compare(configs[1], configs[0], report.turns)
            interval = pair.interval
            row["remeasured"] = {
                "k": k,
                "vs_k1": pair.median,
                "vs_k1_min": min(pair.ratios),
                "vs_k1_max": max(pair.ratios),
                "vs_k1_low": interval.low if interval else None,
                "vs_k1_high": interval.high if interval else None,
                "led_k1": pair.a_led,
                "rounds": len(pair.ratios),
                "uptime_before": before,
                "uptime_after": uptime(),
            }
        rows.append(row)
        again = row["remeasured"]
        print(
            f"batch {batch}: tune recommends K={found['steps_per_call']} "
            f"(best tried {found['best_tried']}: {json.dumps(found['claim'])}); "
            + (
                f"re-measured K={again['k']} vs 1: {again['vs_k1']:.2f}x "
                f"({again['vs_k1_min']:.2f}-{again['vs_k1_max']:.2f}, led "
                f"{again['led_k1']}/{again['rounds']})"
                if again
                else "no K timed"
            ),
            flush=True,
        )
    return rows


def cost(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    rows = []
    for name, key, options in COST_CASES:
        if args.cases and name not in args.cases:
            continue
        model, workload = WORKLOADS[key]
        runs: dict[str, list[Any]] = {"knob": [], "off": []}
        for n in range(args.tunes):
            order = ("knob", "off") if n % 2 == 0 else ("off", "knob")
            for variant in order:
                extra = options if variant == "knob" else (*options, "--steps-per-call", "1")
                run = run_tune(None, model, workload, folder, f"{name}-{variant}-{n}", extra)
                runs[variant].append(run)
                failed = "" if run.error is None else f" FAILED {run.error}"
                print(f"{name} {variant} {n}: {run.wall_s:.1f} s{failed}", flush=True)
        pairs = [
            k.wall_s / o.wall_s
            for k, o in zip(runs["knob"], runs["off"], strict=True)
            if k.error is None and o.error is None
        ]
        picks = [recommended(r.out) for r in runs["knob"] if r.error is None]
        row = {
            "case": name,
            "options": list(options),
            "wall_knob_s": [r.wall_s for r in runs["knob"]],
            "wall_off_s": [r.wall_s for r in runs["off"]],
            "cost_ratio": statistics.median(pairs) if pairs else None,
            "cost_ratio_min": min(pairs, default=None),
            "cost_ratio_max": max(pairs, default=None),
            "steps_per_call": [p["steps_per_call"] for p in picks],
            "timed": [p["best_tried"] is not None for p in picks],
            "claims": [p["claim"] for p in picks],
        }
        rows.append(row)
        print(f"{name}: K {row['steps_per_call']}, timed {row['timed']}, wall with the knob "
              f"{row['cost_ratio']:.2f}x without ({row['cost_ratio_min']:.2f}-"
              f"{row['cost_ratio_max']:.2f})", flush=True)  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    parser.add_argument("--batches", type=ints, default=[8, 32, 128])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--tunes", type=int, default=3)
    parser.add_argument("--cases", type=lambda s: s.split(","), default=None)
    parser.add_argument("--skip", choices=("pick", "cost"), default=None)
    args = parser.parse_args(argv)
    body: dict[str, Any] = {"uptime": {"start": uptime()}}
    with tempfile.TemporaryDirectory() as tmp:
        if args.skip != "pick":
            body["recommended"] = recommend_and_remeasure(args, Path(tmp))
        if args.skip != "cost":
            body["cost"] = cost(args, Path(tmp))
    body["uptime"]["end"] = uptime()
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("steps_per_call", devices, ROOT / "benchmarks" / "results", body)
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
