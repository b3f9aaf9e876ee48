from __future__ import annotations

import optuna
import pytest
from conftest import model
from synthetic import SyntheticBackend

import autoplace
from autoplace import BadInputError
from autoplace import recommendation as rec
from autoplace.storage import storage_at


@pytest.fixture
def env(tmp_path):
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    return {
        "model": model_file,
        "storage": f"sqlite:///{tmp_path / 'studies.db'}",
        "out": tmp_path / "autoplace.toml",
    }


def load(name, env):
    """The study's trials and attributes, read through a storage closed afterwards."""
    with storage_at(env["storage"]) as storage:
        study = optuna.load_study(study_name=name, storage=storage)
        study.trials  # noqa: B018 - read them while the storage is open
        return study


def run(env, backend, **kwargs):
    options = dict(
        batch_sizes=(8, 16, 32, 64, 128), storage=env["storage"], out=env["out"], backend=backend
    )
    options.update(kwargs)
    return autoplace.tune(env["model"], **options)


def test_recommendation_file_holds_the_best_and_its_evidence(env):
    result = run(env, SyntheticBackend(devices=("cpu:0", "cpu:1")), devices=["cpu:0", "cpu:1"])
    doc = rec.read(env["out"])
    best = result.best.measurement
    assert doc["recommendation"]["device"] == best.device
    assert doc["recommendation"]["batch_size"] == best.batch_size
    assert doc["recommendation"]["precision"] == best.precision
    figures = doc["recommendation"]["figures"]
    for key in ("step_s", "samples_per_s", "compile_s", "transfer_s", "peak_bytes"):
        assert key in figures
    # The best alternative on the other device, and the margin over the runner-up.
    assert [a["device"] for a in doc["alternatives"]] == ["cpu:1"]
    assert set(doc["recommendation"]["runner_up"]) >= {"margin", "noise", "significant"}
    assert doc["objective"]["name"] == "throughput"
    assert doc["workload"]["name"] == "synthetic"
    assert doc["study"]["name"] == result.study_name
    assert doc["fingerprint"]["software"]["jax"]
    # Every measured configuration is in the table or behind it, best first.
    scores = [s.score for s in result.per_device_precision]
    assert scores == sorted(scores, reverse=True)


def test_several_widths_record_the_best_placement_of_each(env):
    run(env, SyntheticBackend(), widths=[64, 128], precisions=["float32"])
    assert [p["width"] for p in rec.read(env["out"])["per_width"]] == [64, 128]


def test_remeasure_measures_again(env):
    grid = dict(strategy=autoplace.Grid(), precisions=["float32"], confirm=0)
    run(env, SyntheticBackend(), **grid)
    again = SyntheticBackend()
    result = run(env, again, **grid, remeasure=True)
    assert len(again.measured) == 5 and result.new_trials == 5


def test_too_big_is_pruned_before_running_and_not_retried(env):
    result = run(env, SyntheticBackend(memory_limit=32_000), strategy=autoplace.Grid(),
                 precisions=["float32"])  # fmt: skip
    study = load(result.study_name, env)
    states = {t.params["batch_size"]: t.state for t in study.trials}
    assert states[64] == states[128] == optuna.trial.TrialState.PRUNED
    assert states[8] == optuna.trial.TrialState.COMPLETE
    again = SyntheticBackend()
    run(env, again, strategy=autoplace.Grid(), precisions=["float32"])
    assert again.measured == []


def test_interrupt_keeps_what_was_measured_and_resume_finishes(env):
    grid = dict(strategy=autoplace.Grid(), precisions=["float32"], confirm=0)
    result = run(env, SyntheticBackend(interrupt_at=3), **grid)
    assert result.interrupted and result.new_trials == 2
    assert rec.read(env["out"])["study"]["measured"] == 2
    study = load(result.study_name, env)
    interrupted = [t for t in study.trials if t.user_attrs.get("interrupted")]
    assert len(interrupted) == 1 and interrupted[0].params["batch_size"] == 32
    again = SyntheticBackend()
    result = run(env, again, **grid)
    assert [r.config.batch_size for r in again.measured] == [32, 64, 128]
    assert not result.interrupted and len(result.measurements) == 5


def test_the_winner_and_a_close_runner_up_are_confirmed_with_full_settings(env):
    # At batch 8 bfloat16 leads float32 by about 4% in the synthetic model: close enough
    # for the confirmation to be able to swap them, so both are confirmed.
    backend = SyntheticBackend()
    result = run(env, backend, strategy=autoplace.Grid(), batch_sizes=(8,), confirm=2)
    searched = [r for r in backend.measured if not r.settings.deviation]
    confirmed = [r.config for r in backend.measured if r.settings.deviation]
    assert len(searched) == len(result.space)  # the search skipped the float32 comparison
    assert confirmed == [s.config for s in result.per_device_precision[:2]]
    assert result.best.config == confirmed[0]
    again = SyntheticBackend()
    run(env, again, strategy=autoplace.Grid(), batch_sizes=(8,), confirm=2)
    assert again.measured == []  # resuming confirms nothing twice


def test_a_runner_up_far_behind_is_not_confirmed(env):
    # At batch 128 bfloat16 leads float32 by about 22%: beyond CONFIRM_REACH.
    backend = SyntheticBackend()
    result = run(env, backend, strategy=autoplace.Grid(), confirm=2)
    confirmed = [r.config for r in backend.measured if r.settings.deviation]
    assert confirmed == [result.best.config]
    assert result.best.config.precision == "bfloat16" and result.best.config.batch_size == 128
    assert result.runner_up.config.precision == "float32"  # reported from the search


def test_budget_in_trials(env):
    result = run(env, SyntheticBackend(), strategy=autoplace.Grid(), trials=3)
    assert result.new_trials == 3


def test_objective_and_run_length_are_recorded_with_the_study(env):
    result = run(env, SyntheticBackend(), objective="time-to-finish", samples=1000, epochs=2)
    study = load(result.study_name, env)
    assert study.user_attrs["objective"] == {"name": "time-to-finish", "samples": 2000, "epochs": 2}
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    assert rec.read(env["out"])["objective"]["samples"] == 2000


def test_latency_defaults_to_batch_one(env):
    result = autoplace.tune(env["model"], objective="latency", storage=env["storage"],
                            out=env["out"], backend=SyntheticBackend())  # fmt: skip
    assert result.space.batch_sizes == (1,)
    assert result.best.measurement.batch_size == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"devices": ["tpu:0"]},
        {"precisions": ["fp8"]},
        {"batch_sizes": [0]},
        {"widths": [0]},
        {"trials": 0},
        {"timeout": -1},
        {"objective": "time-to-finish"},
    ],
)
def test_impossible_options_are_bad_input(env, kwargs):
    with pytest.raises(BadInputError):
        run(env, SyntheticBackend(), **kwargs)


def test_a_study_made_for_another_direction_is_refused(env):
    run(env, SyntheticBackend(), study="shared", trials=1)
    with pytest.raises(BadInputError, match="another --study"):
        run(env, SyntheticBackend(), study="shared", objective="latency")


@pytest.mark.slow
def test_tune_measures_a_real_model_end_to_end(env, inproc, fast_settings):
    result = autoplace.tune(
        model("tiny_mlp"),
        batch_sizes=(4, 16, 64),
        precisions=("float32", "bfloat16"),
        storage=env["storage"],
        out=env["out"],
        backend=inproc,
        settings=fast_settings,
        strategy=autoplace.Grid(),
    )
    assert len(result.measurements) == 6
    assert all(m.status == "ok" for m in result.measurements.values())
    doc = rec.read(env["out"])
    assert doc["recommendation"]["figures"]["step_s"] > 0
    assert doc["workload"]["sha256"] == result.document["workload"]["sha256"]


def test_progress_events_carry_the_objective_and_end_on_the_winner(env):
    events = []
    result = run(env, SyntheticBackend(), objective="time-to-finish", steps=100,
                 on_trial=events.append)  # fmt: skip
    assert len(events) == result.new_trials
    assert all(e.objective.name == "time-to-finish" and e.objective.unit == "s" for e in events)
    assert events[-1].best.config == result.best.config
