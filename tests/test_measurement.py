"""The result record of one measurement."""

from __future__ import annotations

import dataclasses
import json

from autoplace import Measurement
from autoplace.measurement import MEASURED


def _example(**changes: object) -> Measurement:
    m = Measurement(
        status="ok",
        reason="",
        device="cpu:0",
        batch_size=8,
        precision="bfloat16",
        width=32,
        workload="mlp",
        step_s=0.001,
        compute_dtypes=("bf16", "f32"),
        deviation_vs_float32=0.004,
    )
    return dataclasses.replace(m, **changes)


def test_to_dict_is_json_and_round_trips() -> None:
    m = _example()
    data = json.loads(json.dumps(m.to_dict()))
    assert data["compute_dtypes"] == ["bf16", "f32"]
    assert Measurement.from_dict(data) == m


def test_from_dict_ignores_unknown_keys_and_defaults_missing_ones() -> None:
    data = {**_example().to_dict(), "added_in_a_later_version": 1}
    del data["compute_dtypes"]
    m = Measurement.from_dict(data)
    assert m.compute_dtypes == ()
    assert m.step_s == 0.001


def test_measured_means_the_timings_are_real() -> None:
    assert {"ok", "nonfinite"} == MEASURED
    assert _example().measured
    assert _example(status="nonfinite").measured
    for status in ("oom", "too_big", "crash", "timeout", "error"):
        assert not _example(status=status).measured


def test_failed_leaves_figures_unset() -> None:
    m = Measurement.failed(
        "crash", "killed", device="cpu:0", batch_size=4, precision="float32", width=None
    )
    assert (m.status, m.reason, m.batch_size) == ("crash", "killed", 4)
    assert m.step_s is None and m.compile_s is None and m.finite is None
    assert not m.measured
