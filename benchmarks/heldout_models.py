"""Models autoplace was not developed against, for judging a tune's pick (issue 48).

Written on 2026-11-28 as a user writes them from the libraries' own tutorials, before any
of them was tuned, and not changed after: a convolutional classifier and a GRU sequence
classifier as Equinox's examples train them (``eqx.filter_value_and_grad``, optax's AdamW),
a Flax NNX convolutional classifier as Flax's MNIST tutorial trains it (``nnx.Optimizer``),
and a variational autoencoder in Flax linen trained with optax's Adam, its sampling key
carried in the state. Each is wrapped the way the README says: built in float32 from a
fixed key, then cast to the precision asked.

    python benchmarks/remeasure.py sweep benchmarks/heldout_models.py --workload eqx_cnn
"""

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import autoplace

#: Batch sizes tried: powers of two, 1 to 2048 (a training run's range on one device).
BATCHES = tuple(2**i for i in range(12))


def cast(tree, dtype):
    """Every floating array of ``tree`` in ``dtype``, everything else as it is."""
    return jax.tree.map(lambda a: a.astype(dtype) if eqx.is_inexact_array(a) else a, tree)


def images(batch_size, rng, dtype, channels=1, side=28, classes=10):
    x = rng.random((batch_size, channels, side, side), dtype=np.float32).astype(dtype)
    return x, rng.integers(0, classes, batch_size, dtype=np.int32)


# --- eqx_cnn: Equinox's convolutional MNIST classifier ------------------------------------


class SmallCNN(eqx.Module):
    layers: list

    def __init__(self, channels, key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        side = (28 - 4 + 1) // 2  # a 4x4 convolution, then 2x2 pooling
        self.layers = [
            eqx.nn.Conv2d(1, channels, kernel_size=4, key=k1),
            eqx.nn.MaxPool2d(kernel_size=2, stride=2),
            jax.nn.relu,
            jnp.ravel,
            eqx.nn.Linear(channels * side * side, 512, key=k2),
            jax.nn.relu,
            eqx.nn.Linear(512, 64, key=k3),
            jax.nn.relu,
            eqx.nn.Linear(64, 10, key=k4),
            jax.nn.log_softmax,
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@autoplace.workload(widths=(3, 8, 16), default_width=3, batch_sizes=BATCHES)
def eqx_cnn(width, dtype):
    """One AdamW step of Equinox's MNIST CNN (a 4x4 convolution of ``width`` channels)."""
    model = cast(SmallCNN(width, jax.random.PRNGKey(5678)), dtype)
    optim = optax.adamw(3e-4)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    params, static = eqx.partition(model, eqx.is_array)

    def loss(params, x, y):
        logp = jax.vmap(eqx.combine(params, static))(x).astype(jnp.float32)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(state, batch):
        params, opt_state = state
        _loss, grads = jax.value_and_grad(loss)(params, *batch)
        updates, opt_state = optim.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), opt_state

    return autoplace.Workload(
        state=(params, opt_state),
        step=step,
        make_batch=lambda b, rng: images(b, rng, dtype),
    )


# --- eqx_gru: Equinox's RNN example, a GRU telling clockwise spirals from anticlockwise ---


class SpiralGRU(eqx.Module):
    cell: eqx.nn.GRUCell
    head: eqx.nn.Linear
    bias: jax.Array

    def __init__(self, hidden, key):
        k1, k2 = jax.random.split(key)
        self.cell = eqx.nn.GRUCell(2, hidden, key=k1)
        self.head = eqx.nn.Linear(hidden, 1, use_bias=False, key=k2)
        self.bias = jnp.zeros(1)

    def __call__(self, xs):
        def f(carry, x):
            return self.cell(x, carry), None

        hidden = jnp.zeros((self.cell.hidden_size,), dtype=xs.dtype)
        out, _ = jax.lax.scan(f, hidden, xs)
        return jax.nn.sigmoid((self.head(out) + self.bias).astype(jnp.float32))


def spirals(batch_size, rng, dtype, length=64):
    t = np.linspace(0, 2 * np.pi, length, dtype=np.float32)
    offset = rng.random((batch_size, 1), dtype=np.float32) * 2 * np.pi
    sign = rng.integers(0, 2, (batch_size, 1)).astype(np.float32) * 2 - 1
    xy = np.stack([np.cos(sign * t + offset), np.sin(sign * t + offset)], axis=-1)
    xy = xy * (1 + t)[None, :, None] / 10 + rng.standard_normal(xy.shape).astype(np.float32) * 0.1
    return xy.astype(dtype), (sign[:, 0] > 0).astype(np.float32)


@autoplace.workload(widths=(16, 64, 256), default_width=16, batch_sizes=BATCHES)
def eqx_gru(width, dtype):
    """One Adam step of Equinox's GRU spiral classifier over 64 points."""
    model = cast(SpiralGRU(width, jax.random.PRNGKey(5678)), dtype)
    optim = optax.adam(3e-3)
    params, static = eqx.partition(model, eqx.is_array)
    opt_state = optim.init(params)

    def loss(params, x, y):
        p = jax.vmap(eqx.combine(params, static))(x)[:, 0]
        p = jnp.clip(p, 1e-6, 1 - 1e-6)
        return -jnp.mean(y * jnp.log(p) + (1 - y) * jnp.log1p(-p))

    def step(state, batch):
        params, opt_state = state
        grads = jax.grad(loss)(params, *batch)
        updates, opt_state = optim.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), opt_state

    return autoplace.Workload(
        state=(params, opt_state),
        step=step,
        make_batch=lambda b, rng: spirals(b, rng, dtype),
    )


# --- nnx_cnn: Flax NNX's MNIST tutorial CNN ------------------------------------------------


class TutorialCNN(nnx.Module):
    def __init__(self, features, rngs):
        self.conv1 = nnx.Conv(1, features, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(features, 2 * features, kernel_size=(3, 3), rngs=rngs)
        self.linear1 = nnx.Linear(7 * 7 * 2 * features, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        pool = lambda h: nnx.avg_pool(h, window_shape=(2, 2), strides=(2, 2))  # noqa: E731
        x = pool(nnx.relu(self.conv1(x)))
        x = pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.linear2(nnx.relu(self.linear1(x)))


@autoplace.workload(widths=(16, 32, 64), default_width=32, batch_sizes=BATCHES)
def nnx_cnn(width, dtype):
    """One AdamW step of Flax NNX's MNIST tutorial CNN (``width``, then twice as many,
    channels), model and optimizer split into one state."""
    model = TutorialCNN(width, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(5e-3, 0.9), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    state = cast(state, dtype)

    def step(state, batch):
        x, y = batch
        model, optimizer = nnx.merge(graphdef, state)

        def loss_fn(model):
            logits = model(x).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        grads = nnx.grad(loss_fn)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    def make_batch(batch_size, rng):
        x, y = images(batch_size, rng, dtype)
        return x.transpose(0, 2, 3, 1), y  # NHWC, as Flax's convolutions take them

    return autoplace.Workload(state=state, step=step, make_batch=make_batch)


# --- vae: a Flax linen VAE on binarised 28x28 images, optax Adam ---------------------------


class VAE(nn.Module):
    latents: int
    hidden: int = 500

    @nn.compact
    def __call__(self, x, key):
        h = nn.relu(nn.Dense(self.hidden, name="enc")(x))
        mean, logvar = nn.Dense(self.latents, name="mean")(h), nn.Dense(self.latents, name="lv")(h)
        z = mean + jnp.exp(0.5 * logvar) * jax.random.normal(key, mean.shape, mean.dtype)
        h = nn.relu(nn.Dense(self.hidden, name="dec")(z))
        return nn.Dense(784, name="out")(h), mean, logvar


@autoplace.workload(widths=(10, 20, 50), default_width=20, batch_sizes=BATCHES)
def vae(width, dtype):
    """One Adam step of a VAE with ``width`` latents, its sampling key carried in the state."""
    module = VAE(width)
    key = jax.random.PRNGKey(0)
    params = module.init(key, jnp.zeros((1, 784), jnp.float32), key)["params"]
    params = cast(params, dtype)
    optim = optax.adam(1e-3)

    def loss(params, x, key):
        logits, mean, logvar = module.apply({"params": params}, x, key)
        logits, mean, logvar = (a.astype(jnp.float32) for a in (logits, mean, logvar))
        bce = optax.sigmoid_binary_cross_entropy(logits, x.astype(jnp.float32)).sum(-1)
        kl = -0.5 * jnp.sum(1 + logvar - mean**2 - jnp.exp(logvar), axis=-1)
        return jnp.mean(bce + kl)

    def step(state, x):
        params, opt_state, key = state
        key, sub = jax.random.split(key)
        grads = jax.grad(loss)(params, x, sub)
        updates, opt_state = optim.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, key

    def make_batch(batch_size, rng):
        return (rng.random((batch_size, 784)) > 0.5).astype(np.float32).astype(dtype)

    return autoplace.Workload(
        state=(params, optim.init(params), jax.random.PRNGKey(1)),
        step=step,
        make_batch=make_batch,
    )
