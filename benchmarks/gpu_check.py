"""Issue 37's check on a machine with a GPU, in one script of at most five minutes.

It writes one results file (``benchmarks/results/gpu_check-<machine>-<time>.json``, and a
copy with the tunes' files under ``--out``) holding:

1. the machine's limits (``autoplace limits --refresh --json``);
2. one tune of each of the four examples (``mlp``, ``mlp_wide``, ``lstm``, ``vgg``), each
   given ``--timeout`` seconds, into one study database: the pick, the first sentences of
   the explanation (the cause of the fixed cost: the put or dispatch), the compile figures
   of every GPU configuration and the process's device start-up, and the feeding windows;
3. the three feeding figures of the README MLP at batch 4096, float32 and bfloat16, on each
   device, timed by a plain loop of this script's own (not autoplace's measuring code):
   put then step, two puts kept in flight by ``autoplace.prefetch``, the batch resident;
   each in a fresh process, beside what the tune's feeding windows measured;
4. compiles of three VGG configurations on the GPU, one after another and side by side
   in threads, in a fresh process each (XLA's autotuner times kernels as it compiles),
   beside the compile figures the VGG tune reported.

On a machine without a GPU it runs on the CPU (so CI and this repository can check that
it works); its figures then say nothing of a GPU. From the repository root::

    python benchmarks/gpu_check.py --out "$OUT"            # about five minutes on an H200
    python benchmarks/gpu_check.py --timeout 10 --seconds 0.3   # a quick run anywhere
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

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "mlp_wide": ("studies/mnist_mlp.py", "mlp_wide"),
    "lstm": ("studies/lstm_classifier.py", "lstm"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
}
MARK = "gpu-check: "

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

#: Compiles of VGG configurations, one after another or side by side in threads.
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
    batch = jax.device_put(w.make_batch(32, np.random.default_rng(0)), device)
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


def child(code: str, *args: str, timeout: float = 240.0) -> dict[str, Any]:
    """Run ``code`` in a fresh Python process; what it printed after the mark, or why not."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    found = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if not found:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    return json.loads(found[-1][len(MARK) :])


def autoplace_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autoplace", *args], capture_output=True, text=True, timeout=timeout
    )


def tune(name: str, folder: Path, timeout: float) -> dict[str, Any]:
    """One tune of an example: its pick, explanation, compiles and feeding."""
    model, workload = EXAMPLES[name]
    out = folder / f"{name}.toml"
    t = time.perf_counter()
    done = autoplace_cli(
        "tune", str(ROOT / model), "--workload", workload,
        "--storage", f"sqlite:///{folder / 'studies.db'}", "--out", str(out),
        "--timeout", str(timeout), "--json", timeout=timeout * 4 + 120,
    )  # fmt: skip
    wall = time.perf_counter() - t
    if done.returncode != 0 or not out.exists():
        return {"wall_s": wall, "error": done.stderr.strip().splitlines()[-3:]}
    doc = tomllib.loads(out.read_text())
    summary = json.loads(done.stdout)
    rec = doc["recommendation"]
    return {
        "wall_s": wall,
        "pick": {k: rec.get(k) for k in ("device", "batch_size", "precision", "steps_per_call")},
        "score": rec["figures"]["score"],
        "explanation": doc.get("explanation", {}).get("sentences", [])[:8],
        "fixed_cost": doc.get("explanation", {}).get("fixed_cost"),
        "feeding": rec.get("feeding"),
        "compiles": [
            {
                "device": m["device"],
                "batch_size": m["batch_size"],
                "precision": m["precision"],
                "compile_s": m.get("compile_s"),
                "device_init_s": m.get("device_init_s"),
            }
            for m in summary.get("per_device_precision", [])
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds a tune may start")
    parser.add_argument("--seconds", type=float, default=1.0, help="a plain loop's timed s")
    parser.add_argument("--out", type=Path, help="a folder for a copy of every file made")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    names = [d.name for d in devices]
    gpu = next((n for n in names if not n.startswith("cpu")), None)
    body: dict[str, Any] = {"devices": names, "gpu": gpu, "load_at_start": os.getloadavg()}
    limits = autoplace_cli("limits", "--refresh", "--json", timeout=300)
    body["limits"] = json.loads(limits.stdout) if limits.returncode == 0 else limits.stderr
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        body["tunes"] = {name: tune(name, folder, args.timeout) for name in EXAMPLES}
        loop = (str(args.seconds), str(ROOT / "studies/mnist_mlp.py"))
        body["feeding_plain"] = {
            f"{device} {dtype} 4096": child(FEEDING_CHILD, device, dtype, "4096", *loop)
            for device in dict.fromkeys([gpu or "cpu:0", "cpu:0"])
            for dtype in ("float32", "bfloat16")
        }
        vgg = str(ROOT / "studies/vgg_predict.py")
        body["compiles"] = {
            mode: child(COMPILE_CHILD, gpu or "cpu:0", mode, vgg) for mode in ("alone", "threads")
        }
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            for f in folder.iterdir():
                shutil.copy(f, args.out / f.name)
    body["wall_s"] = time.perf_counter() - started
    body["load_at_end"] = os.getloadavg()
    path = write_results("gpu_check", devices, ROOT / "benchmarks" / "results", body)
    if args.out is not None:
        shutil.copy(path, args.out / path.name)
    print(json.dumps({k: body[k] for k in ("devices", "wall_s", "compiles", "feeding_plain")}))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
