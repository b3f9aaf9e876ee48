"""A tiny MLP training step: compiles in a fraction of a second on CPU.

The state is built with NumPy, so building compiles nothing.
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace

IN, OUT = 16, 4


@autoplace.workload(widths=(8, 24, 32, 40), default_width=8)
def mlp(width, dtype):
    """16 -> width -> 4, one SGD step on a squared error."""
    rng = np.random.default_rng(0)
    params = {
        "w1": (rng.standard_normal((IN, width)) / np.sqrt(IN)).astype(dtype),
        "w2": (rng.standard_normal((width, OUT)) / np.sqrt(width)).astype(dtype),
    }

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"])
        return jnp.mean(((h @ p["w2"]).astype(jnp.float32) - y) ** 2)

    def step(p, batch):
        grads = jax.grad(loss)(p, *batch)
        return jax.tree.map(lambda a, g: (a - 0.1 * g).astype(dtype), p, grads)

    def make_batch(batch_size, rng):
        x = rng.standard_normal((batch_size, IN)).astype(np.float32).astype(dtype)
        y = rng.standard_normal((batch_size, OUT)).astype(np.float32)
        return x, y

    return autoplace.Workload(state=params, step=step, make_batch=make_batch)
