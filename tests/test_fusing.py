"""Steps per call: K fused steps are K plain steps, in one call."""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import REPO

import autoplace


def mlp(dtype):
    """The README's example MLP (784 -> 128 -> 10, SGD with momentum), as a user builds it."""
    spec = importlib.util.spec_from_file_location("mnist_mlp", REPO / "studies" / "mnist_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.mlp(128, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_k_fused_training_steps_leave_exactly_the_state_of_k_plain_steps(dtype):
    work = mlp(dtype)
    rng = np.random.default_rng(1)
    batches = [work.make_batch(32, rng) for _ in range(8)]
    plain = jax.jit(work.step)
    state = work.state
    for batch in batches:
        state = plain(state, batch)
    fused = jax.jit(autoplace.fuse(work.step, 8))
    after = fused(work.state, autoplace.stack(batches))
    for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(state), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
    assert not all(  # the steps did change the state: the equality is not a trivial one
        np.array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
        for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(work.state), strict=True)
    )


def test_fused_inference_returns_each_steps_predictions_stacked():
    def predict(w, x):
        return x @ w

    w = jnp.arange(6.0).reshape(3, 2)
    xs = [np.full((4, 3), float(i), np.float32) for i in range(3)]
    out = autoplace.fuse(predict, 3, kind="infer")(w, autoplace.stack(xs))
    assert out.shape == (3, 4, 2)
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(out[i], predict(w, x))


def test_stack_keeps_host_arrays_on_the_host_with_a_new_leading_axis():
    stacked = autoplace.stack([(np.zeros((4, 3)), np.arange(4)) for _ in range(5)])
    assert [type(x) for x in stacked] == [np.ndarray, np.ndarray]
    assert stacked[0].shape == (5, 4, 3) and stacked[1].shape == (5, 4)


def test_wrong_k_or_batches_not_stacked_k_deep_are_told_in_one_line():
    with pytest.raises(autoplace.BadInputError, match="1 or more"):
        autoplace.fuse(lambda s, b: s, 0)
    with pytest.raises(autoplace.BadInputError, match="'train' or 'infer'"):
        autoplace.fuse(lambda s, b: s, 2, kind="eval")
    fused = autoplace.fuse(lambda s, b: s + b.sum(), 4)
    with pytest.raises(autoplace.BadInputError, match=r"4 batches stacked.*autoplace.stack"):
        fused(jnp.zeros(()), autoplace.stack([np.ones(3)] * 2))
    with pytest.raises(autoplace.BadInputError, match="pass the K batches"):
        autoplace.stack([])
