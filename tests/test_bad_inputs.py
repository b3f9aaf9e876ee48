"""The bad inputs of issue 35, each run through the command line as a user meets it: one
line on stderr, ``autoplace: error: <what, why, the fix>``, and its exit code.

The cases that need the model file imported (a worker starts) are ``slow``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, model
from synthetic import SyntheticBackend
from test_cli import assert_one_line_error, run_cli

import autoplace

TINY = str(model("tiny_mlp"))

# --- a file given as a recommendation file that is not one ------------------------------

_NOT_RECOMMENDATIONS = {
    "empty": (b"", ["empty.toml is not an autoplace recommendation file (empty,",
                    "pass the autoplace.toml that `autoplace tune` wrote"]),
    "foreign": ((REPO / "pyproject.toml").read_bytes(),
                ["is not an autoplace recommendation file (a TOML file of [build-system], "
                 "[project]", "with no schema_version", "autoplace tune MODEL_FILE --out"]),
    "string version": (b'schema_version = "3"\n',
                       ['has schema_version = "3", a string, where it is an integer '
                        "(schema_version = 4)", "run `autoplace tune` again"]),
    "float version": (b"schema_version = 3.0\n",
                      ["schema_version = 3.0, a float, where it is an integer"]),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
               ["binary.toml is not a text file (not UTF-8 at byte 0): it is not a "
                "recommendation file", "pass the autoplace.toml"]),
}  # fmt: skip


@pytest.mark.parametrize("command", ["show", "explain", "report"])
@pytest.mark.parametrize("case", list(_NOT_RECOMMENDATIONS))
def test_a_file_that_is_not_a_recommendation_file_is_named_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, case: str
) -> None:
    content, fragments = _NOT_RECOMMENDATIONS[case]
    path = tmp_path / f"{case.split()[0]}.toml"
    path.write_bytes(content)
    line = assert_one_line_error(*run_cli(capsys, command, str(path)), *fragments)
    assert "None" not in line and "codec" not in line
    assert list(tmp_path.iterdir()) == [path]  # nothing made: no database, no report


# --- sizes and output files ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["measure", TINY, "-b", "4", "--max-memory", "0"],
         ["--max-memory must be positive, got '0'", "e.g. 512MiB"]),
        (["tune", TINY, "--max-memory", "0"], ["--max-memory must be positive, got '0'"]),
        (["tune", TINY, "--max-memory", "0KiB"], ["--max-memory must be positive"]),
        (["measure", TINY, "-b", "4", "--max-memory", "lots"],
         ["cannot read --max-memory 'lots'", "write e.g. 512MiB, 8GiB"]),
        (["tune", TINY, "--max-memory", ""], ["cannot read --max-memory ''"]),
    ],
    ids=["measure 0", "tune 0", "tune 0KiB", "measure lots", "tune empty"],
)  # fmt: skip
def test_a_bad_size_names_its_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    if args[0] == "tune":
        args = [*args, "--storage", f"sqlite:///{tmp_path / 's.db'}"]
    assert_one_line_error(*run_cli(capsys, *args), *fragments)


@pytest.mark.parametrize(("name", "fix"), [("x.json", "x.toml"), ("pick", "pick.toml")])
def test_tune_refuses_an_out_file_not_named_toml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, fix: str
) -> None:
    out = tmp_path / name
    code, stdout, err = run_cli(
        capsys, "tune", TINY, "--out", str(out), "--storage", f"sqlite:///{tmp_path / 's.db'}"
    )
    assert_one_line_error(
        code,
        stdout,
        err,
        f"--out {out}: the recommendation file is TOML",
        f"name it {tmp_path / fix}",
    )
    assert list(tmp_path.iterdir()) == []  # refused before any study or file is made


def test_what_tune_writes_show_reads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    out = tmp_path / "pick.TOML"  # any case of .toml
    autoplace.tune(model_file, batch_sizes=(8, 16), precisions=("float32",), out=out,
                   storage=f"journal:///{tmp_path / 's.log'}", strategy=autoplace.Grid(),
                   backend=SyntheticBackend())  # fmt: skip
    code, stdout, err = run_cli(capsys, "show", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["recommendation"]["device"] == "cpu:0"


# --- the cache -------------------------------------------------------------------------------


def test_cache_list_shows_every_file_a_look_up_would_ignore_as_damaged_with_the_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    cache = tmp_path / "cache"
    tuned = autoplace.recommend(
        model_file, cache_dir=cache, backend=SyntheticBackend(),
        tune_options={"batch_sizes": (8,), "precisions": ("float32",), "confirm": 0},
    )  # fmt: skip
    answers = cache / "answers"
    good = json.loads((answers / f"{tuned.key}.json").read_text())
    shapes = {
        "invalid": ("{not json", "not JSON"),
        "list": ("[1, 2]", "JSON, but an array, not an object"),
        "null": ("null", "JSON, but null, not an object"),
        "missing": ('{"entry_schema": 1, "source": "tuned"}', "not an answer autoplace wrote"),
        "schema": (json.dumps({**good, "entry_schema": 99}),
                   "another layout: entry_schema 99, where autoplace reads 1"),
        "unversioned": (json.dumps({k: v for k, v in good.items() if k != "entry_schema"}),
                        "no entry_schema: not written by autoplace"),
    }  # fmt: skip
    for name, (text, _) in shapes.items():
        (answers / f"{name}.json").write_text(text)
    (cache / "limits").mkdir()
    (cache / "limits" / "cut.json").write_text('{"entry_schema": 1, "limits_schema": 1}')
    monkeypatch.setenv("AUTOPLACE_CACHE", str(cache))
    code, out, err = run_cli(capsys, "cache", "list")
    assert code == 0 and err == ""
    assert "(1 answer(s))" in out and f"  {tuned.key}  {model_file}" in out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    for name, (_, why) in {**shapes, "cut": (None, "not a machine's limits")}.items():
        folder = "limits" if name == "cut" else "answers"
        line = lines[str(cache / folder / f"{name}.json")]
        assert f"damaged ({why}): ignored, refilled" in line, (name, line)
        assert "`autoplace cache clear` removes it" in line
    code, out, _ = run_cli(capsys, "cache", "list", "--json")
    assert code == 0 and len(json.loads(out)["answers"]) == len(shapes) + 2


# --- the model file's contract, checked where the worker imports it ------------------------

_HEAD = "import jax, jax.numpy as jnp, numpy as np\nimport autoplace\n"

_BROKEN = {
    "widths=()": (
        "@autoplace.workload(widths=())\ndef mlp(width, dtype): ...\n",
        ["@autoplace.workload on mlp: widths=() declares no width",
         "list the widths the function takes", "or leave widths out", "model.py:3"],
    ),
    "make_batch returns a str": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype)},\n"
        "        step=lambda s, b: s, make_batch=lambda n, rng: 'rows')\n",
        ["make_batch(4, rng) in", "returned a str ('rows'), not an array of numbers",
         "return e.g. (rng.random((batch_size, n)).astype(dtype),)"],
    ),
    "make_batch returns a str in a tuple": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype)},\n"
        "        step=lambda s, b: s,\n"
        "        make_batch=lambda n, rng: (rng.random((n, 4)).astype(dtype), 'cat'))\n",
        ["make_batch(4, rng) in", "returned a str ('cat') at [1], not an array of numbers",
         "labels as integers"],
    ),
    "a str in the state": (
        "@autoplace.workload(widths=(8,))\ndef mlp(width, dtype):\n"
        "    return autoplace.Workload(state={'w': jnp.ones((4, width), dtype), 'act': 'relu'},\n"
        "        step=lambda s, b: s,\n"
        "        make_batch=lambda n, rng: (rng.random((n, 4)).astype(dtype),))\n",
        ["the workload function in", "returned a state holding a str ('relu') at ['act']",
         "keep names and settings out of it"],
    ),
}  # fmt: skip


def _broken_file(tmp_path: Path, case: str) -> tuple[Path, list[str]]:
    source, fragments = _BROKEN[case]
    path = tmp_path / "model.py"
    path.write_text(_HEAD + source)
    return path, fragments


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_BROKEN))
def test_a_model_file_breaking_the_contract_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    path, fragments = _broken_file(tmp_path, case)
    code, out, err = run_cli(capsys, "measure", str(path), "-b", "4")
    line = assert_one_line_error(code, out, err, *fragments)
    assert "a scalar" not in line


@pytest.mark.slow
def test_a_str_in_the_state_ends_a_tune_before_any_measurement_is_stored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import optuna

    path, fragments = _broken_file(tmp_path, "a str in the state")
    storage = f"sqlite:///{tmp_path / 's.db'}"
    code, out, err = run_cli(
        capsys, "tune", str(path), "--batch-sizes", "4,8", "--storage", storage,
        "--out", str(tmp_path / "a.toml"), "--json",
    )  # fmt: skip
    assert_one_line_error(code, out, err, *fragments)
    # the trials the group had asked for are abandoned, none holds a measurement
    for summary in optuna.get_all_study_summaries(storage):
        for trial in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
            assert trial.state == optuna.trial.TrialState.FAIL
            assert "autoplace:measurement" not in trial.system_attrs, trial.system_attrs
    assert not (tmp_path / "a.toml").exists()


@pytest.mark.slow
def test_recommend_with_an_undeclared_width_is_refused_with_or_without_fallback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOPLACE_CACHE", str(tmp_path / "cache"))
    storage = f"sqlite:///{tmp_path / 's.db'}"
    for policy in ("fallback", "tune"):
        code, out, err = run_cli(
            capsys, "recommend", TINY, "--widths", "7", "--on-miss", policy, "--storage", storage
        )
        assert_one_line_error(
            code, out, err, "width 7 is not one the model file declares (8, 24, 32, 40)",
            "add it to @autoplace.workload(widths=...)",
        )  # fmt: skip
