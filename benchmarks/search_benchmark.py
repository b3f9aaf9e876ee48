"""Does ``autoplace tune`` find the best configuration at a fraction of the cost of trying all?

For each example workload, in ONE run on one machine:

a. an exhaustive grid over the workload's default space: every configuration
   measured by the core at its default settings, alone, one after another in one
   warm worker, timed (the float32 comparison is off: it is not a timing);
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
d. every chosen configuration (the grid's three best, the quick grid's best, each
   tune pick, each heuristic) is measured again in ``--rounds`` rounds in one warm
   worker. A round is one ``measure_together`` call: the configurations' timed loops
   take turns chunk by chunk (A B C A B C ..., each chunk after a short untimed
   settling run of its own loop) for the full 1 s cap each, and each round starts
   one configuration further along. Two configurations are compared by the median,
   over rounds, of the ratio of their scores within a round, where the machine's
   drift cancels. The grid's best is the best of its three in that comparison;
e. the figures are written as JSON under benchmarks/results/, tagged with the
   machine fingerprint.

Run from the repository root:  python benchmarks/search_benchmark.py
(``--workloads path/to/model.py:NAME`` benchmarks a workload of your own.)
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
from autoplace import Config, MeasureRequest, MeasureSettings
from autoplace.measuring import resolve_workload
from autoplace.tuning import DEFAULT_BATCH_SIZES, build_space, make_objective
from autoplace.workload import ModelFile

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = {
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
    "lstm": ("studies/lstm_classifier.py", "lstm"),
    "classify": ("studies/single_image.py", "classify"),
    # curves that fooled a one-peak search: an early peak, falling away (see the file)
    "encoder": ("benchmarks/curved_workloads.py", "encoder"),
    "mixer": ("benchmarks/curved_workloads.py", "mixer"),
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
            declared_widths=info.widths,
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
    the reference), and each round starts one config further along (B C A, C A B, ...).
    Returns each config's score per round."""
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


def ratios(objective: Any, a: list[float | None], b: list[float | None]) -> list[float]:
    """Round by round, how many times better ``a`` scored than ``b`` (1.0: equal)."""
    return [1.0 + objective.gain(x, y) for x, y in zip(a, b, strict=True) if x and y]


def compare(objective: Any, a: list[float | None], b: list[float | None]) -> dict[str, float]:
    """``a`` against ``b``, paired by round: the median ratio, and its least and largest."""
    r = ratios(objective, a, b)
    return {"ratio": statistics.median(r), "min": min(r), "max": max(r)} if r else {}


def relative_range(values: list[float]) -> float | None:
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else None


def bench_workload(key: str, seeds: list[int], rounds: int, tmp: Path) -> dict[str, Any]:
    if key in WORKLOADS:
        path, workload = WORKLOADS[key]
        model = ROOT / path
    else:  # your own: MODEL_FILE:WORKLOAD
        path, _, workload = key.rpartition(":")
        model = Path(path).resolve()
        key = workload
    objective = make_objective("throughput")
    print(f"\n== {key}: grid at the core's full settings", flush=True)
    grid, grid_wall, space = full_grid(model, workload)
    ranked = sorted(
        (c for c, m in grid.items() if m.status == "ok"),
        key=lambda c: -objective.key(objective.score(grid[c])),
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
            {
                "seed": seed,
                "wall_s": wall,
                "trials": result.new_trials,
                "configurations": len(result.measurements),
                "pick": result.best.config,
                "confirmed": result.best.confirmed,
            }
        )
        print(
            f"   tune seed {seed}: {result.new_trials} trials ({len(result.measurements)} "
            f"configurations), {wall:.1f} s ({wall / grid_wall:.0%} of grid), "
            f"pick {result.best.config.label()}",
            flush=True,
        )

    rules = heuristics(grid, device)
    chosen: dict[str, Config] = {f"grid-{i + 1}": c for i, c in enumerate(ranked[:3])}
    chosen["quick-grid"] = quick_result.best.config
    chosen.update({f"tune-{r['seed']}": r["pick"] for r in runs})
    chosen.update(rules)
    configs = list(dict.fromkeys(chosen.values()))
    print(f"   re-measuring {len(configs)} configurations x {rounds}, interleaved", flush=True)
    scores = remeasure(model, workload, configs, rounds, objective)

    def vs(a: str, b: str) -> dict[str, float]:
        return compare(objective, scores[chosen[a]], scores[chosen[b]])

    # The grid's best: of its three best, the one that beats grid-1 the most, paired.
    tops = [n for n in chosen if n.startswith("grid-")]
    best = max(tops, key=lambda n: vs(n, "grid-1").get("ratio", 0.0))
    tune_names = [f"tune-{r['seed']}" for r in runs]
    regrets = [vs(best, n)["ratio"] - 1.0 if vs(best, n) else None for n in tune_names]
    speedups = {rule: [vs(n, rule) for n in tune_names] for rule in rules}
    quick = vs(best, "quick-grid")
    pairs = [vs(a, b) for i, a in enumerate(tune_names) for b in tune_names[i + 1 :]]
    paired_noise = [
        relative_range(ratios(objective, scores[c], scores[chosen[best]]))
        for c in configs
        if c != chosen[best]
    ]
    unpaired_noise = [relative_range([v for v in vals if v]) for vals in scores.values()]
    return {
        "workload": key,
        "model_file": path,
        "space_size": len(space),
        "grid": {
            "wall_s": grid_wall,
            "measured": len(grid),
            "top3": [c.label() for c in ranked[:3]],
            "best": chosen[best].label(),
        },
        "quick_grid": {
            "wall_s": quick_wall,
            "measured": len(quick_result.measurements),
            "best": chosen["quick-grid"].label(),
            "regret": quick["ratio"] - 1.0 if quick else None,
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
        "slower_than_a_rule_beyond_noise": [
            f"{n} vs {rule}"
            for rule, vals in speedups.items()
            for n, v in zip(tune_names, vals, strict=True)
            if v and v["max"] < 1.0
        ],
        "paired_noise": statistics.median(x for x in paired_noise if x is not None),
        "unpaired_noise": statistics.median(x for x in unpaired_noise if x is not None),
        "repeatability": max((abs(p["ratio"] - 1.0) for p in pairs if p), default=None),
    }


def synthetic_shapes(tmp: Path) -> list[dict[str, Any]]:
    """``tune`` with its defaults on the synthetic backend given the curves a one-peak
    search misses (``tests/synthetic.py``'s ``SHAPES``: two peaks, a plateau, a cliff, a
    peak at either end, a dip in the middle), each loop with its own turn-by-turn jitter:
    the regret against the curve's true best, and the measurements it took."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import SHAPES, SyntheticBackend, shape, shaped

    model = tmp / "synthetic.py"
    model.write_text("# synthetic\n")
    rows = []
    for n, (name, (points, _)) in enumerate(SHAPES.items()):
        backend = SyntheticBackend(slowdown=shaped(points), turn_noise=0.05)
        result = autoplace.tune(
            model,
            batch_sizes=DEFAULT_BATCH_SIZES,
            precisions=("float32", "bfloat16"),
            storage=f"sqlite:///{tmp / f'shape-{n}.db'}",
            out=None,
            backend=backend,
        )
        curve = shape(points)
        best = max(curve(c) for c in result.space.configs())
        rows.append(
            {
                "shape": name,
                "regret": best / curve(result.best.config) - 1.0,
                "pick": result.best.config.batch_size,
                "trials": result.new_trials,
                "configurations": len(result.measurements),
                "space_size": len(result.space),
            }
        )
        print(
            f"   {name:34} pick batch {rows[-1]['pick']:5}, regret {rows[-1]['regret']:5.1%}, "
            f"{rows[-1]['trials']} trials over {rows[-1]['configurations']} of "
            f"{rows[-1]['space_size']} configurations"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma-separated: {', '.join(WORKLOADS)}, or MODEL_FILE:WORKLOAD of your own",
    )
    parser.add_argument("--seeds", type=int, default=3, help="tune runs per workload")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved re-measurements")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    started = time.perf_counter()
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    with tempfile.TemporaryDirectory() as tmp:
        print("== synthetic shapes: tune against curves with a known best")
        shapes = synthetic_shapes(Path(tmp))
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

    runs = [t for r in results for t in r["tune_runs"]]
    walls = [t["wall_pct_of_grid"] for t in runs]
    quick_walls = [t["wall_pct_of_quick_grid"] for t in runs]
    summary = {
        "median_regret": statistics.median(flat("regret")),
        "max_regret": max(flat("regret")),
        "median_wall_pct_of_grid": statistics.median(walls),
        "max_wall_pct_of_grid": max(walls),
        "median_wall_pct_of_quick_grid": statistics.median(quick_walls),
        "quick_grid_regrets": [r["quick_grid"]["regret"] for r in results],
        "median_paired_noise": statistics.median(flat("paired_noise")),
        "median_unpaired_noise": statistics.median(flat("unpaired_noise")),
        "worst_repeatability": max(flat("repeatability")),
        "min_speedup_over": {
            rule: min(v["ratio"] for r in results for v in r["speedup_over"].get(rule, []) if v)
            for rule in ("lightning", "accelerate", "naive")
        },
        "slower_than_a_rule_beyond_noise": [
            f"{r['workload']}: {x}" for r in results for x in r["slower_than_a_rule_beyond_noise"]
        ],
        "median_trials": statistics.median(t["trials"] for t in runs),
        "median_configurations": statistics.median(t["configurations"] for t in runs),
        "total_wall_s": time.perf_counter() - started,
        "synthetic_shapes_max_regret": max(r["regret"] for r in shapes),
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
            "synthetic_shapes": shapes,
            "workloads": results,
        },
    )
    print(
        "\nworkload   regret (median, max)   tune wall % of grid (quick grid)   trials/configs   "
        "speedup vs lightning / accelerate / naive (min)   noise paired (unpaired)   repeat"
    )
    for r in results:
        rg = [x for x in r["regret"] if x is not None]
        tr = r["tune_runs"]
        sp = {k: min(v["ratio"] for v in vals if v) for k, vals in r["speedup_over"].items()}
        print(
            f"{r['workload']:9}  {statistics.median(rg):6.1%} {max(rg):6.1%}        "
            f"{statistics.median(t['wall_pct_of_grid'] for t in tr):6.0%} "
            f"({statistics.median(t['wall_pct_of_quick_grid'] for t in tr):4.0%})          "
            f"{statistics.median(t['trials'] for t in tr):4.0f}/"
            f"{statistics.median(t['configurations'] for t in tr):.0f}/{r['space_size']:<3}  "
            + " / ".join(f"{sp.get(k, 0):.2f}x" for k in ("lightning", "accelerate", "naive"))
            + f"   {r['paired_noise']:.0%} ({r['unpaired_noise']:.0%})   {r['repeatability']:.1%}"
        )
    print(f"\nsummary: {json.dumps(summary, indent=1)}\nwritten to {out}")


if __name__ == "__main__":
    main()
