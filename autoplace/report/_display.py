"""Human-readable output for the terminal (rich tables). Nothing here computes a figure."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from autoplace import units
from autoplace.measurement import Measurement
from autoplace.tuning import EQUIVALENT

if TYPE_CHECKING:
    from autoplace.tuning import TuneResult


def measurement_table(m: Measurement, console: Console | None = None) -> None:
    console = console or Console()
    colour = "green" if m.status == "ok" else "red"
    title = f"{m.workload} on {m.device}"
    if m.device_kind:
        title += f" ({m.device_kind})"
    title += f", batch {m.batch_size}, {m.precision}"
    if m.width is not None:
        title += f", width {m.width}"
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_column("note", style="dim")
    table.add_row("status", f"[{colour}]{m.status}[/]", m.reason)
    rows = [
        ("build", units.seconds(m.build_s), "your workload function (state, step)"),
        ("trace + lower", units.seconds(m.lower_s), "jaxpr -> StableHLO"),
        ("XLA compile", units.seconds(m.compile_s), f"persistent cache {m.compile_cache}"),
        ("first call", units.seconds(m.first_call_s), "one step, batch on device"),
        (
            "steady step",
            units.seconds(m.step_s),
            f"median of {m.step_samples} timed chunks, spread ±{units.percent(m.step_spread)}"
            if m.step_s is not None
            else "",
        ),
        ("transfer", units.seconds(m.transfer_s), f"one batch of {units.size(m.batch_bytes)}"),
        ("fed step", units.seconds(m.fed_step_s), "step + putting a host batch on device"),
        ("samples/s", units.rate(m.samples_per_s), f"fed: {units.rate(m.fed_samples_per_s)}"),
        ("FLOPs/step", units.rate(m.flops), f"achieved {units.rate(m.flops_per_s, 'FLOP/s')}"),
        ("memory", units.size(m.peak_bytes), m.peak_bytes_source or ""),
        ("compute dtypes", ", ".join(m.compute_dtypes) or "-", "of dots and convolutions"),
        (
            "vs float32",
            units.percent(m.deviation_vs_float32),
            "relative deviation of the first step's output",
        ),
    ]
    for row in rows:
        if row[1] not in ("-", ""):
            table.add_row(*row)
    console.print(table)


def _score_text(score: float | None, unit: str) -> str:
    if score is None:
        return "-"
    if unit == "s":
        return units.seconds(score)
    return f"{units.rate(score)} {unit}"


@contextlib.contextmanager
def tune_progress(budget: int | None) -> Iterator[Callable[[Any], None]]:
    """A progress bar on stderr; yields the callback ``tune`` calls after each trial.

    Only on a terminal: in logs and pipes a live display is noise (and its last
    refresh would put a blank line before an error message).
    """
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda event: None
        return
    columns = [
        SpinnerColumn(),
        TextColumn("[bold]{task.completed}[/] measured"),
        BarColumn() if budget else TextColumn(""),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    ]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("starting the worker…", total=budget)

        def on_trial(event: Any) -> None:
            m = event.measurement
            last = f"last: {m.device} b={m.batch_size} {m.precision} {m.status}"
            best = ""
            if event.best is not None:
                b = event.best.measurement
                score = _score_text(event.best.score, event.objective.unit)
                best = f"best: {b.device} b={b.batch_size} {b.precision} ({score})"
            progress.update(task, completed=event.new_trials, description=f"{best}  {last}")

        yield on_trial


def tune_summary(result: TuneResult) -> dict[str, Any]:
    """The machine-readable summary ``tune --json`` prints."""
    doc = result.document
    return {
        "study": result.study_name,
        "storage": result.storage,
        "objective": doc["objective"],
        "recommendation": doc.get("recommendation") or None,
        "per_device_precision": [
            {**s.measurement.to_dict(), "score": s.score} for s in result.per_device_precision
        ],
        "alternatives": doc.get("alternatives", []),
        "per_width": doc.get("per_width", []),
        "new_trials": result.new_trials,
        "measured": len(result.measurements),
        "space_size": len(result.space),
        "failed": {m.label(): r.reason for m, r in result.measurements.items() if r.status != "ok"},
        "interrupted": result.interrupted,
        "out": str(result.out) if result.out else None,
    }


def tune_report(result: TuneResult, console: Console | None = None) -> None:
    console = console or Console()
    obj = result.objective
    table = Table(
        title=f"Best per device and precision — {obj.describe()}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    several_widths = len(result.space.widths) > 1
    columns = ["device", "precision", "batch", *(["width"] if several_widths else [])]
    columns += [obj.unit if obj.unit != "s" else "seconds", "step", "±", "compile", "memory"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("device", "precision") else "right")
    for i, s in enumerate(result.per_device_precision):
        m = s.measurement
        spread = obj.spread(m)
        cells = [m.device, m.precision, str(m.batch_size)]
        cells += [str(m.width)] if several_widths else []
        cells += [
            units.seconds(s.score) if obj.unit == "s" else units.rate(s.score),
            units.seconds(m.step_s),
            units.percent(spread),
            units.seconds(m.compile_s),
            units.size(m.peak_bytes),
        ]
        table.add_row(*cells, style="bold green" if i == 0 else None)
    console.print(table)
    failed = [m for m in result.measurements.values() if m.status != "ok"]
    console.print(
        f"{len(result.measurements)} of {len(result.space)} configurations measured "
        f"({result.new_trials} new this run, {len(failed)} failed) — study "
        f"[bold]{result.study_name}[/] in {result.storage}"
    )
    for m in failed[:8]:
        console.print(f"  [red]{m.status}[/] {m.device} b={m.batch_size} {m.precision}: {m.reason}")
    if len(failed) > 8:
        console.print(f"  … and {len(failed) - 8} more (see --json)")
    if result.best is None:
        console.print("[red]no configuration ran successfully: nothing to recommend[/]")
        return
    b = result.best.measurement
    width = "" if b.width is None else f", width {b.width}"
    console.print(
        f"[bold green]winner:[/] {b.device}, batch {b.batch_size}, {b.precision}{width}: "
        f"{_score_text(result.best.score, obj.unit)} "
        f"({confirmation(len(result.best.votes), b.interleaved_with)})"
    )
    rec = result.document.get("recommendation", {})
    runner = rec.get("runner_up")
    if runner:
        verdict = (
            "a real difference"
            if runner["significant"]
            else "[yellow]within the measurement noise: treat them as equal[/]"
        )
        console.print(
            f"margin over the runner-up ({runner['device']}, {runner['precision']}, batch "
            f"{runner['batch_size']}): {units.percent(runner['margin'])} vs noise "
            f"±{units.percent(runner['noise'])} — {verdict}"
            + ("" if runner.get("confirmed", True) else " (its search figures, not confirmed)")
        )
    tie = within_noise(rec)
    if tie:
        console.print(tie)
    if result.out:
        console.print(f"recommendation written to [bold]{result.out}[/]")


#: Why a winner that does not score best can lead (see ``autoplace.tuning._verdict.preference``).
PREFERENCE_TEXT = (
    f"of those within {EQUIVALENT:.0%} of the best, autoplace picks float32 over lower "
    "precisions, then the smaller batch"
)


def within_noise(rec: dict[str, Any]) -> str:
    """The finalists the winner does not beat beyond the noise, in one line ('' if none)."""
    tied = rec.get("within_noise") or []
    if not tied:
        return ""
    names = ", ".join(
        f"{t['device']} {t['precision']} batch {t['batch_size']} ({_behind(t['margin'])})"
        for t in tied
    )
    return f"[yellow]equal within the noise:[/] {names} — {PREFERENCE_TEXT}"


def _spread_text(spread: float | None, chunks: int | None) -> str:
    """A loop's spread, or why it has none: a glance, timed once."""
    return "- (timed once)" if chunks == 1 else units.percent(spread)


def _behind(margin: float) -> str:
    """A runner's standing against the winner, from the winner's margin over it."""
    return f"{units.percent(margin)} behind" if margin >= 0 else f"{units.percent(-margin)} ahead"


def confirmation(votes: int, interleaved_with: int | None) -> str:
    """What a score rests on, in words."""
    if not votes:
        return "search only, not confirmed"
    if votes > 1:
        return f"confirmed {votes} times, timed in turns, the last a duel"
    if interleaved_with:
        others = "finalist" if interleaved_with == 1 else "finalists"
        return f"confirmed, timed in turns with {interleaved_with} other {others}"
    return "confirmed, the only finalist"


def recommendation_report(doc: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    rec, obj, wl = doc["recommendation"], doc["objective"], doc["workload"]
    fig = rec.get("figures", {})
    console.print(
        f"[bold]{wl.get('name')}[/] from {wl.get('path')} — {obj.get('description', obj['name'])}"
    )
    width = f", width {rec['width']}" if "width" in rec else ""
    console.print(
        f"[bold green]run on {rec['device']} ({rec.get('device_kind', '?')}), batch "
        f"{rec['batch_size']}, {rec['precision']}{width}[/]"
    )
    table = Table(show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    basis = confirmation(len(fig.get("score_votes") or []), fig.get("interleaved_with"))
    for label, value in (
        ("score", f"{_score_text(fig.get('score'), obj.get('unit', ''))} ({basis})"),
        ("steady step", units.seconds(fig.get("step_s"))),
        ("spread", _spread_text(fig.get("step_spread"), fig.get("step_samples"))),
        ("samples/s (fed)", units.rate(fig.get("fed_samples_per_s"))),
        ("spread (fed)", units.percent(fig.get("fed_step_spread"))),
        ("compile", units.seconds(fig.get("compile_s"))),
        ("first call", units.seconds(fig.get("first_call_s"))),
        ("transfer", units.seconds(fig.get("transfer_s"))),
        ("memory", units.size(fig.get("peak_bytes"))),
        ("vs float32", units.percent(fig.get("deviation_vs_float32"))),
    ):
        table.add_row(label, value)
    console.print(table)
    runner = rec.get("runner_up")
    if runner:
        console.print(
            f"runner-up: {runner['device']} {runner['precision']} batch {runner['batch_size']}, "
            f"{_behind(runner['margin'])} (noise ±{units.percent(runner['noise'])}"
            f"{'' if runner['significant'] else ', within noise'}"
            f"{'' if runner.get('confirmed', True) else '; search figures, not confirmed'})"
        )
    tie = within_noise(rec)
    if tie:
        console.print(tie)
    for alt in doc.get("alternatives", []):
        console.print(
            f"best on {alt['device']}: batch {alt['batch_size']}, {alt['precision']} — "
            f"{_score_text(alt['figures'].get('score'), obj.get('unit', ''))}"
        )
    for pw in doc.get("per_width", []):
        console.print(
            f"width {pw.get('width')}: {pw['device']}, batch {pw['batch_size']}, "
            f"{pw['precision']} — {_score_text(pw['figures'].get('score'), obj.get('unit', ''))}"
        )
    study, fp = doc["study"], doc.get("fingerprint", {})
    sw = fp.get("software", {})
    console.print(
        f"[dim]study {study['name']} in {study['storage']}: {study.get('measured')} measured, "
        f"{study.get('failed')} failed of {study.get('space_size')}; jax {sw.get('jax')}, "
        f"autoplace {sw.get('autoplace')}; written {doc['created']}[/]"
    )
