"""An example launcher: ask autoplace where and how to train, then train there.

    python studies/train_with_autoplace.py            # 3 epochs of 60k MNIST-shaped samples
    python studies/train_with_autoplace.py --steps-per-call 16   # 16 steps in each jitted call

The first run on a machine tunes (19 s on our 2-core CPU machine) and caches the answer;
every later start finds it in milliseconds, until the model file, the jax/jaxlib versions or the
machine change. The training loop is an ordinary one: the recommended device, batch size,
precision and width go straight into it, and so do the steps per call: where the pick's
fixed cost matters, the tune timed K steps in one jitted call (``autoplace.fuse``: the
same training, the fixed cost of a call paid once per K steps) against one, and
``rec.steps_per_call`` is the K it found faster, else 1 (docs/limits.md).
``--steps-per-call K`` overrides it.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import autoplace

MODEL = Path(__file__).with_name("mnist_mlp.py")
SAMPLES = 60_000  # one epoch, MNIST's size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument(
        "--steps-per-call",
        type=int,
        default=None,
        help="steps in one jitted call [default: the recommendation's]",
    )
    args = parser.parse_args()
    if args.steps_per_call is not None and args.steps_per_call < 1:
        parser.error("--steps-per-call is 1 or more")

    started = time.perf_counter()
    rec = autoplace.recommend(
        MODEL,
        "mlp",
        objective="time-to-finish",  # the whole run, compile included: what this job waits for
        samples=SAMPLES,
        epochs=args.epochs,
        max_batch_size=args.max_batch_size,
        on_miss="tune",
        on_wait=print,
    )
    print(f"{rec.log_line()}  [{time.perf_counter() - started:.3f} s]")
    for line in rec.limits:
        print(f"  {line}")

    import jax
    import numpy as np

    device, dtype = rec.jax_device(), rec.dtype()
    spec = importlib.util.spec_from_file_location("mnist_mlp", MODEL)
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    with jax.default_device(device):
        work = model.mlp(rec.width, dtype)  # the workload autoplace measured, as the user built it
        step = jax.jit(work.step, donate_argnums=0)
        k = args.steps_per_call or rec.steps_per_call  # what the tune timed faster, else 1
        fused = jax.jit(autoplace.fuse(work.step, k), donate_argnums=0)  # k steps a call
        state = jax.device_put(work.state, device)

    # A task the MLP can learn: labels from a fixed random linear "teacher".
    rng = np.random.default_rng(0)
    x = rng.random((SAMPLES, 28 * 28), dtype=np.float32)
    y = np.argmax(x @ rng.standard_normal((28 * 28, 10), dtype=np.float32), axis=1).astype(np.int32)

    def accuracy(state) -> float:
        params = state[0]
        h = jax.device_put(x[:5000].astype(dtype), device)
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return float(np.mean(np.argmax(np.asarray(h @ w + b), axis=1) == y[:5000]))

    fed = "prefetched (autoplace.prefetch)" if rec.prefetch else "put before each step"
    print(f"training on {device} at batch {rec.batch_size} in {rec.precision}, {k} step(s) "
          f"a call, batches {fed}: accuracy before {accuracy(state):.1%}")  # fmt: skip
    steps = SAMPLES // rec.batch_size

    def host_batch(order, i):
        take = order[i * rec.batch_size : (i + 1) * rec.batch_size]
        return x[take].astype(dtype), y[take]

    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(SAMPLES)
        t = time.perf_counter()
        calls = steps // k if k > 1 else 0
        for c in range(calls):  # k batches stacked, one transfer and one call for k steps
            batches = autoplace.stack([host_batch(order, c * k + j) for j in range(k)])
            state = fused(state, jax.device_put(batches, device))
        left = (host_batch(order, i) for i in range(calls * k, steps))  # one step a call
        if rec.prefetch:  # the tune timed two puts in flight faster: keep them in flight
            for batch in autoplace.prefetch(left, device):
                state = step(state, batch)
        else:
            for batch in left:
                state = step(state, jax.device_put(batch, device))
        jax.block_until_ready(state)
        seconds = time.perf_counter() - t
        print(f"epoch {epoch}: {steps * rec.batch_size / seconds:,.0f} samples/s, "
              f"accuracy {accuracy(state):.1%}")  # fmt: skip
    print(f"done in {time.perf_counter() - started:.1f} s from start")


if __name__ == "__main__":
    main()
