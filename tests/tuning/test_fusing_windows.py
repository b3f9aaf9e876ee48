"""Steps per call as a searched knob: timed against one a call where the fixed cost matters,
recommended only when faster beyond doubt (``autoplace.tuning._fusing``), against the
synthetic backend, whose step pays its fixed overhead once a call."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic import SyntheticBackend, step_time

import autoplace
from autoplace import BadInputError
from autoplace import recommendation as rec
from autoplace.answer import Answer
from autoplace.tuning import TuneRequest, throughput
from autoplace.tuning._fusing import fusing_of, fusing_window, least_shown, most_gain, untimed
from autoplace.tuning._margin import Comparison, Noise


def tune(env, backend, **options):
    options = {
        "precisions": ("float32",),
        "confirm": 2,
        "storage": env["storage"],
        "out": env["out"],
        "backend": backend,
        "strategy": autoplace.Grid(),
        **options,
    }
    return autoplace.tune(env["model"], **options)


def fused_windows(backend):
    return [g for g in backend.fresh_groups if len(g) > 1 and len(set(g)) == 1]


def test_at_a_fixed_small_batch_the_fused_step_is_timed_and_recommended(env):
    # Batch 8: the 100 us fixed cost is 86% of a step; 16 steps a call pay it once.
    backend = SyntheticBackend(window_noise=0.01)
    result = tune(env, backend, batch_sizes=(8,))
    windows = fused_windows(backend)
    assert len(windows) == 2  # two windows in fresh processes, K = 1, 4 and 16 in each
    k_timed = [r.steps_per_call for r in backend.measured if r.steps_per_call > 1]
    assert sorted(set(k_timed)) == [4, 16]
    fusing = result.standing.fusing
    assert fusing is not None and fusing.steps_per_call == 16 and fusing.helps
    expected = step_time("cpu:0", 8, "float32") / step_time("cpu:0", 8, "float32", 16)
    assert fusing.comparison.ratio == pytest.approx(expected, rel=0.05)
    assert result.standing.steps_per_call == 16
    doc = rec.read(env["out"])
    assert doc["recommendation"]["steps_per_call"] == 16
    assert doc["recommendation"]["fusing"]["verdict"] == "faster"
    assert any("16 steps per call" in s for s in doc["explanation"]["sentences"][:2])
    answer = result.answer
    assert answer is not None and answer.candidates[0].steps_per_call == 16
    # the pick's memory is the fused call's: 16 batches stacked
    assert answer.candidates[0].peak_bytes == 8 * 1000 * 16


def test_a_fused_step_no_faster_keeps_one_step_a_call(env):
    # The fresh processes run the fused step as slowly as the plain one (a machine where
    # the call's fixed cost is not what a loop pays): timed, and one step a call kept.
    def no_gain(request):
        c = request.config
        k = request.steps_per_call
        return step_time(c.device, c.batch_size, c.precision) / step_time(
            c.device, c.batch_size, c.precision, k
        )

    backend = SyntheticBackend(window_noise=0.01, fresh=no_gain)
    result = tune(env, backend, batch_sizes=(8,))
    # two windows, and a third only where one more could settle it (here: equal or not)
    assert 2 <= len(fused_windows(backend)) <= 3
    fusing = result.standing.fusing
    assert fusing is not None and not fusing.helps
    assert result.standing.steps_per_call == 1
    assert rec.read(env["out"])["recommendation"]["steps_per_call"] == 1
    assert "one step a call is kept" in fusing.text()


def test_where_the_fixed_cost_is_a_small_share_no_window_runs(env):
    # At batch 2048 the fixed cost is 2% of the step: fusing could gain 2% at most.
    backend = SyntheticBackend(window_noise=0.01)
    result = tune(env, backend, batch_sizes=(512, 1024, 2048))
    assert result.best is not None and result.best.config.batch_size == 2048
    assert fused_windows(backend) == [] and result.standing.fusing is None
    assert rec.read(env["out"])["recommendation"]["steps_per_call"] == 1


def test_a_free_batch_with_a_large_fixed_share_is_timed_too(env):
    backend = SyntheticBackend(window_noise=0.01)
    result = tune(env, backend, batch_sizes=(4, 8, 16))  # 16: the fixed cost 76% of a step
    assert result.best.config.batch_size == 16
    assert len(fused_windows(backend)) == 2 and result.standing.steps_per_call == 16


def test_no_steps_per_call_asked_no_window(env):
    backend = SyntheticBackend(window_noise=0.01)
    result = tune(env, backend, batch_sizes=(8,), steps_per_call=(1,))
    assert fused_windows(backend) == [] and result.standing.steps_per_call == 1


def test_a_fused_call_over_max_memory_is_never_recommended(env):
    # 16 stacked batches of 8 need 128 kB, over the 50 kB limit; 4 need 32 kB.
    backend = SyntheticBackend(window_noise=0.01)
    result = tune(env, backend, batch_sizes=(8,), max_memory=50_000)
    assert result.standing.steps_per_call == 4


def test_windows_are_timed_once_per_study(env):
    tune(env, SyntheticBackend(window_noise=0.01), batch_sizes=(8,))
    again = SyntheticBackend(window_noise=0.01)
    result = tune(env, again, batch_sizes=(8,))
    assert again.measured == [] and result.standing.steps_per_call == 16


def test_the_latency_objective_never_fuses(env):
    backend = SyntheticBackend(window_noise=0.01)
    tune(env, backend, batch_sizes=(1,), objective="latency")
    assert fused_windows(backend) == []


@pytest.mark.parametrize("bad", [(0,), (-4,), (2000,), (True,), (2.5,)])
def test_steps_per_call_are_checked_when_asked(bad):
    with pytest.raises(BadInputError, match="--steps-per-call"):
        TuneRequest("model.py", steps_per_call=bad)


def test_an_answer_kept_before_steps_per_call_reads_as_one_a_call(env):
    result = tune(env, SyntheticBackend(window_noise=0.01), batch_sizes=(8,))
    data = result.answer.as_dict()
    for c in data["candidates"]:
        del c["steps_per_call"]
    assert Answer.from_dict(data).candidates[0].steps_per_call == 1


def test_a_third_window_only_where_the_best_k_is_undecided_and_one_more_could_settle_it():
    pick = autoplace.Config("cpu:0", 8, "float32", None)

    def measured(k, window):
        return measured_at(k, window, 1e-4 / k)

    figures = {pick: measured(1, "confirm")}
    windows = {pick: tuple(measured(k, w) for w in ("w1", "w2") for k in (1, 4, 16))}
    fusing = fusing_of(throughput(), pick, figures, windows)
    assert fusing is not None and fusing.comparison.windows == 2

    def after_two(comparison):
        judged = dataclasses.replace(fusing, comparison=comparison)
        return fusing_window(pick, figures, windows, throughput(), (4, 16), True, judged)

    basis = "windows in fresh processes"
    near = Comparison(1.30, 0.95, 1.78, "undecided", 2, basis)
    hopeless = Comparison(1.01, 0.50, 2.04, "undecided", 2, basis)
    assert after_two(near) == [1, 4, 16]  # one more window could put it above 1
    assert after_two(hopeless) == []  # one more could not settle it: not spent
    assert after_two(dataclasses.replace(near, verdict="faster")) == []  # decided
    assert fusing_window(pick, figures, {}, throughput(), (4, 16), True) == [1, 4, 16]
    three = {pick: (*windows[pick], *(measured(k, "w3") for k in (1, 4, 16)))}
    assert fusing_window(pick, figures, three, throughput(), (4, 16), True, judged=None) == []


def measured_at(k, window, step_s, batch=8):
    return autoplace.Measurement(
        status="ok", reason="", device="cpu:0", batch_size=batch, precision="float32",
        width=None, fed_step_s=step_s, fed_samples_per_s=batch / step_s, fresh_process=True,
        interleave_id=window, steps_per_call=k,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("gains", "recommended", "says"),
    [
        ((1.5, 1.1), 16, "ahead on the estimate"),  # ~1.28x, windows disagree: undecided
        ((1.04, 1.02), 1, "one step a call is kept"),  # ahead by under 5%
        ((0.9, 0.8), 1, "one step a call is kept"),  # slower
    ],
)
def test_a_k_ahead_on_the_estimate_is_recommended_as_the_verdict_picks_its_best(
    gains, recommended, says
):
    pick = autoplace.Config("cpu:0", 8, "float32", None)
    figures = {pick: measured_at(1, "confirm", 1e-4)}
    windows = {
        pick: tuple(
            m
            for w, gain in zip(("w1", "w2"), gains, strict=True)
            for m in (measured_at(1, w, 1e-4), measured_at(16, w, 1e-4 / gain))
        )
    }
    fusing = fusing_of(throughput(), pick, figures, windows)
    assert fusing is not None and fusing.comparison.verdict != "faster"
    assert fusing.recommended == recommended and says in fusing.text()


def test_windows_whose_every_process_failed_still_count():
    # Fused K that crash, and the plain one too: two windows were spent, none is timed again.
    pick = autoplace.Config("cpu:0", 8, "float32", None)
    figures = {pick: measured_at(1, "confirm", 1e-4)}
    crashed = autoplace.Measurement.failed(
        "crash", "the worker was killed", device="cpu:0", batch_size=8, precision="float32",
        width=None,
    )  # fmt: skip
    assert fusing_window(pick, figures, {pick: (crashed,) * 3}, throughput(), (4, 16), True)
    assert not fusing_window(pick, figures, {pick: (crashed,) * 6}, throughput(), (4, 16), True)


def line_figures(batches=(64, 128, 256, 512), fixed=1e-4, per_sample=2.4e-6):
    """The pick's arm on the line ``t(b) = fixed + per_sample·b``, one step a call."""
    return {
        autoplace.Config("cpu:0", b, "float32", None): measured_at(
            1, f"w{b}", fixed + per_sample * b, batch=b
        )
        for b in batches
    }


def test_steps_per_call_the_windows_could_not_show_are_not_timed():
    # At batch 256 the fixed cost is 14% of the step: 16 steps a call, 1.15x at most.
    figures = line_figures()
    pick = autoplace.Config("cpu:0", 256, "float32", None)
    noisy, quiet = Noise(sigma=0.10, df=3), Noise(sigma=0.02, df=10)
    why = untimed(pick, figures, throughput(), (4, 16), False, noisy)
    assert why is not None
    assert why.fixed_share == pytest.approx(0.14, abs=0.005)
    assert why.most == pytest.approx(most_gain(why.fixed_share, 16)) and why.most < 1.16
    assert why.least_shown == pytest.approx(least_shown(noisy, 2)) and why.least_shown > 1.3
    assert "could make it at most 1.15x as fast" in why.text()
    assert fusing_window(pick, figures, {}, throughput(), (4, 16), False, noise=noisy) == []
    # A quieter machine's windows could show 1.15x: they are timed.
    assert untimed(pick, figures, throughput(), (4, 16), False, quiet) is None
    assert fusing_window(pick, figures, {}, throughput(), (4, 16), False, noise=quiet) == [1, 4, 16]
    # Another rule decides: a small share (at 512: 7.5%), the latency objective.
    large = autoplace.Config("cpu:0", 512, "float32", None)
    assert untimed(large, figures, throughput(), (4, 16), False, noisy) is None
    assert untimed(pick, figures, autoplace.tuning.latency(), (4, 16), False, noisy) is None


def test_the_least_gain_two_windows_show_grows_with_the_noise():
    assert least_shown(Noise(0.02, 10), 2) < least_shown(Noise(0.05, 10), 2)
    assert least_shown(Noise(0.05, 3), 2) > least_shown(Noise(0.05, 30), 2)
    assert least_shown(Noise(0.05, 10), 1) < least_shown(Noise(0.05, 10), 2)  # Bonferroni


def test_a_noisy_tune_says_why_steps_per_call_were_not_timed(env):
    # Batch 256 is the pick, its fixed cost 14% of a step; windows 30% apart cannot show 1.15x.
    backend = SyntheticBackend(window_noise=0.3)
    result = tune(env, backend, batch_sizes=(64, 128, 256))
    assert result.best is not None and result.best.config.batch_size == 256
    assert fused_windows(backend) == [] and result.standing.fusing is None
    said = [s for s in result.explanation.sentences if "steps per call were not timed" in s]
    assert len(said) == 1 and said[0].startswith("At batch 256 (its fixed cost is ")
    assert rec.read(env["out"])["recommendation"]["steps_per_call"] == 1
