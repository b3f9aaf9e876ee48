"""Models autoplace was never developed on, written as a user writes them from the docs of
Flax (linen and NNX), Equinox and optax, for judging autoplace's verdicts (issue 23).

Each is a training step, its weights drawn in float32 from a fixed key and then cast to
the precision asked for (README, "Model files"), so every precision trains the same model.
Where the library has a ``dtype`` for the computation, it is set as well. Logits are
taken to float32 for the loss, as mixed-precision code does. Each workload's
``batch_sizes`` keeps an exhaustive sweep of float32, bfloat16 and float16 over its range
affordable on a 2-core CPU: at its largest batch a step takes about 0.5 s at most on a
quiet machine (``resnet_bn`` and ``lm`` come nearest; under a load of 3 to 5 on two
cores, ``resnet_bn`` at 128 took 0.56 to 1.1 s a step and ``lm`` at 128 0.43 to 0.61 s).

* ``resnet_bn`` (Equinox): a small residual CNN with ``eqx.nn.BatchNorm`` (running
  statistics in an ``eqx.nn.State``), trained with ``optax.sgd(0.1, momentum=0.9)`` on
  32x32x3 images, 10 classes. The BatchNorm call (``axis_name="batch"``, no ``mode``),
  the vmap with ``in_axes=(0, None), out_axes=(0, None)``, ``make_with_state`` and
  ``filter_grad(..., has_aux=True)`` are those of Equinox's "Stateful operations (e.g.
  BatchNorm)" example; the parameters are split from the static parts with
  ``eqx.partition``, as the README shows. Without ``mode``, BatchNorm warns and keeps
  its legacy "ema" mode, which normalises with running statistics during training:
  stepping on two alternating batches, the state went non-finite within 10-25 steps at
  batches 1, 2, 4 and 16 but not in 400 steps at 8, 32, 64 or 128 (float32; bfloat16
  alike at 1, 4, 16, not at 32). That batch-dependent failure is kept on purpose: it is
  what a user who copies the example meets (``mode="batch"`` stays finite).
* ``two_tower`` (Flax linen): a two-tower recommender: a user tower and an item tower,
  each an ``nn.Embed`` of 100,000 rows and an MLP, scored by a dot product and trained
  with an in-batch softmax and ``optax.adam``; the loop is optax's "Getting started"
  one (``init``, ``update``, ``apply_updates``). Adam updates every row of both tables
  each step: tens of MiB of temporaries a step.
* ``gnn`` (Flax linen): a graph convolution network over a batch of small graphs (32
  nodes, 64 random edges each, drawn afresh per batch; 12 binary tasks), trained with
  ``optax.adam``: the ``GraphConvNet`` of Flax's ``examples/ogbg_molpcba`` (embed, three
  rounds of symmetric-normalised message passing with skip connections and LayerNorm,
  mean pooling per graph, a dense decoder), with ``jax.ops.segment_sum`` in place of
  jraph, which that example imports and this project does not install.
* ``gru`` (Flax linen): a GRU sequence classifier, ``nn.RNN(nn.GRUCell(...))`` over 32
  embedded tokens (``nn.RNN`` wrapping a cell as its docstring shows), trained with
  ``flax.training.train_state.TrainState`` and ``optax.adam``: ``create``,
  ``apply_fn`` and ``apply_gradients`` as TrainState's docstring and the linen quick
  start use them. Its state's ``step`` starts as a Python int.
* ``nnx_rnn`` (Flax NNX): an LSTM classifier built on ``nnx.RNN`` (which keeps an RNG
  stream of its own) with ``nnx.Dropout``, trained with ``nnx.Optimizer``; the state is
  ``nnx.split((model, optimizer))`` and the step merges, updates and returns
  ``nnx.state((model, optimizer))``, as the NNX guides "Performance considerations" and
  "Flax NNX vs JAX transformations" show for plain ``jax.jit``. That state holds typed
  PRNG key arrays (``key<fry>``).
* ``lm`` (Equinox): a two-block causal transformer language model
  (``eqx.nn.Embedding``, ``eqx.nn.MultiheadAttention`` with a causal mask,
  ``eqx.nn.LayerNorm``, per example under ``jax.vmap``, as Equinox's BERT example
  builds its blocks), trained with ``optax.chain(optax.clip_by_global_norm(1.0),
  optax.adamw(3e-4))``, the combination optax's docs show for clipping.

Needs flax, optax and equinox: ``pip install -e '.[examples,bench]'``.
"""

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from flax.training import train_state

import autoplace


def cast_floats(tree, dtype):
    """Every floating array of ``tree`` in ``dtype``; integers, booleans and PRNG keys
    unchanged (the README's recipe for a model built in float32)."""
    return jax.tree.map(
        lambda a: a.astype(dtype) if eqx.is_inexact_array(a) else a,
        tree,
    )


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy, in float32 whatever the precision of the logits."""
    return optax.softmax_cross_entropy_with_integer_labels(
        logits.astype(jnp.float32), labels
    ).mean()


def optax_step(loss, optimiser):
    """optax's training step ("Getting started"): the gradients of ``loss(params, batch)``,
    ``update``, ``apply_updates``; the state is ``(params, opt_state)``."""

    def step(state, batch):
        params, opt_state = state
        grads = jax.grad(loss)(params, batch)
        updates, opt_state = optimiser.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return step


def powers_of_two(low: int, high: int) -> tuple[int, ...]:
    """The powers of two from ``low`` to ``high``, both included."""
    return tuple(2**i for i in range(low.bit_length() - 1, high.bit_length()))


# --- resnet_bn: Equinox, BatchNorm with State, SGD + momentum ---------------------------


class ResidualBlock(eqx.Module):
    conv1: eqx.nn.Conv2d
    norm1: eqx.nn.BatchNorm
    conv2: eqx.nn.Conv2d
    norm2: eqx.nn.BatchNorm
    shortcut: eqx.nn.Conv2d | None

    def __init__(self, channels_in, channels_out, stride, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.conv1 = eqx.nn.Conv2d(
            channels_in, channels_out, 3, stride=stride, padding=1, use_bias=False, key=k1
        )
        self.norm1 = eqx.nn.BatchNorm(channels_out, axis_name="batch")
        self.conv2 = eqx.nn.Conv2d(channels_out, channels_out, 3, padding=1, use_bias=False, key=k2)
        self.norm2 = eqx.nn.BatchNorm(channels_out, axis_name="batch")
        self.shortcut = (
            eqx.nn.Conv2d(channels_in, channels_out, 1, stride=stride, use_bias=False, key=k3)
            if stride != 1 or channels_in != channels_out
            else None
        )

    def __call__(self, x, state):
        y, state = self.norm1(self.conv1(x), state)
        y, state = self.norm2(self.conv2(jax.nn.relu(y)), state)
        skip = x if self.shortcut is None else self.shortcut(x)
        return jax.nn.relu(y + skip), state


class ResNet(eqx.Module):
    """A stem, three stages of one residual block each (width, 2x, 4x channels, the
    last two halving the image), global average pooling, a linear head."""

    stem: eqx.nn.Conv2d
    stem_norm: eqx.nn.BatchNorm
    blocks: list[ResidualBlock]
    head: eqx.nn.Linear

    def __init__(self, width, key):
        keys = jax.random.split(key, 5)
        self.stem = eqx.nn.Conv2d(3, width, 3, padding=1, use_bias=False, key=keys[0])
        self.stem_norm = eqx.nn.BatchNorm(width, axis_name="batch")
        self.blocks = [
            ResidualBlock(width, width, 1, keys[1]),
            ResidualBlock(width, 2 * width, 2, keys[2]),
            ResidualBlock(2 * width, 4 * width, 2, keys[3]),
        ]
        self.head = eqx.nn.Linear(4 * width, 10, key=keys[4])

    def __call__(self, image, state):  # one image, height x width x channels
        x = jnp.transpose(image, (2, 0, 1))  # Equinox convolutions take channels first
        x, state = self.stem_norm(self.stem(x), state)
        x = jax.nn.relu(x)
        for block in self.blocks:
            x, state = block(x, state)
        return self.head(jnp.mean(x, axis=(1, 2))), state


@autoplace.workload(widths=(8, 16, 32), default_width=16, batch_sizes=powers_of_two(1, 128))
def resnet_bn(width, dtype):
    """One SGD-with-momentum step of a residual CNN with BatchNorm on 32x32x3 images."""
    model, bn_state = eqx.nn.make_with_state(ResNet)(width, jax.random.PRNGKey(0))
    model, bn_state = cast_floats((model, bn_state), dtype)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    # 0.01: at 0.1 its state held NaN after 50 steps at batch 8, so which batches a tune
    # found finite hung on how long its loops ran (cost benchmark, 2026-11-26).
    optimiser = optax.sgd(learning_rate=0.01, momentum=0.9)

    def loss(params, bn_state, images, labels):
        model = eqx.combine(params, static)
        batch_model = jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
        logits, bn_state = batch_model(images, bn_state)
        return cross_entropy(logits, labels), bn_state

    def step(state, batch):
        params, bn_state, opt_state = state
        grads, bn_state = eqx.filter_grad(loss, has_aux=True)(params, bn_state, *batch)
        updates, opt_state = optimiser.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), bn_state, opt_state

    def make_batch(batch_size, rng):
        images = rng.random((batch_size, 32, 32, 3), dtype=np.float32).astype(dtype)
        return images, rng.integers(0, 10, size=(batch_size,), dtype=np.int32)

    state = (params, bn_state, optimiser.init(params))
    return autoplace.Workload(state=state, step=step, make_batch=make_batch)


# --- two_tower: Flax linen, 100k-row embedding tables, Adam ----------------------------

ROWS, FEATURES, TEMPERATURE = 100_000, 8, 0.05


class Tower(nn.Module):
    """An id's embedding and its dense features, through an MLP, L2-normalised."""

    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, ids, features):
        x = nn.Embed(ROWS, self.width, dtype=self.dtype)(ids)
        x = jnp.concatenate([x, features.astype(self.dtype)], axis=-1)
        x = nn.relu(nn.Dense(2 * self.width, dtype=self.dtype)(x))
        x = nn.Dense(self.width, dtype=self.dtype)(x)
        return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


class TwoTower(nn.Module):
    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, user, user_features, item, item_features):
        users = Tower(self.width, self.dtype, name="users")(user, user_features)
        items = Tower(self.width, self.dtype, name="items")(item, item_features)
        return users @ items.T / TEMPERATURE  # every user against every item of the batch


@autoplace.workload(widths=(32, 64, 128), default_width=64, batch_sizes=powers_of_two(1, 4096))
def two_tower(width, dtype):
    """One Adam step of a two-tower recommender, in-batch softmax over the items."""
    module = TwoTower(width, dtype)
    ids, features = jnp.zeros((1,), jnp.int32), jnp.zeros((1, FEATURES), jnp.float32)
    params = module.init(jax.random.PRNGKey(0), ids, features, ids, features)["params"]
    params = cast_floats(params, dtype)
    optimiser = optax.adam(1e-3)

    def loss(params, batch):
        logits = module.apply({"params": params}, *batch)
        return cross_entropy(logits, jnp.arange(logits.shape[0]))  # user i clicked item i

    def make_batch(batch_size, rng):
        def side():
            ids = rng.integers(0, ROWS, size=(batch_size,), dtype=np.int32)
            return ids, rng.standard_normal((batch_size, FEATURES), np.float32).astype(dtype)

        return (*side(), *side())

    state = (params, optimiser.init(params))
    return autoplace.Workload(state=state, step=optax_step(loss, optimiser), make_batch=make_batch)


# --- gnn: Flax linen, graph convolutions over a batch of graphs, Adam -------------------

NODES, EDGES, NODE_FEATURES, TASKS, ROUNDS = 32, 64, 16, 12, 3


def graph_convolution(nodes, senders, receivers):
    """Sum of the senders' features at each receiver, every node also its own sender,
    normalised by the square roots of both degrees (jraph's ``GraphConvolution`` with
    ``add_self_edges=True`` and symmetric normalisation)."""
    total = nodes.shape[0]
    senders = jnp.concatenate([senders, jnp.arange(total)])
    receivers = jnp.concatenate([receivers, jnp.arange(total)])
    ones = jnp.ones(senders.shape, nodes.dtype)
    out_degree = jax.ops.segment_sum(ones, senders, total)
    in_degree = jax.ops.segment_sum(ones, receivers, total)
    nodes = nodes * jax.lax.rsqrt(jnp.maximum(out_degree, 1.0))[:, None]
    nodes = jax.ops.segment_sum(nodes[senders], receivers, total)
    return nodes * jax.lax.rsqrt(jnp.maximum(in_degree, 1.0))[:, None]


class GraphConvNet(nn.Module):
    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, nodes, senders, receivers):
        graphs, per_graph = nodes.shape[0], nodes.shape[1]
        # One big graph of the batch's graphs: offset each graph's edges by its first node.
        offsets = (jnp.arange(graphs) * per_graph)[:, None]
        senders = (senders + offsets).reshape(-1)
        receivers = (receivers + offsets).reshape(-1)
        x = nn.Dense(self.width, dtype=self.dtype)(nodes.reshape(graphs * per_graph, -1))
        for _ in range(ROUNDS):
            h = nn.relu(nn.Dense(self.width, dtype=self.dtype)(x))
            h = nn.relu(nn.Dense(self.width, dtype=self.dtype)(h))
            x = nn.LayerNorm(dtype=self.dtype)(graph_convolution(h, senders, receivers) + x)
        pooled = x.reshape(graphs, per_graph, self.width).mean(axis=1)
        return nn.Dense(TASKS, dtype=self.dtype)(pooled)


@autoplace.workload(widths=(32, 64, 128), default_width=64, batch_sizes=powers_of_two(1, 1024))
def gnn(width, dtype):
    """One Adam step of a graph convolution network on a batch of small graphs."""
    module = GraphConvNet(width, dtype)
    example = (
        jnp.zeros((1, NODES, NODE_FEATURES)),
        jnp.zeros((1, EDGES), jnp.int32),
        jnp.zeros((1, EDGES), jnp.int32),
    )
    params = cast_floats(module.init(jax.random.PRNGKey(0), *example)["params"], dtype)
    optimiser = optax.adam(1e-3)

    def loss(params, batch):
        nodes, senders, receivers, labels = batch
        logits = module.apply({"params": params}, nodes, senders, receivers)
        return optax.sigmoid_binary_cross_entropy(logits.astype(jnp.float32), labels).mean()

    def make_batch(batch_size, rng):
        nodes = rng.standard_normal((batch_size, NODES, NODE_FEATURES), np.float32)
        senders = rng.integers(0, NODES, size=(batch_size, EDGES), dtype=np.int32)
        receivers = rng.integers(0, NODES, size=(batch_size, EDGES), dtype=np.int32)
        labels = (rng.random((batch_size, TASKS)) < 0.5).astype(np.float32)
        return nodes.astype(dtype), senders, receivers, labels

    state = (params, optimiser.init(params))
    return autoplace.Workload(state=state, step=optax_step(loss, optimiser), make_batch=make_batch)


# --- gru: Flax linen nn.RNN(nn.GRUCell), TrainState + Adam -------------------------------

VOCAB, SEQ, CLASSES = 1000, 32, 2


class GRUClassifier(nn.Module):
    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(VOCAB, self.width, dtype=self.dtype)(tokens)
        x = nn.RNN(nn.GRUCell(features=self.width, dtype=self.dtype))(x)
        return nn.Dense(CLASSES, dtype=self.dtype)(x[:, -1])


def token_batch(batch_size, rng):
    """Token sequences and a class per sequence."""
    tokens = rng.integers(0, VOCAB, size=(batch_size, SEQ), dtype=np.int32)
    return tokens, rng.integers(0, CLASSES, size=(batch_size,), dtype=np.int32)


@autoplace.workload(widths=(32, 64, 128), default_width=64, batch_sizes=powers_of_two(1, 1024))
def gru(width, dtype):
    """One Adam step of a GRU classifier over 32 tokens, carried in a TrainState."""
    module = GRUClassifier(width, dtype)
    params = module.init(jax.random.PRNGKey(0), jnp.zeros((1, SEQ), jnp.int32))["params"]
    state = train_state.TrainState.create(
        apply_fn=module.apply, params=cast_floats(params, dtype), tx=optax.adam(1e-3)
    )

    def step(state, batch):
        tokens, labels = batch

        def loss(params):
            return cross_entropy(state.apply_fn({"params": params}, tokens), labels)

        return state.apply_gradients(grads=jax.grad(loss)(state.params))

    return autoplace.Workload(state=state, step=step, make_batch=token_batch)


# --- nnx_rnn: Flax NNX, nnx.RNN with an RNG stream, nnx.Optimizer ----------------------


class LSTMClassifier(nnx.Module):
    """Embedding, an LSTM over the sequence, dropout on its last output, a linear head.
    Computes in ``dtype``; its parameters are made in float32."""

    def __init__(self, width, dtype, rngs: nnx.Rngs):
        self.embed = nnx.Embed(VOCAB, width, dtype=dtype, rngs=rngs)
        cell = nnx.LSTMCell(width, width, dtype=dtype, rngs=rngs)
        self.rnn = nnx.RNN(cell, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.head = nnx.Linear(width, CLASSES, dtype=dtype, rngs=rngs)

    def __call__(self, tokens):
        x = self.rnn(self.embed(tokens))
        return self.head(self.dropout(x[:, -1]))


@autoplace.workload(widths=(32, 64, 128), default_width=64, batch_sizes=powers_of_two(1, 1024))
def nnx_rnn(width, dtype):
    """One AdamW step of an NNX LSTM classifier, the state split from model and optimiser."""
    model = LSTMClassifier(width, dtype, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    state = cast_floats(state, dtype)

    def train_step(state, batch):
        tokens, labels = batch
        model, optimizer = nnx.merge(graphdef, state)

        def loss_fn(model):
            return cross_entropy(model(tokens), labels)

        grads = nnx.grad(loss_fn)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    return autoplace.Workload(state=state, step=train_step, make_batch=token_batch)


# --- lm: Equinox causal transformer, optax chain(clip, adamw) ---------------------------

LM_VOCAB, LM_SEQ, LM_HEADS, LM_BLOCKS = 512, 64, 4, 2


class DecoderBlock(eqx.Module):
    norm1: eqx.nn.LayerNorm
    attention: eqx.nn.MultiheadAttention
    norm2: eqx.nn.LayerNorm
    up: eqx.nn.Linear
    down: eqx.nn.Linear

    def __init__(self, width, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.norm1 = eqx.nn.LayerNorm(width)
        self.attention = eqx.nn.MultiheadAttention(LM_HEADS, width, key=k1)
        self.norm2 = eqx.nn.LayerNorm(width)
        self.up = eqx.nn.Linear(width, 4 * width, key=k2)
        self.down = eqx.nn.Linear(4 * width, width, key=k3)

    def __call__(self, x, mask):  # one sequence, tokens x width
        h = jax.vmap(self.norm1)(x)
        x = x + self.attention(h, h, h, mask=mask)
        h = jax.vmap(self.norm2)(x)
        return x + jax.vmap(lambda t: self.down(jax.nn.gelu(self.up(t))))(h)


class LanguageModel(eqx.Module):
    embed: eqx.nn.Embedding
    position: jax.Array
    blocks: list[DecoderBlock]
    norm: eqx.nn.LayerNorm
    head: eqx.nn.Linear

    def __init__(self, width, key):
        keys = jax.random.split(key, LM_BLOCKS + 3)
        self.embed = eqx.nn.Embedding(LM_VOCAB, width, key=keys[0])
        self.position = jax.random.normal(keys[1], (LM_SEQ, width)) * 0.02
        self.blocks = [DecoderBlock(width, k) for k in keys[2:-1]]
        self.norm = eqx.nn.LayerNorm(width)
        self.head = eqx.nn.Linear(width, LM_VOCAB, key=keys[-1])

    def __call__(self, tokens):  # one sequence -> next-token logits at every position
        x = jax.vmap(self.embed)(tokens) + self.position
        mask = jnp.tril(jnp.ones((LM_SEQ, LM_SEQ), bool))
        for block in self.blocks:
            x = block(x, mask)
        return jax.vmap(lambda t: self.head(self.norm(t)))(x)


@autoplace.workload(widths=(64, 128, 256), default_width=128, batch_sizes=powers_of_two(1, 128))
def lm(width, dtype):
    """One clipped AdamW step of a 2-block causal transformer LM over 64 tokens."""
    model = cast_floats(LanguageModel(width, jax.random.PRNGKey(0)), dtype)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    optimiser = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(3e-4))

    def loss(params, tokens):
        logits = jax.vmap(eqx.combine(params, static))(tokens)
        return cross_entropy(logits[:, :-1], tokens[:, 1:])

    def make_batch(batch_size, rng):
        return rng.integers(0, LM_VOCAB, size=(batch_size, LM_SEQ), dtype=np.int32)

    state = (params, optimiser.init(params))
    return autoplace.Workload(state=state, step=optax_step(loss, optimiser), make_batch=make_batch)
