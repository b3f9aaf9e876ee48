"""How long a launcher's cached ``autoplace.recommend`` takes, as a whole process, against
``python -c "import jax"`` on the same machine, in one run.

    python benchmarks/recommend_benchmark.py            # ~2 min: one tune, then 15 rounds

It fills a fresh cache with one real tune of the MNIST-shaped MLP (a small space: the
look-up's cost does not depend on it), then times, in turns within each round so that the
machine's drift falls on all alike:

* ``python -c pass``: the interpreter alone;
* ``python -c "import jax"``: what the issue's target is measured against;
* ``python -c "import autoplace; autoplace.recommend(...)"``: a launcher's cached look-up;
* ``autoplace recommend ... --format env``: the same from a shell launcher (the CLI).

Each is the wall time of a fresh process, start to exit. The figure is the median over
rounds of look-up / import-jax within a round, with the range over rounds. Target: below
1/5.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

MODEL = REPO / "studies" / "mnist_mlp.py"


def timed(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return seconds


def summary(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4)
    return {
        "median": statistics.median(values),
        "q1": q[0],
        "q3": q[2],
        "min": min(values),
        "max": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()

    from results_file import write_results

    import autoplace

    cache = Path(tempfile.mkdtemp(prefix="autoplace-bench-cache-"))
    env = {**os.environ, "AUTOPLACE_CACHE": str(cache)}
    try:
        os.environ["AUTOPLACE_CACHE"] = str(cache)
        t = time.perf_counter()
        first = autoplace.recommend(
            MODEL,
            "mlp",
            tune_options={"batch_sizes": [64, 256, 1024], "precisions": ["float32", "bfloat16"]},
        )
        fill_s = time.perf_counter() - t
        print(f"filled the cache in {fill_s:.1f} s: {first.log_line()}")
        autoplace_cli = shutil.which("autoplace") or "autoplace"
        lookup = f"import autoplace; autoplace.recommend({str(MODEL)!r}, 'mlp', on_miss='raise')"
        commands = {
            "python": [sys.executable, "-c", "pass"],
            "import_jax": [sys.executable, "-c", "import jax"],
            "recommend": [sys.executable, "-c", lookup],
            "recommend_cli": [
                autoplace_cli,
                "recommend",
                str(MODEL),
                "-w",
                "mlp",
                "--on-miss",
                "raise",
                "--format",
                "env",
            ],
        }
        for argv in commands.values():  # warm the file system cache once
            timed(argv, env)
        times: dict[str, list[float]] = {k: [] for k in commands}
        for r in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(timed(argv, env))
            print(
                f"round {r + 1:2d}: "
                + ", ".join(f"{k} {v[-1] * 1e3:6.1f} ms" for k, v in times.items())
            )
        ratios = {
            name: [a / b for a, b in zip(times[name], times["import_jax"], strict=True)]
            for name in ("recommend", "recommend_cli")
        }
        body = {
            "rounds": args.rounds,
            "fill_s": fill_s,
            "pick": first.as_dict(),
            "seconds": {k: summary(v) for k, v in times.items()},
            "ratio_to_import_jax": {k: summary(v) for k, v in ratios.items()},
            "target": "recommend / import_jax < 0.2",
            "raw": times,
        }
        devices = autoplace.SubprocessBackend().devices()
        out = write_results("recommend", devices, args.out, body)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print()
    for name, s in body["seconds"].items():
        low, high = s["min"] * 1e3, s["max"] * 1e3
        print(f"{name:14s} median {s['median'] * 1e3:6.1f} ms  [{low:.1f}-{high:.1f}]")
    for name, s in body["ratio_to_import_jax"].items():
        print(f"{name:14s} / import jax: median {s['median']:.3f}  [{s['min']:.3f}-{s['max']:.3f}]")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
