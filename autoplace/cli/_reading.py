"""Reading what a tune left: ``autoplace show``, ``explain`` and ``report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from autoplace.cli._errors import handle_errors
from autoplace.cli._options import DEFAULT_STORAGE, JsonOpt, ObjectiveOpt, WorkloadOpt, named

StudySourceArg = Annotated[
    Path,
    typer.Argument(
        metavar="PATH", help="A recommendation file, or a model file whose study to read."
    ),
]

#: What explain and report read: the storage and study a recommendation file names.
SourceStorageOpt = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="Study storage URL.",
        show_default=f"the recommendation file's, else {DEFAULT_STORAGE}",
    ),
]

SourceStudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="Study name.",
        show_default="the recommendation file's, else the model file's study",
    ),
]


def show(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Recommendation file.")] = Path(
        "autoplace.toml"
    ),
    as_json: JsonOpt = False,
) -> None:
    """Print a recommendation file readably."""
    from autoplace import recommendation

    with handle_errors():
        document = recommendation.read(path)
    if as_json:
        typer.echo(json.dumps(document, default=str))
    else:
        from autoplace.report import recommendation_report

        recommendation_report(document)


def explain(
    source: StudySourceArg = Path("autoplace.toml"),
    workload: WorkloadOpt = None,
    storage: SourceStorageOpt = None,
    study: SourceStudyOpt = None,
    objective: ObjectiveOpt = "throughput",
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="First measure the points a line still lacks (an arm that ran at one batch "
            "size gets its neighbour), in the study; a recommendation file is rewritten.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Why the winner wins: each arm's cost model, in sentences with numbers."""
    from autoplace.tuning import explain as run_explain
    from autoplace.tuning import fill_fit

    with handle_errors():
        study = named("--study", study)
        if measure:
            added = fill_fit(source, workload, storage=storage, study=study, objective=objective)
            typer.echo(f"measured {added} more for the fit", err=True)
        explanation = run_explain(
            source, workload, storage=storage, study=study, objective=objective
        )
    if as_json:
        typer.echo(json.dumps(explanation.as_dict(), default=str))
        return
    from autoplace.report import explanation_report

    explanation_report(explanation)


def report(
    source: StudySourceArg = Path("autoplace.toml"),
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the HTML page.")] = Path(
        "autoplace-report.html"
    ),
    workload: WorkloadOpt = None,
    storage: SourceStorageOpt = None,
    study: SourceStudyOpt = None,
    objective: ObjectiveOpt = "throughput",
) -> None:
    """Write one self-contained HTML page (plots, explanation, every measurement); opens offline."""
    from autoplace.report import write_report

    with handle_errors():
        study = named("--study", study)
        written = write_report(
            source, out, workload, storage=storage, study=study, objective=objective
        )
    typer.echo(f"report written to {written}")
