"""Workloads the search was not developed on, for ``search_benchmark.py --workloads``.

``attn``: one self-attention + MLP block trained with SGD (a tiny transformer).
``conv1d``: three 1-D convolutions over 1024-sample signals, inference only.
Benchmarked 2026-11-23 11:30 UTC from a copy differing only in layout and this docstring.
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace


def normal(rng, shape, scale, dtype):
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=dtype)


@autoplace.workload(widths=(32, 64, 128), default_width=64)
def attn(width, dtype):
    """One self-attention + MLP block over sequences of 32 tokens, trained with SGD."""
    rng = np.random.default_rng(0)
    d, seq, vocab = width, 32, 256
    params = {
        "emb": normal(rng, (vocab, d), 0.02, dtype),
        "qkv": normal(rng, (d, 3 * d), d**-0.5, dtype),
        "o": normal(rng, (d, d), d**-0.5, dtype),
        "w1": normal(rng, (d, 4 * d), d**-0.5, dtype),
        "w2": normal(rng, (4 * d, d), (4 * d) ** -0.5, dtype),
        "out": normal(rng, (d, vocab), d**-0.5, dtype),
    }

    def loss(p, tokens):
        h = p["emb"][tokens]
        q, k, v = jnp.split(h @ p["qkv"], 3, axis=-1)
        a = jax.nn.softmax((q @ k.transpose(0, 2, 1)).astype(jnp.float32) / np.sqrt(d), axis=-1)
        h = h + (a.astype(dtype) @ v) @ p["o"]
        h = h + jax.nn.gelu(h @ p["w1"]) @ p["w2"]
        logits = (h @ p["out"]).astype(jnp.float32)
        return -jnp.mean(
            jnp.take_along_axis(jax.nn.log_softmax(logits[:, :-1]), tokens[:, 1:, None], axis=-1)
        )

    def step(p, tokens):
        g = jax.grad(loss)(p, tokens)
        return jax.tree.map(lambda w, gw: (w - 0.01 * gw).astype(dtype), p, g)

    def make_batch(batch_size, rng):
        return rng.integers(0, vocab, size=(batch_size, seq), dtype=np.int32)

    return autoplace.Workload(state=params, step=step, make_batch=make_batch)


@autoplace.workload(widths=(16, 32, 64), default_width=32)
def conv1d(width, dtype):
    """Three 1-D convolutions over 1024-sample signals, inference only."""
    rng = np.random.default_rng(0)
    ws = [
        normal(rng, (width, 1, 9), 0.3, dtype),
        normal(rng, (width, width, 9), width**-0.5, dtype),
        normal(rng, (width, width, 9), width**-0.5, dtype),
    ]
    head = normal(rng, (width, 10), width**-0.5, dtype)

    def step(state, x):
        h = x
        for w in state[0]:
            h = jax.nn.relu(jax.lax.conv_general_dilated(h, w, (2,), "SAME"))
        return (h.mean(axis=-1) @ state[1]).astype(jnp.float32)

    def make_batch(batch_size, rng):
        return rng.standard_normal((batch_size, 1, 1024), dtype=np.float32).astype(dtype)

    return autoplace.Workload(state=(ws, head), step=step, make_batch=make_batch, kind="infer")
