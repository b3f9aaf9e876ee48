"""An inference step with a 48 MiB temporary, a fresh buffer every step: larger than the
32 MiB glibc keeps for reuse, so it is mapped afresh, and every page faults, each step."""

import jax.numpy as jnp
import numpy as np

import autoplace

N = 12 * 1024 * 1024  # floats: 48 MiB


@autoplace.workload(batch_sizes=(1, 2))
def fresh_pages(width, dtype):
    def predict(state, batch):
        return jnp.cumsum(state * batch.mean())[::4096]  # a 48 MiB temporary, a small output

    def make_batch(batch_size, rng):
        return rng.random((batch_size, 4), dtype=np.float32).astype(dtype)

    return autoplace.Workload(
        state=jnp.ones(N, dtype), step=predict, make_batch=make_batch, kind="infer"
    )
