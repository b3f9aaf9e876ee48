"""The ``autoplace`` command: a thin layer over the library.

Each command parses its options, calls one library function, and prints. Heavy
imports (JAX lives only in the worker; Optuna only in the tuner) happen inside
the commands, so ``autoplace --help`` starts fast.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from autoplace.errors import AutoplaceError

app = typer.Typer(
    name="autoplace",
    help="Where should this JAX model run, at what batch size and precision, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ModelFileArg = Annotated[
    Path, typer.Argument(help="Python file holding the workload (see the README's 'Model files').")
]
WorkloadOpt = Annotated[
    str | None, typer.Option("--workload", "-w", help="Workload to use when the file has several.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]
MaxMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--max-memory",
        help="Skip configurations XLA predicts to need more than this (e.g. 8GiB).",
    ),
]


def _fail(message: str, code: int) -> None:
    typer.echo(f"autoplace: error: {message}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def handle_errors() -> Iterator[None]:
    """Turn autoplace's own errors into one line on stderr and their exit code."""
    try:
        yield
    except AutoplaceError as exc:
        _fail(str(exc), exc.exit_code)


def _version(value: bool) -> None:
    if value:
        from autoplace import __version__

        typer.echo(f"autoplace {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Where should this JAX model run, at what batch size and precision, and why."""


@app.command()
def measure(
    model_file: ModelFileArg,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Samples per step.")],
    device: Annotated[str, typer.Option("--device", "-d", help="e.g. cpu, gpu:0.")] = "cpu",
    precision: Annotated[
        str, typer.Option("--precision", "-p", help="float32, bfloat16 or float16.")
    ] = "float32",
    width: Annotated[
        int | None, typer.Option("--width", help="Model width (default: the file's default).")
    ] = None,
    workload: WorkloadOpt = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds before the measurement is killed.")
    ] = 300.0,
    max_memory: MaxMemoryOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure ONE configuration, keeping compile, first call, steady step and transfer apart."""
    from autoplace.config import Config
    from autoplace.measure import measure as run_measure
    from autoplace.settings import MeasureSettings
    from autoplace.units import parse_size

    with handle_errors():
        config = Config(device=device, batch_size=batch_size, precision=precision, width=width)
        settings = MeasureSettings(
            timeout_s=timeout, max_memory=parse_size(max_memory) if max_memory else None
        )
        result = run_measure(
            model_file,
            device=config.device,
            batch_size=config.batch_size,
            precision=config.precision,
            width=config.width,
            workload=workload,
            settings=settings,
        )
    if as_json:
        typer.echo(json.dumps(result.to_dict()))
    else:
        from autoplace.display import measurement_table

        measurement_table(result)
    raise typer.Exit(0 if result.status == "ok" else 1)


def main(argv: list[str] | None = None) -> Any:
    """Entry point: typer's usage errors also end as one line and exit code 2."""
    try:
        code = app(args=argv, standalone_mode=False)
    except typer.TyperException as exc:  # a usage error: bad or missing option
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "autoplace"
        typer.echo(
            f"autoplace: error: {exc.format_message()} (see: {command} --help)", err=True
        )
        sys.exit(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("autoplace: interrupted", err=True)
        sys.exit(130)
    sys.exit(code or 0)
