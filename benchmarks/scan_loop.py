"""A plain loop of the residual CNN's step, jitted alone or inside ``lax.scan`` over K
batches (issue 38's steps-per-call finding), independent of autoplace's measuring code: a
fresh host batch (K stacked) each call, two calls of warm-up, then 3 s timed. Run each K
in a fresh process, in turns::

    for r in 1 2; do for k in 0 4 16; do python benchmarks/scan_loop.py $k; done; done

K = 0: the step jitted alone (no scan).
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import unseen_workloads as u

K, B = int(sys.argv[1]), 16
PLAIN = K == 0
K = max(K, 1)
w = u.resnet_bn(16, jnp.float32)


def call(state, batches):
    return jax.lax.scan(lambda s, b: (w.step(s, b), None), state, batches)[0]


step = jax.jit(w.step if PLAIN else call, donate_argnums=0)
rng = np.random.default_rng(0)


def host():
    bs = [w.make_batch(B, rng) for _ in range(K)]
    return bs[0] if PLAIN else jax.tree.map(lambda *x: np.stack(x), *bs)


state = w.state
for _ in range(2):
    state = jax.block_until_ready(step(state, host()))
n, t = 0, time.perf_counter()
while time.perf_counter() - t < 3.0:
    state = jax.block_until_ready(step(state, host()))
    n += 1
print(
    "plain" if PLAIN else K,
    f"{(time.perf_counter() - t) / (n * K) * 1e3:.1f} ms a step",
    n,
    "calls",
)
