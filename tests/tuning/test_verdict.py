"""The verdict: margins between finalists, the sign test's bound, the ranking with its
preference among equals, and which finalists to confirm."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from synthetic import SyntheticBackend

import autoplace
from autoplace import tuning


def test_a_finalist_confirmed_elsewhere_is_measured_again_with_the_others():
    # Another worker confirmed the search's best alone; a finalist it did not confirm
    # is compared fairly only within one interleaved measurement: both are measured.
    searched = {}
    backend = SyntheticBackend()
    objective = autoplace.make_objective("throughput")
    for p in ("float32", "bfloat16"):
        c = autoplace.Config("cpu:0", 8, p, 64)
        searched[c] = backend.measure(autoplace.MeasureRequest("x.py", "0", "synthetic", c))
    best = max(searched, key=lambda c: objective.score(searched[c]))
    done = {best: [searched[best]]}
    ranked = tuning.rank(searched, objective)
    group = tuning.finalists_to_confirm(ranked, done, objective, 3, frozenset())
    assert set(group) == set(searched)
    everyone = {c: [m] for c, m in searched.items()}
    assert tuning.finalists_to_confirm(ranked, everyone, objective, 3, frozenset()) == []


def test_the_margin_counts_how_far_a_confirmed_scores_votes_lie_apart():
    objective = autoplace.make_objective("throughput")
    m = autoplace.Measurement(
        "ok", "", "cpu:0", 8, "float32", None, fed_step_s=1.0, fed_step_spread=0.01
    )
    best = tuning.Scored(m, 110.0, votes=(100.0, 110.0, 122.0))
    other = tuning.Scored(m, 100.0)
    found = tuning.margin(objective, best, other)
    assert found.margin == pytest.approx(0.10)
    assert found.noise == pytest.approx(0.20)  # (122 - 100) / 110, not the loop's 1%
    assert found.significant is False
    assert tuning.margin(objective, tuning.Scored(m, 110.0), other).significant is True


def test_lower_bound_is_the_sign_tests_order_statistic():
    values = [float(v) for v in range(20, 0, -1)]
    # P(Binomial(20, 1/2) <= 5) = 0.021 <= 0.05 < P(<= 6) = 0.058: the 6th smallest
    assert tuning.lower_bound(values, 0.05) == 6.0
    assert tuning.lower_bound(values[:5], 0.05) == 16.0  # the least of five: p = 1/32
    assert tuning.lower_bound(values[:4], 0.05) == -math.inf  # four can never be enough


def _together(fed_chunks, precision, batch=8):
    m = autoplace.Measurement(
        "ok", "", "cpu:0", batch, precision, None, fed_step_chunk_s=tuple(fed_chunks),
        fed_step_s=statistics.median(fed_chunks), fed_step_spread=0.3, interleave_id="g",
        fed_samples_per_s=batch / statistics.median(fed_chunks),
    )  # fmt: skip
    objective = autoplace.make_objective("throughput")
    return tuning.Scored(m, objective.score(m), votes=(objective.score(m),))


def test_finalists_timed_in_turns_are_compared_turn_by_turn():
    # The machine drifts by +-30% between turns, a spread ten times the 3% difference;
    # turn by turn the faster one wins every time, so the difference is real.
    objective = autoplace.make_objective("throughput")
    drift = [1.0, 1.3, 0.7, 1.1, 0.9, 1.25, 0.75, 1.0]
    fast = _together([0.97 * d for d in drift], "bfloat16")
    slow = _together(drift, "float32")
    found = tuning.margin(objective, fast, slow)
    assert found.margin == pytest.approx(1 / 0.97 - 1)
    assert found.significant is True and found.basis == "paired over 8 turns"
    assert tuning.margin(objective, slow, fast).significant is False
    # Timed in different calls, the same figures are only as good as their spread.
    apart = tuning.Scored(dataclasses.replace(slow.measurement, interleave_id="h"), slow.score)
    assert tuning.margin(objective, fast, apart).significant is False
    # Within the noise the winner is float32 (then the smaller batch); beyond it, the faster.
    assert tuning.rank({}, objective, {}) == []
    mixed = [1.0 + 0.04 * (-1) ** i for i in range(8)]
    even = _together([0.99 * d * x for d, x in zip(drift, mixed, strict=True)], "bfloat16")
    first = tuning.rank({even.config: even.measurement, slow.config: slow.measurement},
                          objective, {even.config: even, slow.config: slow})[0]  # fmt: skip
    assert even.score > slow.score and first.config.precision == "float32"
    first = tuning.rank({fast.config: fast.measurement, slow.config: slow.measurement},
                          objective, {fast.config: fast, slow.config: slow})[0]  # fmt: skip
    assert first.config.precision == "bfloat16"
