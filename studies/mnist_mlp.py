"""MNIST-shaped MLPs from the seed "GPU slower than CPU?" (TensorFlow 2.0 on a GeForce 940M).

``mlp``: one hidden layer of 128, the model that trained 2.3x *slower* on the GPU.
``mlp_wide``: two hidden layers of 1000, where the GPU pulled ahead (1.7x faster).
Both train with SGD + momentum on synthetic 28x28 images (the shapes are what
matter for timing; no data set is downloaded).
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np

import autoplace


def normal(rng, shape, scale, dtype):
    """Weights drawn on the host: jax.random would compile one eager op per shape, seconds
    of start-up that have nothing to do with the step being placed."""
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=dtype)


def _mlp(sizes, dtype):
    rng = np.random.default_rng(0)
    params = [
        (normal(rng, (n_in, n_out), np.sqrt(2.0 / n_in), dtype), jnp.zeros((n_out,), dtype))
        for n_in, n_out in itertools.pairwise(sizes)
    ]
    momentum = jax.tree.map(jnp.zeros_like, params)

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        logits = (h @ w + b).astype(jnp.float32)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def step(state, batch):
        params, momentum = state
        x, y = batch
        grads = jax.grad(loss)(params, x, y)
        momentum = jax.tree.map(lambda m, g: (0.9 * m + g).astype(dtype), momentum, grads)
        params = jax.tree.map(lambda p, m: (p - 0.01 * m).astype(dtype), params, momentum)
        return params, momentum

    def make_batch(batch_size, rng):
        x = rng.random((batch_size, 28 * 28), dtype=np.float32).astype(dtype)
        y = rng.integers(0, 10, size=(batch_size,), dtype=np.int32)
        return x, y

    return autoplace.Workload(state=(params, momentum), step=step, make_batch=make_batch)


@autoplace.workload(widths=(32, 128, 512), default_width=128)
def mlp(width, dtype):
    """784 -> width -> 10: the small model the GPU lost on."""
    return _mlp([784, width, 10], dtype)


@autoplace.workload(widths=(256, 1000, 2000), default_width=1000)
def mlp_wide(width, dtype):
    """784 -> width -> width -> 10: the wider model the GPU won on."""
    return _mlp([784, width, width, 10], dtype)
