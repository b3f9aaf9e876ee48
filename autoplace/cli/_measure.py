"""``autoplace measure``: one configuration, its phases apart."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from autoplace.cli._errors import handle_errors
from autoplace.cli._options import JsonOpt, MaxMemoryOpt, ModelFileArg, WorkloadOpt, seconds


def measure(
    model_file: ModelFileArg,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", help="Samples per step.")],
    device: Annotated[str, typer.Option("--device", "-d", help="e.g. cpu, gpu:0.")] = "cpu",
    precision: Annotated[
        str, typer.Option("--precision", "-p", help="float32, bfloat16 or float16.")
    ] = "float32",
    width: Annotated[
        int | None,
        typer.Option("--width", help="Model width.", show_default="the file's default width"),
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
    from autoplace.measuring import measure as run_measure
    from autoplace.settings import MeasureSettings
    from autoplace.units import parse_size

    with handle_errors():
        config = Config(device=device, batch_size=batch_size, precision=precision, width=width)
        settings = MeasureSettings(
            timeout_s=seconds("--timeout", timeout),  # type: ignore[arg-type]
            max_memory=parse_size(max_memory, "--max-memory") if max_memory is not None else None,
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
        from autoplace.report import measurement_table

        measurement_table(result)
    busy = busy_line([result])
    if busy:
        typer.echo(busy, err=True)
    raise typer.Exit(0 if result.status == "ok" else 1)


def busy_line(measurements: list[Any]) -> str:
    """One line saying the machine was busy while ``measurements`` were timed ('' if not)."""
    from autoplace.machine import Interference

    seen = Interference.of(measurements)
    if seen is None or not seen.busy:
        return ""
    return (
        f"autoplace: the machine was busy ({seen.describe()}): these figures may be off by "
        "much more than their spread; measure again when it is idle (`uptime` shows the load)"
    )
