"""How a command ends: autoplace's own errors as one line on stderr and their exit code."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import typer

from autoplace.errors import AutoplaceError


def fail(message: str, code: int) -> None:
    """End the command with ``message`` on stderr and exit code ``code``."""
    typer.echo(f"autoplace: error: {message}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def handle_errors(interrupted: Callable[[], bool] | None = None) -> Iterator[None]:
    """Turn autoplace's own errors into one line on stderr and their exit code; 130 where
    ``interrupted()`` says a Ctrl-C was taken (a storage whose wait it cut short)."""
    try:
        yield
    except AutoplaceError as exc:
        fail(str(exc), 130 if interrupted is not None and interrupted() else exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("autoplace: interrupted; nothing was lost: run the same command again", err=True)
        raise typer.Exit(130) from None
