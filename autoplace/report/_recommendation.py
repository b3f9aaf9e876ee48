"""``autoplace show``: a recommendation file, each figure said with where it comes from."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from autoplace import units
from autoplace.costs import TIMED_CHUNKS
from autoplace.report._lines import (
    arms_out,
    confirmation,
    facts_table,
    findings_out,
    per_width,
    verdict_line,
)


def _arm_deviation(doc: dict[str, Any]) -> float | None:
    """The pick's arm's deviation from float32 in the file's explanation (an older file left
    it out of the pick's own figures)."""
    rec = doc["recommendation"]
    return next(
        (
            a.get("deviation_vs_float32")
            for a in doc.get("explanation", {}).get("arms", [])
            if (a["device"], a["precision"], a.get("width"))
            == (rec["device"], rec["precision"], rec.get("width"))
        ),
        None,
    )


def _figure_rows(
    fig: dict[str, Any], unit: str, rec: dict[str, Any], arm_deviation: float | None = None
) -> tuple[str, list[tuple[str, str, str]]]:
    """Where a file's ``figures`` come from (one measurement: the latest window, else the
    search's), and a row each, noting those of another source (the score, a fused step).
    A loop timed once is said so, never set beside a timed one as its equal."""
    votes = fig.get("score_votes") or []
    fresh = ", a fresh process" if fig.get("fresh_process") else ""
    source = f"figures of its latest window{fresh}" if votes else "figures of the search"
    score = f"the geometric mean of its {len(votes)} windows" if votes else ""
    step = _loop(fig.get("step_s"), fig.get("step_spread"), fig.get("step_samples"))
    fed = _loop(fig.get("fed_step_s"), fig.get("fed_step_spread"), fig.get("fed_step_samples"))
    rows = [
        ("score", units.score(fig.get("score"), unit), score),
        ("fed step", fed[0], fed[1] or "a host batch put, then the step"),
        ("samples/s (fed)", units.rate(fig.get("fed_samples_per_s")), fed[1]),
        ("steady step", step[0], step[1] or "the batch on the device"),
    ]
    fusing = rec.get("fuse") or rec.get("fusing") or {}
    k = rec.get("steps_per_call", 1)
    if k > 1 and fusing.get("step_s") is not None:
        rows.append(
            (f"at {k} steps a call", units.seconds(fusing["step_s"]), "its steps-per-call windows")
        )
    deviation, compared = fig.get("deviation_vs_float32"), ""
    if deviation is None and arm_deviation is not None and rec.get("precision") != "float32":
        deviation, compared = arm_deviation, "its arm's (the file's explanation)"
    rows += [
        ("compile", units.seconds(fig.get("compile_s")), ""),
        ("first call", units.seconds(fig.get("first_call_s")), ""),
        ("transfer", units.seconds(fig.get("transfer_s")), "one put alone (overlaps the step)"),
        ("memory", units.size(fig.get("peak_bytes")), fig.get("peak_bytes_source") or ""),
        ("vs float32", units.percent(deviation), compared),
    ]
    return source, rows


def _loop(seconds: float | None, spread: float | None, chunks: int | None) -> tuple[str, str]:
    """A loop's step with its spread, and a note where it was timed once (``chunks``
    unknown: an older file's, taken as timed)."""
    if seconds is None:
        return "-", ""
    if chunks is not None and chunks < TIMED_CHUNKS:
        return "not timed", f"one step timed once: {units.seconds(seconds)}"
    return f"{units.seconds(seconds)} ± {units.percent(spread)}", ""


def recommendation_report(doc: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    rec, obj, wl = doc["recommendation"], doc["objective"], doc["workload"]
    fig = rec.get("figures", {})
    console.print(
        f"[bold]{wl.get('name')}[/] from {wl.get('path')} — {obj.get('description', obj['name'])}"
    )
    width = f", width {rec['width']}" if "width" in rec else ""
    k = rec.get("steps_per_call", 1)
    fused = f", {k} steps a call" if k > 1 else ""
    console.print(
        f"[bold green]run on {rec['device']} ({rec.get('device_kind', '?')}), batch "
        f"{rec['batch_size']}, {rec['precision']}{width}{fused}[/]"
    )
    source, rows = _figure_rows(fig, obj.get("unit", ""), rec, _arm_deviation(doc))
    console.print(facts_table(source, rows, no_wrap=True))
    basis = confirmation(len(fig.get("score_votes") or []), fig.get("fresh_process"))
    console.print(f"score {basis}", highlight=False)
    closest = verdict_line(rec)
    if closest:
        console.print(closest, highlight=False)
    findings_out(doc.get("findings", []), console)
    several = len(doc.get("search_space", {}).get("widths") or ()) > 1
    for alt in doc.get("alternatives", []):
        width = f", width {alt['width']}" if several and alt.get("width") is not None else ""
        console.print(
            f"best on {alt['device']}: batch {alt['batch_size']}, {alt['precision']}{width} — "
            f"{units.score(alt['figures'].get('score'), obj.get('unit', ''))}"
        )
    per_width(doc, console)
    arms_out(doc["study"], console)
    study, fp = doc["study"], doc.get("fingerprint", {})
    sw = fp.get("software", {})
    console.print(
        f"[dim]study {study['name']} in {study['storage']}: {study.get('measured')} measured, "
        f"{study.get('failed')} failed of {study.get('space_size')}; jax {sw.get('jax')}, "
        f"autoplace {sw.get('autoplace')}; written {doc['created']}[/]"
    )
