"""Does ``autoplace tune`` find the best configuration at a fraction of the cost of trying all?

For each example workload, in ONE run on one machine:

a. an exhaustive grid over the workload's default space: every configuration
   measured by the core at its default settings, one after another in one warm
   worker, timed (the float32 comparison is off: it is not a timing). Its best,
   re-measured, is the reference for regret;
a'. the same grid at the search's quick settings (``tune`` with the ``Grid``
   strategy and no confirmation), timed: the cheapest exhaustive alternative;
b. ``tune`` with its defaults, several times (the seed is the measurement data
   seed; runs also differ by timing noise), each timed, with a fresh worker each;
c. the rules people use today, applied to the same space using the grid's
   knowledge of what fits:
   - lightning: Lightning's batch-size finder: float32 on the default device,
     doubling the batch from the smallest until it no longer fits;
   - accelerate: Accelerate's ``find_executable_batch_size``: start at 128 and
     shrink until it fits (here: the largest batch <= 128 in the space that fits);
   - naive: batch 32, float32, the default device;
d. every chosen configuration (both grids' bests, each tune pick, each heuristic) is
   measured again, interleaved, to cancel drift: ``--rounds`` rounds, each one
   ``measure_together`` call whose timed loops take turns chunk by chunk (A B C
   A B C ..., about 50 ms a turn) for the full 1 s cap per configuration; the
   figures below use the median over rounds;
e. the figures are written as JSON under benchmarks/results/, tagged with the
   machine fingerprint.

Run from the repository root:  python benchmarks/search_benchmark.py
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import write_results

import autoplace
from autoplace import Config, MeasureSettings
from autoplace.objectives import make_objective
from autoplace.settings import MeasureRequest
from autoplace.tuner import DEFAULT_BATCH_SIZES
from autoplace.workload import ModelFile

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = {
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
    "lstm": ("studies/lstm_classifier.py", "lstm"),
    "classify": ("studies/single_image.py", "classify"),
}


def timed_tune(model: Path, workload: str, db: Path, study: str, **kwargs: Any) -> tuple:
    """Run tune with a fresh worker; return (result, wall seconds, measurements made)."""
    t = time.perf_counter()
    with autoplace.SubprocessBackend() as backend:
        result = autoplace.tune(
            model,
            workload=workload,
            storage=f"sqlite:///{db}",
            study=study,
            out=None,
            backend=backend,
            **kwargs,
        )
    return result, time.perf_counter() - t


def full_grid(model: Path, workload: str) -> tuple[dict[Config, autoplace.Measurement], float, Any]:
    """Measure every configuration of tune's default space with the core's default
    settings (float32 comparison off: it is not a timing), in one warm worker, timed."""
    from autoplace.measure import resolve_workload
    from autoplace.tuner import build_space

    t = time.perf_counter()
    measurements = {}
    with autoplace.SubprocessBackend() as backend:
        mf, info = resolve_workload(backend, model, workload)
        space = build_space(
            None,
            None,
            None,
            None,
            available=backend.devices(),
            default_width=info.default_width,
            default_batches=info.batch_sizes or DEFAULT_BATCH_SIZES,
        )
        settings = MeasureSettings(deviation=False)
        for c in space.configs():
            request = MeasureRequest(str(mf.path), mf.sha256, info.name, c, settings)
            measurements[c] = backend.measure(request)
    return measurements, time.perf_counter() - t, space


def heuristics(grid: dict[Config, autoplace.Measurement], device: str) -> dict[str, Config]:
    """The three rules of thumb, on the grid's knowledge of what fits."""
    f32 = {
        c.batch_size: m for c, m in grid.items() if c.device == device and c.precision == "float32"
    }
    width = next(iter(grid)).width
    fits = sorted(b for b, m in f32.items() if m.status == "ok")
    lightning = None
    for b in sorted(f32):  # doubling from the smallest until the first failure
        if f32[b].status != "ok":
            break
        lightning = b
    accelerate = max((b for b in fits if b <= 128), default=fits[0] if fits else None)
    naive = min(f32, key=lambda b: abs(b - 32))
    chosen = {"lightning": lightning, "accelerate": accelerate, "naive": naive}
    return {k: Config(device, b, "float32", width) for k, b in chosen.items() if b is not None}


def remeasure(
    model: Path, workload: str, configs: list[Config], rounds: int, objective: Any
) -> dict[Config, list[float | None]]:
    """Measure the configs together ``rounds`` times in one warm worker: each round is
    one ``measure_together`` call, whose timed loops take turns chunk by chunk (A B C
    A B C) for the full time cap (no early stop once the comparison settles: this is
    the reference), and each round starts one config further along (B C A, C A B, ...)."""
    mf = ModelFile.at(model)
    settings = MeasureSettings(deviation=False, target_spread=0.0)
    requests = [MeasureRequest(str(mf.path), mf.sha256, workload, c, settings) for c in configs]
    scores: dict[Config, list[float | None]] = {c: [] for c in configs}
    with autoplace.SubprocessBackend() as backend:
        backend.measure_together(requests)  # compile and warm all, so round 1 is like the rest
        for r in range(rounds):
            order = requests[r % len(requests) :] + requests[: r % len(requests)]
            for request, m in zip(order, backend.measure_together(order), strict=True):
                scores[request.config].append(objective.score(m) if m.status == "ok" else None)
    return scores


def median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def spread(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None
    return (max(vals) - min(vals)) / statistics.median(vals)


def bench_workload(key: str, seeds: list[int], rounds: int, tmp: Path) -> dict[str, Any]:
    path, workload = WORKLOADS[key]
    model = ROOT / path
    objective = make_objective("throughput")
    print(f"\n== {key}: grid at the core's full settings", flush=True)
    grid, grid_wall, space = full_grid(model, workload)
    ranked = sorted(
        (c for c, m in grid.items() if m.status == "ok"), key=lambda c: -objective.score(grid[c])
    )
    device = space.devices[0]
    print(f"   {len(grid)} configurations in {grid_wall:.1f} s; best {ranked[0].label()}")

    print(f"== {key}: grid at the search's quick settings", flush=True)
    quick_result, quick_wall = timed_tune(
        model,
        workload,
        tmp / f"{key}-grid.db",
        "grid",
        strategy=autoplace.Grid(),
        confirm=0,
        settings=MeasureSettings(deviation=False),
    )
    print(
        f"   {len(quick_result.measurements)} configurations in {quick_wall:.1f} s; "
        f"best {quick_result.best.config.label()}"
    )

    runs = []
    for seed in seeds:
        result, wall = timed_tune(
            model,
            workload,
            tmp / f"{key}-tune-{seed}.db",
            f"tune-{seed}",
            settings=MeasureSettings(seed=seed),
        )
        runs.append(
            {"seed": seed, "wall_s": wall, "trials": result.new_trials, "pick": result.best.config}
        )
        print(
            f"   tune seed {seed}: {result.new_trials} trials, {wall:.1f} s "
            f"({wall / grid_wall:.0%} of grid), pick {result.best.config.label()}",
            flush=True,
        )

    rules = heuristics(grid, device)
    chosen: dict[str, Config] = {"grid": ranked[0], "quick-grid": quick_result.best.config}
    chosen.update({f"tune-{r['seed']}": r["pick"] for r in runs})
    chosen.update(rules)
    configs = list(dict.fromkeys(chosen.values()))
    print(f"   re-measuring {len(configs)} configurations x {rounds}, interleaved", flush=True)
    scores = remeasure(model, workload, configs, rounds, objective)
    med = {c: median(v) for c, v in scores.items()}
    best_score = med[chosen["grid"]]

    def score(name: str) -> float | None:
        return med[chosen[name]]

    tune_names = [f"tune-{r['seed']}" for r in runs]
    regrets = [objective.gain(best_score, score(n)) if score(n) else None for n in tune_names]
    speedups = {
        rule: [score(n) / score(rule) if score(n) and score(rule) else None for n in tune_names]
        for rule in rules
    }
    quick_regret = objective.gain(best_score, score("quick-grid")) if score("quick-grid") else None
    noise = median([spread(v) for v in scores.values()])
    picks = [score(n) for n in tune_names if score(n)]
    repeat = (max(picks) / min(picks) - 1.0) if len(picks) >= 2 else None
    return {
        "workload": key,
        "model_file": path,
        "space_size": len(space),
        "grid": {"wall_s": grid_wall, "measured": len(grid), "best": chosen["grid"].label()},
        "quick_grid": {
            "wall_s": quick_wall,
            "measured": len(quick_result.measurements),
            "best": chosen["quick-grid"].label(),
            "regret": quick_regret,
        },
        "tune_runs": [
            {
                **r,
                "pick": r["pick"].label(),
                "wall_pct_of_grid": r["wall_s"] / grid_wall,
                "wall_pct_of_quick_grid": r["wall_s"] / quick_wall,
            }
            for r in runs
        ],
        "heuristics": {k: c.label() for k, c in rules.items()},
        "remeasured_samples_per_s": {c.label(): v for c, v in scores.items()},
        "regret": regrets,
        "speedup_over": speedups,
        "noise_relative_range": noise,
        "repeatability": repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--seeds", type=int, default=3, help="tune runs per workload")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved re-measurements")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    started = time.perf_counter()
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            bench_workload(k, list(range(args.seeds)), args.rounds, Path(tmp))
            for k in args.workloads.split(",")
        ]

    def flat(key: str) -> list[float]:
        return [
            v
            for r in results
            for v in (r[key] if isinstance(r[key], list) else [r[key]])
            if v is not None
        ]

    walls = [t["wall_pct_of_grid"] for r in results for t in r["tune_runs"]]
    quick_walls = [t["wall_pct_of_quick_grid"] for r in results for t in r["tune_runs"]]
    summary = {
        "median_regret": statistics.median(flat("regret")),
        "max_regret": max(flat("regret")),
        "median_wall_pct_of_grid": statistics.median(walls),
        "max_wall_pct_of_grid": max(walls),
        "median_wall_pct_of_quick_grid": statistics.median(quick_walls),
        "max_wall_pct_of_quick_grid": max(quick_walls),
        "quick_grid_regrets": [r["quick_grid"]["regret"] for r in results],
        "median_noise_relative_range": statistics.median(flat("noise_relative_range")),
        "worst_repeatability": max(flat("repeatability")),
        "min_speedup_over": {
            rule: min(v for r in results for v in r["speedup_over"].get(rule, []) if v)
            for rule in ("lightning", "accelerate", "naive")
        },
        "median_trials": statistics.median(t["trials"] for r in results for t in r["tune_runs"]),
        "total_wall_s": time.perf_counter() - started,
    }
    out = write_results(
        "search",
        devices,
        args.out,
        {
            "defaults": {
                "batch_sizes": list(DEFAULT_BATCH_SIZES),
                "settings": dataclasses.asdict(MeasureSettings()),
            },
            "summary": summary,
            "workloads": results,
        },
    )
    print(
        "\nworkload   regret (median, max)   tune wall % of grid (quick grid)   trials   "
        "speedup vs lightning / accelerate / naive (min)   quick grid's regret"
    )
    for r in results:
        rg = [x for x in r["regret"] if x is not None]
        wp = [t["wall_pct_of_grid"] for t in r["tune_runs"]]
        wq = [t["wall_pct_of_quick_grid"] for t in r["tune_runs"]]
        sp = {k: min(v for v in vals if v) for k, vals in r["speedup_over"].items()}
        print(
            f"{r['workload']:9}  {statistics.median(rg):6.1%} {max(rg):6.1%}        "
            f"{statistics.median(wp):6.0%} ({statistics.median(wq):4.0%})          "
            f"{statistics.median(t['trials'] for t in r['tune_runs']):4.0f}/{r['space_size']:<3}  "
            + " / ".join(f"{sp.get(k, 0):.2f}x" for k in ("lightning", "accelerate", "naive"))
            + f"   {r['quick_grid']['regret']:.1%}"
        )
    print(f"\nsummary: {json.dumps(summary, indent=1)}\nwritten to {out}")


if __name__ == "__main__":
    main()
