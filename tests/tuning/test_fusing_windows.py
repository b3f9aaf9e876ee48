"""Steps per call as a searched knob: timed against one a call where the fixed cost matters,
recommended only when faster beyond doubt (``autoplace.tuning._fusing``), against the
synthetic backend, whose step pays its fixed overhead once a call."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic import SyntheticBackend, measured, step_time

import autoplace
from autoplace import BadInputError
from autoplace import recommendation as rec
from autoplace.answer import Answer
from autoplace.study import History
from autoplace.tuning import TuneRequest, throughput
from autoplace.tuning._compare import Spread
from autoplace.tuning._fusing import Fuse, Untimed, least_shown, most_gain, untimed
from autoplace.tuning._phase import Context, Want
from autoplace.tuning._plan import Plan
from autoplace.tuning._standing import standing


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
    assert doc["recommendation"]["fuse"]["verdict"] == "faster"
    assert any("16 steps per call" in s for s in result.verdict.phases)
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
    assert len(fused_windows(backend)) == 2
    fusing = result.standing.fusing
    assert fusing is not None and not fusing.helps
    assert result.standing.steps_per_call == 1
    assert rec.read(env["out"])["recommendation"]["steps_per_call"] == 1
    assert "one step a call is kept" in fusing.sentences()[0]


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


PICK = autoplace.Config("cpu:0", 8, "float32", None)


def measured_at(k, window, step_s, batch=8, fresh=True):
    return measured(
        status="ok", reason="", device="cpu:0", batch_size=batch, precision="float32",
        width=None, fed_step_s=step_s, fed_samples_per_s=batch / step_s, fresh_process=fresh,
        interleave_id=window, steps_per_call=k,
    )  # fmt: skip


def context(fused=(), searched=None, batches=(8,), steps=(4, 16)):
    """The fuse phase's context: the pick confirmed in two windows of its own, the arm's
    search figures ``searched`` (``{config: measurement}``), its steps-per-call windows."""
    searched = searched or {PICK: measured_at(1, "s", 1e-4, fresh=False)}
    pick = next(c for c in searched if c.batch_size == max(batches))
    confirm = [(pick, measured_at(1, w, searched[pick].fed.step_s, pick.batch_size))
               for w in ("c1", "c2")]  # fmt: skip
    history = History(
        {
            "search": tuple(searched.items()),
            "confirm": tuple(confirm),
            "fuse": tuple((pick, m) for m in fused),
        }
    )
    space = autoplace.Space(("cpu:0",), tuple(batches), ("float32",), (None,))
    plan = Plan.judging(space, throughput(), None, steps)
    now = standing(history, plan)
    return Context(plan, history, now, room=10)


def windows_of(gains, k=16):
    """Two windows of the pick at one a call and at ``k``, ``k`` running ``gain`` times as
    fast in each."""
    return tuple(
        m
        for w, gain in zip(("w1", "w2"), gains, strict=True)
        for m in (measured_at(1, w, 1e-4), measured_at(k, w, 1e-4 / gain))
    )


def test_two_windows_are_timed_and_no_third():
    fuse = Fuse()
    assert fuse.next(context()).wants == tuple(Want(PICK, steps_per_call=k) for k in (1, 4, 16))
    one = tuple(measured_at(k, "w1", 1e-4 / k) for k in (1, 4, 16))
    assert fuse.next(context(one)) is not None
    two = (*one, *(measured_at(k, "w2", 1e-4 / k) for k in (1, 4, 16)))
    assert fuse.next(context(two)) is None
    judged = fuse.judge(context(two))
    assert judged.steps_per_call == 16 and judged.comparison.windows == 2


@pytest.mark.parametrize(
    ("gains", "recommended", "says"),
    [
        ((1.5, 1.1), 16, "ahead on the estimate"),  # ~1.28x, not beyond the resolution in both
        ((1.04, 1.02), 1, "one step a call is kept"),  # ahead by under 5%
        ((0.9, 0.8), 1, "one step a call is kept"),  # slower
    ],
)
def test_a_k_ahead_on_the_estimate_is_recommended_as_the_verdict_picks_its_best(
    gains, recommended, says
):
    fusing = Fuse().judge(context(windows_of(gains)))
    assert fusing is not None and fusing.comparison.verdict != "faster"
    assert fusing.recommended == recommended and says in fusing.sentences()[0]


def test_windows_whose_every_process_failed_still_count():
    # Fused K that crash, and the plain one too: two windows were spent, none is timed again.
    crashed = autoplace.Measurement.failed("crash", "the worker was killed", PICK)
    assert Fuse().next(context((crashed,) * 3)) is not None
    assert Fuse().next(context((crashed,) * 6)) is None


def line_figures(batches=(64, 128, 256), fixed=1e-4, per_sample=2.4e-6):
    """The pick's arm on the line ``t(b) = fixed + per_sample·b``, one step a call."""
    return {
        autoplace.Config("cpu:0", b, "float32", None): measured_at(
            1, f"s{b}", fixed + per_sample * b, batch=b, fresh=False
        )
        for b in batches
    }


def test_steps_per_call_the_windows_could_not_show_are_not_timed():
    # At batch 256 the fixed cost is 14% of the step: 16 steps a call, 1.15x at most.
    figures = line_figures()
    ctx = context(searched=figures, batches=(64, 128, 256))
    ranking = ctx.standing.ranking
    noisy = dataclasses.replace(ctx.standing, ranking=dataclasses.replace(
        ranking, spread=Spread(0.10, 3)))  # fmt: skip
    quiet = dataclasses.replace(ctx.standing, ranking=dataclasses.replace(
        ranking, spread=Spread(0.02, 10)))  # fmt: skip
    why = untimed(dataclasses.replace(ctx, standing=noisy))
    assert why is not None
    assert why.fixed_share == pytest.approx(0.14, abs=0.005)
    assert why.most == pytest.approx(most_gain(why.fixed_share, 16)) and why.most < 1.16
    assert why.least_shown == pytest.approx(1 + least_shown(Spread(0.10, 3)))
    assert why.least_shown > 1.3
    assert "could make it at most 1.15x as fast" in why.sentences()[0]
    assert Fuse().next(dataclasses.replace(ctx, standing=noisy)) is None
    # A quieter machine's windows could show 1.15x: they are timed.
    assert untimed(dataclasses.replace(ctx, standing=quiet)) is None
    assert Fuse().next(dataclasses.replace(ctx, standing=quiet)) is not None


def test_the_least_gain_two_windows_show_grows_with_the_noise():
    assert least_shown(Spread(0.02, 10)) < least_shown(Spread(0.05, 10))
    assert least_shown(Spread(0.05, 3)) > least_shown(Spread(0.05, 30))
    assert least_shown(Spread(0.001, 30)) == pytest.approx(0.05)  # never below the floor


def test_a_noisy_tune_says_why_steps_per_call_were_not_timed(env):
    # Batch 256 is the pick, its fixed cost 14% of a step; windows 30% apart cannot show 1.15x.
    backend = SyntheticBackend(window_noise=0.3)
    result = tune(env, backend, batch_sizes=(64, 128, 256))
    assert result.best is not None and result.best.config.batch_size == 256
    assert fused_windows(backend) == [] and isinstance(result.standing.fusing, Untimed)
    said = [s for s in result.explanation.sentences if "steps per call were not timed" in s]
    assert len(said) == 1 and said[0].startswith("At batch 256 (its fixed cost is ")
    assert rec.read(env["out"])["recommendation"]["steps_per_call"] == 1
