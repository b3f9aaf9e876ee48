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
        (["measure", TINY, "-b", "4", "--max-memory", "1e3"], ["cannot read size '1e3'"]),
        (["measure", TINY, "-b", "4", "--max-memory", "0"], ["size must be positive"]),
        (["measure", TINY, "-b", "4", "--timeout", "0"], ["timeout must be positive"]),
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


def test_max_memory_too_small_says_so_in_units_that_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "measure", TINY, "-b", "4", "--max-memory", "1KiB", "--json")
    assert code == 1
    assert "over the 1.0 KiB limit" in json.loads(out)["reason"]


def test_syntax_error_names_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = model("syntax_error")
    assert_one_line_error(
        *run_cli(capsys, "measure", str(path), "-b", "4"),
        "SyntaxError",
        f"{path}:{line_of(path, 'def workload')}",
    )


def test_exception_at_import_names_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = model("import_error")
    assert_one_line_error(
        *run_cli(capsys, "measure", str(path), "-b", "4"),
        "KeyError",
        f"{path}:{line_of(path, 'SIZES[')}",
    )


def test_no_workload_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(
        *run_cli(capsys, "measure", str(model("no_workload")), "-b", "4"), "no workload found"
    )


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
    "step_s",
    "step_spread",
    "transfer_s",
    "samples_per_s",
    "flops",
    "peak_bytes",
}


def test_measure_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "measure", TINY, "-b", "4", "-p", "bf16", "--json")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    assert set(data) >= KEYS
    assert data["status"] == "ok" and data["reason"] == ""
    assert (data["batch_size"], data["precision"], data["device"]) == (4, "bfloat16", "cpu:0")
    for key in KEYS - {"status", "reason", "step_spread"}:
        assert data[key] > 0, key
    assert data["step_spread"] >= 0
    assert data["compute_dtypes"] == ["bf16"]
    assert data["samples_per_s"] == pytest.approx(4 / data["step_s"])


def test_crash_json_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "measure", str(model("crash")), "-b", "4", "--json")
    assert code == 1, err
    data = json.loads(out)
    assert data["status"] == "crash"
    assert "SIGSEGV" in data["reason"]
    assert data["step_s"] is None


def test_failed_measurement_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "measure", str(model("raises")), "-b", "4")
    assert code == 1
    assert "error" in out
    assert "broken" in out  # the workload's name in the title


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


def test_entry_point_bad_input() -> None:
    done = _autoplace("measure", "missing.py", "-b", "0")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("autoplace: error: batch size must be")


def test_entry_point_version() -> None:
    done = _autoplace("--version")
    assert done.returncode == 0
    assert done.stdout.strip().startswith("autoplace ")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--objective", "time-to-finish"], "run length"),
        (["--search", "tpe"], "unknown search"),
        (["--max-memory", "lots"], "cannot read size"),
        (["--batch-sizes", "8..4"], "cannot read batch sizes"),
        (["--precisions", "fp8"], "unknown precision"),
        (["--devices", "tpu:0"], "unknown device"),
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
        storage=f"sqlite:///{tmp_path / 's.db'}",
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
    assert "(confirmed, the only finalist)" in text
    # the runner-up (float16) is far behind, so it kept its search figures
    assert "runner-up: cpu:0 float16 batch 128" in text
    assert "search figures, not confirmed" in text


def test_show_names_the_finalists_equal_within_the_noise(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    backend = SyntheticBackend(slowdown=bfloat16_just_ahead, turn_noise=0.05)
    out_file = _tuned_file(tmp_path, backend, (64,), ("float32", "bfloat16"))
    code, out, err = run_cli(capsys, "show", str(out_file))
    assert code == 0, err
    text = " ".join(out.split())
    assert "run on cpu:0 (cpu), batch 64, float32" in text
    assert "equal within the noise: cpu:0 bfloat16 batch 64" in text
    assert "within 2% of the best, autoplace picks float32 over lower precisions" in text


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


def _cut_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    journal = tmp_path / "studies.log"
    journal.write_text(
        '{"op_code": 0, "worker_id": "a", "study_name": "s", "directions": [1]}\n{"op_'
    )
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
        (_cut_journal, ["cut or damaged", "delete its last line"], 2),
        (_foreign_study, ["not made by autoplace", "pass another --study"], 2),
        (_password_in_url, ["cannot read the storage URL", "percent-encode"], 2),
        (_locked_database, ["locked by another process", "run the same command again"], 1),
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
