"""``autoplace.explain`` and ``autoplace explain`` on studies the synthetic backend filled."""

import json

import pytest
from synthetic import SyntheticBackend

import autoplace
from autoplace import BadInputError
from autoplace.cli import main
from autoplace.tuning import fill_fit


def tuned(tmp_path, **options):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    out = tmp_path / "autoplace.toml"
    options = {"precisions": ("float32", "bfloat16"), **options}
    options.setdefault("storage", f"journal:///{tmp_path / 's.log'}")
    result = autoplace.tune(
        model,
        out=out,
        backend=SyntheticBackend(),
        **options,
    )
    return model, out, result


def test_explain_a_model_file_finds_its_study(tmp_path):
    model, out, result = tuned(tmp_path)
    by_file = autoplace.explain(out)
    by_model = autoplace.explain(model, storage=f"journal:///{tmp_path / 's.log'}")
    assert by_model.sentences == by_file.sentences == result.explanation.sentences


def test_too_few_batch_sizes_for_a_line_is_said_with_the_fix_not_refused(tmp_path):
    _, out, _ = tuned(tmp_path, trials=2)  # the screen: each arm at one batch
    explanation = autoplace.explain(out)
    assert explanation.undetermined, "each arm ran at one batch: no line"
    assert all("autoplace explain --measure" in u for u in explanation.undetermined)
    assert any(s.startswith("Not determined") for s in explanation.sentences)


def test_a_fixed_batch_tune_is_explained_reported_and_shown(tmp_path, capsys):
    """The seeds' own setting: one batch size. explain, report and show all work on its
    file and say what one batch size allows (no line, but the figures and the first call)."""
    _, out, result = tuned(tmp_path, batch_sizes=(32,), precisions=("float32",))
    assert result.best is not None
    explanation = autoplace.explain(out)
    assert explanation.sentences == result.explanation.sentences
    assert any("one batch size ran (32)" in s for s in explanation.sentences)
    for args in (("explain", str(out)), ("show", str(out))):
        code, printed, err = run_cli(capsys, *args)
        assert code == 0, err
        assert "batch" in printed
    page = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", str(out), "--out", str(page))
    assert code == 0, err
    assert "one batch size ran (32)" in page.read_text()


def test_explain_of_a_file_describes_its_own_verdict_after_the_study_moved_on(tmp_path):
    """A later tune of the same study (--remeasure, another --out) adds measurements: the
    first file is still explained as it was written, and says the study moved on."""
    model, out, first = tuned(tmp_path)
    assert autoplace.explain(out).sentences == first.explanation.sentences
    again = autoplace.tune(
        model,
        precisions=("float32", "bfloat16"),
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "other.toml",
        backend=SyntheticBackend(),
        remeasure=True,
    )
    assert again.new_trials > 0
    moved, *rest = autoplace.explain(out).sentences
    assert moved.startswith("The study has moved on since")
    assert f"{again.new_trials} newer measurements" in moved
    assert tuple(rest) == first.explanation.sentences
    assert autoplace.explain(tmp_path / "other.toml").sentences == again.explanation.sentences


def test_measure_fills_exactly_the_points_a_line_lacks(tmp_path):
    _, out, _ = tuned(tmp_path, trials=2)  # float32 and bfloat16, each at batch 256 only
    backend = SyntheticBackend()
    added = fill_fit(out, backend=backend)
    new = {c for group in backend.groups for c in group}
    # each arm's neighbour below its one batch, then the finalists' confirmation
    assert {(c.precision, c.batch_size) for c in new} >= {("float32", 128), ("bfloat16", 128)}
    assert added == len(backend.measured)
    explanation = autoplace.explain(out)
    assert not explanation.undetermined
    assert all(len(m.measured) >= 2 for m in explanation.models.values())
    assert fill_fit(out, backend=SyntheticBackend()) == 0  # nothing left to fill


def test_a_model_file_without_a_study_is_bad_input(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    with pytest.raises(BadInputError, match="autoplace tune"):
        autoplace.explain(model, storage=f"journal:///{tmp_path / 'empty.log'}")


def run_cli(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return (0 if code is None else int(code)), out, err


def test_the_command_prints_the_sentences_and_json(tmp_path, capsys):
    _, out, result = tuned(tmp_path)
    code, printed, _ = run_cli(capsys, "explain", str(out))
    assert code == 0
    assert result.explanation.sentences[0].split(" wins")[0] in printed
    assert "Cost model per arm" in printed
    code, printed, _ = run_cli(capsys, "explain", str(out), "--json")
    assert code == 0
    assert json.loads(printed)["sentences"] == list(result.explanation.sentences)


def test_the_command_on_a_missing_file_says_so_in_one_line(tmp_path, capsys):
    code, out, err = run_cli(capsys, "explain", str(tmp_path / "nope.toml"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no file at" in err


def test_explaining_a_study_a_tune_is_running_on_writes_nothing(tmp_path):
    # explain and report only read: a trial in flight stays in flight, even one whose
    # owner looks dead from here (a worker that writes would reclaim it), and the study
    # keeps its attributes as they were.
    import optuna

    from autoplace import Config
    from autoplace.study import (
        OptunaStudyLog,
        StudyIdentity,
        TrialSpace,
        close_storage,
        open_storage,
    )

    url = f"sqlite:///{tmp_path / 's.db'}"
    _, out, result = tuned(tmp_path, storage=url)  # the study explain and report read
    storage = open_storage(url)
    log = OptunaStudyLog(
        storage,
        url,
        name=result.study_name,
        identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
        space=TrialSpace(devices=["cpu:0"], with_width=True),
        stale_after_s=60.0,
    )
    (ticket,) = log.begin([Config("cpu:0", 4096, "float32", result.best.config.width)], "search")
    owner = {**log.owner.as_dict(), "token": "a killed tune", "pid": 2**22 + 1}
    storage.set_trial_user_attr(ticket.trial_id, "owner", owner)
    close_storage(storage)

    def study():
        loaded = optuna.load_study(study_name=result.study_name, storage=url)
        trials = [(t.state, t.user_attrs, t.system_attrs) for t in loaded.trials]
        return loaded.user_attrs, trials

    before = study()
    autoplace.explain(out)
    from autoplace.report import write_report

    write_report(out, tmp_path / "report.html")
    assert study() == before


def _reading_commands(out, tmp_path):
    """Every way to read the study a recommendation file names: explain, report (its
    reader), and explain --measure (which would measure into it)."""
    from autoplace.tuning import read_study

    yield lambda: autoplace.explain(out)
    yield lambda: read_study(out)
    yield lambda: fill_fit(out, backend=SyntheticBackend())


@pytest.mark.parametrize("name", ["s.db", "s.log"])
def test_a_recommendation_whose_study_database_is_gone_is_one_line_and_makes_none(
    tmp_path, capsys, name
):
    _, out, _ = tuned(tmp_path, storage=str(tmp_path / name), trials=2)
    (tmp_path / name).unlink()
    before = sorted(tmp_path.rglob("*"))
    for read in _reading_commands(out, tmp_path):
        with pytest.raises(BadInputError) as info:
            read()
        message = str(info.value)
        assert "\n" not in message and info.value.exit_code == 2
        assert f"the study database {tmp_path / name} named in {out} is gone" in message
        assert "run `autoplace tune` again, or pass --storage" in message
    for command in (["explain"], ["report", "--out", str(tmp_path / "r.html")]):
        code, printed, err = run_cli(capsys, *command, str(out))
        assert code == 2 and printed == "" and err.count("\n") == 1, err
        assert err.startswith("autoplace: error: the study database") and "is gone" in err
    assert sorted(tmp_path.rglob("*")) == before  # the database was not made again


def test_a_recommendation_whose_study_database_was_emptied_is_one_line(tmp_path):
    _, out, _ = tuned(tmp_path, storage=str(tmp_path / "s.db"), trials=2)
    (tmp_path / "s.db").write_bytes(b"")
    for read in _reading_commands(out, tmp_path):
        with pytest.raises(BadInputError, match="holds no study") as info:
            read()
        assert "run `autoplace tune` again" in str(info.value)
    assert (tmp_path / "s.db").stat().st_size == 0  # no tables made in it


def test_explaining_a_model_file_makes_no_study_database(tmp_path, monkeypatch):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    monkeypatch.chdir(tmp_path)  # the default storage: ./studies/autoplace.db
    for read in (
        lambda: autoplace.explain(model),
        lambda: autoplace.explain(model, storage=str(tmp_path / "other.db")),
        lambda: fill_fit(model, backend=SyntheticBackend()),
    ):
        with pytest.raises(BadInputError, match=r"no study storage at .*autoplace tune"):
            read()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_a_study_name_longer_than_a_storage_keeps_is_refused_by_explain(tmp_path, capsys):
    _, out, _ = tuned(tmp_path)
    with pytest.raises(BadInputError, match="study names are at most 512 characters"):
        autoplace.explain(out, study="x" * 600)
    code, printed, err = run_cli(capsys, "explain", str(out), "--study", "x" * 600)
    assert code == 2 and printed == "" and err.count("\n") == 1
    assert "at most 512 characters" in err
