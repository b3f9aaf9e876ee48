"""The step raises while JAX traces it: the reason must point at this file and line."""

import numpy as np

import autoplace


@autoplace.workload
def broken(width, dtype):
    def step(state, x):
        raise ValueError("shapes do not line up")  # RAISE_LINE

    def make_batch(batch_size, rng):
        return np.zeros((batch_size, 4), np.float32)

    return autoplace.Workload(
        state=np.zeros(4, np.float32), step=step, make_batch=make_batch, kind="infer"
    )
