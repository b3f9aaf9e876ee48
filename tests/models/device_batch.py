"""make_batch puts its batch on a device (JAX arrays): the transfer would time nothing."""

import jax.numpy as jnp
import numpy as np

import autoplace


@autoplace.workload
def on_device(width, dtype):
    def make_batch(batch_size, rng):
        return jnp.zeros((batch_size, 4), dtype)

    return autoplace.Workload(
        state=np.zeros(4, np.float32), step=lambda s, x: x @ s, make_batch=make_batch, kind="infer"
    )
