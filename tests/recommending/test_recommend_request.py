"""RecommendRequest: a bad look-up fails when it is made, before the cache is read."""

from __future__ import annotations

import datetime as dt

import pytest

from autoplace import BadInputError, RecommendRequest, recommend


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (
            {"on_miss": "guess"},
            r"--on-miss \(on_miss in Python\) must be one of tune, fallback, raise",
        ),
        ({"on_stale": "ignore"}, r"--on-stale \(on_stale in Python\) must be one of"),
        ({"on_busy": "spin"}, "on_busy must be one of"),
        ({"memory_margin": 1.0}, "memory_margin"),
        ({"memory_margin": -0.1}, "memory_margin"),
        ({"max_batch_size": 0}, "max_batch_size must be at least 1"),
        ({"max_deviation": 1.5}, "max_deviation"),
        ({"wait_s": -1.0}, "wait_s"),
        ({"max_age": -5}, "--max-age must be 0 or more seconds, got -5"),
        ({"max_age": dt.timedelta(seconds=-1)}, "--max-age"),
        ({"study": ""}, "--study is empty"),
        ({"study": "x" * 600}, "study names are at most 512 characters"),
        ({"objective": "time-to-finish"}, "time-to-finish"),
    ],
)
def test_a_bad_look_up_is_refused_when_it_is_made(options, names):
    with pytest.raises(BadInputError, match=names):
        RecommendRequest("model.py", "mlp", **options)


def test_the_request_says_its_limits_age_and_run_length():
    r = RecommendRequest(
        "model.py",
        objective="time-to-finish",
        samples=1000,
        epochs=2,
        max_batch_size=64,
        max_age=dt.timedelta(hours=1),
    )
    assert r.max_age_s == 3600.0
    assert r.limits == {"max_batch_size": 64, "memory_margin": 0.1, "max_deviation": None}
    assert r.run == {"samples": 2000, "epochs": 2}


def test_a_request_takes_no_options_beside_it():
    with pytest.raises(BadInputError, match="takes no workload or options"):
        recommend(RecommendRequest("model.py"), on_miss="raise")


def test_the_documented_keyword_call_builds_the_request(tmp_path):
    """``recommend(model_file, workload=None, *, ...)`` as docs/recommend.md gives it: the
    workload by keyword (it was positional-only: a raw TypeError)."""
    with pytest.raises(BadInputError, match="on_miss"):  # the request was built, then checked
        recommend(tmp_path / "absent.py", workload="mlp", on_miss="guess")


def test_an_option_it_does_not_take_is_one_line_of_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="takes no option 'max_batch'") as info:
        recommend(tmp_path / "absent.py", workload="mlp", max_batch=64)
    assert "max_batch_size" in str(info.value)  # the ones it takes are named


def test_options_for_a_model_file_are_checked_before_the_file_is_read(tmp_path):
    with pytest.raises(BadInputError, match="on_miss"):
        recommend(tmp_path / "absent.py", "mlp", on_miss="guess")
