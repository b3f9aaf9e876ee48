"""A step against the machine's limits: the roofline's figures and the regime they name."""

from __future__ import annotations

import pytest
from synthetic import measured

from autoplace.limits import DeviceLimits, Figure, Roofline, roofline

LIMITS = DeviceLimits(
    device="cpu:0",
    kind="cpu",
    peak_flops={"float32": Figure(100e9, 90e9, 110e9, 5)},
    matmul_size=1024,
    memory_bandwidth=Figure(10e9, 9e9, 11e9, 5),
    host_to_device=Figure(5e9, 4e9, 6e9, 5),
    dispatch_floor=Figure(10e-6, 9e-6, 12e-6, 5),
)


def step(batch=32, step_s=1e-3, flops=None, bytes_accessed=None, precision="float32"):
    return measured("ok", "", "cpu:0", batch, precision, None, step_s=step_s, flops=flops,
                       bytes_accessed=bytes_accessed)  # fmt: skip


def test_figures_follow_from_the_steps_flops_bytes_and_time():
    r = roofline(step(step_s=2e-3, flops=20e6, bytes_accessed=4e6), LIMITS)
    assert r.flops_per_s == pytest.approx(10e9) and r.bytes_per_s == pytest.approx(2e9)
    assert r.intensity == pytest.approx(5.0)
    assert r.roof == pytest.approx(50e9)  # 5 FLOP/byte x 10 GB/s, under the 100 GFLOP/s peak
    assert r.of_peak == pytest.approx(0.10) and r.of_roof == pytest.approx(0.20)


def test_a_step_near_the_dispatch_floor_or_mostly_fixed_cost_is_overhead_bound():
    near_floor = roofline(step(step_s=30e-6, flops=1e3, bytes_accessed=1e3), LIMITS)
    assert near_floor.regime == "overhead-bound" and "dispatch floor" in near_floor.why()
    fixed = roofline(step(step_s=1e-3, flops=1e6, bytes_accessed=1e6), LIMITS, fixed_s=0.7e-3)
    assert fixed.regime == "overhead-bound"
    assert "the fixed 700 µs of a 1 ms step" in fixed.sentence("cpu")
    busy = roofline(step(step_s=1e-3, flops=50e6, bytes_accessed=1e6), LIMITS, fixed_s=0.2e-3)
    assert busy.regime != "overhead-bound"
    neither = roofline(step(step_s=1e-3, flops=5e6, bytes_accessed=5e5), LIMITS)
    assert neither.regime == "overhead-bound" and "neither roof holds it back" in neither.why()


def test_the_larger_share_of_peak_or_bandwidth_names_compute_or_memory_bound():
    compute = roofline(step(step_s=1e-3, flops=80e6, bytes_accessed=1e6), LIMITS)
    assert compute.regime == "compute-bound"  # 80% of the peak, 10% of the bandwidth
    memory = roofline(step(step_s=1e-3, flops=1e6, bytes_accessed=8e6), LIMITS)
    assert memory.regime == "memory-bound"  # 1% of the peak, 80% of the bandwidth
    assert "80% of the memory bandwidth" in memory.why()


def test_without_xlas_figures_no_regime_is_guessed_and_the_sentence_says_so():
    r = roofline(step(step_s=1e-3), LIMITS)
    assert r.regime is None and r.of_roof is None
    assert "XLA gave no FLOPs or bytes" in r.sentence("cpu")


def test_a_sentence_names_the_batch_the_share_of_peak_and_the_device():
    r = roofline(step(batch=32, step_s=1e-3, flops=2e6, bytes_accessed=1e6), LIMITS, 0.9e-3)
    assert r.sentence("cpu").startswith(
        "At batch 32 the step reaches 2.0% of this CPU's float32 peak (2.00 GFLOP/s of "
        "100.00 GFLOP/s): overhead-bound"
    )


def test_no_roofline_without_a_steady_step_or_for_a_precision_not_probed():
    assert roofline(step(step_s=None), LIMITS) is None
    assert roofline(step(precision="bfloat16"), LIMITS) is None
    assert isinstance(roofline(step(), LIMITS), Roofline)
