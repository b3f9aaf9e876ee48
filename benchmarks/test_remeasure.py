"""Tests of ``remeasure.py``: its pure parts (the interval, the turn orders, the pairing of
rounds, the cache), and, marked slow, real timings in fresh processes of tiny model files.

Run from the repository root:  python -m pytest benchmarks/test_remeasure.py
"""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
import textwrap
from pathlib import Path

import pytest
from remeasure import (
    Config,
    Store,
    Timing,
    TimingSettings,
    Turn,
    compare,
    finalists,
    main,
    median_interval,
    parse_batch_sizes,
    remeasure,
    round_orders,
    summarise,
    sweep,
    time_in_fresh_process,
)

# --- the interval --------------------------------------------------------------------------


def test_seven_rounds_give_their_range_at_98_4_percent():
    interval = median_interval([1.04, 0.97, 1.10, 1.02, 0.99, 1.05, 1.01])
    assert (interval.low, interval.high) == (0.97, 1.10)
    assert interval.confidence == pytest.approx(1 - 2 / 128)


def test_fewer_than_six_values_give_no_95_percent_interval():
    assert median_interval([1.0, 1.1, 1.2, 1.3, 1.4]) is None
    assert median_interval([1.0, 1.1, 1.2, 1.3, 1.4, 1.5]) is not None


def test_twenty_values_give_the_sixth_from_each_end():
    # P(Binomial(20, 1/2) <= 5) = 0.0207 <= 0.025 < P(<= 6) = 0.0577
    interval = median_interval(list(range(1, 21)))
    assert (interval.low, interval.high) == (6, 15)
    assert interval.confidence == pytest.approx(1 - 2 * 21700 / 2**20)


def test_the_interval_covers_the_true_median_as_often_as_it_claims():
    rng = random.Random(7)
    n, trials, covered = 12, 4000, 0
    true_median = math.log(2)  # of an exponential with rate 1
    claimed = median_interval([0.0] * n).confidence
    for _ in range(trials):
        interval = median_interval([rng.expovariate(1.0) for _ in range(n)])
        covered += interval.contains(true_median)
    # 4000 trials: the binomial standard error of the share is about 0.3%.
    assert abs(covered / trials - claimed) < 0.015


# --- the turn orders -------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
def test_every_round_times_each_configuration_once(n):
    for order in round_orders(n, 3 * n):
        assert sorted(order) == list(range(n))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_every_two_rounds_time_each_pair_in_both_orders(n):
    orders = round_orders(n, 2 * n)
    for first, second in zip(orders[0::2], orders[1::2], strict=True):
        for a, b in itertools.combinations(range(n), 2):
            assert (first.index(a) < first.index(b)) != (second.index(a) < second.index(b))


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_over_2n_rounds_each_configuration_opens_two(n):
    openers = [order[0] for order in round_orders(n, 2 * n)]
    assert sorted(openers) == sorted(list(range(n)) * 2)


def test_two_configurations_alternate_abba():
    assert round_orders(2, 4) == [[0, 1], [1, 0], [1, 0], [0, 1]]


# --- parsing ------------------------------------------------------------------------------


def test_a_configuration_reads_back_from_its_key():
    c = Config.parse("cpu:0/128/bf16/64")
    assert c == Config("cpu:0", 128, "bfloat16", 64)
    assert Config.parse(c.key) == c
    assert Config.parse("gpu/32/f32") == Config("gpu:0", 32, "float32", None)
    fused = Config.parse("cpu:0/32/f32/128@16")
    assert fused == Config("cpu:0", 32, "float32", 128, steps_per_call=16)
    assert Config.parse(fused.key) == fused and fused.key.endswith("@16")


@pytest.mark.parametrize(
    "text",
    ["cpu:0/128", "cpu:0/128/f8", "cpu:x/1/f32", "cpu:0/a/f32", "cpu:0/8/f32@0", "cpu:0/8/f32@x"],
)
def test_a_malformed_configuration_is_refused(text):
    with pytest.raises(ValueError):
        Config.parse(text)


def test_batch_sizes_read_as_a_power_of_two_range_or_a_list():
    assert parse_batch_sizes("1..128") == (1, 2, 4, 8, 16, 32, 64, 128)
    assert parse_batch_sizes("3..100") == (4, 8, 16, 32, 64)
    assert parse_batch_sizes("48,16,32") == (16, 32, 48)


# --- rounds paired, summarised, chosen ----------------------------------------------------

A, B, C = (Config("cpu:0", b, "float32", 8) for b in (16, 32, 64))


def ok(samples_per_s: float) -> Timing:
    return Timing("ok", step_s=1 / samples_per_s, samples_per_s=samples_per_s)


def test_pairs_are_compared_within_rounds_and_failed_rounds_left_out():
    # The machine halves its speed in round 1: the ratio within each round holds.
    turns = [
        Turn(0, 0, A, ok(110.0)),
        Turn(0, 1, B, ok(100.0)),
        Turn(1, 0, B, ok(50.0)),
        Turn(1, 1, A, ok(55.0)),
        Turn(2, 0, A, Timing("nonfinite", "NaN")),
        Turn(2, 1, B, ok(100.0)),
    ]
    pair = compare(A, B, turns)
    assert pair.rounds == (0, 1)
    assert pair.ratios == pytest.approx((1.1, 1.1))
    assert pair.a_led == 2
    assert pair.interval is None  # two rounds cannot give a 95% interval
    assert pair.verdict == "too few rounds to tell"
    summary = summarise([A, B], turns)[0]
    assert summary.samples_per_s == pytest.approx(82.5)
    assert summary.failures == ((2, "nonfinite", "NaN"),)


def test_seven_rounds_all_led_by_a_call_a_faster():
    turns = [Turn(r, 0, A, ok(105.0 + r)) for r in range(7)]
    turns += [Turn(r, 1, B, ok(100.0)) for r in range(7)]
    assert compare(A, B, turns).verdict == "A faster"
    assert compare(B, A, turns).verdict == "B faster"


def test_one_lost_round_in_seven_leaves_them_apart_no_more():
    turns = [Turn(r, 0, A, ok(105.0 if r else 95.0)) for r in range(7)]
    turns += [Turn(r, 1, B, ok(100.0)) for r in range(7)]
    assert compare(A, B, turns).verdict == "cannot tell apart"


def test_finalists_skip_configurations_that_failed_in_any_round():
    turns = [Turn(0, 0, A, ok(300.0)), Turn(1, 0, A, Timing("error", "x"))]
    turns += [Turn(r, 1, B, ok(200.0)) for r in range(2)]
    turns += [Turn(r, 2, C, ok(100.0)) for r in range(2)]
    assert finalists(summarise([A, B, C], turns), 1) == [B]
    assert finalists(summarise([A, B, C], turns), 5) == [B, C]


# --- the cache ----------------------------------------------------------------------------


def test_the_cache_keeps_timings_and_refuses_another_runs(tmp_path):
    path = tmp_path / "cache.json"
    header = {"workload": "mlp", "precisions": ("float32",)}  # a tuple reads back as a list
    store = Store(path, header)
    store.put("sweep", 0, 0, A, ok(123.0))
    again = Store(path, header)
    assert again.get("sweep", 0, A) == ok(123.0)
    assert again.get("sweep", 1, A) is None
    assert again.get("final", 0, A) is None
    with pytest.raises(ValueError, match="another run"):
        Store(path, {"workload": "other"})


# --- real timings, each in a fresh process ------------------------------------------------

MODEL = textwrap.dedent(
    """
    import jax.numpy as jnp
    import numpy as np
    import autoplace

    @autoplace.workload(widths=(8, 16), default_width=8, batch_sizes=(4, 8))
    def tiny(width, dtype):
        def step(w, x):
            return (w - 0.01 * (x.T @ (x @ w))).astype(dtype)
        def make_batch(batch_size, rng):
            return rng.random((batch_size, width), dtype=np.float32).astype(dtype)
        state = jnp.eye(width, dtype=dtype)
        return autoplace.Workload(state=state, step=step, make_batch=make_batch)

    @autoplace.workload(widths=(8,))
    def overflows(width, dtype):
        def step(w, x):
            return w * 1e30
        def make_batch(batch_size, rng):
            return rng.random((batch_size, width), dtype=np.float32)
        return autoplace.Workload(state=jnp.ones((width,), dtype), step=step, make_batch=make_batch)

    @autoplace.workload(widths=(8,))
    def broken(width, dtype):
        raise RuntimeError("no such layer")
    """
)
QUICK = TimingSettings(seconds=0.05, timeout_s=120)


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


@pytest.mark.slow
def test_a_fresh_process_times_a_workload(model):
    for loop in ("fed", "step"):
        settings = TimingSettings(seconds=0.05, loop=loop)
        t = time_in_fresh_process(model, "tiny", Config("cpu:0", 8, "float32", 8), settings)
        assert t.status == "ok", t.reason
        assert len(t.chunk_s) >= 3 and t.steps % len(t.chunk_s) == 0  # whole chunks of k steps
        assert t.step_s == pytest.approx(statistics.median(t.chunk_s))
        assert t.samples_per_s == pytest.approx(8 / t.step_s)
        assert t.loadavg is not None and t.max_rss_mib > 0


@pytest.mark.slow
def test_steps_per_call_are_timed_per_step_k_batches_in_one_call(model):
    fused = time_in_fresh_process(model, "tiny", Config("cpu:0", 8, "float32", 8, 4), QUICK)
    assert fused.status == "ok", fused.reason
    assert fused.step_s == pytest.approx(statistics.median(fused.chunk_s) / 4)
    assert fused.samples_per_s == pytest.approx(8 / fused.step_s)
    assert fused.steps % (4 * len(fused.chunk_s)) == 0  # whole calls of 4 steps


@pytest.mark.slow
def test_failures_come_back_with_their_reason(model):
    nonfinite = time_in_fresh_process(model, "overflows", Config("cpu:0", 4, "float32", 8), QUICK)
    assert nonfinite.status == "nonfinite"
    error = time_in_fresh_process(model, "broken", Config("cpu:0", 4, "float32", 8), QUICK)
    assert error.status == "error"
    assert error.reason == "building the workload: RuntimeError: no such layer"
    missing = time_in_fresh_process(model, "absent", Config("cpu:0", 4, "float32", 8), QUICK)
    assert missing.status == "error" and "no workload 'absent'" in missing.reason


@pytest.mark.slow
def test_remeasure_fills_in_the_default_width_and_pairs_every_configuration(model):
    configs = [Config("cpu:0", 4, "float32"), Config("cpu:0", 8, "float32")]
    report = remeasure(model, "tiny", configs, rounds=2, settings=QUICK, progress=lambda _: None)
    assert report.configs == (Config("cpu:0", 4, "float32", 8), Config("cpu:0", 8, "float32", 8))
    assert [(t.round, t.config.batch_size) for t in report.turns] == [
        (0, 4),
        (0, 8),
        (1, 8),
        (1, 4),
    ]
    (pair,) = report.pairs
    assert pair.rounds == (0, 1)


def timed(lines: list[str]) -> list[str]:
    """The progress lines of timings run (not read from a cache)."""
    return [line for line in lines if line.startswith(("sweep round", "final round"))]


@pytest.mark.slow
def test_a_sweep_resumes_from_its_cache(model, tmp_path):
    cache, lines = tmp_path / "sweep.json", []
    first = sweep(
        model, "tiny", sweep_rounds=1, sweep_settings=QUICK, top=2, rounds=2,
        settings=QUICK, precisions=("float32",), cache=cache, progress=lines.append,
    )  # fmt: skip
    assert {c.batch_size for c in first.sweep.configs} == {4, 8}  # the file's batch sizes
    assert first.best in first.final.configs
    assert len(timed(lines)) == 2 + 2 * 2  # two configurations: one quick round, two full
    lines.clear()
    again = sweep(
        model, "tiny", sweep_rounds=1, sweep_settings=QUICK, top=2, rounds=2,
        settings=QUICK, precisions=("float32",), cache=cache, progress=lines.append,
    )  # fmt: skip
    assert not timed(lines)  # nothing timed again
    assert again.best == first.best


@pytest.mark.slow
def test_the_command_line_writes_json_and_refuses_bad_input(model, tmp_path, capsys):
    out = tmp_path / "out.json"
    args = ["measure", str(model), "--workload", "tiny", "--rounds", "2", "--seconds", "0.05"]
    assert main([*args, "--config", "cpu:0/4/f32", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["configurations"][0]["config"] == "cpu:0/4/float32/8"
    assert len(doc["timings"]) == 2
    assert "written to" in capsys.readouterr().out
    assert main([*args, "--config", "cpu:0/4/f32/99"]) == 2
    assert capsys.readouterr().err == (
        "remeasure: error: width 99 is not one the workload declares (8, 16): pick one of those\n"
    )
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--config", "cpu:0/4/f8"])
    assert exit_.value.code == 2
