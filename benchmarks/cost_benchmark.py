"""What a tune costs against measuring everything, and what its pick gives up (issue 38).

For each workload, in one run on one machine:

1. a **plain sweep**: every configuration of the tune's default space timed by the
   plain-loop reference (``remeasure.py``), each in a fresh process, ``--sweep-rounds``
   rounds of ``--sweep-seconds`` each, in turns; its cost is the processes' time less
   their start-up (importing JAX: the issue's "worker start-up excluded"), and its best
   configuration is the reference's best;
2. ``--tunes`` tunes with autoplace's defaults, each a fresh ``autoplace tune`` process into
   a study of its own, timed whole, and broken down by phase (``tune_costs.costs``:
   start-up, compile, search, the verdict's windows, ...);
3. each pick re-measured against the sweep's best by the plain loop, in turns, in fresh
   processes, ``--rounds`` rounds: the regret, ``1 - pick / best`` at the median of the
   rounds' ratios (0 when the pick is the best).

The figures: each tune's wall time over the sweep's cost (issue 38's targets: at most 35%
on every workload whose sweep takes 60 s or more, median at most 25%; the README MLP
within 15 s), and the regrets (median at most 1%, the worst 3%). From the repository root::

    python benchmarks/cost_benchmark.py --workloads resnet_bn,gnn,mlp,vgg,encoder --tunes 2

``--sweeps results/cost-….json`` reuses an earlier run's plain sweeps (they time the plain
loop only, not autoplace's code), so changed code is judged in the tunes' minutes alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import remeasure
import tomllib
from results_file import write_results
from tune_costs import costs, spent
from tune_runs import ROOT, run_tune

import autoplace

WORKLOADS = {
    "resnet_bn": ("benchmarks/unseen_workloads.py", "resnet_bn"),
    "gnn": ("benchmarks/unseen_workloads.py", "gnn"),
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
    "encoder": ("studies/nnx_encoder.py", "encoder"),
}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def key(c: dict[str, Any]) -> str:
    width = "" if c.get("width") is None else f"/{c['width']}"
    return f"{c['device']}/{c['batch_size']}/{c['precision']}{width}"


def plain_sweep(model: str, workload: str, rounds: int, seconds: float) -> dict[str, Any]:
    """Every configuration of the default space, by the plain loop (see the docstring)."""
    report = remeasure.sweep(
        ROOT / model,
        workload,
        sweep_rounds=rounds,
        sweep_settings=remeasure.TimingSettings(seconds=seconds, warmup_s=0.0),
        top=1,
        rounds=1,
        progress=lambda line: None,
    )
    quick = report.sweep
    spent = [
        (t.timing.process_s or 0.0) - (t.timing.import_s or 0.0)
        for t in quick.turns
        if t.timing.process_s is not None
    ]
    ranked = sorted(
        (s for s in quick.summaries if s.samples_per_s and not s.failures),
        key=lambda s: -(s.samples_per_s or 0.0),
    )
    return {
        "configurations": len(quick.configs),
        "cost_s": sum(spent),
        "best": ranked[0].config.key if ranked else None,
        "top": [(s.config.key, s.samples_per_s) for s in ranked[:8]],
    }


def regret(model: str, workload: str, pick: str, best: str, rounds: int) -> dict[str, Any]:
    """The pick against the sweep's best, re-measured in turns in fresh processes."""
    if pick == best:
        return {"regret": 0.0, "ratio": 1.0, "rounds": 0}
    report = remeasure.remeasure(
        ROOT / model,
        workload,
        [remeasure.Config.parse(pick), remeasure.Config.parse(best)],
        rounds=rounds,
        settings=remeasure.TimingSettings(seconds=1.0),
        progress=lambda line: None,
    )
    a, b = report.configs
    ratio = remeasure.compare(a, b, report.turns).median
    return {"regret": None if ratio is None else max(0.0, 1 - ratio), "ratio": ratio,
            "rounds": rounds}  # fmt: skip


def earlier_sweeps(path: Path | None) -> dict[str, dict[str, Any]]:
    """The plain sweeps of an earlier run's results file, by workload (none: ``{}``). A
    sweep times the plain loop only, so it does not depend on autoplace's code: a later run
    of changed code can compare its tunes with it. The machine's state is another matter,
    so each regret is still measured anew, beside the sweep's best."""
    if path is None:
        return {}
    rows = json.loads(path.read_text())["rows"]
    return {r["workload"]: r["sweep"] | {"from": path.name} for r in rows}


def bench(
    name: str, args: argparse.Namespace, folder: Path, sweeps: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    model, workload = WORKLOADS[name]
    if name in sweeps:
        sweep = sweeps[name]
        print(f"{name}: the plain sweep of {sweep['from']}", flush=True)
    else:
        print(f"{name}: plain sweep ({uptime()})", flush=True)
        sweep = plain_sweep(model, workload, args.sweep_rounds, args.sweep_seconds)
    print(f"{name}: sweep of {sweep['configurations']} cost {sweep['cost_s']:.0f} s, best "
          f"{sweep['best']}", flush=True)  # fmt: skip
    tunes = []
    for n in range(args.tunes):
        done = run_tune(None, model, workload, folder, f"{name}-{n}")
        row: dict[str, Any] = {"wall_s": done.wall_s, "uptime": uptime()}
        if done.error is None:
            rec = tomllib.loads(done.out.read_text())["recommendation"]
            row |= {"pick": key(rec), "phases": costs(done.db), "spent": spent(done.db)}
            if sweep["best"]:
                row |= regret(model, workload, row["pick"], sweep["best"], args.rounds)
        else:
            row["error"] = done.error
        row["share_of_sweep"] = done.wall_s / sweep["cost_s"] if sweep["cost_s"] else None
        tunes.append(row)
        print(f"{name} tune {n}: {done.wall_s:.1f} s ({row['share_of_sweep']:.0%} of the sweep), "
              f"pick {row.get('pick')}, regret {row.get('regret')}", flush=True)  # fmt: skip
    return {"workload": name, "sweep": sweep, "tunes": tunes}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    shares = [t["share_of_sweep"] for r in rows if r["sweep"]["cost_s"] >= 60 for t in r["tunes"]]
    regrets = [t["regret"] for r in rows for t in r["tunes"] if t.get("regret") is not None]
    return {
        "share_of_sweep_60s_plus": {
            "median": statistics.median(shares) if shares else None,
            "max": max(shares, default=None),
        },
        "regret": {
            "median": statistics.median(regrets) if regrets else None,
            "max": max(regrets, default=None),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=list(WORKLOADS))
    parser.add_argument("--tunes", type=int, default=2)
    parser.add_argument("--sweep-rounds", type=int, default=5)
    parser.add_argument("--sweep-seconds", type=float, default=0.15)
    parser.add_argument("--rounds", type=int, default=5, help="rounds a regret is judged in")
    parser.add_argument(
        "--sweeps", type=Path, default=None, help="an earlier run's results file: its sweeps"
    )
    args = parser.parse_args(argv)
    sweeps = earlier_sweeps(args.sweeps)
    started, load = uptime(), os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench(name, args, Path(tmp), sweeps) for name in args.workloads]
    body = {"rows": rows, "summary": summary(rows), "uptime": {"start": started, "end": uptime()},
            "load_at_start": load}  # fmt: skip
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("cost", devices, ROOT / "benchmarks" / "results", body)
    print(json.dumps(body["summary"], indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
