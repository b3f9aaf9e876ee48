"""``autoplace ... --help`` as a user reads it: rendered through the real command line at a
fixed width, every option's default shown, flags bare, arguments named as in the README."""

from __future__ import annotations

import re

import pytest
import typer
from test_cli import run_cli

from autoplace.cli import app

COMMANDS = [
    [],
    ["measure"],
    ["tune"],
    ["show"],
    ["explain"],
    ["report"],
    ["recommend"],
    ["limits"],
    ["cache"],
    ["cache", "list"],
    ["cache", "clear"],
]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours, where CI forces a terminal


def rendered_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_cli(capsys, *command, "--help")
    assert code == 0 and err == "", err
    return _ANSI.sub("", out)


def panel_rows(text: str) -> dict[str, str]:
    """Each row of the Arguments and Options panels, its wrapped lines joined, by its name
    (``--json``, ``MODEL_FILE``)."""
    rows: dict[str, str] = {}
    panel, name = None, None
    for line in text.splitlines():
        if line.startswith("╭─"):
            panel = line.split()[1]
            continue
        if not line.startswith("│") or panel not in ("Arguments", "Options"):
            panel = None if line.startswith("╰") else panel
            continue
        body = line[2:-1]  # inside "│ " and "│"
        indent = len(body) - len(body.lstrip())
        if body.strip() and indent < 4:  # a row's name, after the column of required stars
            words = body.replace("*", " ", 1).split()
            name = words[0]
            rows[name] = " ".join(words)
        elif name is not None:
            rows[name] += " " + " ".join(body.split())
    return rows


def _command(path: list[str]) -> typer.core.TyperCommand:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "autoplace")
def test_every_option_shows_its_default_and_every_flag_reads_as_a_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    text = rendered_help(capsys, monkeypatch, command)
    # what Rich made of a default written in brackets ("Comma-separated devices .")
    assert " ." not in text and " ," not in text
    assert "<bool>" not in text and "{" not in text
    rows = panel_rows(text)
    params = _command(command).params
    assert "--help" in rows
    assert rows["--help"].split() == ["--help", "Show", "this", "message", "and", "exit."]
    for param in params:
        if param.param_type_name == "argument":
            label = param.metavar
        else:
            label = next(name for name in param.opts if name.startswith("--"))
        row = rows[label]
        if getattr(param, "is_flag", False):  # takes no value: no type, no default
            assert "<" not in row and "[default:" not in row, row
            continue
        assert re.match(rf"{re.escape(label)}( -\w)? <\w+> ", row), row
        assert "[default: " in row or "[required]" in row, row
        assert "[default: ()]" not in row and "[default: ]" not in row, row


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["tune"], "autoplace tune [OPTIONS] MODEL_FILE"),
        (["measure"], "autoplace measure [OPTIONS] MODEL_FILE"),
        (["recommend"], "autoplace recommend [OPTIONS] MODEL_FILE"),
        (["show"], "autoplace show [OPTIONS] [PATH]"),
        (["explain"], "autoplace explain [OPTIONS] [PATH]"),
        (["report"], "autoplace report [OPTIONS] [PATH]"),
        (["cache", "list"], "autoplace cache list [OPTIONS]"),
        ([], "autoplace [OPTIONS] COMMAND [ARGS]..."),
    ],
)
def test_the_usage_line_names_the_arguments_as_the_readme_does(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    usage: str,
) -> None:
    text = rendered_help(capsys, monkeypatch, command)
    [line] = [line for line in text.splitlines() if "Usage:" in line]
    assert line.split() == ["Usage:", *usage.split()]


def test_the_defaults_that_are_not_values_say_what_happens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = panel_rows(rendered_help(capsys, monkeypatch, ["tune"]))
    assert rows["--devices"].endswith("[default: (one of each kind)]")
    assert rows["--precisions"].endswith("[default: (float32,bfloat16,float16)]")
    assert rows["--widths"].endswith("[default: (the file's default width)]")
    assert rows["--storage"].endswith("[default: (sqlite:///studies/autoplace.db)]")
    assert rows["--trials"].endswith("[default: (until nothing is worth measuring)]")
    assert rows["--max-memory"].endswith("[default: (the device's memory)]")
    assert rows["MODEL_FILE"].endswith("[required]")
