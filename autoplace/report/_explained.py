"""``autoplace explain``: the explanation's sentences, its findings, each arm's fitted line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from autoplace import units
from autoplace.report._lines import findings_out, narrow_table

if TYPE_CHECKING:
    from autoplace.costs import Line
    from autoplace.explaining import Explanation


def explanation_report(explanation: Explanation, console: Console | None = None) -> None:
    """The explanation's sentences, its findings, then each arm's fitted line."""
    console = console or Console()
    for sentence in explanation.sentences:
        console.print(f"• {sentence}", highlight=False)
    findings_out(explanation.findings, console)
    table = narrow_table(f"Cost model per arm ({explanation.loop} loop): t(b) = a + c·b")
    table.add_column("arm", min_width=9)  # "bfloat16", "width 128" whole
    for col in ("a:\nfixed", "c: per\nsample", "h:\nfeeding", "holds\nfor", "fit\nerror"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("leaves\nthe line", justify="right", no_wrap=True)
    table.add_column("one-off", justify="right", no_wrap=True)
    for model in explanation.models.values():
        line = model.line(explanation.loop)
        label = model.label.replace(" width ", "\nwidth ")
        if line is None:
            ran = f"batch {model.measured[0]}" if model.measured else "-"
            table.add_row(label, "-", "-", "-", ran, "-", "-", units.seconds(model.one_off_s))
            continue
        table.add_row(
            label,
            units.seconds(line.fixed),
            units.seconds(line.per_sample),
            units.seconds(model.transfer_per_sample),
            f"{min(line.batches)}–{max(line.batches)} ({len(line.batches)})",
            units.percent(line.error),
            _leaves(line),
            units.seconds(model.one_off_s),
        )
    console.print(table)


def _leaves(line: Line) -> str:
    """Where the measurements leave a fitted line, signed (+: slower than the line)."""
    out = [
        f"{b} {off:+.0%}"
        for b, off in ((line.below_at, line.below), (line.departs_at, line.departure))
        if b is not None and off is not None
    ]
    return "\n".join(out) or "-"
