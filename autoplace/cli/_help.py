"""How ``autoplace ... --help`` reads: typer's Rich help, with two habits of typer 0.29 undone.

* typer 0.29's Rich panels ask every option for its type, flags included, so ``--json``
  read ``--json <bool>`` as if it took a value (its plain formatter, and its Rich panels
  up to 0.27, leave a flag's type out). A flag here has no type: its metavar is set empty,
  which is what the panel shows in the type column when one is set.
* Since typer 0.27 the usage line wraps a required argument in braces and keeps its Python
  name (``autoplace tune [OPTIONS] {model_file}``). Here it names each argument by its
  metavar, bare when required and in brackets when not, as click and the README write
  them: ``autoplace tune [OPTIONS] MODEL_FILE``, ``autoplace show [OPTIONS] [PATH]``.

Defaults that are not a literal value are given with ``show_default="..."`` (rendered as
``[default: (the file's default width)]``), never as brackets in the help text: Rich reads
``[default: x]`` in help text as a markup tag and drops it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


def _flags_untyped(params: Iterable[Any]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""


class Command(TyperCommand):
    """A command whose help names its arguments as the README does and shows flags bare."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name if param.nargs == 1 else f"{name}...")
        return pieces

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _flags_untyped(self.get_params(ctx))
        super().format_help(ctx, formatter)


class Group(TyperGroup):
    """A group (``autoplace``, ``autoplace cache``) whose help shows flags bare."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _flags_untyped(self.get_params(ctx))
        super().format_help(ctx, formatter)
