"""Training with Flax NNX and optax, as their documentation writes it, made a workload.

``classifier``: an MLP on MNIST-shaped inputs (784 -> width -> width -> 10), trained with
``nnx.Optimizer(model, optax.adamw(...))``. NNX modules hold their state; autoplace wants
the state as arrays and a step that returns the next one, so the model and its optimizer
are split once (``nnx.split``) and the step merges them, updates, and splits again: the
functional form Flax's guides use under ``jax.jit``. Needs flax and optax
(``pip install -e '.[examples]'``).

The parameters are made in float32 and cast to the precision asked for, before the
optimizer is made (so its moments are of that precision too): every precision trains the
same model, and ``deviation_vs_float32`` measures the precision alone.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import autoplace

IN, CLASSES = 28 * 28, 10


class MLP(nnx.Module):
    def __init__(self, width: int, dtype, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(IN, width, dtype=dtype, rngs=rngs)
        self.middle = nnx.Linear(width, width, dtype=dtype, rngs=rngs)
        self.out = nnx.Linear(width, CLASSES, dtype=dtype, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.middle(nnx.relu(self.hidden(x)))))


@autoplace.workload(widths=(128, 256, 512), default_width=256, batch_sizes=(32, 128, 512, 2048))
def classifier(width, dtype):
    """One AdamW step of the MLP on a batch of images and labels."""
    model = MLP(width, dtype, nnx.Rngs(0))  # float32 weights, the same at every precision
    cast = jax.tree.map(lambda a: a.astype(dtype), nnx.state(model, nnx.Param))
    nnx.update(model, cast)
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))

    def loss(model, images, labels):
        logits = model(images).astype(jnp.float32)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    def step(state, batch):
        model, optimizer = nnx.merge(graphdef, state)
        grads = nnx.grad(loss)(model, *batch)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    def make_batch(batch_size, rng):
        images = rng.random((batch_size, IN), dtype=np.float32).astype(dtype)
        return images, rng.integers(0, CLASSES, size=batch_size, dtype=np.int32)

    return autoplace.Workload(state=state, step=step, make_batch=make_batch)
