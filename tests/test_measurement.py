"""The result record of one measurement."""

from __future__ import annotations

import dataclasses
import json

from synthetic import measured

import autoplace
from autoplace import Measurement
from autoplace.measurement import MEASURED


def _example(**changes: object) -> Measurement:
    m = measured(
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
    assert m.step.step_s == 0.001


def test_a_measurement_kept_flat_by_an_older_autoplace_reads_by_concept() -> None:
    # Studies written before measurements were kept by concept hold them flat: each loop's
    # figures by a prefix (step_, fed_step_, prefetch_step_), the machine's among the rest.
    old = {
        "status": "ok", "reason": "", "device": "cpu:0", "batch_size": 8,
        "precision": "float32", "width": None, "step_s": 0.001, "step_spread": 0.02,
        "step_samples": 6, "step_chunk_s": [0.001] * 6, "fed_step_s": 0.002,
        "fed_step_chunk_s": [0.002] * 3, "fed_samples_per_s": 4000.0,
        "prefetch_step_s": 0.0015, "others_running": 0.5, "page_faults_per_step": 12.0,
    }  # fmt: skip
    m = Measurement.from_dict(old)
    assert m.config == autoplace.Config("cpu:0", 8, "float32")
    assert (m.step.step_s, m.step.spread, m.step.samples) == (0.001, 0.02, 6)
    assert m.fed.step_s == 0.002 and m.fed.timed == 3 and m.fed.rate(8) == 4000.0
    assert m.loop("prefetch").step_s == 0.0015
    assert (m.machine.others_running, m.machine.page_faults_per_step) == (0.5, 12.0)
    assert Measurement.from_dict(m.to_dict()) == m


def test_measured_means_the_timings_are_real() -> None:
    assert {"ok", "nonfinite"} == MEASURED
    assert _example().measured
    assert _example(status="nonfinite").measured
    for status in ("oom", "too_big", "crash", "timeout", "error"):
        assert not _example(status=status).measured


def test_failed_leaves_figures_unset() -> None:
    m = Measurement.failed("crash", "killed", autoplace.Config("cpu:0", 4, "float32"))
    assert (m.status, m.reason, m.batch_size) == ("crash", "killed", 4)
    assert m.step.step_s is None and m.compile_s is None and m.finite is None
    assert not m.measured
