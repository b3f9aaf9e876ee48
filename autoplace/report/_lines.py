"""The lines a tune's report and ``show`` both print: a configuration in short, the pick
against the closest, the findings, the arms left out, the best of each width, and what a
score rests on; and the narrow table both lay out."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from autoplace import units


def config_text(c: Any) -> str:
    """A configuration or a measurement in short (a fused one's steps a call: ``x16/call``)."""
    width = "" if c.width is None else f" width={c.width}"
    k = getattr(c, "steps_per_call", 1)
    fused = f" x{k}/call" if k > 1 else ""
    return f"{c.device} b={c.batch_size} {c.precision}{width}{fused}"


def narrow_table(title: str) -> Table:
    """A table laid out to fit 80 columns (a log's width, and rich's off a terminal): one
    space of padding and a space between columns, no frame."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )


def where(c: Any, width: bool = True) -> str:
    """A configuration in words (``cpu:0 float32 batch 64 width 8``), the width left out
    when the study searched one (``width=False``) or has none."""
    shown = f"{c['device']} {c['precision']} batch {c['batch_size']}"
    return shown + (f" width {c['width']}" if width and c.get("width") is not None else "")


def arms_out(study: dict[str, Any], console: Console) -> None:
    """The arms ended by a failure that does not depend on the batch size, and those whose
    output strayed from float32's, from the document's ``study`` section."""
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
    """The pick against the configuration closest to it, in one line ('' if none): how
    many times faster, with its interval and verdict."""
    closest = rec.get("closest") or rec.get("runner_up")  # (a version-2 file's)
    if not closest:
        return ""
    other = f"{closest['device']} batch={closest['batch_size']} {closest['precision']}"
    if closest.get("width") is not None:
        other += f" width={closest['width']}"
    colour = {"faster": "green", "equal": "green"}.get(closest.get("verdict", ""), "yellow")
    return f"[{colour}]against the closest:[/] {sentence(closest, other)}"


def sentence(compared: dict[str, Any], other: str) -> str:
    """A comparison of the file (``closest``, ``equivalent``) in words, as the tune said it."""
    from autoplace.tuning import Comparison

    if "ratio" not in compared:  # a file of schema 2: a margin and its noise only
        margin, noise = compared.get("margin", 0.0), compared.get("noise", 0.0)
        ratio = 1 + margin
        compared = {"ratio": ratio, "low": ratio - noise, "high": ratio + noise,
                    "verdict": "faster" if compared.get("significant") else "within"}  # fmt: skip
    return Comparison.from_dict(compared).sentence(other)


def findings_out(found: list[dict[str, Any]], console: Console) -> None:
    """The findings of a file (``[[findings]]``), each its line, then its cause and fix."""
    for f in found:
        console.print(f"[yellow]finding:[/] {f['text']}", highlight=False)
        console.print(f"  [dim]{f['cause']}; {f['fix']}[/]", highlight=False)


def per_width(doc: dict[str, Any], console: Console) -> None:
    """The best of each width, and which of them rest on one point: an arm measured at one
    batch size only, so that its pick is one noisy figure, not a curve's best."""
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
