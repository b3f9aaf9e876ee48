"""Validation of the knobs of one measurement."""

from __future__ import annotations

import pickle

import pytest

from autoplace import BadInputError, Config, MeasureRequest, MeasureSettings


def test_defaults_are_valid() -> None:
    s = MeasureSettings()
    assert 1 <= s.min_samples <= s.max_samples
    assert s.timeout_s > 0
    assert s.max_memory is None
    assert s.deviation is True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_s": 0},
        {"timeout_s": -1.0},
        {"max_memory": 0},
        {"max_memory": -1},
        {"min_samples": 0},
        {"min_samples": 5, "max_samples": 4},
    ],
)
def test_impossible_settings_are_bad_input(kwargs: dict) -> None:
    with pytest.raises(BadInputError):
        MeasureSettings(**kwargs)


def test_min_equal_to_max_samples_is_allowed() -> None:
    assert MeasureSettings(min_samples=1, max_samples=1).max_samples == 1


def test_request_pickles_for_the_worker() -> None:
    request = MeasureRequest(
        model_file="/x/model.py",
        sha256="0" * 64,
        workload="mlp",
        config=Config(device="cpu", batch_size=8, precision="bf16"),
        settings=MeasureSettings(timeout_s=3, max_memory=2**20),
    )
    assert pickle.loads(pickle.dumps(request)) == request
    assert MeasureRequest("/x", "0", "w", Config("cpu", 1)).settings == MeasureSettings()
