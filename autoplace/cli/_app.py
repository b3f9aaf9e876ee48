"""The ``autoplace`` app: its commands in the order ``--help`` lists them, and ``main``."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from autoplace.cli import _help
from autoplace.cli._cache import cache_clear, cache_list
from autoplace.cli._limits import limits
from autoplace.cli._measure import measure
from autoplace.cli._reading import explain, report, show
from autoplace.cli._recommend import recommend
from autoplace.cli._tune import tune

app = typer.Typer(
    name="autoplace",
    help="Where should this JAX model run, at what batch size and precision, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_help.Group,
)


def _version(value: bool) -> None:
    if value:
        from autoplace import __version__

        typer.echo(f"autoplace {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Where should this JAX model run, at what batch size and precision, and why."""


app.command(cls=_help.Command)(measure)
app.command(cls=_help.Command)(tune)
app.command(cls=_help.Command)(show)
app.command(cls=_help.Command)(explain)
app.command(cls=_help.Command)(report)
app.command(cls=_help.Command)(recommend)
app.command(cls=_help.Command)(limits)

cache_app = typer.Typer(
    help="See and drop the answers autoplace recommend cached.", cls=_help.Group
)
cache_app.command("list", cls=_help.Command)(cache_list)
cache_app.command("clear", cls=_help.Command)(cache_clear)
app.add_typer(cache_app, name="cache")


def main(argv: list[str] | None = None) -> Any:
    """Entry point: typer's usage errors also end as one line and exit code 2."""
    try:
        code = app(args=argv, standalone_mode=False, prog_name="autoplace")
    except typer.TyperException as exc:  # a usage error: bad or missing option
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "autoplace"
        # No arguments at all: the help is printed above, with no message of its own.
        message = (
            exc.format_message() or f"no command given: `{command}` takes one of the commands above"
        )
        typer.echo(f"autoplace: error: {message} (see: {command} --help)", err=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("autoplace: interrupted", err=True)
        sys.exit(130)
    sys.exit(code or 0)
