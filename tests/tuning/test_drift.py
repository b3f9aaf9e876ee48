import math

import pytest

from autoplace.tuning import corrected_scores, fit_effects


def test_groups_timed_in_turns_are_put_on_one_scale():
    # True scores 100, 80, 120, 60. Each group is slowed or sped up as a whole (drift),
    # and shares one configuration with another group.
    truth = {"a": 100.0, "b": 80.0, "c": 120.0, "d": 60.0}
    groups = {"g1": (["a", "b"], 1.0), "g2": (["a", "c"], 0.6), "g3": (["c", "d"], 1.4)}
    observations = [(k, g, truth[k] * drift) for g, (keys, drift) in groups.items() for k in keys]
    fitted = corrected_scores(observations)
    for x in truth:
        for y in truth:
            assert fitted[x] / fitted[y] == pytest.approx(truth[x] / truth[y], rel=1e-3)
    # measured one after another, the same drift would have ranked d over b (84 > 80)
    assert truth["d"] * 1.4 > truth["b"] and fitted["b"] > fitted["d"]


def test_a_configuration_measured_only_alone_keeps_the_mean_of_its_scores():
    fitted = corrected_scores([("a", None, 100.0), ("a", None, 144.0), ("b", None, 90.0)])
    assert fitted["a"] == pytest.approx(math.sqrt(100.0 * 144.0))
    assert fitted["b"] == pytest.approx(90.0)


def test_scores_keep_their_units_when_every_group_drifts_alike():
    observations = [("a", "g1", 10.0), ("b", "g1", 20.0), ("a", "g2", 10.0), ("c", "g2", 5.0)]
    assert corrected_scores(observations) == pytest.approx(
        {"a": 10.0, "b": 20.0, "c": 5.0}, rel=1e-4
    )


def test_scores_that_cannot_be_compared_are_left_out():
    fitted = corrected_scores([("a", "g", 0.0), ("b", "g", float("nan")), ("c", "g", 3.0)])
    assert set(fitted) == {"c"} and corrected_scores([]) == {}


# The wide MLP's finalists in four windows of fresh processes, samples/s (a tune of
# benchmarks/results/measurement-89bd41dbd0-20261126-1909.json): float16 @1024's first
# window landed in a slower mode (12.8 k where its three others read 18.2-20.1 k).
WIDE_MLP = {
    "f32@1024": (20406.1, 20290.1, 20073.0, 18495.2),
    "f16@512": (17612.6, 18430.8, 18441.4, 18208.4),
    "bf16@1024": (18045.9, 18068.2, 18962.7, 17441.1),
    "f16@1024": (12817.1, 20021.2, 20068.3, 18168.3),
}


def windows_of(table):
    return [(k, w, s) for k, scores in table.items() for w, s in enumerate(scores)]


def test_one_slow_window_among_four_is_weighed_down_not_squared():
    plain = fit_effects(windows_of(WIDE_MLP))
    robust = fit_effects(windows_of(WIDE_MLP), robust_floor=0.015)
    # Least squares lets the slow window widen every interval: a residual sd of 10.6%.
    assert math.sqrt(plain.variance) == pytest.approx(0.106, abs=0.005)
    assert math.sqrt(robust.variance) < 0.6 * math.sqrt(plain.variance)
    # ... and pull float16 @1024 a tenth down, where its other windows put it level with
    # float32 @1024 (the plain loop: 0.94 of it, spread ±8%).
    assert plain.score("f32@1024") / plain.score("f16@1024") > 1.12
    assert robust.score("f32@1024") / robust.score("f16@1024") < 1.06
    # Windows that agree keep their least-squares fit.
    assert robust.score("f16@512") / robust.score("bf16@1024") == pytest.approx(
        plain.score("f16@512") / plain.score("bf16@1024"), rel=0.01
    )


def test_without_an_outlier_or_with_two_windows_the_fit_is_least_squares():
    steady = {k: tuple(s * (1 + 0.01 * ((i * 7 + j) % 3 - 1)) for i, s in enumerate(v))
              for j, (k, v) in enumerate(WIDE_MLP.items()) if k != "f16@1024"}  # fmt: skip
    two = {k: v[:2] for k, v in WIDE_MLP.items()}  # a slow window cannot be told apart
    for table in (steady, two):
        plain = fit_effects(windows_of(table))
        robust = fit_effects(windows_of(table), robust_floor=0.015)
        assert robust.variance == pytest.approx(plain.variance, rel=1e-9)
        assert robust.scores() == pytest.approx(plain.scores(), rel=1e-9)
