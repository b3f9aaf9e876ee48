"""An example launcher: ask autoplace where and how to train, then train there.

    python studies/train_with_autoplace.py            # 3 epochs of 60k MNIST-shaped samples
    python studies/train_with_autoplace.py --steps-per-call 16   # 16 steps in each jitted call

The first run on a machine tunes and caches the answer (the whole first run took 20-25 s on
our 2-core CPU machine, 2026-11-28, load average 1.1-1.5; a later one 1.5-1.7 s);
every later start finds it in milliseconds, until the model file, the jax/jaxlib versions or the
machine change. The training loop is an ordinary one: the recommended device, batch size,
precision and width go straight into it, and so do the steps per call: where the pick's
fixed cost matters, the tune timed K steps in one jitted call (``autoplace.fuse``: the
same training, the fixed cost of a call paid once per K steps) against one, and
``rec.steps_per_call`` is the K it found faster, else 1 (docs/limits.md).
``--steps-per-call K`` overrides it.

With several devices of a kind (GPUs; CPU devices emulated with ``JAX_NUM_CPU_DEVICES=4``),
the tune also tries 2, 4, ... of them together, and ``rec.device`` may name several
(``gpu:0-3``): the state goes on each (``rec.replicated()``), each batch is split across
them (``rec.sharding()``), and ``jax.jit`` inserts the reduction, as the tune timed it.
On one device, the same lines put everything on that one.
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
    k = args.steps_per_call or rec.steps_per_call  # what the tune timed faster, else 1
    split, stacked, everywhere = rec.sharding(), rec.sharding(steps_per_call=k), rec.replicated()
    spec = importlib.util.spec_from_file_location("mnist_mlp", MODEL)
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    with jax.default_device(device):
        work = model.mlp(rec.width, dtype)  # the workload autoplace measured, as the user built it
        step = jax.jit(work.step, donate_argnums=0, out_shardings=everywhere)
        fused = jax.jit(autoplace.fuse(work.step, k), donate_argnums=0, out_shardings=everywhere)
        state = jax.device_put(work.state, everywhere)  # on every device it uses

    # A task the MLP can learn: labels from a fixed random linear "teacher".
    rng = np.random.default_rng(0)
    x = rng.random((SAMPLES, 28 * 28), dtype=np.float32)
    y = np.argmax(x @ rng.standard_normal((28 * 28, 10), dtype=np.float32), axis=1).astype(np.int32)

    def accuracy(state) -> float:  # on the host: the parameters fetched, in float32
        params = jax.tree.map(lambda a: np.asarray(a, np.float32), jax.device_get(state[0]))
        h = x[:5000]
        for w, b in params[:-1]:
            h = np.maximum(h @ w + b, 0.0)
        w, b = params[-1]
        return float(np.mean(np.argmax(h @ w + b, axis=1) == y[:5000]))

    fed = "prefetched (autoplace.prefetch)" if rec.prefetch else "put before each step"
    where = f"{rec.device_count} devices ({rec.device})" if rec.device_count > 1 else device
    print(f"training on {where} at batch {rec.batch_size} in {rec.precision}, {k} step(s) "
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
            state = fused(state, jax.device_put(batches, stacked))
            if rec.paced and c % 2:
                jax.block_until_ready(state)
        left = (host_batch(order, i) for i in range(calls * k, steps))  # one step a call
        if rec.prefetch:  # the tune timed two puts in flight faster: keep them in flight
            left = autoplace.prefetch(left, split)
        for i, batch in enumerate(left):
            state = step(state, batch if rec.prefetch else jax.device_put(batch, split))
            if rec.paced and i % 2:  # several CPU devices: two steps in flight at most
                jax.block_until_ready(state)
        jax.block_until_ready(state)
        seconds = time.perf_counter() - t
        print(f"epoch {epoch}: {steps * rec.batch_size / seconds:,.0f} samples/s, "
              f"accuracy {accuracy(state):.1%}")  # fmt: skip
    print(f"done in {time.perf_counter() - started:.1f} s from start")


if __name__ == "__main__":
    main()
