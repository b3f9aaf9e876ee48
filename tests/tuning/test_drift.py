import math

import pytest

from autoplace.tuning import corrected_scores


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
