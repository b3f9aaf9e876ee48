"""make_batch returns one row fewer than asked: samples/s would be overstated."""

import numpy as np

import autoplace


@autoplace.workload
def short(width, dtype):
    def make_batch(batch_size, rng):
        return np.zeros((batch_size - 1, 4), np.float32), np.zeros(batch_size, np.int32)

    return autoplace.Workload(
        state=np.zeros(4, np.float32),
        step=lambda s, b: b[0] @ s,
        make_batch=make_batch,
        kind="infer",
    )
