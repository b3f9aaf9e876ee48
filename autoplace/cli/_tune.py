"""``autoplace tune``: search the space, write the recommendation file, cache the answer.

``tune`` takes one parameter per option, over the house limit of ten: typer reads a
command's options from its signature, so each option is a parameter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from autoplace._interrupt import taking_ctrl_c
from autoplace.cli._errors import handle_errors
from autoplace.cli._options import (
    DEFAULT_STORAGE,
    EpochsOpt,
    FeedingOpt,
    JsonOpt,
    MaxMemoryOpt,
    ModelFileArg,
    ObjectiveOpt,
    SamplesOpt,
    StepsOpt,
    WidthsOpt,
    WorkloadOpt,
    seconds,
)
from autoplace.settings import DEFAULT_MAX_DEVIATION, DEFAULT_STEPS_PER_CALL

if TYPE_CHECKING:
    from autoplace.tuning import TuneRequest, TuneResult

DevicesOpt = Annotated[
    str | None,
    typer.Option("--devices", help="Comma-separated devices.", show_default="one of each kind"),
]

BatchSizesOpt = Annotated[
    str | None,
    typer.Option(
        "--batch-sizes",
        help="List (16,32,64) or power-of-two range (8..1024).",
        show_default="the file's batch_sizes, else 1..4096; 1 for latency",
    ),
]

PrecisionsOpt = Annotated[
    str | None,
    typer.Option(
        "--precisions",
        help="Comma-separated precisions.",
        show_default="float32,bfloat16,float16",
    ),
]

TrialsOpt = Annotated[
    int | None,
    typer.Option(
        "--trials",
        help="At most this many new measurements (references and finalists count).",
        show_default="until nothing is worth measuring",
    ),
]

TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Stop starting measurements after this (s).",
        show_default="until nothing is worth measuring",
    ),
]

StorageOpt = Annotated[
    str | None,
    typer.Option("--storage", help="Study storage URL.", show_default=DEFAULT_STORAGE),
]

StudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="Study name.",
        show_default="one per workload, objective, file and hardware",
    ),
]

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Recommendation file to write.")]

RemeasureOpt = Annotated[
    bool, typer.Option("--remeasure", help="Measure again what the study already has.")
]

SearchOpt = Annotated[str, typer.Option("--search", help="climb, or grid (every configuration).")]

MeasureTimeoutOpt = Annotated[
    float,
    typer.Option("--measure-timeout", help="Seconds before one measurement is killed."),
]


IfBusyOpt = Annotated[
    str,
    typer.Option(
        "--if-busy",
        help="On a busy machine: warn (measure, and say so), wait (for quiet, up to "
        "--quiet-wait), or refuse.",
    ),
]

QuietWaitOpt = Annotated[
    float,
    typer.Option("--quiet-wait", help="With --if-busy wait: seconds to wait for quiet."),
]


_STEPS_PER_CALL = ",".join(map(str, DEFAULT_STEPS_PER_CALL))
StepsPerCallOpt = Annotated[
    str,
    typer.Option(
        "--steps-per-call",
        help="Steps per jitted call to time the pick at beside one, where its fixed cost "
        "matters (e.g. 4,16; 1 to never fuse steps).",
    ),
]


MaxDeviationOpt = Annotated[
    str,
    typer.Option(
        "--max-deviation",
        help="Never recommend a lower precision whose output strays further from float32's "
        "(relative; e.g. 5% or 0.05; 'off' to allow any).",
    ),
]


def tune(
    model_file: ModelFileArg,
    workload: WorkloadOpt = None,
    devices: DevicesOpt = None,
    batch_sizes: BatchSizesOpt = None,
    precisions: PrecisionsOpt = None,
    widths: WidthsOpt = None,
    objective: ObjectiveOpt = "throughput",
    steps: StepsOpt = None,
    samples: SamplesOpt = None,
    epochs: EpochsOpt = None,
    feeding: FeedingOpt = "put",
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
    storage: StorageOpt = None,
    study: StudyOpt = None,
    out: OutOpt = Path("autoplace.toml"),
    max_memory: MaxMemoryOpt = None,
    max_deviation: MaxDeviationOpt = f"{DEFAULT_MAX_DEVIATION:.0%}",
    remeasure: RemeasureOpt = False,
    search: SearchOpt = "climb",
    measure_timeout: MeasureTimeoutOpt = 300.0,
    if_busy: IfBusyOpt = "warn",
    quiet_wait: QuietWaitOpt = 600.0,
    steps_per_call: StepsPerCallOpt = _STEPS_PER_CALL,
    as_json: JsonOpt = False,
) -> None:
    """Search device x batch size x precision x width and write a recommendation file."""
    from autoplace.settings import MeasureSettings
    from autoplace.tuning import TuneRequest, strategy_named
    from autoplace.units import MOST_DEVIATION, parse_fraction, parse_ints, parse_list, parse_size

    # From here to the exit, SIGINT is autoplace's: a Ctrl-C stops the tune where stopping
    # keeps everything, and a second one at once (see autoplace/_interrupt.py).
    with taking_ctrl_c(exit_at_once=True) as interrupt, handle_errors(interrupt.is_set):
        request = TuneRequest(
            model_file,
            workload=workload,
            devices=parse_list(devices, "--devices") if devices is not None else None,
            batch_sizes=parse_ints(batch_sizes, "batch sizes") if batch_sizes is not None else None,
            precisions=parse_list(precisions, "--precisions") if precisions is not None else None,
            widths=parse_ints(widths, "widths") if widths is not None else None,
            objective=objective,
            steps=steps,
            samples=samples,
            epochs=epochs,
            feeding=feeding,
            trials=trials,
            timeout=timeout,
            storage=storage,
            study=study,
            out=out,
            max_memory=parse_size(max_memory, "--max-memory") if max_memory is not None else None,
            max_deviation=parse_fraction(max_deviation, "--max-deviation", MOST_DEVIATION),
            remeasure=remeasure,
            strategy=strategy_named(search),
            settings=MeasureSettings(
                timeout_s=seconds("--measure-timeout", measure_timeout)  # type: ignore[arg-type]
            ),
            if_busy=if_busy,
            quiet_wait=quiet_wait,
            steps_per_call=parse_ints(steps_per_call, "--steps-per-call"),
        )
        result = _run(request, as_json)
        _tell(result, request, as_json, interrupt.is_set)


def _run(request: TuneRequest, as_json: bool) -> TuneResult:
    """Tune, with a progress display on the terminal unless the output is JSON."""
    from autoplace.tuning import tune as run_tune

    if as_json:
        return run_tune(request)
    from autoplace.report import tune_progress

    with tune_progress(request.trials) as progress:
        return run_tune(
            request,
            on_trial=progress.trial,
            on_group=progress.group,
            on_wait=progress.wait,
            on_progress=progress.progress,
        )


def _tell(
    result: TuneResult, request: TuneRequest, as_json: bool, interrupted: Callable[[], bool]
) -> None:
    """Cache the answer, print the result, and end with the tune's exit code: 130 where a
    Ctrl-C was taken (``interrupted()``), even one that came once the tune was done."""
    cached: list[Path] = []
    narrower: tuple[str, ...] = ()
    if result.answer is not None:
        from autoplace.recommending import remember

        # Where autoplace.recommend() looks first, so that a launcher finds this answer.
        kept = remember(result, result.devices, workload=request.workload, widths=request.widths)
        cached, narrower = list(kept.paths), kept.narrower
    if as_json:
        from autoplace.report import tune_summary

        typer.echo(json.dumps(tune_summary(result)))
    else:
        from autoplace.report import tune_report

        tune_report(result)
        if cached:
            typer.echo(
                f"autoplace.recommend() answers from this machine's cache ({cached[0].parent})"
            )
        elif narrower:
            typer.echo(
                "not cached for autoplace.recommend(): this tune searched "
                f"{'; '.join(narrower)}, narrower than a launcher asks; an earlier answer to "
                "the wider question stays where it was"
            )
    if result.interrupted or interrupted():
        partial = f"; the pick so far is in {result.out}" if result.out else ""
        typer.echo(
            f"interrupted: every finished measurement is saved in study {result.study_name!r} "
            f"({result.storage}){partial}; run the same command again to resume",
            err=True,
        )
        raise typer.Exit(130)
    raise typer.Exit(0 if result.best is not None else 1)
