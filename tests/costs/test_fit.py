import math

import pytest

from autoplace.costs import Point, fit_line, fit_memory


def points(fixed, per_sample, batches, noise=None, cliff=None):
    out = []
    for n, b in enumerate(batches):
        t = fixed + per_sample * b
        if cliff is not None and b >= cliff[0]:
            t *= cliff[1]
        if noise:
            t *= 1.0 + noise * (1 if n % 2 else -1)
        out.append(Point(b, t, abs(noise or 0.0)))
    return out


BATCHES = [2**i for i in range(13)]


def test_an_exact_line_is_recovered():
    line = fit_line(points(2e-3, 1e-6, BATCHES))
    assert line.fixed == pytest.approx(2e-3, rel=1e-6)
    assert line.per_sample == pytest.approx(1e-6, rel=1e-6)
    assert line.departs_at is None
    assert line.error < 1e-9
    assert line.balance == pytest.approx(2000)
    # 90% of the peak throughput 1/c: b/(a + c b) = 0.9/c
    b = line.batch_for(0.9)
    assert b / line.at(b) == pytest.approx(0.9 / line.per_sample)


def test_alternating_noise_moves_the_line_less_than_the_noise():
    line = fit_line(points(2e-3, 1e-6, BATCHES, noise=0.05))
    assert line.fixed == pytest.approx(2e-3, rel=0.10)
    assert line.per_sample == pytest.approx(1e-6, rel=0.10)
    assert line.departs_at is None


@pytest.mark.parametrize("cliff_at", [256, 1024, 4096])
def test_a_cliff_is_found_where_it_starts_and_left_out_of_the_line(cliff_at):
    line = fit_line(points(1e-4, 2e-6, BATCHES, cliff=(cliff_at, 1.6)))
    assert line.departs_at == cliff_at
    assert line.departure == pytest.approx(0.6, rel=0.01)
    assert max(line.batches) < cliff_at
    assert line.per_sample == pytest.approx(2e-6, rel=1e-6)


def test_a_slowdown_within_the_points_own_spread_is_no_departure():
    pts = points(1e-4, 2e-6, BATCHES)
    top = pts[-1]
    # 30% slower, chunks spread 40%, four of them: the median may be 20% off
    pts[-1] = Point(top.batch, top.seconds * 1.3, spread=0.4, samples=4)
    assert fit_line(pts).departs_at is None


def test_one_batch_size_determines_no_line():
    assert fit_line([Point(64, 1e-3), Point(64, 1.1e-3)]) is None
    assert fit_line([]) is None


def test_a_fixed_cost_too_small_to_see_gives_a_line_through_the_origin():
    line = fit_line([Point(1, 1.2e-6), Point(2, 1.9e-6), Point(4, 4.1e-6)])
    assert line.fixed >= 0
    assert line.per_sample == pytest.approx(1e-6, rel=0.15)


def test_time_falling_with_the_batch_is_all_fixed_cost():
    line = fit_line([Point(1, 2e-3), Point(2, 1.9e-3), Point(4, 1.8e-3)])
    assert line.per_sample == 0
    assert line.fixed == pytest.approx(1.9e-3, rel=0.06)
    assert line.balance is None and line.batch_for(0.9) is None


def test_memory_line():
    line = fit_memory([(b, 5e6 + 3e3 * b) for b in (16, 64, 256)])
    assert line.fixed == pytest.approx(5e6) and line.per_sample == pytest.approx(3e3)
    assert line.fit == "least squares"
    assert fit_memory([(16, 1e6)]) is None
    flat = fit_memory([(16, 2e6), (32, 1e6)])
    assert not math.isnan(flat.fixed) and (flat.per_sample, flat.fit) == (0.0, "flat")


def test_small_batches_that_do_not_fill_the_device_are_left_below_the_line():
    # A matrix-vector product at batch 1 and 2 costs more per sample than the line the
    # larger batches keep: the line is fitted where it holds, the largest batches.
    pts = points(1e-4, 2e-6, BATCHES)
    pts[0] = Point(1, pts[0].seconds * 3)
    pts[1] = Point(2, pts[1].seconds * 2)
    line = fit_line(pts)
    assert line.batches == tuple(BATCHES[2:])
    assert line.below_at == 2 and line.below == pytest.approx(1.0, rel=0.01)
    assert line.per_sample == pytest.approx(2e-6, rel=1e-6)
    assert line.departs_at is None


def test_a_memory_line_through_zero_itself_is_no_constrained_fit():
    # Exactly 1000 B a sample: the plain fit's fixed part is -2e-9 B, zero rounded.
    line = fit_memory([(b, 1000.0 * b) for b in (256, 2048, 4096)])
    assert (line.fixed, line.fit) == (0.0, "least squares")
    assert line.per_sample == pytest.approx(1000.0)
