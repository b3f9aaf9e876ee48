"""Reading a study back (``autoplace.study._reading``): what it holds, in every format
autoplace has written."""

import optuna
from synthetic import measured


def test_studies_written_before_keep_being_read(tmp_path):
    # Before 2026-11-24 the whole Measurement was the user attribute ``measurement``.
    from autoplace import Config
    from autoplace.study import History, OptunaStudyLog, StudyIdentity, TrialSpace, open_storage

    url = f"sqlite:///{tmp_path / 'old.db'}"
    storage = open_storage(url)
    study = optuna.create_study(study_name="old", storage=storage, direction="maximize")
    m = measured("ok", "", "cpu:0", 64, "float32", None, fed_step_s=0.01)
    study.add_trial(
        optuna.trial.create_trial(
            params={"device": "cpu:0", "batch_size": 64, "precision": "float32"},
            distributions={
                "device": optuna.distributions.CategoricalDistribution(["cpu:0"]),
                "batch_size": optuna.distributions.IntDistribution(1, 2**40),
                "precision": optuna.distributions.CategoricalDistribution(["float32"]),
            },
            value=6400.0,
            user_attrs={"measurement": m.to_dict(), "phase": "search"},
        )
    )
    log = OptunaStudyLog(
        storage,
        url,
        name="old",
        identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
        space=TrialSpace(devices=["cpu:0"], with_width=False),
        stale_after_s=60.0,
    )
    history = log.history()
    assert isinstance(history, History)
    assert history.figures() == {Config("cpu:0", 64, "float32", None): m}
