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


@pytest.mark.parametrize("verdict", ["undecided", None])
def test_a_margin_inside_its_noise_never_reads_as_a_lead(verdict):
    # "+5.9% over the runner-up (noise ±342.6%)": the noise is half the 95% interval of the
    # ratio (0.2x to 7x here), not a unit slip; such a margin is no lead.
    line = _measured(margin=0.059, noise=3.426, verdict=verdict).log_line()
    assert "cannot be told apart from the runner-up here (+5.9%, noise ±342.6%)" in line
    assert "over the runner-up" not in line


@pytest.mark.parametrize(
    ("verdict", "said"),
    [
        ("faster", "+25.0% over the runner-up, a real difference (noise ±5.0%)"),
        ("ahead", "+25.0% over the runner-up here, not shown to hold in every window"),
        (None, "+25.0% over the runner-up (noise ±5.0%)"),  # an older answer: no verdict
    ],
)
def test_a_margin_beyond_its_noise_reads_as_its_verdict_says(verdict, said):
    assert said in _measured(margin=0.25, noise=0.05, verdict=verdict).log_line()
