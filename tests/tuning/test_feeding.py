"""The feeding windows (issue 37): the pick and each other device's best, their steps fed
three ways (a host batch put each step, two puts in flight, the data on the device), in
fresh processes; judged, written and explained; and ``--feeding`` choosing the loop the
search ranks on. On the synthetic backend, whose GPU has the H200 reference's shape."""

from __future__ import annotations

import pytest
from synthetic import SyntheticBackend

import autoplace
from autoplace import BadInputError, units
from autoplace import recommendation as rec
from autoplace.tuning._confirm import CAP_S
from autoplace.tuning._search import SEARCH_CAP_S


def tune(env, backend, **options):
    options = {"batch_sizes": (32, 256, 4096), "precisions": ("float32",), **options}
    return autoplace.tune(
        env["model"], storage=env["storage"], out=env["out"], backend=backend, **options
    )


def feeding_requests(backend):
    return [r for r in backend.measured if r.settings.prefetch_time_cap_s > 0]


def test_the_pick_and_each_other_devices_best_are_fed_three_ways_in_two_windows(env):
    backend = SyntheticBackend(devices=("cpu:0", "gpu:0"))
    result = tune(env, backend, devices=("cpu:0", "gpu:0"))
    fed = result.standing.feeding
    assert fed is not None and fed.pick.config == result.best.config
    assert {f.config.device for f in fed.fed} == {"cpu:0", "gpu:0"}
    assert all(f.windows == 2 for f in fed.fed)
    timed = feeding_requests(backend)
    assert len(timed) == 4  # two configurations, two windows, each a fresh process
    for r in timed:  # every loop timed in full, as a confirmation's ranked one
        assert r.settings.time_cap_s > 0 and r.settings.fed_time_cap_s > 0
    gpu = next(f for f in fed.fed if f.config.device == "gpu:0")
    # the reference's shape: the put dominates the GPU's step; in flight it overlaps
    assert gpu.steps["resident"] < gpu.steps["prefetch"] < gpu.steps["put"]
    assert gpu.gain("resident") > gpu.gain("prefetch") > 1
    doc = rec.read(env["out"])
    written = doc["recommendation"]["feeding"]
    assert {f["device"] for f in written["fed"]} == {"cpu:0", "gpu:0"}
    assert set(written["winner"]) == {"put", "prefetch", "resident"}
    said = " ".join(result.explanation.sentences)
    assert f"Fed three ways, {result.best.config.label()} takes a step in" in said
    # the pick's resident step is its feeding windows' (timed in full), not a glance
    assert result.best.measurement.step.samples >= 3
    # Issue 47: "Fed three ways ... put 296 µs" then "12.3% of the 275 µs step": one figure
    # for each loop, its feeding windows', in every sentence and in the file
    put = units.seconds(fed.pick.steps["put"])
    figures = result.best.measurement
    assert units.seconds(figures.fed.step_s) == put
    assert units.seconds(doc["recommendation"]["figures"]["fed_step_s"]) == put
    about = ("Fed three ways", "Putting a fresh host batch", "Feeding a fresh host batch")
    said = [x for x in result.explanation.sentences if x.startswith(about)]
    assert len(said) >= 2 and all(put in x for x in said), said


def test_a_pick_another_feeding_would_change_is_said(env):
    # At batch 32 the put dominates the GPU's step: fed by a put, the CPU wins; with the
    # data on the device, the GPU would.
    backend = SyntheticBackend(devices=("cpu:0", "gpu:0"))
    result = tune(env, backend, devices=("cpu:0", "gpu:0"), batch_sizes=(32,))
    fed = result.standing.feeding
    winner = fed.winner("resident")
    assert winner is not None
    if winner.config != result.best.config:
        said = " ".join(result.explanation.sentences)
        assert f"With the data on the device, {winner.config.label()} would win" in said


def test_latency_is_not_fed_three_ways(env):
    backend = SyntheticBackend()
    result = tune(env, backend, objective="latency", batch_sizes=(1, 2))
    assert result.standing.feeding is None and not feeding_requests(backend)


def test_on_the_cpu_alone_a_run_that_puts_its_batches_is_not_fed_three_ways(env):
    # there the put is a copy in host memory: the windows bought nothing in the ablation
    backend = SyntheticBackend()
    result = tune(env, backend)
    assert result.standing.feeding is None and not feeding_requests(backend)
    fed = [m for m in result.measurements.values() if m.fed.step_s]
    assert fed  # every window still times the put


def test_on_the_cpu_a_run_that_prefetches_is_fed_three_ways(env):
    backend = SyntheticBackend()
    result = tune(env, backend, feeding="prefetch")
    assert result.standing.feeding is not None
    assert [r for r in backend.measured if r.settings.prefetch_time_cap_s == CAP_S]


def test_feeding_prefetch_ranks_the_search_on_the_prefetched_loop(env):
    backend = SyntheticBackend()
    result = tune(env, backend, feeding="prefetch")
    assert result.objective.loop == "prefetch" and result.objective.run == {"feeding": "prefetch"}
    searched = [r for r in backend.measured if r.settings.prefetch_time_cap_s == SEARCH_CAP_S]
    assert searched and all(r.settings.fed_time_cap_s == 0 for r in searched)
    assert "host batches prefetched" in result.objective.describe()
    assert rec.read(env["out"])["objective"]["feeding"] == "prefetch"


def test_a_feeding_it_does_not_know_is_bad_input(env):
    with pytest.raises(BadInputError, match="unknown feeding 'pipelined'"):
        tune(env, SyntheticBackend(), feeding="pipelined")
    with pytest.raises(BadInputError, match="latency is one batch from the host"):
        tune(env, SyntheticBackend(), objective="latency", feeding="resident")


def test_a_launcher_is_told_to_prefetch_where_the_feeding_windows_showed_it_helps(tmp_path):
    """The pick's prefetch gain goes into the answer a study keeps; the launcher's
    recommendation says whether to feed with ``autoplace.prefetch`` (the GPU's put
    dominates its step: two puts in flight ran faster)."""
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    asked = {"batch_sizes": (256, 4096), "precisions": ("float32",)}
    found = autoplace.recommend(
        model,
        cache_dir=tmp_path / "cache",
        backend=SyntheticBackend(devices=("gpu:0",)),
        tune_options=asked,
    )
    assert found.prefetch_gain is not None and found.prefetch_gain > 1.05
    assert found.prefetch and found.env()["AUTOPLACE_PREFETCH"] == "1"
    assert "batches prefetched" in found.log_line()
    again = autoplace.recommend(
        model,
        cache_dir=tmp_path / "cache",
        backend=SyntheticBackend(devices=("gpu:0",)),  # lists its devices: no worker
        on_miss="raise",
        tune_options=asked,
    )
    assert again.source == "cache" and again.prefetch_gain == found.prefetch_gain
