"""TuneRequest: every bad value fails when the request is made, before any worker starts."""

from __future__ import annotations

import pytest

from autoplace import BadInputError, TuneRequest, tune
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"study": ""}, "--study is empty"),
        ({"study": "  "}, "--study is empty"),
        ({"study": "x" * 600}, "study names are at most 512 characters"),
        ({"workload": ""}, "--workload is empty"),
        ({"max_deviation": 1.5}, "at most 100%"),
        ({"max_deviation": 0.0}, "--max-deviation must be positive"),
        ({"trials": 0}, "--trials must be positive"),
        ({"timeout": -1.0}, "--timeout must be positive"),
        ({"max_memory": 0}, "--max-memory must be positive"),
        ({"quiet_wait": 0.0}, "--quiet-wait must be positive"),
        ({"confirm": -1}, "confirm is a number of finalists"),
        ({"if_busy": "sometimes"}, "sometimes"),
        ({"objective": "speed"}, "speed"),
        ({"objective": "time-to-finish"}, "time-to-finish"),
    ],
)
def test_a_bad_value_is_refused_when_the_request_is_made(options, names):
    with pytest.raises(BadInputError, match=names):
        TuneRequest("model.py", **options)


def test_the_objective_and_settings_are_resolved_once():
    r = TuneRequest("model.py", objective="time-to-finish", steps=100, max_memory=2**20)
    assert isinstance(r.objective_value, Objective)
    assert r.objective_value.name == "time-to-finish"
    assert r.measure_settings.max_memory == 2**20
    base = MeasureSettings(timeout_s=7.0)
    assert TuneRequest("m.py", settings=base).measure_settings is base
    assert TuneRequest("m.py", settings=base, max_memory=5).measure_settings.timeout_s == 7.0


def test_max_deviation_none_means_not_checked():
    assert TuneRequest("model.py", max_deviation=None).max_deviation is None


def test_a_request_takes_no_options_beside_it():
    with pytest.raises(BadInputError, match="takes no options"):
        tune(TuneRequest("model.py"), trials=3)


def test_an_option_it_does_not_take_is_one_line_of_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="takes no option 'batch_size'") as info:
        tune(tmp_path / "absent.py", batch_size=32)
    assert "batch_sizes" in str(info.value)


def test_options_for_a_model_file_are_checked_as_a_request_before_anything_starts(tmp_path):
    # No worker is started: the request fails first (the model file does not even exist).
    with pytest.raises(BadInputError, match="--study is empty"):
        tune(tmp_path / "absent.py", study="")
