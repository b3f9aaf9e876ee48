"""``Recommendation``: the line a launcher logs."""

from __future__ import annotations

import datetime as dt

import pytest

from autoplace.recommending import Recommendation


def _measured(**kwargs) -> Recommendation:
    fields = dict(
        device="gpu:0", batch_size=4096, precision="bfloat16", width=128, source="cache",
        key="k", objective="throughput", unit="samples/s", score=122030.4,
        measured_at=dt.datetime(2026, 11, 26, 9, 0, tzinfo=dt.timezone.utc),
    )  # fmt: skip
    return Recommendation(**{**fields, **kwargs})


def test_the_log_line_writes_the_score_as_the_terminal_does():
    # "1.22e+05 samples/s" where everything else prints "122.03 k"
    line = _measured().log_line()
    assert "122.03 k samples/s" in line and "e+0" not in line


@pytest.mark.parametrize("verdict", ["within", None])
def test_a_ratio_whose_interval_holds_one_never_reads_as_a_lead(verdict):
    # Issue 47: "(+0.5%, noise ±281.9%)": a ± on a ratio whose interval is not symmetric
    # says nothing; the ratio, and an interval too wide to carry a figure is not printed.
    line = _measured(ratio=1.059, low=0.21, high=7.2, verdict=verdict).log_line()
    assert "1.06x the runner-up: cannot be told apart here" in line
    assert "±" not in line and "over the runner-up" not in line and "0.21" not in line


@pytest.mark.parametrize(
    ("verdict", "said"),
    [
        ("faster", "1.25x (95%: 1.19–1.31) the runner-up, faster in every window"),
        ("within", "1.25x (95%: 1.19–1.31) the runner-up: cannot be told apart here"),
        (None, "1.25x (95%: 1.19–1.31) the runner-up: cannot be told apart here"),
    ],
)
def test_a_ratio_reads_with_its_interval_as_its_verdict_says(verdict, said):
    line = _measured(ratio=1.25, low=1.19, high=1.31, verdict=verdict).log_line()
    assert said in line and "±" not in line
