"""The :class:`autoplace.Backend` contract, run against every implementation: the
subprocess worker, the in-process engine, and the synthetic backend the tuner's
tests use (so that those tests stand on a backend that keeps the same promises)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest
from conftest import FAST, model, request
from synthetic import SyntheticBackend

import autoplace
from autoplace import Backend, BadInputError, MeasureRequest


@dataclasses.dataclass
class Case:
    """A backend, and how to ask it for a good and a failing measurement."""

    backend: Backend
    good: Callable[..., MeasureRequest]
    failing: MeasureRequest


def _real(backend: Backend) -> Case:
    return Case(
        backend,
        lambda **config: request(model("tiny_mlp"), "mlp", FAST, **config),
        request(model("raises"), "broken", FAST),
    )


def _synthetic() -> Case:
    def fail(r: MeasureRequest) -> tuple[str, str] | None:
        return ("error", "the workload raised") if r.config.batch_size == 3 else None

    def good(**config: object) -> MeasureRequest:
        c = autoplace.Config(**{"device": "cpu:0", "batch_size": 4, **config})  # type: ignore[arg-type]
        return MeasureRequest("x.py", "0", "synthetic", c, FAST)

    return Case(SyntheticBackend(devices=("cpu:0", "cpu:1"), fail=fail), good, good(batch_size=3))


@pytest.fixture(
    scope="module",
    params=[pytest.param("subprocess", marks=pytest.mark.slow), "inprocess", "synthetic"],
)
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    if request.param == "subprocess":
        backend = autoplace.SubprocessBackend()
        yield _real(backend)
        backend.close()
    elif request.param == "inprocess":
        yield _real(request.getfixturevalue("inproc"))
    else:
        yield _synthetic()


def test_devices_are_named_platform_colon_index(case: Case) -> None:
    devices = case.backend.devices()
    assert devices and len({d.name for d in devices}) == len(devices)
    for d in devices:
        platform, index = d.name.split(":")
        assert platform == d.platform and int(index) >= 0 and d.kind


def test_catalog_lists_the_workload_measured(case: Case) -> None:
    r = case.good()
    found = case.backend.catalog(r.model_file, r.sha256)
    assert r.workload in found and found[r.workload].name == r.workload


def test_measure_returns_the_configuration_asked_for(case: Case) -> None:
    r = case.good(batch_size=8)
    m = case.backend.measure(r)
    assert m.status == "ok" and m.measured, m.reason
    assert (m.device, m.batch_size, m.precision) == ("cpu:0", 8, "float32")
    assert m.fed.step_s > 0 and m.fed.rate(m.batch_size) == pytest.approx(8 / m.fed.step_s)


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_measure_together_answers_in_order_with_loops_timed_in_turns(case: Case) -> None:
    requests = [case.good(batch_size=b) for b in (2, 8, 4)]
    results = case.backend.measure_together(requests)
    assert [m.batch_size for m in results] == [2, 8, 4]
    assert all(m.status == "ok" for m in results)
    assert {m.interleave_id for m in results} != {None}
    assert len({m.interleave_id for m in results}) == 1
    assert all(m.interleaved_with == 2 for m in results)
    # chunk i of every loop ran in one turn: the same number of chunks each
    assert len({m.fed.timed for m in results}) == 1


def test_a_configurations_own_failure_is_a_status_not_an_exception(case: Case) -> None:
    good, bad = case.good(), case.failing
    results = case.backend.measure_together([good, bad])
    assert results[0].status == "ok"
    assert results[1].status == "error" and results[1].reason and not results[1].measured


def test_an_impossible_request_raises_bad_input(case: Case) -> None:
    with pytest.raises(BadInputError, match="unknown device"):
        case.backend.measure(case.good(device="cpu:99"))


def test_close_may_be_called_twice_and_the_backend_is_usable_again(case: Case) -> None:
    case.backend.close()
    case.backend.close()
    assert case.backend.measure(case.good()).status == "ok"
