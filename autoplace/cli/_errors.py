"""How a command ends: autoplace's own errors as one line on stderr and their exit code."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import TextIO

import typer

from autoplace.errors import AutoplaceError


def fail(message: str, code: int) -> None:
    """End the command with ``message`` on stderr and exit code ``code``."""
    typer.echo(f"autoplace: error: {message}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def handle_errors(interrupted: Callable[[], bool] | None = None) -> Iterator[None]:
    """Turn autoplace's own errors into one line on stderr and their exit code (130 where
    ``interrupted()`` says a Ctrl-C was taken: a storage whose wait it cut short), and its
    warnings (a cache it could not use) into their line alone: Python's would start with
    the file and line of autoplace's source that gave it, of no use to a user."""
    with warnings.catch_warnings():
        warnings.showwarning = _our_line(warnings.showwarning)
        try:
            yield
        except AutoplaceError as exc:
            fail(str(exc), 130 if interrupted is not None and interrupted() else exc.exit_code)
        except KeyboardInterrupt:
            typer.echo(
                "autoplace: interrupted; nothing was lost: run the same command again", err=True
            )
            raise typer.Exit(130) from None


def _our_line(shown: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` that writes autoplace's own warnings as their message (a
    line that starts ``autoplace: ``), and leaves others' to ``shown``."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if category.__module__.split(".")[0] == "autoplace":
            typer.echo(str(message), err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    return show
