"""What the terminal shows while ``tune`` runs: a live line, or a line per measurement."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from autoplace import units
from autoplace.report._lines import config_text


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
        shown = ", ".join(config_text(c) for c in event.configs[:2])
        more = f" +{len(event.configs) - 2}" if len(event.configs) > 2 else ""
        self._progress.update(
            self._task,  # type: ignore[arg-type]
            completed=event.new_trials,
            description=f"{event.phase}: measuring {shown}{more}  {self._best}",
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
            self._best = f"best: {config_text(event.best.config)} ({score})"
        m, self._done = event.measurement, self._done + 1
        if self._progress is not None:
            self._progress.update(self._task, completed=event.new_trials)  # type: ignore[arg-type]
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
    # transient: the live line goes once the tune ends, before its report
    with Progress(*columns, console=console, transient=True) as progress:
        yield TuneProgress(console, progress)
