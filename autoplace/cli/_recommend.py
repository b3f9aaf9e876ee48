"""``autoplace recommend``: where to run, from the cache, a study, or one tune.

``recommend`` takes one parameter per option, over the house limit of ten: typer reads a
command's options from its signature, so each option is a parameter.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Annotated

import typer

from autoplace.cli._errors import fail, handle_errors
from autoplace.cli._options import (
    EpochsOpt,
    FeedingOpt,
    JsonOpt,
    ModelFileArg,
    ObjectiveOpt,
    SamplesOpt,
    StepsOpt,
    WidthsOpt,
    WorkloadOpt,
)

if TYPE_CHECKING:
    from autoplace.recommending import Recommendation

TeamStorageOpt = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="A team's study storage URL.",
        show_default="the study database beside the cache",
    ),
]

OneStudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="One study in --storage.",
        show_default="every study of this model, objective and machine",
    ),
]

OnMissOpt = Annotated[
    str,
    typer.Option("--on-miss", help="No answer yet: tune (and cache), fallback, or raise (exit 1)."),
]

OnStaleOpt = Annotated[
    str,
    typer.Option(
        "--on-stale",
        help="An answer of other jax/jaxlib versions or too old: use, retune, raise.",
    ),
]

MaxBatchSizeOpt = Annotated[
    int | None,
    typer.Option("--max-batch-size", help="Never recommend a larger batch.", show_default="none"),
]

MemoryMarginOpt = Annotated[
    str, typer.Option("--memory-margin", help="Device memory to leave free (e.g. 10%).")
]

LeaveOutDeviationOpt = Annotated[
    str | None,
    typer.Option(
        "--max-deviation",
        help="Leave out precisions straying further from float32 (e.g. 5%).",
        show_default="off",
    ),
]

MaxAgeOpt = Annotated[
    float | None,
    typer.Option(
        "--max-age",
        help="Seconds after which an answer is stale.",
        show_default="never stale by age",
    ),
]

FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="env: AUTOPLACE_DEVICE=... lines for shell launchers.",
        show_default="a line for people",
    ),
]


def recommend(
    model_file: ModelFileArg,
    workload: WorkloadOpt = None,
    widths: WidthsOpt = None,
    objective: ObjectiveOpt = "throughput",
    steps: StepsOpt = None,
    samples: SamplesOpt = None,
    epochs: EpochsOpt = None,
    feeding: FeedingOpt = "put",
    storage: TeamStorageOpt = None,
    study: OneStudyOpt = None,
    on_miss: OnMissOpt = "tune",
    on_stale: OnStaleOpt = "use",
    max_batch_size: MaxBatchSizeOpt = None,
    memory_margin: MemoryMarginOpt = "10%",
    max_deviation: LeaveOutDeviationOpt = None,
    max_age: MaxAgeOpt = None,
    as_json: JsonOpt = False,
    output_format: FormatOpt = None,
) -> None:
    """Where to run, at what batch and precision: from the cache in ms, a study, or one tune."""
    from autoplace.recommending import RecommendRequest
    from autoplace.recommending import recommend as run_recommend
    from autoplace.units import MOST_DEVIATION, parse_fraction, parse_ints

    _check_output(output_format, as_json)
    with handle_errors(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        margin = parse_fraction(memory_margin, "--memory-margin")
        request = RecommendRequest(
            model_file,
            workload,
            objective=objective,
            steps=steps,
            samples=samples,
            epochs=epochs,
            feeding=feeding,
            widths=parse_ints(widths, "widths") if widths is not None else None,
            storage=storage,
            study=study,
            on_miss=on_miss,  # type: ignore[arg-type]
            on_stale=on_stale,  # type: ignore[arg-type]
            max_batch_size=max_batch_size,
            memory_margin=margin or 0.0,
            max_deviation=parse_fraction(max_deviation, "--max-deviation", MOST_DEVIATION)
            if max_deviation
            else None,
            max_age=max_age,
        )
        found = run_recommend(
            request, on_wait=lambda line: typer.echo(f"autoplace: {line}", err=True)
        )
    for warning in said:
        typer.echo(str(warning.message), err=True)
    _tell(found, as_json, output_format)


def _check_output(output_format: str | None, as_json: bool) -> None:
    """Refuse an unknown ``--format``, or ``--format`` beside ``--json``, before any work."""
    if output_format not in (None, "env"):
        fail(f"--format must be env, got {output_format!r} (or use --json)", 2)
    if output_format is not None and as_json:
        fail(f"--format {output_format} and --json are two outputs: give one of them", 2)


def _tell(found: Recommendation, as_json: bool, output_format: str | None) -> None:
    """Print the answer: JSON, ``KEY=value`` lines, or a line for people and its limits."""
    if as_json:
        typer.echo(json.dumps(found.as_dict()))
    elif output_format == "env":
        typer.echo("\n".join(f"{k}={v}" for k, v in found.env().items()))
    else:
        typer.echo(found.log_line())
        for line in found.limits:
            typer.echo(f"  {line}")
