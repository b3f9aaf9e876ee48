"""The cost line the search prunes with: where it holds, and what it rules out."""

import pytest

from autoplace.costs import cost_line, could_reach


def line(fixed: float, per_sample: float, batches) -> dict[int, float]:
    """Throughputs of a step costing ``fixed + per_sample * b``."""
    return {b: b / (fixed + per_sample * b) for b in batches}


def test_a_line_is_recovered_from_three_batches_or_more():
    found = cost_line(line(436.0, 4.86, (1, 256, 1024)))
    assert found is not None
    assert found.fixed == pytest.approx(436.0) and found.per_sample == pytest.approx(4.86)
    assert (found.low, found.high) == (1, 1024)
    assert cost_line(line(436.0, 4.86, (1, 256))) is None  # two: nothing checks it


def test_no_line_holds_over_a_curve_that_bends_away_from_one():
    assert cost_line({1: 0.3, 16: 1.0, 128: 0.5, 1024: 0.9}) is None  # two peaks
    assert cost_line({1: 1.0, 64: 0.6, 4096: 0.2}) is None  # throughput falling
    bent = line(10.0, 1.0, (1, 8, 64, 512))
    bent[64] *= 1.25  # a peak at 64, 25% above the line through the rest
    assert cost_line(bent) is None
    bent[64] /= 1.25 / 1.1  # 10% above: within what a line may be off, so it holds
    assert cost_line(bent) is not None


def test_a_batch_the_line_predicts_far_behind_cannot_reach_the_best():
    # The README's MLP: 436 us fixed, 4.86 us a sample; the best so far at 1024.
    known = line(436.0, 4.86, (1, 128, 256, 512, 1024))
    best = max(known.values())
    fitted = cost_line(known)
    assert not could_reach(fitted, 16, steps=3, best=best)
    assert not could_reach(fitted, 64, steps=1, best=best)
    assert could_reach(fitted, 2048, steps=1, best=best)  # above the line's batches: unknown
    assert could_reach(cost_line({1: 1.0, 256: 2.0}), 16, steps=4, best=2.0)  # no line: unknown


def test_the_error_compounds_with_the_distance_to_the_nearest_batch_measured():
    known = line(100.0, 1.0, (1, 64, 256))
    predicted = 16 / (100.0 + 16)
    best = predicted * 1.3  # 30% ahead of the prediction at 16
    fitted = cost_line(known)
    assert not could_reach(fitted, 16, steps=1, best=best)  # 16% a step: out of reach
    assert could_reach(fitted, 16, steps=2, best=best)  # 1.16**2 = 1.35: within it
