"""The model-file protocol: finding workloads, importing files, reporting their errors."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import line_of, model, write_model

import autoplace
from autoplace import ModelFileError, Workload, WorkloadInfo
from autoplace.workload import (
    ModelFile,
    describe_exception,
    find_workloads,
    import_model_file,
    pick_workload,
)


def _module(**attrs: object) -> types.ModuleType:
    module = types.ModuleType("fake_model")
    for name, value in attrs.items():
        setattr(module, name, value)
    return module


def _fn(width, dtype):  # never decorated: the decorator marks the function it is given
    raise AssertionError("not called")


# --- the decorator ----------------------------------------------------------------------


def test_decorator_declares_widths_and_returns_the_function() -> None:
    def mlp(width, dtype):
        """An MLP.

        More text."""

    marked = autoplace.workload(widths=(1000, 128), default_width=128)(mlp)
    assert marked is mlp
    info = mlp.__autoplace_workload__
    assert info == WorkloadInfo(
        name="mlp", widths=(128, 1000), default_width=128, doc="An MLP.\n\nMore text."
    )


def test_a_default_width_not_among_the_widths_is_refused() -> None:
    # it used to be added to them silently: a width the author never listed was searched
    with pytest.raises(
        ModelFileError, match=r"default_width=64 is not one of widths=\(128, 1000\)"
    ):

        @autoplace.workload(widths=(128, 1000), default_width=64)
        def mlp(width, dtype): ...


@pytest.mark.parametrize(
    ("declared", "fragment"),
    [
        ({"widths": (8, 0)}, "widths must be whole numbers of at least 1, got 0"),
        ({"widths": ("wide",)}, "widths must be whole numbers of at least 1, got 'wide'"),
        ({"batch_sizes": (0, 8)}, "batch_sizes must be whole numbers of at least 1, got 0"),
        ({"batch_sizes": 2.5}, "batch_sizes must be whole numbers of at least 1, got 2.5"),
        ({"widths": (8,), "default_width": True}, "default_width must be whole numbers"),
        ({"widths": ()}, "widths=() declares no width"),
        ({"widths": [], "default_width": 8}, "widths=[] declares no width"),
    ],
)
def test_a_bad_declaration_names_the_decorator_and_its_function(declared, fragment) -> None:
    with pytest.raises(ModelFileError, match=r"@autoplace\.workload on mlp: ") as info:

        @autoplace.workload(**declared)
        def mlp(width, dtype): ...

    assert fragment in str(info.value)


def test_default_width_defaults_to_the_first_width_listed() -> None:
    @autoplace.workload(widths=(512, 32, 32))
    def mlp(width, dtype): ...

    info = mlp.__autoplace_workload__
    assert info.widths == (32, 512)
    assert info.default_width == 512


def test_bare_decorator_and_name_override() -> None:
    @autoplace.workload
    def plain(width, dtype): ...

    @autoplace.workload(name="renamed")
    def original(width, dtype): ...

    assert plain.__autoplace_workload__ == WorkloadInfo("plain", (), None)
    assert original.__autoplace_workload__.name == "renamed"


def test_find_workloads_by_decorator() -> None:
    def build(width, dtype): ...

    one = autoplace.workload(widths=(8,))(lambda w, d: None)
    two = autoplace.workload(name="two")(build)
    found = find_workloads(_module(one=one, two=two, other=print), Path("m.py"))
    assert set(found) == {"<lambda>", "two"}
    info, fn = found["two"]
    assert fn is two
    assert info.name == "two"


def test_decorated_workloads_win_over_the_conventional_name() -> None:
    marked = autoplace.workload(name="mlp")(lambda w, d: None)
    found = find_workloads(_module(mlp=marked, workload=_fn), Path("m.py"))
    assert set(found) == {"mlp"}


def test_conventional_name_with_module_constants() -> None:
    found = find_workloads(_module(workload=_fn, WIDTHS=(64, 16), DEFAULT_WIDTH=16), Path("m.py"))
    info, fn = found["workload"]
    assert fn is _fn
    assert info.widths == (16, 64)
    assert info.default_width == 16
    refused = r"in m.py: DEFAULT_WIDTH=32 is not one of WIDTHS=\(64, 16\)"
    with pytest.raises(ModelFileError, match=refused):
        find_workloads(_module(workload=_fn, WIDTHS=(64, 16), DEFAULT_WIDTH=32), Path("m.py"))


def test_conventional_name_without_default_uses_the_first_width() -> None:
    info, _ = find_workloads(_module(workload=_fn, WIDTHS=[64, 16]), Path("m.py"))["workload"]
    assert info.widths == (16, 64)
    assert info.default_width == 64


def test_conventional_name_with_no_widths_listed_is_refused() -> None:
    refused = r"in m.py: WIDTHS=\(\) declares no width.* or leave WIDTHS out"
    with pytest.raises(ModelFileError, match=refused):
        find_workloads(_module(workload=_fn, WIDTHS=()), Path("m.py"))


def test_conventional_name_without_constants() -> None:
    info, _ = find_workloads(_module(workload=_fn), Path("m.py"))["workload"]
    assert info.widths == ()
    assert info.default_width is None


def test_no_workload_is_a_model_file_error() -> None:
    with pytest.raises(ModelFileError, match=r"no workload found in m\.py"):
        find_workloads(_module(helper=_fn, workload=42), Path("m.py"))


def test_importing_the_decorator_is_not_a_workload(tmp_path: Path) -> None:
    # `from autoplace import workload` binds the decorator to the conventional name;
    # a file that forgot to decorate its function holds no workload.
    path = write_model(
        tmp_path,
        """
        from autoplace import workload

        def mlp(width, dtype):
            return None
        """,
    )
    with pytest.raises(ModelFileError, match="no workload found"):
        find_workloads(import_model_file(path), path)


def test_find_workloads_in_the_example_model() -> None:
    path = model("tiny_mlp")
    found = find_workloads(import_model_file(path), path)
    assert list(found) == ["mlp"]
    assert found["mlp"][0].widths == (8, 24, 32, 40)
    assert found["mlp"][0].default_width == 8


def test_find_workloads_of_a_file_without_one() -> None:
    path = model("no_workload")
    with pytest.raises(ModelFileError, match="no workload found"):
        find_workloads(import_model_file(path), path)


# --- picking one --------------------------------------------------------------------------


def test_pick_workload() -> None:
    found = {"mlp": 1, "mlp_wide": 2}
    assert pick_workload(found, Path("m.py"), "mlp_wide") == "mlp_wide"
    assert pick_workload({"only": 1}, Path("m.py"), None) == "only"


def test_pick_workload_needs_a_name_when_there_are_several() -> None:
    with pytest.raises(ModelFileError, match=r"several workloads \(a, b\)") as info:
        pick_workload({"b": 1, "a": 2}, Path("m.py"), None)
    assert "--workload" in str(info.value)


def test_pick_workload_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ModelFileError, match=r"no workload named 'c'.*choose one of a, b"):
        pick_workload({"b": 1, "a": 2}, Path("m.py"), "c")


# --- importing files ----------------------------------------------------------------------


def test_syntax_error_names_file_and_line() -> None:
    path = model("syntax_error")
    with pytest.raises(ModelFileError) as info:
        import_model_file(path)
    message = str(info.value)
    assert f"{path}:{line_of(path, 'def workload')}" in message
    assert "SyntaxError" in message
    assert "\n" not in message


def test_exception_at_import_names_file_and_line() -> None:
    path = model("import_error")
    with pytest.raises(ModelFileError) as info:
        import_model_file(path)
    message = str(info.value)
    assert f"KeyError: 'large' ({path}:{line_of(path, 'SIZES[')})" in message
    assert "failed to import" in message


def test_failed_import_leaves_no_module_or_path_behind() -> None:
    before_modules, before_path = set(sys.modules), list(sys.path)
    with pytest.raises(ModelFileError):
        import_model_file(model("import_error"))
    assert set(sys.modules) == before_modules
    assert sys.path == before_path


def test_exit_at_import_is_a_model_file_error(tmp_path: Path) -> None:
    path = write_model(tmp_path, "import sys\nsys.exit(3)\n")
    with pytest.raises(ModelFileError, match="SystemExit"):
        import_model_file(path)


def test_model_file_may_import_its_siblings(tmp_path: Path) -> None:
    write_model(tmp_path, "SCALE = 3\n", name="layers_for_autoplace_test.py")
    path = write_model(tmp_path, "from layers_for_autoplace_test import SCALE\n")
    before = list(sys.path)
    assert import_model_file(path).SCALE == 3
    assert sys.path == before
    sys.modules.pop("layers_for_autoplace_test", None)


def test_import_runs_the_file_afresh_each_time(tmp_path: Path) -> None:
    path = write_model(tmp_path, "VALUE = 1\n")
    assert import_model_file(path).VALUE == 1
    path.write_text("VALUE = 2\n")
    assert import_model_file(path).VALUE == 2


def test_a_file_that_is_not_python_source(tmp_path: Path) -> None:
    path = write_model(tmp_path, "VALUE = 1\n", name="model.txt")
    with pytest.raises(ModelFileError, match="Python source file"):
        import_model_file(path)


def test_model_file_at(tmp_path: Path) -> None:
    path = write_model(tmp_path, "A = 1\n")
    mf = ModelFile.at(path)
    assert mf.path == path.resolve()
    assert len(mf.sha256) == 64
    assert ModelFile.at(str(path)) == mf
    path.write_text("A = 2\n")
    assert ModelFile.at(path).sha256 != mf.sha256


def test_model_file_at_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="does not exist"):
        ModelFile.at(tmp_path / "nope.py")


def test_model_file_at_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="is not a file"):
        ModelFile.at(tmp_path)


# --- describing exceptions ----------------------------------------------------------------


def test_describe_exception_one_line_with_the_user_frame(tmp_path: Path) -> None:
    path = write_model(
        tmp_path,
        """
        def fail():
            raise RuntimeError("first line\\nsecond line")
        """,
    )
    module = import_model_file(path)
    try:
        module.fail()
    except RuntimeError as exc:
        text = describe_exception(exc, path)
    assert text == f"RuntimeError: first line ({path}:2)"
    try:
        module.fail()
    except RuntimeError as exc:
        assert describe_exception(exc) == "RuntimeError: first line"


def test_describe_exception_without_message() -> None:
    assert describe_exception(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert describe_exception(ValueError("  ")) == "ValueError"


# --- Workload -----------------------------------------------------------------------------


def test_workload_validation() -> None:
    def step(s, b):
        return s

    def make(n, rng):
        return np.zeros(n)

    assert Workload(state=1, step=step, make_batch=make).kind == "train"
    assert Workload(state=1, step=step, make_batch=make, kind="infer").kind == "infer"
    with pytest.raises(ModelFileError, match=r"'train' .* or 'infer'"):
        Workload(state=1, step=step, make_batch=make, kind="eval")  # type: ignore[arg-type]
    with pytest.raises(ModelFileError, match=r"step=\.\.\.\) got a NoneType, not a function"):
        Workload(state=1, step=None, make_batch=make)  # type: ignore[arg-type]
    with pytest.raises(ModelFileError, match=r"make_batch=\.\.\.\) got a ndarray"):
        Workload(state=1, step=step, make_batch=np.zeros(3))  # type: ignore[arg-type]


def test_declared_workloads_are_read_without_importing(tmp_path) -> None:
    from autoplace.workload import declared_workloads

    marked = tmp_path / "marked.py"
    marked.write_text(
        "import sys; sys.exit('imported')\nimport autoplace\nfrom autoplace import workload\n"
        "@autoplace.workload(widths=(8,))\ndef a(w, d): ...\n@workload\ndef b(w, d): ...\n"
        "def workload_helper(): ...\n"
    )
    assert declared_workloads(marked) == ["a", "b"]  # not imported: sys.exit never ran
    plain = tmp_path / "plain.py"
    plain.write_text("def helper(): ...\ndef workload(width, dtype): ...\n")
    assert declared_workloads(plain) == ["workload"]
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    assert declared_workloads(broken) == []  # importing it says why
