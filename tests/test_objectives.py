import math

import pytest
from synthetic import measured as flat

from autoplace import BadInputError, Measurement
from autoplace.tuning import latency, make_objective, throughput, time_to_finish


def measured(**figures) -> Measurement:
    base = dict(status="ok", reason="", device="cpu:0", batch_size=32, precision="float32")
    base.update(
        lower_s=0.5, compile_s=2.0, first_call_s=0.25, step_s=0.01, fed_step_s=0.02,
        transfer_s=0.004, fed_samples_per_s=1600.0,
    )  # fmt: skip
    base.update(figures)
    return flat(width=None, **base)


def test_throughput_is_fed_samples_per_second():
    assert throughput().score(measured()) == 1600.0
    assert throughput().direction == "maximize"


def test_latency_is_transfer_plus_step():
    assert latency().score(measured()) == pytest.approx(0.014)
    assert latency().direction == "minimize"


def test_time_to_finish_in_steps_counts_one_off_costs_once():
    obj = time_to_finish(steps=100)
    # lower + compile + first call + 99 fed steps
    assert obj.score(measured()) == pytest.approx(0.5 + 2.0 + 0.25 + 99 * 0.02)
    assert obj.run == {"steps": 100}


def test_time_to_finish_in_samples_depends_on_batch_size():
    obj = time_to_finish(samples=1000, epochs=3)
    m = measured(batch_size=64)
    steps = math.ceil(3000 / 64)
    assert obj.score(m) == pytest.approx(2.75 + (steps - 1) * 0.02)
    assert obj.run == {"samples": 3000, "epochs": 3}


def test_short_runs_favour_cheap_compiles():
    fast_compile = measured(compile_s=0.1, fed_step_s=0.03)
    fast_steps = measured(compile_s=5.0, fed_step_s=0.01)
    short, long = time_to_finish(steps=10), time_to_finish(steps=10_000)
    assert short.better(short.score(fast_compile), short.score(fast_steps))
    assert long.better(long.score(fast_steps), long.score(fast_compile))


def test_failed_measurement_has_no_score():
    m = flat(status="oom", reason="x", device="cpu:0", batch_size=1, precision="float32")
    for obj in (throughput(), latency(), time_to_finish(steps=5)):
        assert obj.score(m) is None


def test_gain_is_relative_in_both_directions():
    assert throughput().gain(110.0, 100.0) == pytest.approx(0.10)
    assert latency().gain(1.0, 1.1) == pytest.approx(0.10)
    assert latency().gain(1.1, 1.0) < 0


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"steps": 10, "samples": 10}, {"epochs": 2}, {"steps": 0}, {"samples": -5}],
)
def test_time_to_finish_needs_one_positive_run_length(kwargs):
    with pytest.raises(BadInputError):
        make_objective("time-to-finish", **kwargs)


def test_unknown_objective():
    with pytest.raises(BadInputError, match="throughput"):
        make_objective("speed")


def test_chunk_scores_follow_the_loop_the_score_rests_on():
    m = measured(step_chunk_s=(0.01, 0.02), fed_step_chunk_s=(0.02, 0.04, 0.08))
    assert throughput().chunk_scores(m) == pytest.approx([1600.0, 800.0, 400.0])
    assert latency().chunk_scores(m) == pytest.approx([0.014, 0.024])
    assert time_to_finish(steps=11).chunk_scores(m) == pytest.approx([2.95, 3.15, 3.55])
    assert throughput().spread(measured(fed_step_spread=0.2, step_spread=0.1)) == 0.2
    assert latency().spread(measured(fed_step_spread=0.2, step_spread=0.1)) == 0.1


@pytest.mark.parametrize("name", ["throughput", "latency"])
def test_a_run_length_the_objective_ignores_is_refused(name):
    with pytest.raises(BadInputError, match=f"--samples only count.*{name} ignores it"):
        make_objective(name, samples=1000)


def test_time_to_finish_counts_the_devices_start_up_where_the_process_paid_it():
    """A GPU's start-up is paid once a run, not once a configuration: where a measurement's
    process paid it (each fresh process of a verdict's windows does), it is in the score."""
    obj = time_to_finish(steps=100)
    plain = obj.score(measured())
    assert obj.score(measured(device_init_s=0.32)) == pytest.approx(plain + 0.32)


@pytest.mark.parametrize(
    ("feeding", "step"), [("put", 0.02), ("prefetch", 0.012), ("resident", 0.01)]
)
def test_each_feeding_scores_its_own_loop(feeding, step):
    m = measured(prefetch_step_s=0.012)
    assert throughput(feeding).score(m) == pytest.approx(32 / step)
    assert time_to_finish(steps=100, feeding=feeding).score(m) == pytest.approx(
        0.5 + 2.0 + 0.25 + 99 * step
    )
    made = make_objective("throughput", feeding=feeding)
    assert made.feeding == feeding and made.run == (
        {} if feeding == "put" else {"feeding": feeding}
    )
