"""Workloads whose throughput does not simply rise with the batch size, for
``search_benchmark.py`` (both are in its default set).

``encoder``: a transformer encoder for inference (2 blocks, width 128, sequences of 64
tokens, a vocabulary of 1000), as a user would write it from the Flax NNX examples, in
plain JAX. On a 2-core CPU its throughput peaks at a batch of 16 to 32 and falls away
above: the curve that made the one-peak search of 2026-11-23 recommend batch 256-512,
2-2.4x slower than the best.
``mixer``: token- and channel-mixing MLP blocks (MLP-Mixer) over 256 patches, inference:
its activations outgrow a CPU's caches early, so its throughput peaks early too.
Weights are drawn in float32 and cast, so every precision computes the same model. The
batch sizes are capped (512 and 256) so that the benchmark's exhaustive grid, at full
settings and in emulated precisions, takes minutes rather than an hour.
"""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace


def normal(rng, shape, scale, dtype):
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * scale).astype(dtype)


def layer_norm(x, eps=1e-6):
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = x32.var(-1, keepdims=True)
    return ((x32 - mean) * jax.lax.rsqrt(var + eps)).astype(x.dtype)


@autoplace.workload(
    widths=(64, 128, 256), default_width=128, batch_sizes=tuple(2**i for i in range(10))
)
def encoder(width, dtype):
    """A 2-block transformer encoder over 64 tokens, 4 heads, inference."""
    rng = np.random.default_rng(0)
    d, seq, vocab, heads, blocks = width, 64, 1000, 4, 2
    params = {
        "emb": normal(rng, (vocab, d), 0.02, dtype),
        "pos": normal(rng, (seq, d), 0.02, dtype),
        "blocks": [
            {
                "qkv": normal(rng, (d, 3 * d), d**-0.5, dtype),
                "o": normal(rng, (d, d), d**-0.5, dtype),
                "w1": normal(rng, (d, 4 * d), d**-0.5, dtype),
                "w2": normal(rng, (4 * d, d), (4 * d) ** -0.5, dtype),
            }
            for _ in range(blocks)
        ],
        "head": normal(rng, (d, 2), d**-0.5, dtype),
    }

    def attention(x, p):
        b, t, _ = x.shape
        q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)
        split = lambda a: a.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        logits = (q @ k.transpose(0, 1, 3, 2)).astype(jnp.float32) / np.sqrt(d // heads)
        a = jax.nn.softmax(logits, axis=-1).astype(x.dtype) @ v
        return a.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["o"]

    def predict(p, tokens):
        h = p["emb"][tokens] + p["pos"]
        for blk in p["blocks"]:
            h = h + attention(layer_norm(h), blk)
            h = h + jax.nn.gelu(layer_norm(h) @ blk["w1"]) @ blk["w2"]
        return (layer_norm(h).mean(axis=1) @ p["head"]).astype(jnp.float32)

    def make_batch(batch_size, rng):
        return rng.integers(0, vocab, size=(batch_size, seq), dtype=np.int32)

    return autoplace.Workload(state=params, step=predict, make_batch=make_batch, kind="infer")


@autoplace.workload(widths=(128, 256), default_width=256, batch_sizes=tuple(2**i for i in range(9)))
def mixer(width, dtype):
    """Two MLP-Mixer blocks over 256 patches of ``width`` channels, inference."""
    rng = np.random.default_rng(0)
    patches, d = 256, width
    params = [
        {
            "t1": normal(rng, (patches, patches), patches**-0.5, dtype),
            "t2": normal(rng, (patches, patches), patches**-0.5, dtype),
            "c1": normal(rng, (d, 2 * d), d**-0.5, dtype),
            "c2": normal(rng, (2 * d, d), (2 * d) ** -0.5, dtype),
        }
        for _ in range(2)
    ]

    def predict(p, x):
        h = x
        for blk in p:
            t = layer_norm(h).transpose(0, 2, 1)
            h = h + (jax.nn.gelu(t @ blk["t1"]) @ blk["t2"]).transpose(0, 2, 1)
            h = h + jax.nn.gelu(layer_norm(h) @ blk["c1"]) @ blk["c2"]
        return h.mean(axis=(1, 2)).astype(jnp.float32)

    def make_batch(batch_size, rng):
        return rng.standard_normal((batch_size, patches, d), dtype=np.float32).astype(dtype)

    return autoplace.Workload(state=params, step=predict, make_batch=make_batch, kind="infer")
