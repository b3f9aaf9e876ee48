"""Human-readable output for the terminal (rich tables). Nothing here computes a figure."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from autoplace import units
from autoplace.costs import TIMED_CHUNKS
from autoplace.measurement import Measurement

if TYPE_CHECKING:
    from autoplace.explaining import Explanation
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
        ("make_batch", units.seconds(m.batch_s), "your make_batch, one host batch"),
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


def _config_text(c: Any) -> str:
    """A configuration or a measurement in short (a fused one's steps a call: ``x16/call``)."""
    width = "" if c.width is None else f" width={c.width}"
    k = getattr(c, "steps_per_call", 1)
    fused = f" x{k}/call" if k > 1 else ""
    return f"{c.device} b={c.batch_size} {c.precision}{width}{fused}"


class TuneProgress:
    """What the terminal shows while ``tune`` runs: ``group`` and ``trial`` are its
    ``on_group`` and ``on_trial`` callbacks.

    On a terminal, one live line on stderr: what is being measured, in which phase,
    and the best so far. Elsewhere (a log, CI, ``nohup``, a launcher's pipe), one plain
    line per finished measurement, written as it finishes.
    """

    def __init__(self, console: Console, progress: Progress | None) -> None:
        self._console, self._progress = console, progress
        self._task = progress.add_task("starting the worker…") if progress else None
        self._best, self._done = "", 0

    def group(self, event: Any) -> None:
        if self._progress is None:
            return
        shown = ", ".join(_config_text(c) for c in event.configs[:2])
        more = f" +{len(event.configs) - 2}" if len(event.configs) > 2 else ""
        self._progress.update(
            self._task,  # type: ignore[arg-type]
            completed=event.new_trials,
            description=f"{event.phase.value}: measuring {shown}{more}  {self._best}",
        )

    def progress(self, line: str) -> None:
        """What the measurement in flight is doing now (setting up which configuration,
        which turn): shown on the live line, so a long compile or a hang is visible."""
        if self._progress is not None:
            self._progress.update(self._task, description=f"{line}  {self._best}")  # type: ignore[arg-type]

    def wait(self, line: str) -> None:
        """The tune waits (another process timing on the device, a busy machine): say so."""
        if self._progress is not None:
            self._progress.update(self._task, description=f"{line}  {self._best}")  # type: ignore[arg-type]
            return
        self._console.print(line, highlight=False, markup=False, soft_wrap=True)

    def trial(self, event: Any) -> None:
        if event.best is not None:
            score = units.score(event.best.score, event.objective.unit)
            self._best = f"best: {_config_text(event.best.config)} ({score})"
        m, self._done = event.measurement, self._done + 1
        if self._progress is not None:
            self._progress.update(self._task, completed=event.new_trials)  # type: ignore[arg-type]
            return
        result = units.score(event.score, event.objective.unit) if m.status == "ok" else m.status
        self._console.print(
            f"{self._done:4d} {event.phase.value:7} {_config_text(m)}: {result}"
            f"{'' if m.status == 'ok' else ' (' + m.reason + ')'}  {self._best}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@contextlib.contextmanager
def tune_progress(budget: int | None) -> Iterator[TuneProgress]:
    """Progress on stderr while ``tune`` runs (see :class:`TuneProgress`)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield TuneProgress(console, None)
        return
    columns = [
        SpinnerColumn(),
        TextColumn("[bold]{task.completed}[/] measured"),
        BarColumn() if budget else TextColumn(""),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    ]
    # transient: the live line goes once the tune ends, before its report
    with Progress(*columns, console=console, transient=True) as progress:
        yield TuneProgress(console, progress)


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


def _several_widths(doc: dict[str, Any]) -> bool:
    return len(doc.get("search_space", {}).get("widths") or ()) > 1


def _arms_out(study: dict[str, Any], console: Console) -> None:
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


def tune_report(result: TuneResult, console: Console | None = None) -> None:
    console = console or Console()
    obj = result.objective
    if result.interrupted and not result.measurements:
        _notes_out(result, console)  # nothing measured: no empty table, no verdict
        return
    console.print(_best_table(result))
    failed = result.standing.failed
    failures = f", {len(failed)} of them failed" if failed else ""
    console.print(
        f"{len(result.measurements)} of {len(result.space)} configurations measured{failures}; "
        f"{result.new_trials} measurements this run (references and confirmations included) "
        f"— study [bold]{result.study_name}[/] in {result.storage}"
    )
    _arms_out(result.document["study"], console)
    ended = result.standing.ended
    rest = [m for m in failed if (m.device, m.precision, m.width) not in ended]
    for m in rest[:8]:
        console.print(f"  [red]{m.status}[/] {_config_text(m)}: {m.reason}", highlight=False)
    if len(rest) > 8:
        console.print(f"  … and {len(rest) - 8} more (see --json)")
    if result.best is None:
        console.print("[red]no configuration ran successfully: nothing to recommend[/]")
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
    _per_width(result.document, console)
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

    fields = ("ratio", "low", "high", "verdict", "windows", "basis")
    if not all(k in compared for k in fields):  # a file of schema 2: margin and noise only
        margin, noise = compared.get("margin", 0.0), compared.get("noise", 0.0)
        real = "a real difference" if compared.get("significant") else "within the noise"
        return f"{units.percent(margin)} ahead (noise ±{units.percent(noise)}): {real}"
    return Comparison(**{k: compared[k] for k in fields}).sentence(other)


def findings_out(found: list[dict[str, Any]], console: Console) -> None:
    """The findings of a file (``[[findings]]``), each its line, then its cause and fix."""
    for f in found:
        console.print(f"[yellow]finding:[/] {f['text']}", highlight=False)
        console.print(f"  [dim]{f['cause']}; {f['fix']}[/]", highlight=False)


def _arm_deviation(doc: dict[str, Any]) -> float | None:
    """The pick's arm's deviation from float32 as the file's explanation holds it (the
    largest its windows measured): a file of an older autoplace left it out of the pick's
    own figures."""
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
    """``show``'s figures of a placement (a file's ``figures``): where they come from, in
    words, and a row each, noting those of another source. All are of one measurement (the
    latest window, else the search's) but the score (its windows', fitted) and a fused step
    (its steps-per-call windows). A loop timed once (a glance, what a phase takes of the
    loop it does not rank on: one step right after the first call) is said so, never set
    beside a timed one as its equal."""
    votes = fig.get("score_votes") or []
    fresh = ", a fresh process" if fig.get("fresh_process") else ""
    source = f"figures of its latest window{fresh}" if votes else "figures of the search"
    score = f"its {len(votes)} windows, drift fitted out" if votes else ""
    step = _loop(fig.get("step_s"), fig.get("step_spread"), fig.get("step_samples"))
    fed = _loop(fig.get("fed_step_s"), fig.get("fed_step_spread"), fig.get("fed_step_samples"))
    rows = [
        ("score", units.score(fig.get("score"), unit), score),
        ("fed step", fed[0], fed[1] or "a host batch put, then the step"),
        ("samples/s (fed)", units.rate(fig.get("fed_samples_per_s")), fed[1]),
        ("steady step", step[0], step[1] or "the batch on the device"),
    ]
    fusing = rec.get("fusing") or {}
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
    """A loop's step as a value (with its spread) and what to add to where it comes from:
    a loop timed once is no figure to read beside a timed one (``1.3 ms`` for a glance
    where the timed fed step took 544 µs), so it is said in words. ``chunks`` unknown (an
    older file's fed loop): taken as timed."""
    if seconds is None:
        return "-", ""
    if chunks is not None and chunks < TIMED_CHUNKS:
        return "not timed", f"one step timed once: {units.seconds(seconds)}"
    return f"{units.seconds(seconds)} ± {units.percent(spread)}", ""


def _per_width(doc: dict[str, Any], console: Console) -> None:
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
    table = Table(show_header=False, title=source, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("note", style="dim")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    basis = confirmation(len(fig.get("score_votes") or []), fig.get("fresh_process"))
    console.print(f"score {basis}", highlight=False)
    closest = verdict_line(rec)
    if closest:
        console.print(closest, highlight=False)
    findings_out(doc.get("findings", []), console)
    several = _several_widths(doc)
    for alt in doc.get("alternatives", []):
        width = f", width {alt['width']}" if several and alt.get("width") is not None else ""
        console.print(
            f"best on {alt['device']}: batch {alt['batch_size']}, {alt['precision']}{width} — "
            f"{units.score(alt['figures'].get('score'), obj.get('unit', ''))}"
        )
    _per_width(doc, console)
    _arms_out(doc["study"], console)
    study, fp = doc["study"], doc.get("fingerprint", {})
    sw = fp.get("software", {})
    console.print(
        f"[dim]study {study['name']} in {study['storage']}: {study.get('measured')} measured, "
        f"{study.get('failed')} failed of {study.get('space_size')}; jax {sw.get('jax')}, "
        f"autoplace {sw.get('autoplace')}; written {doc['created']}[/]"
    )


def explanation_report(explanation: Explanation, console: Console | None = None) -> None:
    """``autoplace explain``: the explanation's sentences, most important first, then each
    arm's fitted line."""
    console = console or Console()
    for sentence in explanation.sentences:
        console.print(f"• {sentence}", highlight=False)
    findings_out(list(explanation.findings), console)
    table = narrow_table(f"Cost model per arm ({explanation.loop} loop): t(b) = a + c·b")
    # Headers of short words and figures that never wrap: at 80 columns nothing is cut.
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


def _leaves(line: Any) -> str:
    """Where the measurements leave a fitted line, signed (+: slower than the line)."""
    out = [
        f"{b} {off:+.0%}"
        for b, off in ((line.below_at, line.below), (line.departs_at, line.departure))
        if b is not None and off is not None
    ]
    return "\n".join(out) or "-"
