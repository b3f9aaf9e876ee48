"""The cost model's predictions at the batches the search did not measure."""

from __future__ import annotations

import pytest

import autoplace
from autoplace import Config, Measurement, Space
from autoplace.tuning._margin import Noise
from autoplace.tuning._predict import PREDICTION_ERROR, compare_predicted, predicted

THROUGHPUT = autoplace.make_objective("throughput")
SPACE = Space(("cpu:0",), tuple(2**i for i in range(4, 12)), ("float32",), (None,))


def ran(batch: int, fixed: float = 1e-3, per_sample: float = 1e-5, status: str = "ok"):
    t = fixed + per_sample * batch
    c = Config("cpu:0", batch, "float32")
    return c, Measurement(status, "", "cpu:0", batch, "float32", None, fed_step_s=t,
                          fed_step_spread=0.01, fed_step_chunk_s=(t,) * 5,
                          fed_samples_per_s=batch / t)  # fmt: skip


def test_a_line_over_three_batches_predicts_one_batch_size_beyond_either_way():
    figures = dict(ran(b) for b in (64, 128, 256))
    estimates = {c: m.fed_samples_per_s for c, m in figures.items()}
    found = predicted(figures, estimates, SPACE, THROUGHPUT)
    assert sorted(c.batch_size for c in found) == [32, 512]
    assert found[Config("cpu:0", 512, "float32")] == pytest.approx(512 / (1e-3 + 512e-5))


def test_no_prediction_past_a_failure_from_two_points_or_for_another_objective():
    figures = dict([*(ran(b) for b in (64, 128, 256)), ran(512, status="oom")])
    estimates = {c: m.fed_samples_per_s for c, m in figures.items() if m.status == "ok"}
    assert sorted(c.batch_size for c in predicted(figures, estimates, SPACE, THROUGHPUT)) == [32]
    two = dict(ran(b) for b in (64, 128))
    assert predicted(two, estimates, SPACE, THROUGHPUT) == {}
    latency = autoplace.make_objective("latency")
    assert predicted(dict(ran(b) for b in (64, 128, 256)), estimates, SPACE, latency) == {}


def test_a_prediction_is_never_a_real_difference():
    noise = Noise(0.01, 10.0)
    near = compare_predicted(THROUGHPUT, 100.0, 98.0, noise, 1)
    assert near.verdict == "undecided" and near.low < 1 < near.high
    assert "predicted by the cost model" in near.basis and near.windows == 0
    far = compare_predicted(THROUGHPUT, 100.0, 40.0, noise, 1)
    assert far.verdict == "ahead" and not far.significant  # ahead here, never "faster"
    assert near.high / near.ratio > 1 + PREDICTION_ERROR  # the line's own error counts
