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

from autoplace import _help
from autoplace.errors import AutoplaceError, BadInputError
from autoplace.settings import DEFAULT_MAX_DEVIATION, DEFAULT_STEPS_PER_CALL

app = typer.Typer(
    name="autoplace",
    help="Where should this JAX model run, at what batch size and precision, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_help.Group,
)

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


def _fail(message: str, code: int) -> None:
    typer.echo(f"autoplace: error: {message}", err=True)
    raise typer.Exit(code)


def _named(option: str, value: str | None) -> str | None:
    """An option that names something (``--study``): refused when given empty."""
    if value is not None and not value.strip():
        raise BadInputError(
            f"{option} is empty: give a name, or leave {option} out for the default"
        )
    return value


def _seconds(option: str, value: float | None) -> float | None:
    """An option in seconds that must be positive (a limit of 0 s would kill everything)."""
    if value is not None and not value > 0:
        raise BadInputError(f"{option} must be a positive number of seconds, got {value:g}")
    return value


@contextlib.contextmanager
def handle_errors() -> Iterator[None]:
    """Turn autoplace's own errors into one line on stderr and their exit code."""
    try:
        yield
    except AutoplaceError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("autoplace: interrupted; nothing was lost: run the same command again", err=True)
        raise typer.Exit(130) from None


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


@app.command(cls=_help.Command)
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
            timeout_s=_seconds("--timeout", timeout),  # type: ignore[arg-type]
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

_DEFAULT_STORAGE = "sqlite:///studies/autoplace.db"
StorageOpt = Annotated[
    str | None,
    typer.Option("--storage", help="Study storage URL.", show_default=_DEFAULT_STORAGE),
]

StudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="Study name.",
        show_default="one per workload, objective, file and hardware",
    ),
]

#: What explain and report read: the storage and study a recommendation file names.
SourceStorageOpt = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="Study storage URL.",
        show_default=f"the recommendation file's, else {_DEFAULT_STORAGE}",
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


@app.command(cls=_help.Command)
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
    from autoplace.tuning import tune as run_tune
    from autoplace.units import MOST_DEVIATION, parse_fraction, parse_ints, parse_list, parse_size

    with handle_errors():
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
                timeout_s=_seconds("--measure-timeout", measure_timeout)  # type: ignore[arg-type]
            ),
            if_busy=if_busy,
            quiet_wait=quiet_wait,
            steps_per_call=parse_ints(steps_per_call, "--steps-per-call"),
        )
        if as_json:
            result = run_tune(request)
        else:
            from autoplace.report import tune_progress

            with tune_progress(trials) as progress:
                result = run_tune(
                    request,
                    on_trial=progress.trial,
                    on_group=progress.group,
                    on_wait=progress.wait,
                    on_progress=progress.progress,
                )
    cached = []
    if result.answer is not None:
        from autoplace.recommending import remember

        # Where autoplace.recommend() looks first, so that a launcher finds this answer.
        cached = remember(result, result.devices, workload=workload, widths=request.widths)
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
    if result.interrupted:
        partial = f"; the pick so far is in {result.out}" if result.out else ""
        typer.echo(
            f"interrupted: every finished measurement is saved in study {result.study_name!r} "
            f"({result.storage}){partial}; run the same command again to resume",
            err=True,
        )
        raise typer.Exit(130)
    raise typer.Exit(0 if result.best is not None else 1)


@app.command(cls=_help.Command)
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


StudySourceArg = Annotated[
    Path,
    typer.Argument(
        metavar="PATH", help="A recommendation file, or a model file whose study to read."
    ),
]


@app.command(cls=_help.Command)
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
        study = _named("--study", study)
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


@app.command(cls=_help.Command)
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
        study = _named("--study", study)
        written = write_report(
            source, out, workload, storage=storage, study=study, objective=objective
        )
    typer.echo(f"report written to {written}")


@app.command(cls=_help.Command)
def recommend(
    model_file: ModelFileArg,
    workload: WorkloadOpt = None,
    widths: WidthsOpt = None,
    objective: ObjectiveOpt = "throughput",
    steps: StepsOpt = None,
    samples: SamplesOpt = None,
    epochs: EpochsOpt = None,
    feeding: FeedingOpt = "put",
    storage: Annotated[
        str | None,
        typer.Option(
            "--storage",
            help="A team's study storage URL.",
            show_default="the study database beside the cache",
        ),
    ] = None,
    study: Annotated[
        str | None,
        typer.Option(
            "--study",
            help="One study in --storage.",
            show_default="every study of this model, objective and machine",
        ),
    ] = None,
    on_miss: Annotated[
        str,
        typer.Option(
            "--on-miss", help="No answer yet: tune (and cache), fallback, or raise (exit 1)."
        ),
    ] = "tune",
    on_stale: Annotated[
        str,
        typer.Option(
            "--on-stale",
            help="An answer of other jax/jaxlib versions or too old: use, retune, raise.",
        ),
    ] = "use",
    max_batch_size: Annotated[
        int | None,
        typer.Option(
            "--max-batch-size", help="Never recommend a larger batch.", show_default="none"
        ),
    ] = None,
    memory_margin: Annotated[
        str, typer.Option("--memory-margin", help="Device memory to leave free (e.g. 10%).")
    ] = "10%",
    max_deviation: Annotated[
        str | None,
        typer.Option(
            "--max-deviation",
            help="Leave out precisions straying further from float32 (e.g. 5%).",
            show_default="off",
        ),
    ] = None,
    max_age: Annotated[
        float | None,
        typer.Option(
            "--max-age",
            help="Seconds after which an answer is stale.",
            show_default="never stale by age",
        ),
    ] = None,
    as_json: JsonOpt = False,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="env: AUTOPLACE_DEVICE=... lines for shell launchers.",
            show_default="a line for people",
        ),
    ] = None,
) -> None:
    """Where to run, at what batch and precision: from the cache in ms, a study, or one tune."""
    import warnings

    from autoplace.recommending import RecommendRequest
    from autoplace.recommending import recommend as run_recommend
    from autoplace.units import MOST_DEVIATION, parse_fraction, parse_ints

    if output_format not in (None, "env"):
        _fail(f"--format must be env, got {output_format!r} (or use --json)", 2)
    if output_format is not None and as_json:
        _fail(f"--format {output_format} and --json are two outputs: give one of them", 2)
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
    if as_json:
        typer.echo(json.dumps(found.as_dict()))
    elif output_format == "env":
        typer.echo("\n".join(f"{k}={v}" for k, v in found.env().items()))
    else:
        typer.echo(found.log_line())
        for line in found.limits:
            typer.echo(f"  {line}")


@app.command(cls=_help.Command)
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


cache_app = typer.Typer(
    help="See and drop the answers autoplace recommend cached.", cls=_help.Group
)
app.add_typer(cache_app, name="cache")


@cache_app.command("list", cls=_help.Command)
def cache_list(as_json: JsonOpt = False) -> None:
    """The cached answers: model, workload, pick, when, under which software."""
    from autoplace.host import Cache
    from autoplace.recommending import listed

    cache = Cache()
    rows = listed(cache)
    if as_json:
        typer.echo(json.dumps({"cache": str(cache.root), "answers": rows}))
        return
    answers = sum(1 for row in rows if not row.get("damaged"))
    typer.echo(f"cache: {cache.root} ({answers} answer(s))")
    for row in rows:
        if row.get("damaged"):
            typer.echo(
                f"  {row['file']}  damaged ({row['why']}): ignored, refilled on the next "
                "look-up; `autoplace cache clear` removes it"
            )
            continue
        pick = row["pick"]
        what = f"{pick['device']} batch {pick['batch_size']} {pick['precision']}"
        if pick.get("width") is not None:
            what += f" width {pick['width']}"
        sw = row["software"] or {}
        typer.echo(
            f"  {row['key']}  {row['model']} [{row['workload']}, {row['objective']}]: {what}; "
            f"measured {row['measured']} ({row['source']}), jax {sw.get('jax')} "
            f"jaxlib {sw.get('jaxlib')}"
        )


@cache_app.command("clear", cls=_help.Command)
def cache_clear() -> None:
    """Drop every cached answer (the studies they came from are kept)."""
    from autoplace.host import Cache

    cache = Cache()
    typer.echo(f"removed {cache.clear()} cached file(s) from {cache.root}")


def main(argv: list[str] | None = None) -> Any:
    """Entry point: typer's usage errors also end as one line and exit code 2."""
    try:
        code = app(args=argv, standalone_mode=False, prog_name="autoplace")
    except typer.TyperException as exc:  # a usage error: bad or missing option
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "autoplace"
        # No arguments at all: the help is printed above, with no message of its own.
        message = (
            exc.format_message() or f"no command given: `{command}` takes one of the commands above"
        )
        typer.echo(f"autoplace: error: {message} (see: {command} --help)", err=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("autoplace: interrupted", err=True)
        sys.exit(130)
    sys.exit(code or 0)
