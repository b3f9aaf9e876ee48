"""The model-file protocol: how a user's JAX code becomes something autoplace can measure.

A model file is plain Python holding workload functions, each ``(width, dtype) ->``
:class:`Workload`::

    @autoplace.workload(widths=(128, 1000), default_width=128)
    def mlp(width, dtype):
        params = init(width, dtype)
        def step(params, batch): ...          # state -> state (training)
        def make_batch(batch_size, rng): ...  # host numpy arrays
        return autoplace.Workload(state=params, step=step, make_batch=make_batch)

Undecorated, a function named ``workload`` is found, its widths in ``WIDTHS`` and
``DEFAULT_WIDTH``. Loading a file runs the user's code, so only a measurement worker does
it; this module imports no JAX.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import inspect
import sys
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from autoplace._paths import check_length
from autoplace.errors import BadInputError, ModelFileError, first_line

Kind = Literal["train", "infer"]

#: The attribute the decorator leaves on a workload function.
_MARK = "__autoplace_workload__"
#: The name an undecorated workload function is found by.
CONVENTIONAL_NAME = "workload"


@dataclasses.dataclass(frozen=True)
class Workload:
    """What a workload function returns: everything needed to run one step.

    ``state``: the initial pytree of arrays (parameters, and optimiser state to train).
    ``step(state, batch)``: with ``kind="train"`` returns the next state (the old one is
    donated); with ``kind="infer"`` returns predictions, the state reused.
    ``make_batch(batch_size, rng)``: one batch of host (numpy) arrays, leading axis
    ``batch_size``, from a ``numpy.random.Generator``; it must not touch a device
    (autoplace times the transfer itself).
    """

    state: Any
    step: Callable[[Any, Any], Any]
    make_batch: Callable[[int, Any], Any]
    kind: Kind = "train"

    def __post_init__(self) -> None:
        if self.kind not in ("train", "infer"):
            raise ModelFileError(
                f"autoplace.Workload(kind={self.kind!r}): kind is 'train' (the step returns "
                "the next state) or 'infer' (it returns predictions)"
            )
        for name in ("step", "make_batch"):
            if not callable(getattr(self, name)):
                raise ModelFileError(
                    f"autoplace.Workload({name}=...) got a {type(getattr(self, name)).__name__}, "
                    f"not a function: pass the function itself, {name}={name}"
                )


@dataclasses.dataclass(frozen=True)
class WorkloadInfo:
    """What the decorator (or the module constants) declare about a workload function;
    ``batch_sizes``: those a tune searches by default (empty: autoplace's)."""

    name: str
    widths: tuple[int, ...]
    default_width: int | None
    doc: str = ""
    batch_sizes: tuple[int, ...] = ()


def check_width(width: int, declared: Sequence[int]) -> None:
    """Refuse a width the model file does not declare."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise BadInputError(f"width must be a whole number of at least 1, got {width!r}")
    if width not in declared:
        offered = ", ".join(map(str, declared)) if declared else "none"
        raise BadInputError(
            f"width {width} is not one the model file declares ({offered}): pick one of "
            "those, or add it to @autoplace.workload(widths=...) (or WIDTHS) in the file"
        )


def workload(
    fn: Callable[..., Workload] | None = None,
    *,
    widths: Sequence[int] | None = None,
    default_width: int | None = None,
    batch_sizes: Sequence[int] = (),
    name: str | None = None,
) -> Any:
    """Mark ``fn(width, dtype) -> Workload`` as a workload, bare or with arguments.

    ``widths``: the widths ``fn`` takes (none: called with ``width=None``);
    ``batch_sizes``: narrows those ``autoplace tune`` searches by default. Returns ``fn``
    itself, marked, so it stays callable as plain Python.
    """

    def mark(f: Callable[..., Workload]) -> Callable[..., Workload]:
        where = f"@autoplace.workload on {f.__name__}: "
        ws, dw = _declared(widths, default_width, where, ("widths", "default_width"))
        info = WorkloadInfo(
            name=name or f.__name__,
            widths=tuple(sorted(set(ws))),
            default_width=dw,
            doc=inspect.getdoc(f) or "",
            batch_sizes=tuple(sorted(set(_counts(batch_sizes, f"{where}batch_sizes")))),
        )
        setattr(f, _MARK, info)
        return f

    return mark(fn) if fn is not None else mark


def _declared(
    widths: Any, default: Any, where: str, names: tuple[str, str]
) -> tuple[tuple[int, ...], int | None]:
    """Declared widths and their default (the first), checked; ``names``: how the file spells
    the two."""
    ws = _counts(() if widths is None else widths, f"{where}{names[0]}")
    if widths is not None and not ws:
        raise ModelFileError(
            f"{where}{names[0]}={widths!r} declares no width, so no width could be measured: "
            f"list the widths the function takes (e.g. {names[0]}=(128, 256)), or leave "
            f"{names[0]} out for a model without widths"
        )
    dw = default if default is not None else (ws[0] if ws else None)
    if dw is not None:
        (dw,) = _counts((dw,), f"{where}{names[1]}")
    if dw is not None and ws and dw not in ws:
        raise ModelFileError(
            f"{where}{names[1]}={dw} is not one of {names[0]}={ws}: add it to {names[0]}, "
            "or make the default one of them"
        )
    return ws, dw


def _counts(values: Any, what: str) -> tuple[int, ...]:
    try:
        given = tuple(values)
    except TypeError:
        given = (values,)
    for v in given:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ModelFileError(
                f"{what} must be whole numbers of at least 1, got {v!r}: e.g. (8, 16, 32)"
            )
    return given


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """A model file on disk, identified by path and content."""

    path: Path
    sha256: str

    @classmethod
    def at(cls, path: str | Path) -> ModelFile:
        p = check_length(Path(path).expanduser(), "model file")
        if not p.exists():
            raise ModelFileError(f"model file {str(path)!r} does not exist: check the path")
        if not p.is_file():
            raise ModelFileError(f"model file {str(path)!r} is not a file: pass a .py file")
        data = p.read_bytes()
        return cls(path=p.resolve(), sha256=hashlib.sha256(data).hexdigest())


def _user_frame(exc: BaseException, path: Path) -> str:
    """``file:line`` of the deepest frame of ``exc`` inside the model file, if any."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename) == path:
            where = f"{frame.filename}:{frame.lineno}"
    return where


def located(exc: BaseException, path: Path) -> str:
    """``exc``'s message with the model file's line that raised it, when known."""
    where = _user_frame(exc, path)
    return f"{exc} ({where})" if where else f"{exc} (in {path})"


def describe_exception(exc: BaseException, path: Path | None = None) -> str:
    """One line: ``Type: message (file:line)``, with the model file's frame when known."""
    name, message = type(exc).__name__, first_line(exc, limit=None)
    text = name if message == name else f"{name}: {message}"
    if isinstance(exc, SyntaxError):
        text = f"SyntaxError: {exc.msg}"
    where = _user_frame(exc, path) if path is not None else ""
    return f"{text} ({where})" if where else text


def _import_fix(exc: BaseException) -> str:
    """Install what the file imports where that is missing, else fix the file."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        return (
            f"the file is fine, but {top!r} is not installed in this Python ({sys.executable}): "
            f"install the package that provides it there (often `pip install {top}`), then run "
            "again"
        )
    return "fix the file and run again"


def import_model_file(path: Path) -> types.ModuleType:
    """Import the file as a fresh module; any failure is a :class:`ModelFileError`."""
    module_name = f"_autoplace_model_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"cannot import {path}: it must be a Python source file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # the user's code: any failure is theirs to fix
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, ModelFileError):  # a declaration autoplace refused: say where
            raise ModelFileError(located(exc, path)) from exc
        raise ModelFileError(
            f"model file {path} failed to import: {describe_exception(exc, path)}; "
            + _import_fix(exc)
        ) from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def find_workloads(
    module: types.ModuleType, path: Path
) -> dict[str, tuple[WorkloadInfo, Callable[..., Any]]]:
    """The workload functions of an imported model file, by name."""
    found: dict[str, tuple[WorkloadInfo, Callable[..., Any]]] = {}
    for value in vars(module).values():
        info = getattr(value, _MARK, None)
        if isinstance(info, WorkloadInfo):
            found[info.name] = (info, value)
    if not found:
        fn = getattr(module, CONVENTIONAL_NAME, None)
        if callable(fn) and fn is not workload:  # `from autoplace import workload` is not one
            widths, default = _declared(
                getattr(module, "WIDTHS", None),
                getattr(module, "DEFAULT_WIDTH", None),
                f"in {path}: ",
                ("WIDTHS", "DEFAULT_WIDTH"),
            )
            info = WorkloadInfo(
                name=CONVENTIONAL_NAME,
                widths=tuple(sorted(set(widths) | ({default} if default else set()))),
                default_width=default,
                doc=inspect.getdoc(fn) or "",
            )
            found[info.name] = (info, fn)
    if not found:
        raise ModelFileError(
            f"no workload found in {path}: decorate a function with @autoplace.workload "
            f"or name it {CONVENTIONAL_NAME!r} (see the README's 'Model files')"
        )
    return found


def declared_workloads(path: Path) -> list[str]:
    """The workloads a model file declares, read from its source without importing it (a
    launcher's look-up must not import JAX); none if it does not parse."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []

    def marked(d: ast.expr) -> bool:
        d = d.func if isinstance(d, ast.Call) else d
        return (isinstance(d, ast.Name) and d.id == "workload") or (
            isinstance(d, ast.Attribute) and d.attr == "workload"
        )

    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    found = [f.name for f in functions if any(marked(d) for d in f.decorator_list)]
    return found or [f.name for f in functions if f.name == CONVENTIONAL_NAME]


def pick_workload(found: Mapping[str, object], path: Path, name: str | None) -> str:
    """``name`` if given and present, else the only one in the file."""
    if name is not None:
        if name not in found:
            raise ModelFileError(
                f"no workload named {name!r} in {path}: choose one of {', '.join(sorted(found))}"
            )
        return name
    if len(found) > 1:
        raise ModelFileError(
            f"{path} holds several workloads ({', '.join(sorted(found))}): "
            "pick one with --workload NAME"
        )
    return next(iter(found))
