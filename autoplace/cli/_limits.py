"""``autoplace limits``: this machine's peak rates and floors, measured once and cached."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from autoplace.cli._errors import handle_errors
from autoplace.cli._options import JsonOpt


def limits(
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Measure again, even when they are cached.")
    ] = False,
    windows: Annotated[int, typer.Option("--windows", help="Timed windows per figure.")] = 5,
    seconds: Annotated[float, typer.Option("--seconds", help="Each window's length.")] = 0.25,
    as_json: JsonOpt = False,
) -> None:
    """This machine's limits: peak FLOP/s, memory and host-to-device bandwidth, dispatch floor.

    Measured once per hardware and software, then cached."""
    from autoplace.limits import LimitsRequest, machine_limits

    with handle_errors():
        found = machine_limits(
            LimitsRequest(refresh=refresh, seconds=seconds, windows=windows),
            on_progress=lambda line: typer.echo(f"autoplace: {line}", err=True),
        )
    if as_json:
        typer.echo(json.dumps({**found.as_dict(), "cached": found.cached}))
        return
    typer.echo("\n".join(found.lines()))
