"""The examples in studies/ that show how a library's model becomes a workload."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FAST, REPO

import autoplace


def measure(inproc, name: str, workload: str, **config) -> autoplace.Measurement:
    settings = dataclasses.replace(FAST, deviation=True)
    return autoplace.measure(
        REPO / "studies" / name, workload=workload, settings=settings, backend=inproc, **config
    )


@pytest.mark.slow
def test_the_flax_nnx_encoder_is_one_model_at_every_precision(inproc):
    # built in float32 and cast: bfloat16 computes the same model, a little less exactly
    m = measure(inproc, "nnx_encoder.py", "encoder", batch_size=2, precision="bfloat16")
    assert m.status == "ok", m.reason
    assert "bf16" in m.compute_dtypes
    assert 0 < m.deviation_vs_float32 < 0.05
    # float16 does not trace on a CPU: whatever the batch size, so it ends the arm
    m = measure(inproc, "nnx_encoder.py", "encoder", batch_size=2, precision="float16")
    assert m.status == "error"
    assert m.reason.startswith("tracing and lowering the step raised ValueError")


@pytest.mark.slow
def test_adams_epsilon_underflows_at_float16(inproc):
    # the optimiser's state travels with the parameters; at float16 the update is not finite
    ok = measure(inproc, "optax_mlp.py", "mlp", batch_size=8, precision="bfloat16")
    assert ok.status == "ok" and ok.deviation_vs_float32 < 0.05
    for batch in (8, 64):
        m = measure(inproc, "optax_mlp.py", "mlp", batch_size=batch, precision="float16")
        assert m.status == "nonfinite"


@pytest.mark.slow
def test_the_flax_nnx_classifier_trains_its_model_and_optimizer_as_one_state(inproc):
    # nnx.split((model, optimizer)) is the state: its next state comes back of the same
    # structure, and bfloat16 trains the same model (built in float32, cast before the
    # optimizer is made)
    m = measure(inproc, "nnx_train.py", "classifier", batch_size=16, precision="bfloat16")
    assert m.status == "ok", m.reason
    assert "bf16" in m.compute_dtypes and 0 < m.deviation_vs_float32 < 0.05
    wide = measure(inproc, "nnx_train.py", "classifier", batch_size=16, width=512)
    assert wide.status == "ok" and wide.flops > m.flops
