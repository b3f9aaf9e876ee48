"""State holding typed PRNG key arrays (``jax.random.key``): a training step that draws
dropout from a key it carries and returns the next key, and an inference step whose
output holds a key too. Neither NumPy nor ``np.asarray`` can hold such an array."""

import jax
import jax.numpy as jnp
import numpy as np

import autoplace

IN, OUT = 16, 4


def _params(width, dtype):
    k1, k2 = jax.random.split(jax.random.key(0))
    return {
        "w1": (jax.random.normal(k1, (IN, width)) * 0.1).astype(dtype),
        "w2": (jax.random.normal(k2, (width, OUT)) * 0.1).astype(dtype),
    }


def _forward(params, key, x):
    h = jax.nn.relu(x @ params["w1"])
    keep = jax.random.bernoulli(key, 0.9, h.shape)  # dropout from the carried key
    return (jnp.where(keep, h / 0.9, 0) @ params["w2"]).astype(jnp.float32)


def _make_batch(dtype):
    def make_batch(batch_size, rng):
        x = rng.standard_normal((batch_size, IN), dtype=np.float32).astype(dtype)
        y = rng.standard_normal((batch_size, OUT), dtype=np.float32)
        return x, y

    return make_batch


@autoplace.workload(widths=(8, 16), default_width=8)
def train(width, dtype):
    state = {"params": _params(width, dtype), "key": jax.random.key(1)}

    def step(state, batch):
        x, y = batch
        key, drop = jax.random.split(state["key"])

        def loss(p):
            return jnp.mean((_forward(p, drop, x) - y) ** 2)

        grads = jax.grad(loss)(state["params"])
        params = jax.tree.map(lambda p, g: (p - 0.01 * g).astype(p.dtype), state["params"], grads)
        return {"params": params, "key": key}

    return autoplace.Workload(state=state, step=step, make_batch=_make_batch(dtype))


@autoplace.workload(widths=(8, 16), default_width=8)
def infer(width, dtype):
    state = {"params": _params(width, dtype), "keys": jax.random.split(jax.random.key(2), 3)}

    def predict(state, batch):
        x, _ = batch
        return {"y": _forward(state["params"], state["keys"][0], x), "key": state["keys"][1]}

    return autoplace.Workload(
        state=state, step=predict, make_batch=_make_batch(dtype), kind="infer"
    )
