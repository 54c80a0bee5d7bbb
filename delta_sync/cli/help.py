"""How `--help` reads: the command classes every command and group of the app is made with, which make the help
texts written in the source (hard-wrapped at 120 characters) flow, show a command's example below its options,
and print no type after a flag.

The texts are written as plain prose: a paragraph's lines are joined into one, which the terminal wraps; a list
(a paragraph whose first line ends with a colon, as `Exit codes:` with one code a line) keeps its lines. Lists are
written flush with the text: typer removes an indent that every line after a help's first has. A last paragraph
`Example:` with a command line (`$ delta-sync ...`) becomes the command's epilog, printed after its options. A
help text holds no `[...]`: typer reads help as rich markup, and markup would swallow it."""

from __future__ import annotations

import inspect
from typing import Any

import typer
from rich.markup import escape

EXAMPLE = "Example:"


def reflow(text: str) -> str:
    """`text` with each paragraph's lines joined by spaces, except in a list: a paragraph whose first line ends
    with a colon (`Exit codes:`, one code a line), or whose later lines are indented, keeps its lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    flowed = []
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        if lines[0].endswith(":") or any(line[:1].isspace() for line in lines[1:]):
            flowed.append(paragraph)
        else:
            flowed.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(flowed)


def split_example(text: str) -> tuple[str, str | None]:
    """The help text without its `Example:` paragraph, and that paragraph (None when it has none)."""
    body, sep, example = inspect.cleandoc(text).rpartition(f"\n\n{EXAMPLE}")
    if not sep:
        return text, None
    return body, f"{EXAMPLE}{example}".rstrip()


def polish(command: Any) -> None:
    """A command's (or group's) help text made to flow, its example moved to its epilog, and its parameters'
    help texts made to flow, with no type shown after a flag."""
    if command.help:
        body, example = split_example(command.help)
        command.help = reflow(body)
        if example is not None and not command.epilog:
            # The epilog is printed as rich markup: a command line's brackets are text.
            command.epilog = escape(example)
    for param in command.params:
        quiet(param)


def quiet(param: Any) -> None:
    """A parameter's help made to flow; a flag's type (`<bool>`) left out, as a flag takes no value, and so is the
    type of an argument named by its metavar (`SPECS`, not `specs <path>`), whose help says what it is."""
    if getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""
    if isinstance(param, typer.core.TyperArgument) and param.metavar:
        param.display_type_rich = _no_type  # type: ignore[method-assign]
    if getattr(param, "help", None):
        param.help = reflow(param.help)


def _no_type(ctx: Any) -> None:
    return None


class Command(typer.core.TyperCommand):
    """A command whose help reads well (`polish`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        polish(self)

    def get_params(self, ctx: Any) -> Any:
        params = super().get_params(ctx)
        for param in params:  # --help is made when first asked for
            quiet(param)
        return params
