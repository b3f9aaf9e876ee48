"""A recommendation of several devices: the split a launcher needs, ready for JAX (four
virtual CPU devices in this process)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import SingleDeviceSharding

import autoplace
from autoplace import BadInputError
from autoplace.recommending import Recommendation


def rec(device: str, batch: int = 64) -> Recommendation:
    return Recommendation(device, batch, "float32", None, "cache", "k", "throughput")


def test_the_split_is_named_and_handed_to_jax_ready_to_train():
    four = rec("cpu:0-3")
    assert (four.devices, four.device_count, four.per_device_batch) == (
        ["cpu:0", "cpu:1", "cpu:2", "cpu:3"], 4, 16,
    )  # fmt: skip
    assert four.mesh().shape == {"batch": 4}
    state = jax.device_put({"w": jnp.ones((3,))}, four.replicated())
    step = jax.jit(lambda s, x: {"w": s["w"] - 0.1 * x.mean(0)}, out_shardings=four.replicated())
    batches = (np.ones((64, 3), np.float32) for _ in range(3))
    for batch in autoplace.prefetch(batches, four.sharding()):
        assert len(batch.sharding.device_set) == 4
        state = step(state, batch)
    assert np.allclose(np.asarray(state["w"]), 0.7)
    stacked = jax.device_put(np.ones((8, 64, 3), np.float32), four.sharding(steps_per_call=8))
    assert {s.data.shape for s in stacked.addressable_shards} == {(8, 16, 3)}


def test_one_device_is_that_device_everywhere():
    one = rec("cpu:1")
    assert one.sharding() == one.replicated() == SingleDeviceSharding(jax.devices()[1])
    step = jax.jit(lambda s, x: s + x.sum(), out_shardings=one.replicated())
    out = step(jax.device_put(0.0, one.replicated()), jax.device_put(np.ones(4), one.sharding()))
    assert out.devices() == {jax.devices()[1]}
    assert one.device_count == 1 and one.per_device_batch == 64


def test_the_launcher_hears_the_count_and_each_devices_share():
    four = rec("cpu:0-3")
    assert four.env()["AUTOPLACE_DEVICE_COUNT"] == "4"
    assert four.env()["AUTOPLACE_PER_DEVICE_BATCH"] == "16"
    assert "cpu:0-3 (4 devices), batch 64 (16 a device)" in four.log_line()
    assert four.as_dict()["device_count"] == 4


def test_more_devices_than_this_process_sees_is_one_line_with_the_fix():
    with pytest.raises(BadInputError, match=r"uses cpu:0-7, but this process sees 4 cpu"):
        rec("cpu:0-7").mesh()
