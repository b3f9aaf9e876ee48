"""How throughput scales over the devices used together, and the cause named from the
figures (synthetic GPUs shaped by published NVLink figures: tests/synthetic.py)."""

from __future__ import annotations

import pytest
from synthetic import GRAD_BYTES, SyntheticBackend, measured, reduce_s, synthetic_limits

from autoplace import Config, MeasureRequest, MeasureSettings
from autoplace.costs import arm_models
from autoplace.explaining._devices import scaling

GPUS = tuple(f"gpu:{i}" for i in range(8))


def figures(per_device: int, counts=(1, 2, 4, 8), batches=(256, 1024, 4096)):
    """Each count's configurations at ``batches`` a device (and the one device's at
    ``per_device``), measured by the synthetic GPUs."""
    backend = SyntheticBackend(devices=GPUS)
    out = {}
    for n in counts:
        device = "gpu:0" if n == 1 else f"gpu:0-{n - 1}"
        for b in {per_device, *batches}:
            c = Config(device, b * n, "float32")
            out[c] = backend.measure(MeasureRequest("m.py", "0", "synthetic", c, MeasureSettings()))
    return out


def best(ok, loop):
    return max(ok.values(), key=lambda m: m.loop(loop).rate(m.batch_size))


def test_fed_from_one_host_the_put_of_the_whole_batch_holds_it_back():
    ok = figures(4096)
    winner = best(ok, "fed")
    s = scaling(ok, winner, arm_models(ok), "fed", synthetic_limits())
    assert [c.count for c in s.counts] == [1, 2, 4, 8]
    assert s.counts[0].speedup == 1.0 and s.counts[-1].efficiency < 0.5
    assert s.cause == "put" and s.put_s >= 0.5 * s.step_s
    said = s.sentence()
    assert said.startswith("Scaling on gpu: 2 devices: ")
    assert "Held back by the put: one process puts the whole batch" in said


def test_with_the_batch_on_the_devices_the_reduction_is_measured_and_the_fixed_cost_named():
    ok = figures(4096)
    winner = best(ok, "step")
    s = scaling(ok, winner, arm_models(ok), "step", synthetic_limits())
    eight = s.counts[-1]
    assert eight.reduced_bytes == GRAD_BYTES
    # The ring's share of the bytes at the measured 470 GB/s, without the call's latency.
    assert eight.reduce_s == pytest.approx(reduce_s(8, "float32") - 20e-6, rel=1e-6)
    # 472 kB over NVLink is under 2 µs of the 22 µs the split adds (the collective's own
    # latency is the rest), while each device still pays the step's fixed 50 µs.
    assert eight.added_s == pytest.approx(reduce_s(8, "float32"), rel=0.05)
    assert s.cause == "fixed" and s.fixed_s == pytest.approx(50e-6, rel=0.05)
    assert "Held back by the fixed cost of a step: each device still pays 50" in s.sentence()
    without = scaling(ok, winner, arm_models(ok), "step", None)  # limits not measured
    assert without.counts[-1].reduce_s is None and without.cause != "reduction"


def test_emulated_cpu_devices_are_said_to_share_one_processor():
    ok = {
        Config(d, b, "float32"): measured("ok", "", d, b, "float32", None, fed_step_s=s)
        for d, b, s in (("cpu:0", 64, 1e-3), ("cpu:0-1", 128, 1.6e-3), ("cpu:0-3", 256, 4e-3))
    }
    s = scaling(ok, ok[Config("cpu:0-1", 128)], arm_models(ok), "fed", None)
    assert [round(c.speedup, 2) for c in s.counts] == [1.0, 1.25, 1.0]
    assert s.cause == "shared" and "one processor split (JAX_NUM_CPU_DEVICES)" in s.sentence()
    assert "2 devices gave the most" in s.sentence()
    # a pick the windows put on another count than the figures' best says so, not "gave"
    alone = scaling(ok, ok[Config("cpu:0", 64)], arm_models(ok), "fed", None)
    assert alone.pick_count == 1
    assert ("2 devices read the most in these figures, and the pick, on one device, rests on "
            "its windows") in alone.sentence()  # fmt: skip
    assert "gave the most" not in alone.sentence()


def test_one_count_measured_is_no_scaling():
    ok = {c: m for c, m in figures(4096).items() if c.device_count == 1}
    assert scaling(ok, best(ok, "fed"), arm_models(ok), "fed", None) is None


def test_gradients_that_take_the_split_its_time_at_the_measured_bandwidth_are_named():
    big = round(470e9 * 2e-3 / 1.75)  # 2 ms a reduction over 8 at the measured 470 GB/s
    ok = {
        Config("gpu:0", 64): measured("ok", "", "gpu:0", 64, "float32", None, step_s=1e-3),
        Config("gpu:0-7", 512): measured(
            "ok", "", "gpu:0-7", 512, "float32", None, step_s=3e-3, reduced_bytes=big
        ),
    }
    s = scaling(ok, ok[Config("gpu:0-7", 512)], arm_models(ok), "step", synthetic_limits())
    assert s.cause == "reduction" and s.counts[-1].reduce_s == pytest.approx(2e-3)
    assert s.counts[-1].speedup == pytest.approx(8 / 3)
    assert "Held back by the reduction: each device all-reduces 512.3 MiB" in s.sentence()
