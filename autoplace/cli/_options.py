"""The options several commands share, and the checks of what they are given."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autoplace.errors import BadInputError

ModelFileArg = Annotated[
    Path,
    typer.Argument(
        metavar="MODEL_FILE",
        help="Python file holding the workload (see the README's 'Model files').",
    ),
]
WorkloadOpt = Annotated[
    str | None,
    typer.Option(
        "--workload",
        "-w",
        help="Workload to use when the file has several.",
        show_default="the file's only one",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]
MaxMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--max-memory",
        help="Skip configurations XLA predicts to need more than this (e.g. 8GiB).",
        show_default="the device's memory",
    ),
]

WidthsOpt = Annotated[
    str | None,
    typer.Option(
        "--widths", help="Comma-separated widths.", show_default="the file's default width"
    ),
]

ObjectiveOpt = Annotated[
    str,
    typer.Option("--objective", help="throughput, time-to-finish or latency."),
]

FeedingOpt = Annotated[
    str,
    typer.Option(
        "--feeding",
        help="How the run feeds its steps, the loop the search ranks on: put (a host batch "
        "before each step), prefetch (two puts in flight: autoplace.prefetch) or resident "
        "(data on the device).",
    ),
]

_RUN_LENGTH = "none: time-to-finish needs --steps or --samples"
StepsOpt = Annotated[
    int | None,
    typer.Option(
        "--steps", help="Run length for time-to-finish, in steps.", show_default=_RUN_LENGTH
    ),
]

SamplesOpt = Annotated[
    int | None,
    typer.Option(
        "--samples",
        help="Run length in samples (one epoch with --epochs).",
        show_default=_RUN_LENGTH,
    ),
]

EpochsOpt = Annotated[
    int | None,
    typer.Option(
        "--epochs", help="Epochs of --samples.", show_default="one: --samples is the whole run"
    ),
]

DEFAULT_STORAGE = "sqlite:///studies/autoplace.db"


def named(option: str, value: str | None) -> str | None:
    """An option that names something (``--study``): refused when given empty."""
    if value is not None and not value.strip():
        raise BadInputError(
            f"{option} is empty: give a name, or leave {option} out for the default"
        )
    return value


def seconds(option: str, value: float | None) -> float | None:
    """An option in seconds that must be positive (a limit of 0 s would kill everything)."""
    if value is not None and not value > 0:
        raise BadInputError(f"{option} must be a positive number of seconds, got {value:g}")
    return value
