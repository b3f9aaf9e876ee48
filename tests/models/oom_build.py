"""Building this workload allocates 1 PiB eagerly: XLA answers RESOURCE_EXHAUSTED.

1 PiB is beyond any x86-64 or arm64 process's address space (128 TiB or 256 TiB), so the
allocation fails even where the kernel lets a process reserve more memory than the machine
has. With 1 TiB, the quick tier was killed (SIGKILL) at this test on the H200 machine
(128 GiB), twice (2026-11-26).
"""

import jax.numpy as jnp
import numpy as np

import autoplace


@autoplace.workload
def greedy(width, dtype):
    state = jnp.zeros((2**48,), jnp.float32)  # 1 PiB

    def step(s, x):
        return s

    def make_batch(batch_size, rng):
        return np.zeros((batch_size, 4), np.float32)

    return autoplace.Workload(state=state, step=step, make_batch=make_batch, kind="infer")
