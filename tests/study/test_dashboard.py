"""A study reads well in optuna-dashboard and ``optuna.visualization``: the metric named
with its unit, log-scaled distributions the same for every trial, autoplace's pick recorded."""

import optuna
import pytest
from synthetic import SyntheticBackend

import autoplace


def tuned(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = autoplace.tune(
        model, precisions=("float32", "bfloat16"), storage=url, out=None, backend=SyntheticBackend()
    )
    return result, optuna.load_study(study_name=result.study_name, storage=url)


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_the_metric_has_its_unit_and_the_pick_is_recorded(tmp_path):
    result, study = tuned(tmp_path)
    assert study.metric_names == ["throughput (samples/s)"]
    pick = study.user_attrs["autoplace_pick"]
    assert pick["config"] == result.best.config.label()
    assert pick["score"] == result.best.score
    assert pick["trials"] and all(
        study.trials[n].user_attrs["config"] == pick["config"] for n in pick["trials"]
    )


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_distributions_are_log_scaled_over_the_space_and_shared_by_every_trial(tmp_path):
    result, study = tuned(tmp_path)
    dists = {repr(t.distributions["batch_size"]) for t in study.trials}
    assert len(dists) == 1
    (batch,) = {t.distributions["batch_size"] for t in study.trials}
    assert batch.log and (batch.low, batch.high) == (
        min(result.space.batch_sizes),
        max(result.space.batch_sizes),
    )
    importances = optuna.importance.get_param_importances(study)
    assert set(importances) >= {"batch_size", "precision"}


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_study_note_and_figure_where_optuna_dashboard_is_installed(tmp_path):
    optuna_dashboard = pytest.importorskip("optuna_dashboard")
    result, study = tuned(tmp_path)
    note = optuna_dashboard.get_note(study)
    assert "Why the winner wins" in note
    assert result.explanation.sentences[1] in note
    # the figure is kept in the study's system attributes, under autoplace's id
    system = study._storage.get_study_system_attrs(study._study_id)
    assert any("autoplace-throughput" in key for key in system)
