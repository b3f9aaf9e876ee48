"""The lines and the narrow table a tune's report, ``show`` and ``explain`` share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table

from autoplace import units

if TYPE_CHECKING:
    from autoplace.config import Config
    from autoplace.measurement import Measurement


def config_text(c: Config | Measurement) -> str:
    """A configuration or a measurement in short (a fused one's steps a call: ``x16/call``)."""
    width = "" if c.width is None else f" width={c.width}"
    k = getattr(c, "steps_per_call", 1)
    fused = f" x{k}/call" if k > 1 else ""
    return f"{c.device} b={c.batch_size} {c.precision}{width}{fused}"


def narrow_table(title: str) -> Table:
    """A table that fits 80 columns (a log's width): one space between columns, no frame."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )


def facts_table(title: str, rows: Iterable[tuple[str, str, str]], *, no_wrap: bool) -> Table:
    """A table of what, value and note, a row each."""
    table = Table(show_header=False, title=title, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right", no_wrap=no_wrap)
    table.add_column("note", style="dim")
    for row in rows:
        table.add_row(*row)
    return table


def arms_out(study: dict[str, Any], console: Console) -> None:
    """The arms a failure ended whatever the batch, and those whose output strayed from
    float32's (the file's ``study`` section)."""
    verdicts = (("ended_arms", "not tried further"), ("inaccurate_arms", "not recommended"))
    for key, verdict in verdicts:
        for arm in study.get(key, []):
            shown = f"{arm['device']} {arm['precision']}" + (
                f" width {arm['width']}" if arm.get("width") is not None else ""
            )
            console.print(f"  [red]{shown}[/]: {arm['reason']}, {verdict}", highlight=False)
    over = study.get("over_memory", [])
    if over:
        console.print(
            f"  [red]{len(over)} configuration(s) measured before[/] need more memory than "
            f"--max-memory allows ({over[0]['reason'].split(',')[0]}, ...): not recommended",
            highlight=False,
        )


def verdict_line(rec: dict[str, Any]) -> str:
    """The pick against the configuration closest to it, in one line ('' if none)."""
    closest = rec.get("closest") or rec.get("runner_up")  # (a version-2 file's)
    if not closest:
        return ""
    other = f"{closest['device']} batch={closest['batch_size']} {closest['precision']}"
    if closest.get("width") is not None:
        other += f" width={closest['width']}"
    colour = {"faster": "green", "equal": "green"}.get(closest.get("verdict", ""), "yellow")
    return f"[{colour}]against the closest:[/] {sentence(closest, other)}"


def sentence(compared: dict[str, Any], other: str) -> str:
    """A comparison of the file in words, as the tune said it."""
    from autoplace.tuning import Comparison

    if "ratio" not in compared:  # a file of schema 2: a margin and its noise only
        margin, noise = compared.get("margin", 0.0), compared.get("noise", 0.0)
        ratio = 1 + margin
        compared = {"ratio": ratio, "low": ratio - noise, "high": ratio + noise,
                    "verdict": "faster" if compared.get("significant") else "within"}  # fmt: skip
    return Comparison.from_dict(compared).sentence(other)


def findings_out(found: Sequence[Mapping[str, Any]], console: Console) -> None:
    """Each finding of a file: its line, then its cause and fix."""
    for f in found:
        console.print(f"[yellow]finding:[/] {f['text']}", highlight=False)
        console.print(f"  [dim]{f['cause']}; {f['fix']}[/]", highlight=False)


def per_width(doc: dict[str, Any], console: Console) -> None:
    """The best of each width, noting those resting on one point (one batch size ran)."""
    unit = doc.get("objective", {}).get("unit", "")
    for pw in doc.get("per_width", []):
        line = (
            f"width {pw.get('width')}: {pw['device']}, batch {pw['batch_size']}, "
            f"{pw['precision']} — {units.score(pw['figures'].get('score'), unit)}"
        )
        batches = pw.get("arm_batches")
        if batches is not None and len(batches) < 2:
            line += (
                " [yellow](rests on one point: its arm ran at that batch size only; "
                "`autoplace explain --measure` adds its neighbour)[/]"
            )
        console.print(line, highlight=False)


def confirmation(windows: int, fresh: bool | None) -> str:
    """What a score rests on, in words."""
    if not windows:
        return "search only, not confirmed"
    where = "each finalist in a fresh process" if fresh else "in one process"
    return f"confirmed in {windows} window{'s' if windows > 1 else ''}, {where}"
