"""What a tune costs against measuring everything, what its pick gives up, and whether
what it claims holds minutes later (issue 48's targets).

For each workload, in one run on one otherwise idle machine:

1. a **plain sweep**: every configuration of the tune's default space timed by the plain
   loop (``remeasure.py``), each in a fresh process, ``--sweep-rounds`` short rounds in
   turns, then the best few in full rounds; its cost is the processes' time less their
   start-up (importing JAX), and its best configuration is the plain loop's best;
2. ``--tunes`` tunes with autoplace's defaults, each a fresh ``autoplace tune`` process
   into a study of its own, timed whole and broken down by phase (``tune_costs``);
3. minutes later, by the plain loop in turns in fresh processes (``--rounds`` rounds):
   each pick against the sweep's best (the regret, ``1 - pick / best`` at the median of
   the rounds' ratios); each claim of "faster" a tune made (contradicted where the other
   configuration runs faster at the median); each configuration a tune listed as not told
   apart from its pick, against the plain loop's best (listed more than 10% behind, where
   that loop's own spread between its rounds is 5% or less).

The targets (issue 48): on workloads whose sweep takes 60 s or more, the tune at most 25%
of the sweep at the median and 35% at most; regret median at most 1%, at most 5%; claims
contradicted at most 5%; at most 5 configurations listed beside a pick on a quiet machine,
each within 10% of the plain loop's best. From the repository root::

    python benchmarks/cost_benchmark.py --workloads eqx_cnn,eqx_gru,nnx_cnn,vae --tunes 2

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
from tune_runs import ROOT, WORKLOADS, run_tune

import autoplace

#: Workloads judged here beside the examples: the held-out models (heldout_models.py) and
#: the older unseen ones.
JUDGED = {
    **WORKLOADS,
    **{
        name: ("benchmarks/heldout_models.py", name)
        for name in ("eqx_cnn", "eqx_gru", "nnx_cnn", "vae")
    },
    "resnet_bn": ("benchmarks/unseen_workloads.py", "resnet_bn"),
    "gnn": ("benchmarks/unseen_workloads.py", "gnn"),
}
#: A listed configuration further behind the plain loop's best than this is listed wrongly,
#: where the plain loop's own spread between rounds is at most ``QUIET_SPREAD``.
LISTED_BEHIND, QUIET_SPREAD = 0.10, 0.05


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
        top=4,
        rounds=5,
        progress=lambda line: None,
    )
    spent_s = [
        (t.timing.process_s or 0.0) - (t.timing.import_s or 0.0)
        for t in (*report.sweep.turns, *report.final.turns)
        if t.timing.process_s is not None
    ]
    figures = {s.config.key: s.samples_per_s for s in report.sweep.summaries if s.samples_per_s}
    final = {s.config.key: s for s in report.final.summaries if s.samples_per_s}
    figures |= {k: s.samples_per_s for k, s in final.items()}
    return {
        "configurations": len(report.sweep.configs),
        "cost_s": sum(spent_s),
        "best": None if report.best is None else report.best.key,
        "figures": figures,
        "spread": {k: s.spread for k, s in final.items()},
    }


def ratio(model: str, workload: str, a: str, b: str, rounds: int) -> float | None:
    """``a``'s throughput over ``b``'s by the plain loop in turns (the rounds' median)."""
    if a == b:
        return 1.0
    report = remeasure.remeasure(
        ROOT / model,
        workload,
        [remeasure.Config.parse(a), remeasure.Config.parse(b)],
        rounds=rounds,
        settings=remeasure.TimingSettings(seconds=1.0),
        progress=lambda line: None,
    )
    x, y = report.configs
    return remeasure.compare(x, y, report.turns).median


def earlier_sweeps(path: Path | None) -> dict[str, dict[str, Any]]:
    """The plain sweeps of an earlier run's results file, by workload (none: ``{}``). A
    sweep times the plain loop only, so it does not depend on autoplace's code: a later run
    of changed code can compare its tunes with it. The machine's state is another matter,
    so each regret and claim is still measured anew."""
    if path is None:
        return {}
    rows = json.loads(path.read_text())["rows"]
    return {r["workload"]: r["sweep"] | {"from": path.name} for r in rows}


def described(doc: dict[str, Any]) -> dict[str, Any]:
    """A tune's file, as this benchmark judges it: its pick, its claims, its list."""
    rec = doc["recommendation"]
    compared = rec.get("finalists", [])
    return {
        "pick": key(rec),
        "claims": sorted({key(c) for c in compared if c.get("verdict") == "faster"}),
        "listed": sorted({key(c) for c in rec.get("equivalent", [])}),
        "busy": any(f["kind"] == "busy_machine" for f in doc.get("findings", [])),
    }


def bench(
    name: str, args: argparse.Namespace, folder: Path, sweeps: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    model, workload = JUDGED[name]
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
            row |= described(tomllib.loads(done.out.read_text()))
            row |= {"phases": costs(done.db), "spent": spent(done.db)}
        else:
            row["error"] = done.error
        row["share_of_sweep"] = done.wall_s / sweep["cost_s"] if sweep["cost_s"] else None
        tunes.append(row)
        print(f"{name} tune {n}: {done.wall_s:.1f} s ({row['share_of_sweep']:.0%} of the sweep), "
              f"pick {row.get('pick')}, claims {row.get('claims')}, listed "
              f"{len(row.get('listed', []))}", flush=True)  # fmt: skip
    # Minutes later, the plain loop judges every pick, claim and list.
    best, seen = sweep["best"], {}
    for row in (r for r in tunes if "pick" in r and best):
        pair = (row["pick"], best)
        seen.setdefault(pair, ratio(model, workload, *pair, args.rounds))
        r = seen[pair]
        row["regret"] = None if r is None else max(0.0, 1 - r)
        row["claims_checked"] = []
        for other in row["claims"]:
            pair = (row["pick"], other)
            seen.setdefault(pair, ratio(model, workload, *pair, args.rounds))
            row["claims_checked"].append({"other": other, "ratio": seen[pair]})
        top, spread = sweep["figures"].get(best), sweep.get("spread", {}).get(best)
        quiet = spread is not None and spread <= 2 * QUIET_SPREAD  # (high - low) / median
        row["listed_behind"] = [
            k for k in row["listed"]
            if quiet and top and (f := sweep["figures"].get(k)) and f < top * (1 - LISTED_BEHIND)
        ]  # fmt: skip
        print(f"  {name}: regret {row['regret']}, claims {row['claims_checked']}, listed "
              f"behind {row['listed_behind']}", flush=True)  # fmt: skip
    return {"workload": name, "sweep": sweep, "tunes": tunes}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets' figures over every workload's tunes."""
    tunes = [t for r in rows for t in r["tunes"]]
    shares = [t["share_of_sweep"] for r in rows if r["sweep"]["cost_s"] >= 60 for t in r["tunes"]]
    regrets = [t["regret"] for t in tunes if t.get("regret") is not None]
    claims = [c for t in tunes for c in t.get("claims_checked", []) if c["ratio"] is not None]
    quiet = [t for t in tunes if "listed" in t and not t["busy"]]
    return {
        "share_of_sweep_60s_plus": {
            "median": statistics.median(shares) if shares else None,
            "max": max(shares, default=None),
        },
        "regret": {
            "median": statistics.median(regrets) if regrets else None,
            "max": max(regrets, default=None),
        },
        "claims": {"made": len(claims), "contradicted": sum(c["ratio"] < 1 for c in claims)},
        "listed_quiet": {
            "most": max((len(t["listed"]) for t in quiet), default=None),
            "behind": sum(len(t.get("listed_behind", [])) for t in quiet),
            "of": sum(len(t["listed"]) for t in quiet),
        },
        "busy_tunes": sum(1 for t in tunes if t.get("busy")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=["eqx_cnn"])
    parser.add_argument("--tunes", type=int, default=2)
    parser.add_argument("--sweep-rounds", type=int, default=3)
    parser.add_argument("--sweep-seconds", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=5, help="rounds a ratio is judged in")
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
