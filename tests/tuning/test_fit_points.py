from autoplace import Config, Space
from autoplace.tuning import MAX_GROUP, FitPoints, throughput

SPACE = Space(("cpu:0",), (1, 2, 4, 8), ("float32", "bfloat16", "float16"), (None,))


def c(batch, precision="float32"):
    return Config("cpu:0", batch, precision, None)


def test_an_arm_at_one_batch_gets_its_neighbour_below_else_above():
    scores = {c(4): 1.0, c(8): 2.0, c(4, "bfloat16"): 1.0, c(1, "float16"): 0.5}
    group = FitPoints().propose(SPACE, throughput(), scores, frozenset())
    # float32 has two batches already; bfloat16 gets 2 (below 4), float16 gets 2 (above 1)
    assert group == (c(2, "bfloat16"), c(2, "float16"))


def test_a_failed_neighbour_is_skipped_and_a_pending_one_waited_for():
    scores = {c(4): 1.0, c(2): None, c(4, "bfloat16"): 1.0}
    pending = frozenset({c(2, "bfloat16")})
    assert FitPoints().propose(SPACE, throughput(), scores, pending) == (c(8),)


def test_nothing_when_every_arm_has_a_line_and_never_more_than_a_group():
    done = {c(b, p): 1.0 for b in (1, 2) for p in ("float32", "bfloat16", "float16")}
    assert FitPoints().propose(SPACE, throughput(), done, frozenset()) == ()
    wide = Space(("cpu:0", "cpu:1"), (1, 2), ("float32", "bfloat16", "float16"), (None,))
    lonely = {Config(d, 1, p, None): 1.0 for d in wide.devices for p in wide.precisions}
    assert len(FitPoints().propose(wide, throughput(), lonely, frozenset())) == MAX_GROUP
