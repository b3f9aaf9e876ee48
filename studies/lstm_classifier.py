"""An LSTM sequence classifier written with ``lax.scan``, from the seed
"Why is Keras LSTM on CPU three times faster than GPU?".

A generic scanned LSTM runs one small matmul per time step: a fixed per-step cost
that a GPU cannot amortise at small widths. ``width`` is the hidden size.
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace

VOCAB = 2000
EMBED = 64
SEQ_LEN = 40
CLASSES = 2


def normal(rng, shape, scale, dtype):
    """Weights drawn on the host: jax.random would compile one eager op per shape, seconds
    of start-up that have nothing to do with the step being placed."""
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=dtype)


@autoplace.workload(
    widths=(32, 64, 128, 256),
    default_width=64,
    batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
def lstm(width, dtype):
    """Training step: embedding -> LSTM(width) over 40 tokens -> dense -> 2 classes."""
    rng = np.random.default_rng(0)
    params = {
        "embed": normal(rng, (VOCAB, EMBED), 0.1, dtype),
        "wx": normal(rng, (EMBED, 4 * width), 1 / np.sqrt(EMBED), dtype),
        "wh": normal(rng, (width, 4 * width), 1 / np.sqrt(width), dtype),
        "b": jnp.zeros((4 * width,), dtype),
        "out": normal(rng, (width, CLASSES), 1 / np.sqrt(width), dtype),
    }

    def forward(params, tokens):
        xs = params["embed"][tokens] @ params["wx"] + params["b"]  # (B, T, 4H)

        def cell(carry, x_t):
            h, c = carry
            gates = x_t + h @ params["wh"]
            i, f, g, o = jnp.split(gates, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), None

        batch = tokens.shape[0]
        zeros = jnp.zeros((batch, width), dtype)
        (h, _), _ = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(xs, 0, 1))
        return (h @ params["out"]).astype(jnp.float32)

    def loss(params, tokens, labels):
        logp = jax.nn.log_softmax(forward(params, tokens))
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return jax.tree.map(lambda p, g: (p - 0.05 * g).astype(dtype), params, grads)

    def make_batch(batch_size, rng):
        tokens = rng.integers(0, VOCAB, size=(batch_size, SEQ_LEN), dtype=np.int32)
        labels = rng.integers(0, CLASSES, size=(batch_size,), dtype=np.int32)
        return tokens, labels

    return autoplace.Workload(state=params, step=step, make_batch=make_batch)
