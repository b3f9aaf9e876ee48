"""The step runs fine but its output is NaN."""

import jax.numpy as jnp
import numpy as np

import autoplace


@autoplace.workload
def nan(width, dtype):
    def step(state, x):
        return jnp.sqrt(-jnp.abs(x) - 1.0) + state

    def make_batch(batch_size, rng):
        return rng.standard_normal((batch_size, 4)).astype(np.float32)

    return autoplace.Workload(
        state=np.zeros(4, np.float32), step=step, make_batch=make_batch, kind="infer"
    )
