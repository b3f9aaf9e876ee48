"""Several devices used together: the batch split over a 1-D mesh, the state on each,
measured through the engine as one device is (real JAX, four virtual CPU devices)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FAST, model, write_model

import autoplace
from autoplace.measuring._placement import Placement, reduced_bytes


def by_name() -> dict[str, jax.Device]:
    return {f"cpu:{i}": d for i, d in enumerate(jax.devices("cpu"))}


def test_one_device_is_that_device_and_several_a_mesh():
    one = Placement.of("cpu:2", by_name())
    assert one.batch is one.state is jax.devices()[2] and not one.several
    four = Placement.of("cpu:0-3", by_name())
    batch = jax.device_put(np.ones((8, 3), np.float32), four.batch)
    state = four.put_state({"w": jnp.ones((3,))})
    assert [s.data.shape for s in batch.addressable_shards] == [(2, 3)] * 4  # split
    assert [s.data.shape for s in state["w"].addressable_shards] == [(3,)] * 4  # on each
    stacked = Placement.of("cpu:0-1", by_name(), steps_per_call=4)  # K batches stacked
    k = jax.device_put(np.ones((4, 8, 3), np.float32), stacked.batch)
    assert {s.data.shape for s in k.addressable_shards} == {(4, 4, 3)}


def test_the_built_state_outlives_a_step_that_donates_its_copy():
    # A replicated put may alias the shard on the state's own device: the copy goes by
    # way of the host, so the cached build is still there for the next configuration.
    four = Placement.of("cpu:0-3", by_name())
    built = jnp.ones((16,))
    step = jax.jit(lambda s: s + 1, donate_argnums=0, out_shardings=four.out_shardings(True))
    jax.block_until_ready(step(four.put_state(built)))
    assert float(built.sum()) == 16.0


def test_the_bytes_reduced_are_the_gradients_of_a_split_training_step():
    four = Placement.of("cpu:0-3", by_name())
    built = {"w": jnp.ones((64, 32)), "b": jnp.ones((32,), jnp.bfloat16)}
    params = four.put_state(built)
    x = jax.device_put(np.ones((128, 64), np.float32), four.batch)

    def step(p, x):
        g = jax.grad(lambda p: jnp.sum(jnp.tanh(x @ p["w"] + p["b"])))(p)
        return jax.tree.map(lambda a, d: a - 0.1 * d.astype(a.dtype), p, g)

    split = jax.jit(step, out_shardings=four.out_shardings(True)).lower(params, x).compile()
    assert reduced_bytes(split.as_text()) == 64 * 32 * 4 + 32 * 4  # bfloat16's summed in f32
    alone = jax.jit(step).lower(built, np.ones((32, 64), np.float32))
    assert reduced_bytes(alone.compile().as_text()) == 0


def test_a_configuration_of_several_devices_is_measured_as_one_is(inproc):
    one, four = (
        autoplace.measure(model("tiny_mlp"), device=d, batch_size=b, precision="bfloat16",
                          settings=FAST, backend=inproc)
        for d, b in (("cpu:0", 8), ("cpu:0-3", 32))
    )  # fmt: skip
    assert (one.status, four.status) == ("ok", "ok"), four.reason
    assert four.config.per_device_batch == one.batch_size == 8
    assert four.step.step_s and four.fed.step_s and four.deviation_vs_float32 is not None
    # XLA analyses one device's program; the configuration's FLOPs are all four's.
    assert four.flops == pytest.approx(4 * one.flops, rel=0.1)
    assert one.reduced_bytes is None
    assert four.reduced_bytes == (16 * 8 + 8 * 4) * 4  # w1 and w2's gradients, float32


def test_a_step_that_cannot_be_split_fails_its_configuration_with_one_line(tmp_path, inproc):
    path = write_model(
        tmp_path,
        """
        import jax, numpy as np, autoplace
        from jax.sharding import SingleDeviceSharding

        @autoplace.workload
        def pinned(width, dtype):
            def step(state, batch):  # pins its batch to one device: no split can run it
                pin = SingleDeviceSharding(jax.devices()[0])
                one = jax.lax.with_sharding_constraint(batch, pin)
                return state + one.sum()
            return autoplace.Workload(state=np.zeros((), dtype), step=step,
                make_batch=lambda n, rng: rng.random((n, 4)).astype(dtype))
        """,
    )
    alone = autoplace.measure(path, device="cpu:0", batch_size=8, settings=FAST, backend=inproc)
    split = autoplace.measure(path, device="cpu:0-1", batch_size=8, settings=FAST, backend=inproc)
    assert alone.status == "ok"
    assert split.status == "error" and "\n" not in split.reason
    assert split.reason.startswith(
        "tracing and lowering the step split across 2 devices (batch sharded, state "
        "replicated) raised ValueError"
    )
