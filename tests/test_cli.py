"""The ``autoplace`` command: one line per error, exit codes, and ``--json`` output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, line_of, model
from synthetic import SyntheticBackend, bfloat16_just_ahead

import autoplace
from autoplace.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``autoplace ARGS`` in this process; return (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    code = info.value.code
    return (0 if code is None else int(code)), out, err


def assert_one_line_error(code: int, out: str, err: str, *fragments: str, exit_code=2) -> str:
    assert code == exit_code, (code, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("autoplace: error: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


TINY = str(model("tiny_mlp"))


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["measure", "no/such/model.py", "-b", "4"], ["'no/such/model.py' does not exist"]),
        (["measure", str(REPO / "studies"), "-b", "4"], ["is not a file"]),
        (["measure", TINY, "-b", "0"], ["batch size", "got 0"]),
        (["measure", TINY, "--batch-size", "-3"], ["batch size", "got -3"]),
        (["measure", TINY, "-b", "abc"], ["--batch-size"]),
        (["measure", TINY, "-b", "2.5"], ["--batch-size"]),
        (["measure", TINY], ["Missing option", "--batch-size"]),
        (["measure", TINY, "-b", "4", "-p", "int8"], ["unknown precision 'int8'", "bfloat16"]),
        (["measure", TINY, "-b", "4", "--width", "0"], ["width must be", "got 0"]),
        (["measure", TINY, "-b", "4", "-d", "cpu:x"], ["bad device 'cpu:x'"]),
        (["measure", TINY, "-b", "4", "--max-memory", "1e3"], ["cannot read --max-memory '1e3'"]),
        (["measure", TINY, "-b", "4", "--max-memory", "0"], ["--max-memory must be positive"]),
        (["measure", TINY, "-b", "4", "--timeout", "0"], ["--timeout must be a positive number"]),
        (["measure", TINY, "-b", "4", "--bogus"], ["--bogus"]),
        (["tune", TINY, "--precisions", ""], ["empty --precisions ''"]),
        (["tune", TINY, "--devices", " , "], ["empty --devices"]),
        (["tune", TINY, "--batch-sizes", "3..100"], ["'3..100'", "power of two", "4..64"]),
        (["tune", TINY, "--samples", "100"], ["--samples only count", "throughput ignores"]),
        (
            ["tune", TINY, "--objective", "latency", "--steps", "5", "--epochs", "2"],
            ["--steps and --epochs only count"],
        ),
        (["bogus"], ["bogus"]),
    ],
    ids=[
        "missing file",
        "directory",
        "batch size 0",
        "batch size -3",
        "batch size abc",
        "batch size 2.5",
        "no batch size",
        "unknown precision",
        "width 0",
        "bad device syntax",
        "unreadable max memory",
        "zero max memory",
        "zero timeout",
        "unknown option",
        "empty precisions",
        "empty devices",
        "range not of powers of two",
        "samples for throughput",
        "steps for latency",
        "unknown command",
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], fragments: list[str]
) -> None:
    assert_one_line_error(*run_cli(capsys, *args), *fragments)


# These need the worker to import the model file or list the devices.


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["measure", TINY, "-b", "4", "--width", "100"],
         ["width 100 is not one the model file declares (8, 24, 32, 40)"]),
        (["tune", TINY, "--widths", "8,100", "--trials", "1"], ["width 100 is not one"]),
        (["measure", str(model("returns_dict")), "-b", "4"], ["returned dict"]),
        (["measure", str(model("short_batch")), "-b", "8"], ["an array of 7 rows, not 8"]),
        (["measure", str(model("device_batch")), "-b", "8"], ["returned JAX arrays"]),
    ],
    ids=["undeclared width", "undeclared width in tune", "not a Workload", "short batch",
         "batch on a device"],
)  # fmt: skip
def test_a_broken_model_file_contract_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    if args[0] == "tune":
        args = [*args, "--storage", str(tmp_path / "s.db"), "--out", str(tmp_path / "a.toml")]
    assert_one_line_error(*run_cli(capsys, *args), *fragments)


@pytest.mark.slow
def test_max_memory_too_small_says_so_in_units_that_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "measure", TINY, "-b", "4", "--max-memory", "1KiB", "--json")
    assert code == 1
    assert "over the 1.0 KiB limit" in json.loads(out)["reason"]


@pytest.mark.slow
def test_syntax_error_names_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = model("syntax_error")
    assert_one_line_error(
        *run_cli(capsys, "measure", str(path), "-b", "4"),
        "SyntaxError",
        f"{path}:{line_of(path, 'def workload')}",
    )


@pytest.mark.slow
def test_exception_at_import_names_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = model("import_error")
    assert_one_line_error(
        *run_cli(capsys, "measure", str(path), "-b", "4"),
        "KeyError",
        f"{path}:{line_of(path, 'SIZES[')}",
    )


@pytest.mark.slow
def test_no_workload_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(
        *run_cli(capsys, "measure", str(model("no_workload")), "-b", "4"), "no workload found"
    )


@pytest.mark.slow
def test_several_workloads_need_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    studies = str(REPO / "studies" / "mnist_mlp.py")
    assert_one_line_error(
        *run_cli(capsys, "measure", studies, "-b", "4"), "several workloads (mlp, mlp_wide)"
    )
    assert_one_line_error(
        *run_cli(capsys, "measure", studies, "-b", "4", "-w", "cnn"),
        "no workload named 'cnn'",
        "mlp, mlp_wide",
    )


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu:7", "tpu", "cuda:1"])
def test_unknown_device(capsys: pytest.CaptureFixture[str], device: str) -> None:
    assert_one_line_error(
        *run_cli(capsys, "measure", TINY, "-b", "4", "-d", device),
        "unknown device",
        "this machine has cpu:0",
    )


# --- measuring ------------------------------------------------------------------------------

KEYS = {
    "status",
    "reason",
    "lower_s",
    "compile_s",
    "first_call_s",
    "transfer_s",
    "flops",
    "peak_bytes",
}


@pytest.mark.slow
def test_measure_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "measure", TINY, "-b", "4", "-p", "bf16", "--json")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    assert set(data) >= KEYS
    assert data["status"] == "ok" and data["reason"] == ""
    config = data["config"]
    assert (config["batch_size"], config["precision"], config["device"]) == (4, "bfloat16", "cpu:0")
    for key in KEYS - {"status", "reason"}:
        assert data[key] > 0, key
    for loop in ("step", "fed"):  # the batch resident, and a host batch put every step
        timed = data["loops"][loop]
        assert timed["step_s"] > 0 and timed["spread"] >= 0
        assert timed["samples"] == len(timed["chunks"]) and min(timed["chunks"]) > 0
    assert data["compute_dtypes"] == ["bf16"]


@pytest.mark.slow
def test_a_flax_nnx_state_with_an_rng_stream_is_measured_in_the_worker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # nnx.RNN's RNG stream puts typed PRNG keys in the state: the worker used to fail
    # with "autoplace bug in the measurement worker" comparing bfloat16 with float32
    path = str(model("nnx_rnn"))
    code, out, err = run_cli(capsys, "measure", path, "-b", "8", "-p", "bf16", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "ok" and 0 < data["deviation_vs_float32"] < 0.05


@pytest.mark.slow
def test_crash_json_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "measure", str(model("crash")), "-b", "4", "--json")
    assert code == 1, err
    data = json.loads(out)
    assert data["status"] == "crash"
    assert "SIGSEGV" in data["reason"]
    assert not data["loops"]  # nothing timed


@pytest.mark.slow
def test_failed_measurement_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "measure", str(model("raises")), "-b", "4")
    assert code == 1
    assert "error" in out
    assert "broken" in out  # the workload's name in the title


@pytest.mark.slow
def test_too_big_with_max_memory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "measure", TINY, "-b", "4", "--max-memory", "1KiB", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["status"] == "too_big"
    assert data["first_call_s"] is None


# --- the real entry point -------------------------------------------------------------------


def _autoplace(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, "-m", "autoplace", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_entry_point_bad_input() -> None:
    done = _autoplace("measure", "missing.py", "-b", "0")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("autoplace: error: batch size must be")


@pytest.mark.slow
def test_entry_point_version() -> None:
    done = _autoplace("--version")
    assert done.returncode == 0
    assert done.stdout.strip().startswith("autoplace ")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--objective", "time-to-finish"], "run length"),
        (["--search", "tpe"], "unknown search"),
        (["--max-memory", "lots"], "cannot read --max-memory"),
        (["--batch-sizes", "8..4"], "cannot read batch sizes"),
        (["--steps-per-call", "0"], "--steps-per-call"),
        (["--steps-per-call", "four"], "cannot read --steps-per-call"),
        (["--steps-per-call", "4096"], "from 1 to 1024"),
        pytest.param(["--precisions", "fp8"], "unknown precision", marks=pytest.mark.slow),
        pytest.param(["--devices", "tpu:0"], "unknown device", marks=pytest.mark.slow),
    ],
)
def test_tune_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], fragment: str
) -> None:
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    code, out, err = run_cli(
        capsys, "tune", str(model("tiny_mlp")), "--storage", storage, "--out",
        str(tmp_path / "a.toml"), *args,
    )  # fmt: skip
    assert_one_line_error(code, out, err, fragment)


@pytest.mark.slow
def test_tune_refuses_a_file_that_is_not_a_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "studies.db"
    bad.write_text("not a database")
    code, out, err = run_cli(capsys, "tune", str(model("tiny_mlp")), "--storage", str(bad))
    assert_one_line_error(code, out, err, "not a SQLite database")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("schema_version = 7\n", "schema version 7"), ("= broken", "not valid TOML")],
)
def test_show_damaged_or_future_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, fragment: str
) -> None:
    path = tmp_path / "autoplace.toml"
    path.write_text(text)
    code, out, err = run_cli(capsys, "show", str(path))
    assert_one_line_error(code, out, err, fragment)


def _tuned_file(
    tmp_path: Path, backend: SyntheticBackend, batches: tuple[int, ...], precisions: tuple[str, ...]
) -> Path:
    """A recommendation file from a grid over the synthetic backend."""
    out_file = tmp_path / "autoplace.toml"
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    autoplace.tune(
        model_file,
        batch_sizes=batches,
        precisions=precisions,
        storage=f"journal:///{tmp_path / 's.log'}",
        out=out_file,
        strategy=autoplace.Grid(),
        backend=backend,
    )
    return out_file


def test_show_says_what_the_scores_rest_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = _tuned_file(
        tmp_path, SyntheticBackend(), (8, 16, 32, 64, 128), ("bfloat16", "float16")
    )
    code, out, err = run_cli(capsys, "show", str(out_file))
    assert code == 0, err
    text = " ".join(out.split())  # undo rich's wrapping
    assert "run on cpu:0 (cpu), batch 128, bfloat16" in text
    assert "score confirmed in 2 windows, each finalist in a fresh process" in text
    # nothing else was a finalist: no comparison is claimed on figures of another kind
    assert "against the closest:" not in text


def test_show_names_the_finalists_it_cannot_tell_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    backend = SyntheticBackend(slowdown=bfloat16_just_ahead, window_noise=0.03)
    out_file = _tuned_file(tmp_path, backend, (64,), ("float32", "bfloat16"))
    code, out, err = run_cli(capsys, "show", str(out_file))
    assert code == 0, err
    text = " ".join(out.split())
    assert "run on cpu:0 (cpu), batch 64, float32" in text
    closest = text.split("against the closest:")[1].split("finding:")[0]
    assert "x (95%: " in closest and "cannot be told apart here" in closest and "±" in closest
    assert "times" not in closest
    assert (
        "cpu:0 batch=64 float32 width=64, or any of cpu:0 batch=64 bfloat16 width=64 (within ±"
        in text
    )


def _read_only_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import autoplace._atomic

    folder = tmp_path / "ro"
    folder.mkdir()
    real = autoplace._atomic.os.access
    # CI runs as root, who may write anywhere: the OS is asked, so answer for it here
    monkeypatch.setattr(
        autoplace._atomic.os, "access", lambda p, m: False if Path(p) == folder else real(p, m)
    )
    return ["--out", str(folder / "autoplace.toml")]


def _damaged_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    journal = tmp_path / "studies.log"
    record = '{"op_code": 0, "worker_id": "a", "study_name": "s", "directions": [1]}\n'
    journal.write_text(f'{record}{{"op_\n{record}')  # not the last record: not mended
    return ["--storage", str(journal)]


def _foreign_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import optuna

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    study = optuna.create_study(study_name="theirs", storage=url, direction="maximize")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), 1)
    return ["--storage", url, "--study", "theirs"]


def _password_in_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return ["--storage", "postgresql://me:Pw/x@y%z:w@127.0.0.1:9/db?password=s3cret"]


def _locked_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import sqlite3

    import optuna

    import autoplace.study._faults as faults

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    optuna.create_study(study_name="s", storage=url)  # the tables exist; then locked
    locker = sqlite3.connect(tmp_path / "studies.db", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(faults, "PATIENCE_S", 1.0)
    monkeypatch.setattr(faults, "_held_lock", locker, raising=False)
    return ["--storage", url]


@pytest.mark.parametrize(
    ("setup", "fragments", "exit_code"),
    [
        (_read_only_out, ["is not writable", "--out"], 2),
        *(
            pytest.param(*case, marks=pytest.mark.slow)  # the worker starts as the storage opens
            for case in (
                (_damaged_journal, ["is damaged at line 2", "restore it from a copy"], 2),
                (_foreign_study, ["not made by autoplace", "pass another --study"], 2),
                (_password_in_url, ["cannot read the storage URL", "percent-encode"], 2),
                (_locked_database, ["locked by another process", "run the same command again"], 1),
            )
        ),
    ],
)
def test_tune_faults_of_storage_and_output_are_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup,
    fragments: list[str],
    exit_code: int,
) -> None:
    args = {"--storage": f"sqlite:///{tmp_path / 'studies.db'}", "--out": str(tmp_path / "a.toml")}
    given = setup(tmp_path, monkeypatch)
    args.update(zip(given[::2], given[1::2], strict=True))
    code, out, err = run_cli(
        capsys, "tune", TINY, "--batch-sizes", "4", *[x for kv in args.items() for x in kv]
    )
    # progress lines while a storage is waited for come before the error
    err = "".join(line for line in err.splitlines(True) if "waiting for the storage" not in line)
    line = assert_one_line_error(code, out, err, *fragments, exit_code=exit_code)
    for secret in ("Pw/x", "y%z", "s3cret"):
        assert secret not in line
    assert not list(tmp_path.glob("*.toml"))  # nothing written, nothing half-written


# --- every bad input of the newcomer's list (issue 25), as a user meets it -------------

_LONG_PATH = "d/" * 2100 + "m.py"  # over PATH_MAX (4096)
_LONG_NAME = "m" * 300 + ".py"  # over the 255 bytes of a file name


def _other_programs_db(tmp_path: Path) -> str:
    import sqlite3

    path = tmp_path / "app.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    connection.commit()
    connection.close()
    return str(path)


def _big_batch_toml(tmp_path: Path) -> str:
    path = tmp_path / "edited.toml"
    path.write_text(
        'schema_version = 2\ncreated = "2026-11-24T00:00:00+00:00"\n'
        '[recommendation]\ndevice = "cpu:0"\nbatch_size = "big"\nprecision = "float32"\n'
        '[objective]\nname = "throughput"\n[workload]\nname = "mlp"\n'
        f'[study]\nname = "s"\nstorage = "sqlite:///{tmp_path / "s.db"}"\n'
    )
    return str(path)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["measure", _LONG_PATH, "-b", "4"], ["model file d/d/", "over the 4096 a path may have"]),
        (["measure", f"/tmp/{_LONG_NAME}", "-b", "4"], ["303 bytes, over the 255", "rename it"]),
        (["tune", _LONG_PATH], ["model file", "move the file to a shorter path"]),
        (["recommend", f"/tmp/{_LONG_NAME}"], ["over the 255", "rename it"]),
        (["show", f"/tmp/{_LONG_NAME}"], ["recommendation file", "rename it"]),
        (["explain", _LONG_PATH], ["recommendation or model file", "shorter path"]),
        (["report", f"/tmp/{_LONG_NAME}"], ["over the 255", "rename it"]),
        (["tune", TINY, "--max-deviation", "150%"], ["--max-deviation must be at most 100%",
                                                      "or off for no limit"]),
        (["recommend", TINY, "--max-age", "-5"], ["--max-age must be 0 or more seconds, got -5"]),
        (["tune", TINY, "--study", ""], ["--study is empty", "leave --study out"]),
        (["recommend", TINY, "--study", " "], ["--study is empty"]),
        (["explain", TINY, "--study", ""], ["--study is empty"]),
        (["recommend", TINY, "--format", "env", "--json"],
         ["--format env and --json are two outputs: give one of them"]),
        (["tune", TINY, "--objective", "time-to-finish", "--steps", "10", "--samples", "100"],
         ["--steps 10 and --samples 100 are two run lengths: give one of them"]),
        (["tune", TINY, "--measure-timeout", "0"],
         ["--measure-timeout must be a positive number of seconds, got 0"]),
        (["show", TINY], ["is a model file, not a recommendation file", "autoplace tune"]),
        ([], ["no command given", "autoplace --help"]),
    ],
    ids=["path over PATH_MAX", "name over 255 bytes", "tune: long path", "recommend: long name",
         "show: long name", "explain: long path", "report: long name", "max deviation 150%",
         "max age -5", "empty study", "blank study", "explain: empty study", "env and json",
         "steps and samples", "measure timeout 0", "show a model file", "bare autoplace"],
)  # fmt: skip
def test_each_bad_input_of_the_newcomers_list_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    code, out, err = run_cli(capsys, *args)
    if not args:  # bare autoplace: the help, then the line
        assert "Commands" in out
        out = ""
    line = assert_one_line_error(code, out, err, *fragments)
    assert len(line) < 600  # a long path is shown cut, not whole


@pytest.mark.parametrize("command", ["show", "explain"])
def test_a_hand_edited_file_is_refused_with_the_value_at_fault(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = _big_batch_toml(tmp_path)
    assert_one_line_error(
        *run_cli(capsys, command, path),
        "recommendation.batch_size = 'big', not a whole number of at least 1",
        "run `autoplace tune` again",
    )


@pytest.mark.parametrize("command", ["tune", "recommend", "explain", "report"])
def test_another_programs_sqlite_file_is_refused_before_any_table_is_added(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    import sqlite3

    db = _other_programs_db(tmp_path)
    code, out, err = run_cli(capsys, command, TINY, "--storage", db)
    assert_one_line_error(
        code, out, err, "holds tables of another program (users)", "a --storage of its own"
    )
    connection = sqlite3.connect(db)
    tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master")]
    connection.close()
    assert tables == ["users"]  # untouched


def test_cache_list_names_every_damaged_file_and_never_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers, machines = tmp_path / "answers", tmp_path / "machines"
    answers.mkdir()
    machines.mkdir()
    (answers / "aaa.json").write_text("{not json")
    (answers / "bbb.json").write_text('{"entry_schema": 1, "answer": "x"}')
    (answers / "ccc.json").write_text('{"answer": {"candidates": [{"device": "cpu:0"}]}}')
    (machines / "m.json").write_text("garbage")
    monkeypatch.setenv("AUTOPLACE_CACHE", str(tmp_path))
    code, out, err = run_cli(capsys, "cache", "list")
    assert code == 0 and err == ""
    assert "(0 answer(s))" in out
    for name in ("answers/aaa.json", "answers/bbb.json", "answers/ccc.json", "machines/m.json"):
        assert f"{tmp_path / name}  damaged" in out, name
    code, out, _ = run_cli(capsys, "cache", "list", "--json")
    assert code == 0 and len(json.loads(out)["answers"]) == 4


_BROKEN = {
    "default width not declared": (
        "@autoplace.workload(widths=(8, 16), default_width=32)\ndef mlp(width, dtype): ...\n",
        ["@autoplace.workload on mlp: default_width=32 is not one of widths=(8, 16)",
         "model.py:2"],
    ),
    "bad batch sizes": (
        "@autoplace.workload(widths=(8,), batch_sizes=(0, 8))\ndef mlp(width, dtype): ...\n",
        ["@autoplace.workload on mlp: batch_sizes must be whole numbers of at least 1, got 0"],
    ),
    "kind bogus": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype)},\n"
        "        step=lambda s, b: s, make_batch=batch(dtype), kind='bogus')\n",
        ["autoplace.Workload(kind='bogus'): kind is 'train'", "or 'infer'", "model.py:"],
    ),
    "ignores dtype": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width))},\n"
        "        step=lambda s, b: jax.tree.map(lambda w: w - jnp.sum(b[0] @ w) * 1e-3, s),\n"
        "        make_batch=batch('float32'))\n",
        ["ignores dtype: asked for bfloat16, its state and batch hold float32",
         "cast the parameters and inputs to dtype"],
    ),
    "float64 batch": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype)},\n"
        "        step=lambda s, b: s, make_batch=batch('float64'))\n",
        ["make_batch in", "returned float64 arrays", "x.astype(dtype)"],
    ),
    "train step returns a loss": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype)},\n"
        "        step=lambda s, b: jnp.sum(b[0] @ s['w']), make_batch=batch(dtype))\n",
        ["the training step in", "returned one bfloat16 array of shape [] where its state is",
         "a training step (kind='train', the default) returns the next state",
         "kind='infer'"],
    ),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_BROKEN))
def test_a_model_file_breaking_the_contract_is_named_as_the_files_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    source, fragments = _BROKEN[case]
    head = (
        "import jax, jax.numpy as jnp, numpy as np\nimport autoplace\n"
        "def batch(dtype):\n"
        "    return lambda n, rng: (rng.random((n, 4)).astype(dtype),)\n"
    )
    path = tmp_path / "model.py"
    path.write_text(head + source)
    # the line numbers in the fragments count from the decorator: shift them past the head
    fragments = [f.replace("model.py:2", f"model.py:{head.count(chr(10)) + 1}") for f in fragments]
    code, out, err = run_cli(capsys, "measure", str(path), "-b", "4", "-p", "bf16")
    assert_one_line_error(code, out, err, *fragments)


def test_autoplaces_own_warnings_are_said_in_their_line_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A cache autoplace could not use is said as its line, not after the file and line of
    # autoplace's source that warned (Python's form, kept for others' warnings).
    import warnings

    from autoplace.cli._errors import handle_errors
    from autoplace.host import Cache

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    cache = Cache(blocker / "cache")
    with warnings.catch_warnings(record=True) as others:
        warnings.simplefilter("always")  # as a user's Python shows them (pytest: errors)
        with handle_errors():
            assert not cache.write(cache.answer_path("slot"), {"answer": {}})
            warnings.warn("someone else's", UserWarning, stacklevel=1)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("autoplace: cannot ") and line.endswith("going on without caching")
    assert [str(w.message) for w in others] == ["someone else's"]  # shown as Python shows it
