"""Comparisons that hold minutes later: windows, not turns; the noise between windows,
pooled with the search's; Bonferroni over several finalists; "equal" on the interval."""

from __future__ import annotations

import math

import pytest

import autoplace
from autoplace import tuning
from autoplace.tuning._margin import NOISE_FLOOR, REPEAT_SIGMA, t_quantile, windows_share

THROUGHPUT = autoplace.make_objective("throughput")
LATENCY = autoplace.make_objective("latency")


def windows(scores: dict[str, list[float]]) -> tuple[tuning.Effects, dict]:
    """The effects fit of ``scores`` (config -> its score in windows 0, 1, ...), and the
    per-window log scores ``compare`` checks the sign in."""
    obs = [(k, w, s) for k, ss in scores.items() for w, s in enumerate(ss)]
    per_window = {k: {w: math.log(s) for w, s in enumerate(ss)} for k, ss in scores.items()}
    return tuning.fit_effects(obs), per_window


def compare(scores, a="a", b="b", objective=THROUGHPUT, prior=None, comparisons=1):
    fit, per_window = windows(scores)
    noise = tuning.pooled_noise(fit, prior)
    return tuning.compare(objective, fit, noise, a, b, comparisons=comparisons,
                          per_window=per_window)  # fmt: skip


def test_a_lead_that_holds_in_every_window_is_faster_with_an_interval_around_it():
    # each window drifts by up to 30% as a whole; a leads b by 10% in each, give or take 1%
    found = compare({"a": [110, 143, 77, 121], "b": [100, 131, 70, 109], "c": [90, 117, 63, 99]})
    assert found.verdict == "faster" and found.significant
    assert found.low < 1.1 < found.high and found.ratio == pytest.approx(1.1, abs=0.01)
    assert found.windows == 4 and found.noise == pytest.approx((found.high - found.low) / 2)


def test_one_window_never_makes_a_difference_real_however_far_apart():
    # with a third configuration the fit has a residual; one window still shows no more
    # than that a is ahead here
    found = compare({"a": [200.0, 201.0], "b": [100.0], "c": [100.0, 100.5]})
    assert found.verdict == "ahead" and found.windows == 1 and found.low > 1
    assert "not shown to hold in 2 windows" in found.sentence("b")


def test_a_lead_that_reverses_in_a_window_is_not_called_real():
    # a is ahead in three windows and behind in one: the mean lead is large, but it does
    # not hold across the windows, so it is not "faster", whatever the interval says
    found = compare({"a": [120, 130, 125, 98], "b": [100, 100, 100, 100]})
    assert found.ratio > 1.1 and found.verdict in ("undecided", "ahead")


def test_equal_only_when_the_whole_interval_lies_within_two_percent():
    # (the noise floor of 1.5% a window takes about ten windows to narrow that far)
    tight = {"a": [100.2, 100.1, 100.3, 100.2, 100.1] * 2, "b": [100.0] * 10}
    fit, _ = windows(tight)
    noise = tuning.pooled_noise(fit, None)
    found = tuning.compare(THROUGHPUT, fit, noise, "a", "b")  # no windows: search figures
    assert found.verdict == "equal" and found.high <= 1.02 and found.low >= 1 / 1.02
    # as windows, however many and however steady, one tune cannot show that: a ratio
    # moves by more than 2% minutes later in other processes (REPEAT_SIGMA)
    found = compare(tight)
    assert found.verdict == "undecided" and found.low < 1 / 1.02 and found.high > 1.02
    own = t_quantile(0.975, noise.df) * NOISE_FLOOR * math.sqrt(0.2)  # 10 windows each
    half = math.hypot(own, 1.959964 * REPEAT_SIGMA)
    assert math.log(found.high) == pytest.approx(math.log(found.ratio) + half, rel=1e-6)
    # the same estimate, with the spread between windows of a busy machine: not told apart
    loose = {"a": [100, 108, 93, 104, 96], "b": [100, 100, 100, 100, 100]}
    assert compare(loose).verdict == "undecided"


def test_the_noise_counts_the_spread_between_windows_not_only_the_turns():
    quiet = compare({"a": [110, 110.2, 109.9] * 2, "b": [100, 100.1, 99.9] * 2})
    moving = compare({"a": [110, 121, 101] * 2, "b": [100, 100, 100] * 2})
    assert moving.noise > 1.4 * quiet.noise
    # what the windows show apart from the minutes-later part, which both share
    fit, _ = windows({"a": [110, 110.2, 109.9] * 2, "b": [100, 100.1, 99.9] * 2})
    moving_fit, _ = windows({"a": [110, 121, 101] * 2, "b": [100, 100, 100] * 2})
    assert windows_share(moving, tuning.pooled_noise(moving_fit, None)) > 2.5 * windows_share(
        quiet, tuning.pooled_noise(fit, None)
    )


def test_the_noise_never_falls_below_the_floor():
    fit, _ = windows({"a": [110.0, 110.0, 110.0], "b": [100.0, 100.0, 100.0]})
    assert tuning.pooled_noise(fit, None).sigma == NOISE_FLOOR


def test_a_short_confirmation_borrows_the_degrees_of_freedom_of_the_search():
    # two windows say little of their own spread (one degree of freedom: Student's t is
    # 12.7); the search's many groups say more, and the interval narrows. What the windows
    # showed still counts: a prior never talks it down.
    scores = {"a": [112.0, 108.0], "b": [100.0, 100.0]}
    alone = compare(scores)
    search, _ = windows({k: [100.0 * (1 + 0.02 * ((i * 7 + j) % 3 - 1)) for j in range(6)]
                         for i, k in enumerate("xyz")})  # fmt: skip
    lent = compare(scores, prior=search)
    assert lent.high - lent.low < alone.high - alone.low
    own = windows(scores)[0]
    assert tuning.pooled_noise(own, search).df > tuning.pooled_noise(own, None).df
    assert tuning.pooled_noise(own, search).sigma >= own.variance**0.5


def test_more_comparisons_widen_each_interval():
    scores = {"a": [110, 121, 100, 113], "b": [100, 112, 92, 101]}
    one, four = compare(scores), compare(scores, comparisons=4)
    assert four.low < one.low and four.high > one.high


def test_for_a_time_to_minimise_the_ratio_says_how_many_times_faster():
    # latency: a takes 10 ms, b 12 ms, in every window
    found = compare({"a": [0.010, 0.0101, 0.0099], "b": [0.012, 0.0121, 0.0119]},
                    objective=LATENCY)  # fmt: skip
    assert found.ratio == pytest.approx(1.2, rel=0.01) and found.verdict == "faster"


def test_a_comparison_reads_as_a_ratio_with_its_interval():
    c = tuning.Comparison(1.5234, 1.47, 1.57, "faster", 2, "windows in fresh processes")
    assert c.text() == "1.52 ± 0.05 times"
    assert c.sentence("cpu:0 batch=64 float32") == (
        "1.52 ± 0.05 times faster than cpu:0 batch=64 float32 (95% interval 1.47–1.57, "
        "2 windows in fresh processes): a real difference"
    )
    assert "cannot be told apart" in tuning.Comparison(1.02, 0.95, 1.09, "undecided", 2,
                                                       "windows").sentence("x")  # fmt: skip
    assert c.margin == pytest.approx(0.5234) and c.significant


def test_a_duel_runs_only_where_one_more_window_could_settle_it():
    noise = tuning.Noise(0.05, 6.0)
    # 10% ahead, interval 0.99-1.22 over two windows: one more could narrow it past 1
    near = tuning.Comparison(1.10, 0.99, 1.22, "undecided", 2, "windows in fresh processes")
    assert tuning.could_decide(near, noise)
    # 1% ahead, interval 0.80-1.25: no window could settle it, either way
    hopeless = tuning.Comparison(1.01, 0.80, 1.25, "undecided", 2, "windows in fresh processes")
    assert not tuning.could_decide(hopeless, noise)
    # nearly equal, the windows' share of the interval nil: no window could show them equal
    # within 2%, nor apart (the minutes-later part stays)
    equalish = tuning.Comparison(1.002, 0.93, 1.08, "undecided", 3, "windows in fresh processes")
    assert not tuning.could_decide(equalish, noise)
