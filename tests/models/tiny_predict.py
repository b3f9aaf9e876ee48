"""A tiny inference workload: one matmul, its output follows the batch closely."""

import jax.numpy as jnp
import numpy as np

import autoplace

IN, OUT = 16, 8


@autoplace.workload
def predict(width, dtype):
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((IN, OUT)) / np.sqrt(IN)).astype(dtype)

    def step(w, x):
        return jnp.tanh(x @ w).astype(jnp.float32)

    def make_batch(batch_size, rng):
        return rng.standard_normal((batch_size, IN)).astype(np.float32).astype(dtype)

    return autoplace.Workload(state=w, step=step, make_batch=make_batch, kind="infer")
