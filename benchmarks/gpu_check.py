"""Issue 37's check on a machine with a GPU, in one script under an overall time budget.

It writes one results file (``benchmarks/results/gpu_check-<machine>-<time>.json``, and a
copy with the tunes' files under ``--out``) holding, part by part:

1. ``limits``: the machine's limits (``autoplace limits --refresh --json``);
2. ``mlp``, ``prefetch``, ``devices``, ``mlp_wide``, ``lstm``, ``vgg``: tunes, each given
   ``--timeout`` seconds: the four examples (the README MLP, the wide MLP, the LSTM, the
   VGG) fed as a plain loop feeds them (``--feeding put``); the README MLP fed by two
   puts in flight (``--feeding prefetch``); and, where the machine has several devices of
   a kind (several GPUs), the README MLP over its device counts (``gpu:0``, ``gpu:0-1``,
   ``gpu:0-3``, ...: the counts measured, and the explanation's scaling section). Each
   records the pick, the first sentences of the explanation (the cause of the fixed cost:
   the put or dispatch), the compile figures of its best configurations, each device's
   start-up as a fresh process pays it (``device_start_s``), and the feeding the
   explanation read (``feeding``: the fed, prefetched and resident steps where timed);
3. ``feeding_plain``: the three feeding figures of the README MLP at batch 4096, float32
   and bfloat16, on each device, timed by a plain loop of this script's own (not
   autoplace's measuring code): put then step, two puts kept in flight by
   ``autoplace.prefetch``, the batch resident; each in a fresh process;
4. ``compiles``: compiles of three VGG configurations on the GPU, one after another and
   side by side in threads, in a fresh process each (XLA's autotuner times kernels as it
   compiles), beside the compile figures the VGG tune reported.

The parts run in that order within ``--budget`` seconds (420 by default, to fit a
10-minute command with room to spare): a part starts only if its estimate fits in what
is left, and its processes are stopped when the budget ends. The parts it did not start
are listed under ``skipped`` with the reason, and the results file is written with what
was measured, whatever happened.

On a machine without a GPU it runs on the CPU (so CI and this repository can check that
it works); its figures then say nothing of a GPU. ``--smoke`` runs it small: the limits
briefly, the MLP's three tunes at two batch sizes (the device count over two emulated CPU
devices where there is no kind with several), one plain loop, the compiles at batch 8;
its results go to ``--results`` (default: a folder of its own) and the limits it measures
to a cache of its own. From the repository root::

    python benchmarks/gpu_check.py --out "$OUT"     # at most 7 minutes (--budget 420)
    python benchmarks/gpu_check.py --smoke           # 31-35 s on the 2-core CI machine
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tomllib
from results_file import write_results

import autoplace
from autoplace.devices import device_counts, device_group, device_names

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "mlp_wide": ("studies/mnist_mlp.py", "mlp_wide"),
    "lstm": ("studies/lstm_classifier.py", "lstm"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
}
MARK = "gpu-check: "
#: The parts, in the order they run (see the module's docstring).
PARTS = ("limits", "mlp", "prefetch", "devices", "mlp_wide", "lstm", "vgg", "feeding_plain",
         "compiles")  # fmt: skip
#: The parts ``--smoke`` runs unless ``--parts`` says otherwise: the other examples' tunes
#: add no path the README MLP's do not take.
SMOKE = ("limits", "mlp", "prefetch", "devices", "feeding_plain", "compiles")

#: The plain loop: fed three ways, one configuration, in a fresh process of its own.
FEEDING_CHILD = r"""
import json, sys, time, importlib.util
import jax, jax.numpy as jnp, numpy as np
import autoplace
device_name, dtype, batch, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
platform, index = device_name.split(":")
device = jax.devices(platform)[int(index)]
spec = importlib.util.spec_from_file_location("m", sys.argv[5])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
w = m.mlp(128, jnp.dtype(dtype))
rng = np.random.default_rng(0)
hosts = [w.make_batch(batch, rng) for _ in range(2)]
state = jax.device_put(w.state, device)
step = jax.jit(w.step, donate_argnums=0)
resident = jax.device_put(hosts[0], device)
def loop(feed, n):
    global state
    t = time.perf_counter()
    for i, b in zip(range(n), feed):
        state = step(state, b)
    jax.block_until_ready(state)
    return (time.perf_counter() - t) / n
def put():
    i = 0
    while True:
        yield jax.device_put(hosts[i % 2], device); i += 1
def on_device():
    while True:
        yield resident
def cycle():
    i = 0
    while True:
        yield hosts[i % 2]; i += 1
out = {}
for name, make in (("put", put), ("prefetch", lambda: autoplace.prefetch(cycle(), device)),
                   ("resident", on_device)):
    feed = make()
    loop(feed, 20)  # warm-up
    t, n = time.perf_counter(), 0
    steps = []
    while time.perf_counter() - t < seconds:
        steps.append(loop(feed, 10)); n += 10
    steps.sort()
    out[name] = steps[len(steps) // 2]
    if hasattr(feed, "close"):
        feed.close()
print("MARK" + json.dumps(out))
""".replace("MARK", MARK)

#: Compiles of VGG configurations (at the batch size of ``argv[4]``), one after another or
#: side by side in threads.
COMPILE_CHILD = r"""
import json, sys, time, importlib.util, threading
import jax, jax.numpy as jnp
device_name, mode = sys.argv[1], sys.argv[2]
platform, index = device_name.split(":")
device = jax.devices(platform)[int(index)]
spec = importlib.util.spec_from_file_location("v", sys.argv[3])
v = importlib.util.module_from_spec(spec); spec.loader.exec_module(v)
jax.block_until_ready(jax.device_put(jnp.ones(8), device))  # the device's start, apart
lowered = []
import numpy as np
for precision in ("float32", "bfloat16", "float16"):
    w = v.vgg(16, jnp.dtype(precision))
    state = jax.device_put(w.state, device)
    batch = jax.device_put(w.make_batch(int(sys.argv[4]), np.random.default_rng(0)), device)
    lowered.append(jax.jit(w.step).trace(state, batch).lower())
took = {}
def one(i, low):
    t = time.perf_counter(); low.compile(); took[i] = time.perf_counter() - t
start = time.perf_counter()
if mode == "alone":
    for i, low in enumerate(lowered):
        one(i, low)
else:
    threads = [threading.Thread(target=one, args=(i, low)) for i, low in enumerate(lowered)]
    for t in threads: t.start()
    for t in threads: t.join()
wall = time.perf_counter() - start
print("MARK" + json.dumps({"each_s": [took[i] for i in range(3)], "wall_s": wall}))
""".replace("MARK", MARK)


class Budget:
    """The script's seconds: what is left of them, for a part to start in and for its
    processes to be stopped at."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.started = seconds, time.perf_counter()

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.started)


#: What stopping a process at the budget's end says in the results.
OVER = "stopped: the budget ended"


def child(code: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``code`` in a fresh Python process; what it printed after the mark, or why not."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True,
            timeout=max(timeout, 1.0),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"{OVER} after {timeout:.0f} s"}
    found = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if not found:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    return json.loads(found[-1][len(MARK) :])


def autoplace_cli(
    *args: str, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess | None:
    """``autoplace ARGS`` in a process of its own; ``None`` when stopped at ``timeout``."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "autoplace", *args], capture_output=True, text=True,
            timeout=max(timeout, 1.0), env={**os.environ, **(env or {})},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None


def tune(
    name: str,
    folder: Path,
    options: list[str],
    limit: float,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One tune of the README MLP or an example (``name``: its :data:`EXAMPLES` key, or
    ``prefetch`` and ``devices``, both the MLP), into a study file of its own: its pick,
    explanation, compiles, feeding, and (several devices) the counts and their scaling."""
    model, workload = EXAMPLES.get(name, EXAMPLES["mlp"])
    out = folder / f"{name}.toml"
    storage = f"sqlite:///{folder / f'{name}.db'}"
    t = time.perf_counter()
    done = autoplace_cli(
        "tune", str(ROOT / model), "--workload", workload, "--storage", storage,
        "--out", str(out), "--json", *options, timeout=limit, env=env,
    )  # fmt: skip
    wall = time.perf_counter() - t
    if done is None:
        return {"wall_s": wall, "error": f"{OVER} after {limit:.0f} s"}
    if done.returncode != 0 or not out.exists():
        return {"wall_s": wall, "error": done.stderr.strip().splitlines()[-3:]}
    doc = tomllib.loads(out.read_text())
    summary = json.loads(done.stdout)
    rec, explanation = doc["recommendation"], doc.get("explanation", {})
    best = summary.get("per_device_precision", [])
    devices = sorted({m["config"]["device"] for m in best})
    return {
        "wall_s": wall,
        "options": options,
        "pick": {k: rec.get(k) for k in ("device", "batch_size", "precision", "steps_per_call")},
        "score": rec.get("figures", {}).get("score"),
        "explanation": explanation.get("sentences", [])[:8],
        "fixed_cost": explanation.get("fixed_cost"),
        "ranked_on": explanation.get("loop"),
        "feeding": explanation.get("transfer"),
        "device_start_s": explanation.get("device_start_s"),
        "searched_devices": doc.get("search_space", {}).get("devices"),
        "measured_devices": devices,
        "measured_counts": sorted({len(device_names(d)) for d in devices}),
        "scaling": explanation.get("scaling"),
        "compiles": [
            {
                **{k: m["config"][k] for k in ("device", "batch_size", "precision")},
                **{k: m.get(k) for k in ("compile_s", "device_init_s", "fresh_process")},
            }
            for m in best
        ],
        "failed": summary.get("failed"),
    }


def several(names: list[str]) -> list[str]:
    """The device counts a search tries on the first kind with several devices (``gpu:0``,
    ``gpu:0-1``, ...), or none."""
    kinds = [n.split(":")[0] for n in names]
    many = next((k for k in dict.fromkeys(kinds) if kinds.count(k) > 1), None)
    if many is None:
        return []
    return [device_group(f"{many}:0", c) for c in device_counts(kinds.count(many))]


def plan(args: argparse.Namespace, names: list[str], folder: Path) -> list[tuple[str, float, Any]]:
    """The parts in order: each one's name, its estimated seconds, and what runs it (given
    the seconds left, the most its processes may take), or why it does not run here."""
    gpu = next((n for n in names if not n.startswith("cpu")), None)
    small = ["--batch-sizes", "8,32", "--precisions", "float32"] if args.smoke else []
    timeout = ["--timeout", str(args.timeout)]
    tune_s = args.timeout + 15
    groups, env = several(names), None
    if not groups and args.smoke:  # two emulated CPU devices: the path, not a GPU's figures
        groups, env = ["cpu:0", "cpu:0-1"], {"JAX_NUM_CPU_DEVICES": "2"}

    def tuned(name: str, *options: str, env: dict[str, str] | None = None) -> Any:
        return lambda limit: tune(name, folder, [*timeout, *small, *options], limit, env)

    def limits(limit: float) -> Any:
        quick = ["--windows", "1", "--seconds", "0.05"] if args.smoke else []
        done = autoplace_cli("limits", "--refresh", "--json", *quick, timeout=limit)
        if done is None:
            return {"error": f"{OVER} after {limit:.0f} s"}
        return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr}

    batch = "64" if args.smoke else "4096"
    on = list(dict.fromkeys([gpu or "cpu:0", "cpu:0"]))
    dtypes = ("float32",) if args.smoke else ("float32", "bfloat16")
    loops = [(d, t) for d in on for t in dtypes]

    def feeding(limit: float) -> Any:
        budget, mlp = Budget(limit), str(ROOT / "studies/mnist_mlp.py")
        return {
            f"{d} {t} {batch}": child(
                FEEDING_CHILD, d, t, batch, str(args.seconds), mlp, timeout=budget.left()
            )
            for d, t in loops
        }

    def compiles(limit: float) -> Any:
        budget, vgg = Budget(limit), str(ROOT / "studies/vgg_predict.py")
        vgg_batch = "8" if args.smoke else "32"
        return {
            mode: child(COMPILE_CHILD, gpu or "cpu:0", mode, vgg, vgg_batch, timeout=budget.left())
            for mode in ("alone", "threads")
        }

    no_groups = "no kind of device with several here (the device count is searched on those)"
    parts = [
        ("limits", 20 if args.smoke else 60, limits),
        ("mlp", tune_s, tuned("mlp")),
        ("prefetch", tune_s, tuned("prefetch", "--feeding", "prefetch")),
        (
            "devices",
            tune_s,
            tuned("devices", "--devices", ",".join(groups), env=env) if groups else no_groups,
        ),
        *((name, tune_s, tuned(name)) for name in ("mlp_wide", "lstm", "vgg")),
        ("feeding_plain", len(loops) * (6 + 3 * args.seconds), feeding),
        ("compiles", 20 if args.smoke else 45, compiles),
    ]
    assert [name for name, *_ in parts] == list(PARTS)
    return parts


def run_parts(parts: list[tuple[str, float, Any]], budget: Budget, body: dict[str, Any]) -> None:
    """Run ``parts`` (see :func:`plan`) in order, each only if its estimate fits in what is
    left of ``budget`` and given what is left as its limit; each part's results go into
    ``body`` (a tune's under ``tunes``), its seconds under ``part_s``, and each part not
    run under ``skipped``, with why."""
    for name, estimate, run in parts:
        left = budget.left()
        if isinstance(run, str) or estimate > left:
            why = run if isinstance(run, str) else (
                f"needs about {estimate:.0f} s; {max(left, 0):.0f} s of the "
                f"{budget.seconds:g} s budget left"
            )  # fmt: skip
            body["skipped"][name] = why
            print(f"{MARK}{name} skipped: {why}", file=sys.stderr)
            continue
        print(f"{MARK}{name} ({left:.0f} s left)", file=sys.stderr)
        t = time.perf_counter()
        found = run(left)
        body["part_s"][name] = time.perf_counter() - t
        if name in ("limits", "feeding_plain", "compiles"):
            body[name] = found
        else:
            body["tunes"][name] = found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for everything")
    parser.add_argument("--timeout", type=float, help="seconds a tune may start (30; smoke 3)")
    parser.add_argument("--seconds", type=float, help="a plain loop's timed s (1; smoke 0.05)")
    parser.add_argument("--smoke", action="store_true", help="small and quick, anywhere")
    parser.add_argument("--parts", help="only these parts, comma-separated (default: all)")
    parser.add_argument("--out", type=Path, help="a folder for a copy of every file made")
    parser.add_argument("--results", type=Path, help="the results file's folder")
    args = parser.parse_args(argv)
    budget = Budget(args.budget)
    unknown = sorted(set(args.parts.split(",")) - set(PARTS)) if args.parts else []
    if unknown:
        parser.error(f"no part {unknown[0]!r}: the parts are {', '.join(PARTS)}")
    args.timeout = args.timeout if args.timeout is not None else 3.0 if args.smoke else 30.0
    args.seconds = args.seconds if args.seconds is not None else 0.05 if args.smoke else 1.0
    results = args.results or (
        Path(tempfile.mkdtemp(prefix="gpu-check-")) if args.smoke else ROOT / "benchmarks/results"
    )
    if args.smoke:  # the limits it measures in a cache of its own, not the machine's
        os.environ["AUTOPLACE_CACHE"] = str(results / "cache")
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    names = [d.name for d in devices]
    body: dict[str, Any] = {
        "devices": names,
        "gpu": next((n for n in names if not n.startswith("cpu")), None),
        "budget_s": args.budget,
        "smoke": args.smoke,
        "load_at_start": os.getloadavg(),
        "tunes": {},
        "part_s": {},
        "skipped": {},
    }
    wanted = set(args.parts.split(",") if args.parts else SMOKE if args.smoke else PARTS)
    results.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        try:
            parts = [p for p in plan(args, names, folder) if p[0] in wanted]
            run_parts(parts, budget, body)
        finally:  # what was measured is written, whatever stopped the rest
            if args.out is not None:
                args.out.mkdir(parents=True, exist_ok=True)
                for f in folder.iterdir():
                    shutil.copy(f, args.out / f.name)
            body["wall_s"] = time.perf_counter() - budget.started
            body["load_at_end"] = os.getloadavg()
            path = write_results("gpu_check", devices, results, body)
            if args.out is not None:
                shutil.copy(path, args.out / path.name)
            shown = ("devices", "wall_s", "skipped", "compiles", "feeding_plain")
            print(json.dumps({k: body[k] for k in shown if k in body}))
            print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
