"""A tune's result for people (the best per device and precision, the winner and why) and
for machines (``tune --json``'s summary)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from autoplace import units
from autoplace.findings import as_dict as finding_dict
from autoplace.report._lines import arms_out, config_text, findings_out, narrow_table, per_width

if TYPE_CHECKING:
    from autoplace.tuning import Scored, TuneResult


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
        "ended_arms": doc["study"]["ended_arms"],
        "inaccurate_arms": doc["study"]["inaccurate_arms"],
        "machine": doc.get("machine"),
        "findings": doc.get("findings", []),
        "interrupted": result.interrupted,
        "notes": list(result.notes),
        "out": str(result.out) if result.out else None,
    }


def _best_table(result: TuneResult) -> Table:
    """The best of each (device, precision): the search's figure (one scale), the windows'
    where timed in them, and the rest of that measurement."""
    obj, standing = result.objective, result.standing
    table = narrow_table(f"Best per device and precision — {obj.describe()}")
    several_widths = len(result.space.widths) > 1
    columns = ["device", "precision", "batch", *(["width"] if several_widths else [])]
    step_label = {"fed": "fed step", "prefetch": "prefetched", "step": "step"}[obj.loop]
    unit = obj.unit if obj.unit != "s" else "seconds"
    columns += ["search", "windows", step_label, "compile", "memory"]
    for col in columns:
        table.add_column(
            col, justify="left" if col in ("device", "precision") else "right", no_wrap=True
        )
    for i, s in enumerate(standing.per_group):
        m = s.measurement
        cells = [m.device, m.precision, str(m.batch_size)]
        cells += [str(m.width)] if several_widths else []
        cells += [
            _score(s.searched, obj.unit),
            _score(s.score, obj.unit) if s.confirmed else "-",
            units.seconds(m.loop(obj.loop).step_s),
            units.seconds(m.compile_s),
            units.size(m.peak_bytes),
        ]
        table.add_row(*cells, style="bold green" if i == 0 else None)
    table.caption = f"{unit}: the search's, on one scale; the windows', in fresh processes"
    table.caption_justify = "left"
    return table


def _score(score: float | None, unit: str) -> str:
    if score is None:
        return "-"
    return units.seconds(score) if unit == "s" else units.rate(score)


def tune_report(result: TuneResult, console: Console | None = None) -> None:
    console = console or Console()
    verdict, standing = result.verdict, result.standing
    if result.interrupted and not result.measurements:
        _notes_out(result, console)  # nothing measured: no empty table
        return
    console.print(_best_table(result))
    failed = standing.failed
    over = result.document["study"].get("over_memory", [])
    failures = f", {len(failed)} of them failed" if failed else ""
    failures += f", {len(over)} over --max-memory" if over else ""
    console.print(
        f"{len(result.measurements)} of {len(result.space)} configurations measured{failures}; "
        f"{result.new_trials} measurements this run (references and confirmations included) "
        f"— study [bold]{result.study_name}[/] in {result.storage}"
    )
    arms_out(result.document["study"], console)
    ended = standing.ended
    rest = [m for m in failed if (m.device, m.precision, m.width) not in ended]
    for m in rest[:8]:
        console.print(f"  [red]{m.status}[/] {config_text(m)}: {m.reason}", highlight=False)
    if len(rest) > 8:
        console.print(f"  … and {len(rest) - 8} more (see --json)")
    best = result.best
    if best is None:
        nothing = (
            "every configuration that ran needs more memory than --max-memory allows"
            if over
            else "no configuration ran successfully"
        )
        console.print(f"[red]{nothing}: nothing to recommend[/]")
        _notes_out(result, console)
        return
    console.print(f"[bold green]winner:[/] {_winner(result)}", highlight=False)
    ranking = standing.ranking
    closest = ranking.closest if ranking is not None else None
    if closest is not None:
        other, c = closest
        colour = "green" if c.verdict == "faster" else "yellow"
        console.print(
            f"[{colour}]against the closest:[/] {c.sentence(other.config.label())}",
            highlight=False,
        )
    for sentence in verdict.claims:
        console.print(f"[bold]verdict:[/] {sentence}", highlight=False)
    findings_out([finding_dict(f) for f in verdict.findings], console)
    per_width(result.document, console)
    for sentence in (*verdict.phases, *verdict.why[:2]):
        console.print(f"[bold]why:[/] {sentence}", highlight=False)
    console.print("(all of it: autoplace explain" + (f" {result.out})" if result.out else ")"))
    _notes_out(result, console)
    if result.out:
        what = (
            "the pick so far (interrupted) written"
            if result.interrupted
            else "recommendation written"
        )
        console.print(f"{what} to [bold]{result.out}[/]")


def _winner(result: TuneResult) -> str:
    """The pick in one line: where, how, its figure and what it rests on."""
    best, standing, obj = result.best, result.standing, result.objective
    assert best is not None
    b = best.measurement
    width = "" if b.width is None else f", width {b.width}"
    k = standing.steps_per_call
    score = units.score(best.score, obj.unit)
    fused = standing.fused
    if k > 1 and fused is not None:
        width += f", {k} steps a call"
        score += f" at one a call, {fused.figure()} that at {k}"
    return f"{b.device}, batch {b.batch_size}, {b.precision}{width}: {score} ({_rests(best)})"


def _rests(best: Scored) -> str:
    n = len(best.windows)
    if not n:
        return "search only, not confirmed"
    windows = f"{n} window{'s' if n > 1 else ''}"
    return f"the geometric mean of {windows}, each finalist in a fresh process"


def _notes_out(result: TuneResult, console: Console) -> None:
    for note in result.notes:
        console.print(f"[bold]note:[/] {note}", highlight=False)
