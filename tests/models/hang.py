"""Making a batch never finishes: a measurement of this workload must time out."""

import time

import numpy as np

import autoplace


@autoplace.workload
def hang(width, dtype):
    def step(state, x):
        return state

    def make_batch(batch_size, rng):
        time.sleep(3600)
        return np.zeros((batch_size, 4), np.float32)

    return autoplace.Workload(
        state=np.zeros(4, np.float32), step=step, make_batch=make_batch, kind="infer"
    )
