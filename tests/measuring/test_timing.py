"""Timed loops in turns: the early stop of a loop clearly behind the reference."""

from __future__ import annotations

import pytest

from autoplace import MeasureSettings
from autoplace.measuring._timing import (
    FAR_BEHIND,
    LONG_TURN_S,
    STOP_AFTER_TURNS,
    behind,
    far_behind,
    time_interleaved,
)


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
    settings = MeasureSettings(min_samples=6, max_samples=10, target_spread=0.0,
                               stop_behind=1.25)  # fmt: skip
    samples = time_interleaved(
        [_loop(1e-3), _loop(3e-3), _loop(1.1e-3)], [1e-3, 3e-3, 1.1e-3], settings, 5.0,
        batch_sizes=[8, 8, 8],
    )  # fmt: skip
    assert len(samples[1]) == STOP_AFTER_TURNS  # stopped: 3x the reference's time per sample
    # the others until their ratios settle (at once, here: no noise), as without it
    assert len(samples[0]) == len(samples[2]) == settings.min_samples
    assert samples[1][0] == pytest.approx(3e-3)


def test_a_long_loop_far_behind_from_its_first_turn_is_far_behind():
    reference = [1e-3, 1.2e-3]  # seconds per step at batch 8
    far = [0.8, 0.9]  # batch 256: 3.1 ms a sample against 0.13-0.15 ms
    long_turns = [0.0, 0.8, 0.8]
    assert far_behind([reference[:1], far[:1]], [8, 256], long_turns) == {1}
    assert far_behind([reference, far], [8, 256], long_turns) == {1}
    # within FAR_BEHIND per sample, however long its turn: left to the four-turn rule
    near = [1.9 * 32 * t for t in reference]  # batch 256 at 1.9x the time per sample
    assert far_behind([reference, near], [8, 256], long_turns) == set()
    # far behind, but a turn shorter than LONG_TURN_S: a burst could be the whole of it
    assert far_behind([reference, [5e-3, 5e-3]], [8, 8], [0.0, LONG_TURN_S / 2]) == set()
    # one turn where it was not that far behind: not
    assert far_behind([reference, [0.8, 0.02]], [8, 256], long_turns) == set()
    assert FAR_BEHIND == 2.0


def test_a_long_loop_far_behind_stops_after_one_turn_and_the_others_go_on():
    calls: list[int] = []

    def big(k: int) -> float:
        calls.append(k)
        return k * 0.8

    settings = MeasureSettings(min_samples=4, max_samples=6, target_spread=0.0,
                               stop_far_behind=True)  # fmt: skip
    samples = time_interleaved([_loop(1e-3), big, _loop(1.1e-3)], [1e-3, 0.8, 1.1e-3],
                               settings, 5.0, batch_sizes=[8, 256, 8])  # fmt: skip
    assert len(samples[1]) == 1 and calls == [1]  # one 0.8 s step, 3.1 ms a sample: stopped
    assert len(samples[0]) == len(samples[2]) == settings.min_samples
    # without the rule (the four-turn one alone, here), it is timed as long as the others
    calls.clear()
    plain = MeasureSettings(min_samples=4, max_samples=6, target_spread=0.0,
                            stop_behind=4.0)  # fmt: skip
    samples = time_interleaved([_loop(1e-3), big], [1e-3, 0.8], plain, 5.0, batch_sizes=[8, 256])
    assert len(samples[1]) == plain.min_samples


def test_a_loop_timed_alone_under_a_rule_is_timed_as_long_as_without_it():
    # nothing stopped, nothing to stop: the reference alone is timed in full, not one turn
    ruled = MeasureSettings(min_samples=5, max_samples=8, target_spread=0.0,
                            stop_behind=1.25, stop_far_behind=True)  # fmt: skip
    assert [len(s) for s in time_interleaved([_loop(1e-3)], [1e-3], ruled, 5.0,
                                             batch_sizes=[8])] == [5]  # fmt: skip
    # the others all stopped: the reference is left alone, and its loop ends there
    samples = time_interleaved([_loop(1e-3), _loop(3e-3)], [1e-3, 3e-3], ruled, 5.0,
                               batch_sizes=[8, 8])  # fmt: skip
    assert [len(s) for s in samples] == [STOP_AFTER_TURNS, STOP_AFTER_TURNS]


def test_without_a_rule_or_batch_sizes_no_loop_stops():
    settings = MeasureSettings(min_samples=6, max_samples=8, target_spread=0.0)
    samples = time_interleaved([_loop(1e-3), _loop(3e-3)], [1e-3, 3e-3], settings, 5.0,
                               batch_sizes=[8, 8])  # fmt: skip
    assert [len(s) for s in samples] == [6, 6]
    ruled = MeasureSettings(min_samples=6, max_samples=8, target_spread=0.0,
                            stop_behind=1.25)  # fmt: skip
    samples = time_interleaved([_loop(1e-3), _loop(3e-3)], [1e-3, 3e-3], ruled, 5.0)
    assert [len(s) for s in samples] == [6, 6]


def test_a_turn_times_its_chunk_at_once_after_the_first_turns_warm_up():
    # No untimed steps settle a loop resumed after another's turn (the ablation: they
    # changed no pick and cost 13% of a tune); the first turn of each loop warms it up.
    calls: dict[str, list[int]] = {"small": [], "big": []}

    def loop(name: str, per_step: float):
        def run(k: int) -> float:
            calls[name].append(k)
            return k * per_step

        return run

    settings = MeasureSettings(min_samples=3, max_samples=3, target_spread=0.0,
                               warmup_s=0.1, sample_min_s=0.05)  # fmt: skip
    time_interleaved([loop("big", 2.0), loop("small", 1e-3)], [2.0, 1e-3], settings, 5.0)
    assert calls["small"] == [100, 50, 50, 50]  # 0.1 s warm-up, then 50-step chunks
    assert calls["big"] == [1, 1, 1, 1]  # a step longer than the warm-up is its own
