"""A tune's result for people (the table of the best per device and precision, the winner
and why) and for machines (``tune --json``'s summary)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from autoplace import units
from autoplace.report._lines import (
    arms_out,
    config_text,
    confirmation,
    findings_out,
    narrow_table,
    per_width,
    verdict_line,
)

if TYPE_CHECKING:
    from autoplace.tuning import TuneResult


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
    """The best of each (device, precision): every column from the loop the score rests on."""
    obj = result.objective
    table = narrow_table(f"Best per device and precision — {obj.describe()}")
    several_widths = len(result.space.widths) > 1
    columns = ["device", "precision", "batch", *(["width"] if several_widths else [])]
    step_label = {"fed": "fed step", "prefetch": "prefetched step", "step": "step"}[obj.loop]
    columns += [obj.unit if obj.unit != "s" else "seconds", step_label, "±", "compile", "memory"]
    for col in columns:
        # No cell is ever wrapped or cut: the widest row fits 80 columns (a log's width).
        table.add_column(
            col, justify="left" if col in ("device", "precision") else "right", no_wrap=True
        )
    for i, s in enumerate(result.per_device_precision):
        m = s.measurement
        cells = [m.device, m.precision, str(m.batch_size)]
        cells += [str(m.width)] if several_widths else []
        cells += [
            units.seconds(s.score) if obj.unit == "s" else units.rate(s.score),
            units.seconds(m.step_time(obj.loop)),
            units.percent(obj.spread(m)),
            units.seconds(m.compile_s),
            units.size(m.peak_bytes),
        ]
        table.add_row(*cells, style="bold green" if i == 0 else None)
    return table


def tune_report(result: TuneResult, console: Console | None = None) -> None:
    console = console or Console()
    obj = result.objective
    if result.interrupted and not result.measurements:
        _notes_out(result, console)  # nothing measured: no empty table, no verdict
        return
    console.print(_best_table(result))
    failed = result.standing.failed
    over = result.document["study"].get("over_memory", [])
    failures = f", {len(failed)} of them failed" if failed else ""
    failures += f", {len(over)} over --max-memory" if over else ""
    console.print(
        f"{len(result.measurements)} of {len(result.space)} configurations measured{failures}; "
        f"{result.new_trials} measurements this run (references and confirmations included) "
        f"— study [bold]{result.study_name}[/] in {result.storage}"
    )
    arms_out(result.document["study"], console)
    ended = result.standing.ended
    rest = [m for m in failed if (m.device, m.precision, m.width) not in ended]
    for m in rest[:8]:
        console.print(f"  [red]{m.status}[/] {config_text(m)}: {m.reason}", highlight=False)
    if len(rest) > 8:
        console.print(f"  … and {len(rest) - 8} more (see --json)")
    if result.best is None:
        nothing = (
            "every configuration that ran needs more memory than --max-memory allows"
            if over
            else "no configuration ran successfully"
        )
        console.print(f"[red]{nothing}: nothing to recommend[/]")
        _notes_out(result, console)
        return
    b = result.best.measurement
    width = "" if b.width is None else f", width {b.width}"
    rec = result.document.get("recommendation", {})
    k = rec.get("steps_per_call", 1)
    score = units.score(result.best.score, obj.unit)
    if k > 1:  # the score is one step a call's; the windows timed K against it
        width += f", {k} steps a call"
        score += f" at one a call, {rec['fusing']['ratio']:.2f}x that at {k}"
    console.print(
        f"[bold green]winner:[/] {b.device}, batch {b.batch_size}, {b.precision}{width}: "
        f"{score} ({confirmation(len(result.best.votes), b.fresh_process)})"
    )
    closest = verdict_line(rec)
    if closest:
        console.print(closest, highlight=False)
    findings_out(result.document.get("findings", []), console)
    per_width(result.document, console)
    if result.explanation is not None:
        # The verdict is said above; then the two sentences that say why, and the feeding.
        said = result.explanation.sentences[1:3]
        fed = [s for s in result.explanation.sentences if s.startswith(FED_THREE_WAYS)]
        for sentence in [*said, *(s for s in fed if s not in said)]:
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


#: How the explanation's sentence on the pick fed three ways begins.
FED_THREE_WAYS = "Fed three ways"


def _notes_out(result: TuneResult, console: Console) -> None:
    """What the run did that its table does not show (:attr:`TuneResult.notes`)."""
    for note in result.notes:
        console.print(f"[bold]note:[/] {note}", highlight=False)
