"""What the terminal shows while ``tune`` runs: a live line, or a line per measurement."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from autoplace import units
from autoplace.report._lines import config_text

if TYPE_CHECKING:
    from autoplace.tuning import GroupEvent, TrialEvent


class TuneProgress:
    """What the terminal shows while ``tune`` runs (``group`` and ``trial`` are its
    callbacks): on a terminal, one live line on stderr; elsewhere (a log, a pipe), a plain
    line per finished measurement."""

    def __init__(self, console: Console, progress: Progress | None) -> None:
        self._console, self._best, self._done = console, "", 0
        self._live = (progress, progress.add_task("starting the worker…")) if progress else None

    def _show(self, description: str | None = None, completed: int | None = None) -> bool:
        """Update the live line; ``False`` where there is none."""
        if self._live is not None:
            progress, task = self._live
            progress.update(task, description=description, completed=completed)
        return self._live is not None

    def group(self, event: GroupEvent) -> None:
        shown = ", ".join(config_text(c) for c in event.configs[:2])
        more = f" +{len(event.configs) - 2}" if len(event.configs) > 2 else ""
        said = f"{event.phase}: measuring {shown}{more}  {self._best}"
        self._show(said, event.new_trials)

    def progress(self, line: str) -> None:
        """What the measurement in flight is doing now, on the live line."""
        self._show(f"{line}  {self._best}")

    def wait(self, line: str) -> None:
        """The tune waits (another process timing, a busy machine): say so."""
        if not self._show(f"{line}  {self._best}"):
            self._console.print(line, highlight=False, markup=False, soft_wrap=True)

    def trial(self, event: TrialEvent) -> None:
        if event.best is not None:
            score = units.score(event.best.score, event.objective.unit)
            self._best = f"best: {config_text(event.best.config)} ({score})"
        m, self._done = event.measurement, self._done + 1
        if self._show(completed=event.new_trials):
            return
        result = units.score(event.score, event.objective.unit) if m.status == "ok" else m.status
        self._console.print(
            f"{self._done:4d} {event.phase:7} {config_text(m)}: {result}"
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
    with Progress(*columns, console=console, transient=True) as progress:
        yield TuneProgress(console, progress)
