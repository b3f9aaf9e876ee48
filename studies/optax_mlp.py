"""An MNIST-shaped MLP trained with optax's Adam: the optimiser's state is part of the step.

``mlp``: 784-``width``-10, trained with ``optax.adam(1e-3)``. The state autoplace donates
back into each step is ``(params, opt_state)``, as a training loop carries it. At
float16, Adam's epsilon (1e-8) underflows to 0 and its second moments of small
gradients to 0 with it, so updates divide by zero: the output is not finite at any
batch size, and after two batch sizes autoplace ends the float16 arm with that reason
instead of trying every other. Needs optax (``pip install -e '.[examples]'``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import autoplace


@autoplace.workload(widths=(128, 512), default_width=128)
def mlp(width, dtype):
    """One Adam step of a 784-width-10 MLP on a batch of 28x28 images."""
    rng = np.random.default_rng(0)
    params = {  # drawn in float32, then cast: the same model at every precision
        "w1": (rng.standard_normal((784, width), dtype=np.float32) * np.sqrt(2 / 784)),
        "b1": np.zeros(width, np.float32),
        "w2": (rng.standard_normal((width, 10), dtype=np.float32) * np.sqrt(2 / width)),
        "b2": np.zeros(10, np.float32),
    }
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype=dtype), params)
    optimiser = optax.adam(1e-3)

    def loss(p, x, y):
        logits = (jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]).astype(jnp.float32)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def step(state, batch):
        p, opt_state = state
        grads = jax.grad(loss)(p, *batch)
        updates, opt_state = optimiser.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state

    def make_batch(batch_size, rng):
        x = rng.random((batch_size, 784), dtype=np.float32).astype(dtype)
        y = rng.integers(0, 10, size=(batch_size,), dtype=np.int32)
        return x, y

    return autoplace.Workload(
        state=(params, optimiser.init(params)), step=step, make_batch=make_batch
    )
