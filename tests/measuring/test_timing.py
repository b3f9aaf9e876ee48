"""Timed loops in turns: the early stop of a loop clearly behind the reference."""

from __future__ import annotations

import pytest

from autoplace import MeasureSettings
from autoplace.measuring._timing import STOP_AFTER_TURNS, behind, time_interleaved


def test_a_loop_behind_in_every_one_of_its_first_turns_is_behind():
    reference = [1.0, 1.2, 0.8, 1.1]  # seconds per step; drift moves all loops of a turn
    slow = [2.0 * t for t in reference]
    close = [1.1 * t for t in reference]
    assert behind([reference, slow, close], [10, 10, 10], 1.25) == {1}
    # per sample: twice the batch in twice the time is as fast
    assert behind([reference, slow], [10, 20], 1.25) == set()
    # one turn where it was not behind, or too few turns: not yet
    assert behind([reference, [*slow[:3], 1.1]], [10, 10], 1.25) == set()
    assert behind([reference[:3], slow[:3]], [10, 10], 1.25) == set()
    assert STOP_AFTER_TURNS == 4


def _loop(per_step: float):
    def run(k: int) -> float:
        return k * per_step

    return run


def test_a_loop_clearly_behind_stops_being_timed_and_the_others_go_on():
    settings = MeasureSettings(min_samples=6, max_samples=10, target_spread=0.0, settle_s=0.0,
                               stop_behind=1.25)  # fmt: skip
    samples = time_interleaved(
        [_loop(1e-3), _loop(3e-3), _loop(1.1e-3)], [1e-3, 3e-3, 1.1e-3], settings, 5.0,
        batch_sizes=[8, 8, 8],
    )  # fmt: skip
    assert len(samples[1]) == STOP_AFTER_TURNS  # stopped: 3x the reference's time per sample
    # the others until their ratios settle (at once, here: no noise), as without it
    assert len(samples[0]) == len(samples[2]) == settings.min_samples
    assert samples[1][0] == pytest.approx(3e-3)


def test_without_a_rule_or_batch_sizes_no_loop_stops():
    settings = MeasureSettings(min_samples=6, max_samples=8, target_spread=0.0, settle_s=0.0)
    samples = time_interleaved([_loop(1e-3), _loop(3e-3)], [1e-3, 3e-3], settings, 5.0,
                               batch_sizes=[8, 8])  # fmt: skip
    assert [len(s) for s in samples] == [6, 6]
    ruled = MeasureSettings(min_samples=6, max_samples=8, target_spread=0.0, settle_s=0.0,
                            stop_behind=1.25)  # fmt: skip
    samples = time_interleaved([_loop(1e-3), _loop(3e-3)], [1e-3, 3e-3], ruled, 5.0)
    assert [len(s) for s in samples] == [6, 6]
