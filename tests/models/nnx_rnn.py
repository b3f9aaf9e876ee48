"""A Flax NNX recurrent classifier trained with optax, its state from
``nnx.split((model, optimizer))``: ``nnx.RNN`` keeps an RNG stream by default, so the
state holds typed PRNG key arrays beside the parameters and the optimiser's moments."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import autoplace

SEQ, FEATURES, CLASSES = 8, 4, 3


class Classifier(nnx.Module):
    def __init__(self, width: int, dtype, rngs: nnx.Rngs):
        self.rnn = nnx.RNN(nnx.LSTMCell(FEATURES, width, dtype=dtype, rngs=rngs), rngs=rngs)
        self.head = nnx.Linear(width, CLASSES, dtype=dtype, rngs=rngs)

    def __call__(self, x):
        return self.head(self.rnn(x)[:, -1]).astype(jnp.float32)


@autoplace.workload(widths=(8, 16), default_width=8)
def classifier(width, dtype):
    model = Classifier(width, dtype, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    assert any(
        jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) for leaf in jax.tree.leaves(state)
    ), "the RNN's RNG stream is in the state"

    def step(state, batch):
        x, y = batch
        model, optimizer = nnx.merge(graphdef, state)

        def loss(model):
            logits = model(x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        grads = nnx.grad(loss)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    def make_batch(batch_size, rng):
        x = rng.standard_normal((batch_size, SEQ, FEATURES), dtype=np.float32).astype(dtype)
        return x, rng.integers(0, CLASSES, batch_size, dtype=np.int32)

    return autoplace.Workload(state=state, step=step, make_batch=make_batch)
