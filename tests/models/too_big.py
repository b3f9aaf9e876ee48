"""A step whose output is 1 TiB: XLA's memory analysis predicts far more than any CPU has."""

import jax.numpy as jnp
import numpy as np

import autoplace


@autoplace.workload
def huge(width, dtype):
    def step(state, x):
        return jnp.broadcast_to(jnp.sum(x) + state, (2**38,))

    def make_batch(batch_size, rng):
        return rng.standard_normal((batch_size, 4)).astype(np.float32)

    return autoplace.Workload(state=np.float32(1.0), step=step, make_batch=make_batch, kind="infer")
