"""The :class:`autoplace.Strategy` contract, run against every strategy: each group is
new, distinct, inside the space, clear of what is pending, at most ``MAX_GROUP``; the
proposal is a pure function of its arguments; and a search ends."""

from __future__ import annotations

import pytest
from synthetic import SyntheticBackend

import autoplace
from autoplace import Config, MeasureRequest, Space, Strategy
from autoplace.tuning import MAX_GROUP, make_objective

SPACES = [
    Space(("cpu:0",), tuple(2**i for i in range(10)), ("float32", "bfloat16", "float16"), (None,)),
    Space(("cpu:0", "cpu:1"), (1, 4, 16, 64), ("float32", "bfloat16"), (64, 128)),
    Space(("cpu:0",), (32,), ("float32",), (None,)),
]


@pytest.fixture(params=["climb", "grid"])
def strategy(request: pytest.FixtureRequest) -> Strategy:
    return autoplace.Climb() if request.param == "climb" else autoplace.Grid()


def drive(strategy: Strategy, space: Space, objective_name: str, pending: frozenset[Config]):
    """Run ``strategy`` to its end against the synthetic backend (batches over 256 fail
    for lack of memory); check each group against the contract; return the scores."""
    run_length = {"steps": 100} if objective_name == "time-to-finish" else {}
    objective = make_objective(objective_name, **run_length)
    backend = SyntheticBackend(devices=space.devices, memory_limit=256 * 1000)
    scores: dict[Config, float | None] = {}
    for _ in range(len(space) + 1):
        group = strategy.propose(space, objective, scores, pending)
        assert group == strategy.propose(space, objective, dict(scores), pending)  # pure
        if not group:
            return scores
        assert 1 <= len(group) == len(set(group)) <= MAX_GROUP
        for c in group:
            assert c in space and c not in scores and c not in pending
            m = backend.measure(MeasureRequest("x.py", "0", "synthetic", c))
            scores[c] = objective.score(m) if m.status == "ok" else None
    raise AssertionError("the strategy never stopped proposing")


@pytest.mark.parametrize("space", SPACES, ids=["one-arm-10", "two-devices-widths", "single"])
@pytest.mark.parametrize("objective_name", ["throughput", "time-to-finish", "latency"])
def test_groups_keep_the_contract_and_the_search_ends(strategy, space, objective_name):
    scores = drive(strategy, space, objective_name, frozenset())
    assert any(s is not None for s in scores.values())


def test_configurations_pending_elsewhere_are_never_proposed(strategy):
    space = SPACES[1]
    pending = frozenset(space.configs()[::3])
    scores = drive(strategy, space, "throughput", pending)
    assert not set(scores) & pending


def test_nothing_is_proposed_once_everything_is_measured_or_pending(strategy):
    space = SPACES[2]
    objective = make_objective("throughput")
    assert strategy.propose(space, objective, {}, frozenset(space.configs())) == ()
    assert strategy.propose(space, objective, {c: 1.0 for c in space.configs()}, frozenset()) == ()
