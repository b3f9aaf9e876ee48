"""The machine's limits as values: figures with their spread, and the cached form."""

from __future__ import annotations

import pytest

from autoplace.errors import BadInputError
from autoplace.limits import DeviceLimits, Figure, LimitsRequest, MachineLimits


def test_a_figure_is_the_median_of_its_windows_with_their_range():
    f = Figure.of([3.0, 1.0, 2.0, 10.0, 2.5])
    assert (f.median, f.low, f.high, f.windows) == (2.5, 1.0, 10.0, 5)
    assert f.spread == pytest.approx(9.0 / 2.5)


def limits() -> MachineLimits:
    device = DeviceLimits(
        device="cpu:0",
        kind="cpu",
        peak_flops={"float32": Figure.of([1e11, 1.1e11]), "bfloat16": Figure.of([5e10])},
        matmul_size=1024,
        memory_bandwidth=Figure.of([1e10]),
        host_to_device=Figure.of([5e9]),
        dispatch_floor=Figure.of([1e-5, 2e-5, 1.5e-5]),
    )
    key = {"hardware": {"cpu": "x"}, "software": {"jax": "1"}}
    return MachineLimits((device,), key, "2026-11-25T05:00:00+00:00", load=0.5)


def test_limits_round_trip_and_another_layout_is_refused():
    held = MachineLimits.from_dict(limits().as_dict(), cached=True)
    assert held.as_dict() == limits().as_dict() and held.cached
    assert held.of("cpu:0").peak_flops["bfloat16"].median == 5e10 and held.of("gpu:0") is None
    with pytest.raises(ValueError, match="another layout"):
        MachineLimits.from_dict({**limits().as_dict(), "limits_schema": 99})
    with pytest.raises(ValueError, match="not a limits entry"):
        MachineLimits.from_dict({"limits_schema": 1, "devices": [{}]})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seconds": 0}, "positive time"),
        ({"windows": 0}, "1 or more"),
        ({"timeout_s": -1}, "probe"),
    ],
)
def test_a_request_out_of_range_is_refused_in_one_line(options, message):
    with pytest.raises(BadInputError, match=message):
        LimitsRequest(**options)
