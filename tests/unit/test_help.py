"""`--help` reads well, for every command and group: no `<bool>` after a flag, every option and argument
described (and its description shown whole, none of it taken for markup), prose that flows instead of lines
broken where the source wraps, the exit codes one a line, and an example."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.cli.help import reflow, split_example

runner = CliRunner()
ROOT = typer.main.get_command(cli.app)
# Wide enough that no option's description wraps: each shows on one line of the panel.
WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}


def commands(command: Any = ROOT, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from commands(sub, (*path, name))


PATHS = [path for path, _command in commands()]


def rendered(path: tuple[str, ...]) -> str:
    done = runner.invoke(cli.app, [*path, "--help"], prog_name="delta-sync", env=WIDE)
    assert done.exit_code == 0, done.output
    return done.stdout


def plain(text: str) -> str:
    """The help without its panels' borders, each run of spaces one space."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_every_command_is_checked() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"", "plan", "graph", "engine", "engine status", "engine stop", "rehearsal", "rehearsal clean"} <= names
    assert len(names) == 22  # the root, 16 commands, and two groups with their 3 commands


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "delta-sync")
def test_help_reads_well(path: tuple[str, ...]) -> None:
    command = dict(commands())[path]
    out = rendered(path)
    assert "<bool>" not in out
    # One example, after the options: a command line of delta-sync.
    assert command.epilog is not None
    example = out[out.index("Example:") :].splitlines()
    assert example[1].strip().startswith("$ delta-sync "), example
    assert out.index("Example:") > out.index("╰")
    # Every option and argument is described, and its description is shown whole.
    ctx = typer._click.Context(command, info_name="delta-sync")
    for param in command.get_params(ctx):
        assert param.help, f"{' '.join(path)}: {param.name} has no description"
        assert " ".join(param.help.split()) in plain(out), f"{' '.join(path)}: {param.name}'s help is not shown whole"
    # The help is shown whole: none of it is taken for markup.
    assert " ".join(command.help.split()) in plain(out)
    # Prose flows: no paragraph of the help is broken where the source wrapped it; lists keep their lines.
    for paragraph in command.help.split("\n\n"):
        lines = paragraph.splitlines()
        assert len(lines) == 1 or lines[0].endswith(":"), paragraph
    # A command (not a group) lists its exit codes, one a line: `0  what it means`.
    if not hasattr(command, "commands"):
        codes = command.help[command.help.index("Exit codes:\n") :].split("\n\n")[0].splitlines()[1:]
        assert codes, command.help
        assert all(re.match(r"(\d+  \S| {3}\S)", line) for line in codes), codes
        assert "0  " in out


def test_the_command_list_shows_one_line_per_command() -> None:
    out = rendered(())
    listed = out[out.index("─ Commands ─") :]
    for path in PATHS:
        if len(path) == 1:
            row = next(line for line in listed.splitlines() if line.startswith(f"│ {path[0]} "))
            summary = dict(commands())[path].help.split("\n\n")[0]
            assert summary in row, row


def test_reflow_joins_prose_and_keeps_lists() -> None:
    text = """First line
    goes on.

    Exit codes:
    0  fine
    1  not fine

    Items that wrap
      keep their indented lines.
    """
    assert reflow(text) == (
        "First line goes on.\n\nExit codes:\n0  fine\n1  not fine\n\nItems that wrap\n  keep their indented lines."
    )


def test_the_example_is_split_off_into_the_epilog() -> None:
    body, example = split_example("Do a thing.\n\nExample:\n$ delta-sync thing [x]")
    assert (body, example) == ("Do a thing.", "Example:\n$ delta-sync thing [x]")
    assert split_example("No example here.") == ("No example here.", None)
    # Brackets in an example are text, not markup.
    assert "$ delta-sync sql " in rendered(("sql",))
