"""A transformer encoder for inference, written with Flax NNX as its documentation does.

``encoder``: 2 blocks, width 128, sequences of 64 tokens, a vocabulary of 1000, a
2-way classification head. The throughput of such a model need not rise with the batch
size: on a small CPU it can peak early and fall away (benchmarks/README.md has the
curve of the same model in plain JAX), the shape that fooled a one-peak search. Needs
flax (``pip install -e '.[examples]'``).

The modules compute in the precision asked for (``dtype``), but their parameters are
made in float32 and then cast, so every precision computes the same model and
``deviation_vs_float32`` measures the precision alone (a model built *in* bfloat16
draws other weights, and deviates by 100% and more for nothing). Without ``dtype`` on
the modules, Flax computes in float32 whatever the parameters: ``compute_dtypes`` says so.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import autoplace

SEQ, VOCAB, HEADS, BLOCKS = 64, 1000, 4, 2


class Block(nnx.Module):
    def __init__(self, width: int, dtype, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(width, dtype=dtype, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(
            num_heads=HEADS, in_features=width, decode=False, dtype=dtype, rngs=rngs
        )
        self.norm2 = nnx.LayerNorm(width, dtype=dtype, rngs=rngs)
        self.up = nnx.Linear(width, 4 * width, dtype=dtype, rngs=rngs)
        self.down = nnx.Linear(4 * width, width, dtype=dtype, rngs=rngs)

    def __call__(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.down(jax.nn.gelu(self.up(self.norm2(x))))


class Encoder(nnx.Module):
    """Computes in ``dtype``; its parameters are made in float32 (``param_dtype``)."""

    def __init__(self, width: int, dtype, rngs: nnx.Rngs):
        self.embed = nnx.Embed(VOCAB, width, dtype=dtype, rngs=rngs)
        self.position = nnx.Param(jax.random.normal(rngs.params(), (SEQ, width)) * 0.02)
        self.blocks = nnx.List([Block(width, dtype, rngs) for _ in range(BLOCKS)])
        self.norm = nnx.LayerNorm(width, dtype=dtype, rngs=rngs)
        self.head = nnx.Linear(width, 2, dtype=dtype, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens) + self.position[...].astype(self.embed.dtype)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(axis=1)).astype(jnp.float32)


@autoplace.workload(widths=(64, 128, 256), default_width=128)
def encoder(width, dtype):
    """The encoder's forward pass over a batch of token sequences."""
    model = Encoder(width, dtype, nnx.Rngs(0))  # float32 weights: the same at every precision
    graphdef, state = nnx.split(model)
    state = jax.tree.map(
        lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, state
    )

    def predict(state, tokens):
        return nnx.merge(graphdef, state)(tokens)

    def make_batch(batch_size, rng):
        return rng.integers(0, VOCAB, size=(batch_size, SEQ), dtype=np.int32)

    return autoplace.Workload(state=state, step=predict, make_batch=make_batch, kind="infer")
