"""Is the explanation's cost model right at a batch size the search did not measure?

For each example workload, in ONE run on one machine:

a. ``autoplace tune`` with its defaults (a fresh study): the explanation, fitted from the
   study's own measurements;
b. a batch size the search did not measure, inside the range an arm's fed line holds for
   (nearest its middle, in log2), in the winner's arm if it has one, else in the arm
   measured at the most batches; if no arm has one, one step beyond the winner's range,
   and the row says it is an extrapolation;
c. that batch and its nearest measured neighbour are timed in turns, ``--rounds`` times
   in one warm worker (each round one ``measure_together`` call, the full 1 s cap each);
d. the model's prediction ``a + c·b`` is compared with each round's fed step at that
   batch: *error* is the median over rounds of measured / predicted − 1. *Drift-free
   error* compares the ratio of the two measured in turns with the ratio the line
   predicts for them, which cancels the machine's drift since the tune;
e. the explanation's sentences are kept with the figures (the README quotes them).

Run from the repository root:  python benchmarks/explain_benchmark.py
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import write_results
from tune_runs import WORKLOADS as TUNED

import autoplace
from autoplace import Config, MeasureRequest, MeasureSettings
from autoplace.workload import ModelFile

ROOT = Path(__file__).resolve().parent.parent
#: The examples (not the curved workloads).
WORKLOADS = {k: v for k, v in TUNED.items() if v[0].startswith("studies/")}
TARGET = 0.15


def unmeasured_batch(result: Any) -> tuple[tuple, int, bool] | None:
    """An arm and a batch of it the search did not measure, inside the range its fed line
    holds for (nearest the middle, in log2): the winner's arm if it has one, else the arm
    measured at the most batches; failing that, one step beyond the winner's range. Also
    whether it is an extrapolation."""
    batches = list(result.space.batch_sizes)
    best = result.best.measurement
    winner = (best.device, best.precision, best.width)
    models = result.explanation.models
    order = sorted(models, key=lambda arm: (arm != winner, -len(models[arm].measured)))
    for arm in order:
        line = models[arm].fed
        if line is None:
            continue
        lo, hi = min(line.batches), max(line.batches)
        middle = (math.log2(lo) + math.log2(hi)) / 2
        inside = [b for b in batches if lo < b < hi and b not in models[arm].measured]
        if inside:
            return arm, min(inside, key=lambda b: abs(math.log2(b) - middle)), False
    line = models[winner].fed
    if line is None:
        return None
    lo, hi = min(line.batches), max(line.batches)
    beyond = [b for b in batches if b not in models[winner].measured and (b < lo or b > hi)]
    if not beyond:
        return None
    nearest = min(beyond, key=lambda b: min(abs(math.log2(b / lo)), abs(math.log2(b / hi))))
    return winner, nearest, True


def bench(key: str, rounds: int, tmp: Path) -> dict[str, Any]:
    path, name = WORKLOADS[key]
    model = ROOT / path
    t = time.perf_counter()
    result = autoplace.tune(
        model, workload=name, storage=f"sqlite:///{tmp / f'{key}.db'}", out=None
    )
    wall = time.perf_counter() - t
    found = unmeasured_batch(result)
    row: dict[str, Any] = {
        "workload": key,
        "tune_wall_s": wall,
        "pick": result.best.config.label(),
        "sentences": list(result.explanation.sentences),
    }
    if found is None:
        row["skipped"] = "every batch of the winner's arm was measured, or no line"
        return row
    arm, target, extrapolated = found
    device, precision, width = arm
    line = result.explanation.models[arm].fed
    neighbour = min(
        result.explanation.models[arm].measured, key=lambda b: abs(math.log2(b / target))
    )
    mf = ModelFile.at(model)
    settings = MeasureSettings(deviation=False, target_spread=0.0)
    configs = [Config(device, b, precision, width) for b in (target, neighbour)]
    requests = [MeasureRequest(str(mf.path), mf.sha256, name, c, settings) for c in configs]
    measured: dict[int, list[float]] = {target: [], neighbour: []}
    with autoplace.SubprocessBackend() as backend:
        backend.measure_together(requests)  # compile and warm both
        for r in range(rounds):
            order = requests[r % 2 :] + requests[: r % 2]
            for request, m in zip(order, backend.measure_together(order), strict=True):
                measured[request.config.batch_size].append(m.fed_step_s)
    predicted = line.at(target)
    errors = [x / predicted - 1.0 for x in measured[target]]
    predicted_ratio = line.at(target) / line.at(neighbour)
    drift_free = [
        (x / y) / predicted_ratio - 1.0
        for x, y in zip(measured[target], measured[neighbour], strict=True)
    ]
    row.update(
        {
            "arm": f"{device} {precision} width={width}",
            "batch": target,
            "extrapolated": extrapolated,
            "neighbour": neighbour,
            "line": line.as_dict(),
            "predicted_fed_step_s": predicted,
            "measured_fed_step_s": measured[target],
            "neighbour_fed_step_s": measured[neighbour],
            "error_median": statistics.median(errors),
            "error_range": [min(errors), max(errors)],
            "drift_free_error_median": statistics.median(drift_free),
            "within_target": abs(statistics.median(errors)) <= TARGET,
        }
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.workloads.split(","):
            print(f"== {key}", flush=True)
            row = bench(key, args.rounds, Path(tmp))
            rows.append(row)
            if "batch" in row:
                print(
                    f"   pick {row['pick']}; {row['arm']} batch {row['batch']} (not measured"
                    f"{', extrapolated' if row['extrapolated'] else ''}): predicted "
                    f"{row['predicted_fed_step_s'] * 1e3:.3g} ms, measured median "
                    f"{statistics.median(row['measured_fed_step_s']) * 1e3:.3g} ms, error "
                    f"{row['error_median']:+.1%} "
                    f"(drift-free {row['drift_free_error_median']:+.1%})",
                    flush=True,
                )
            else:
                print(f"   {row['skipped']}", flush=True)
            for sentence in row["sentences"][:3]:
                print(f"   - {sentence}", flush=True)
    errors = [abs(r["error_median"]) for r in rows if "error_median" in r]
    summary = {
        "median_abs_error": statistics.median(errors) if errors else None,
        "max_abs_error": max(errors) if errors else None,
        "within_target": sum(r.get("within_target", False) for r in rows),
        "workloads": len(rows),
        "target": TARGET,
    }
    print(summary)
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results(
        "explain",
        devices,
        ROOT / "benchmarks" / "results",
        {"summary": summary, "workloads": rows, "rounds": args.rounds},
    )
    print(f"written to {path}")


if __name__ == "__main__":
    main()
