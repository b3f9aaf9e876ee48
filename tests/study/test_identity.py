"""A study's identity (``autoplace.study._identity``): a study made by something else, or
for another model file, hardware or run length, is refused before anything is measured."""

from __future__ import annotations

import optuna
import pytest
from synthetic import SyntheticBackend
from test_storage import tune

import autoplace
from autoplace import BadInputError
from autoplace.study import storage_at


def test_a_study_of_another_model_file_is_refused(storage_url, study_name, tmp_path):
    tune(storage_url, study_name, SyntheticBackend(), tmp_path, trials=2)
    other = tmp_path / "other.py"
    other.write_text("# another model\n")
    with pytest.raises(BadInputError, match="holds measurements of workload") as info:
        autoplace.tune(
            other,
            storage=storage_url,
            study=study_name,
            out=None,
            backend=SyntheticBackend(),
            trials=1,
        )
    assert "pass another --study" in str(info.value)


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_study_of_other_hardware_or_run_length_is_refused(tmp_path, monkeypatch):

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    options = dict(objective="time-to-finish", steps=1000)
    tune(url, "shared", SyntheticBackend(), tmp_path, trials=2, **options)
    # another worker, the same hardware: the same study, resumed
    tune(url, "shared", SyntheticBackend(), tmp_path, trials=1, **options)
    with pytest.raises(BadInputError, match="scored for time-to-finish, steps=1000") as info:
        tune(
            url,
            "shared",
            SyntheticBackend(),
            tmp_path,
            trials=1,
            objective="time-to-finish",
            steps=50,
        )
    assert "not time-to-finish, steps=50" in str(info.value) and "\n" not in str(info.value)
    two = SyntheticBackend(devices=("cpu:0", "cpu:1"))
    with pytest.raises(BadInputError, match="measured on other hardware") as info:
        tune(url, "shared", two, tmp_path, trials=1, **options)
    assert "1x cpu/cpu, here 2x cpu/cpu" in str(info.value)


def test_a_study_autoplace_did_not_make_is_refused_in_one_line(storage_url, study_name, tmp_path):
    with storage_at(storage_url) as storage:
        study = optuna.create_study(study_name=study_name, storage=storage, direction="maximize")
        study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("batch_size", 1, 8), 2)
    with pytest.raises(BadInputError, match="not made by autoplace") as info:
        tune(storage_url, study_name, SyntheticBackend(), tmp_path, trials=1)
    assert "batch_size, x" in str(info.value) and "\n" not in str(info.value)
