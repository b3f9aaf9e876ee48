"""Building this workload allocates 1 TiB eagerly: XLA answers RESOURCE_EXHAUSTED."""

import jax.numpy as jnp
import numpy as np

import autoplace


@autoplace.workload
def greedy(width, dtype):
    state = jnp.zeros((2**38,), jnp.float32)  # 1 TiB

    def step(s, x):
        return s

    def make_batch(batch_size, rng):
        return np.zeros((batch_size, 4), np.float32)

    return autoplace.Workload(state=state, step=step, make_batch=make_batch, kind="infer")
