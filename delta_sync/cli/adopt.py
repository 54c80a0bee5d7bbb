"""`adopt`: the live tables and views written back into their spec files, each file's diff shown first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _guard, _with_feedback
from delta_sync.cli.options import EnvOpt


def adopt(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TARGET",
            help="SPECS (a spec folder or file; default: the project's), then the tables or views to adopt "
            "(default: every one whose live state differs from its spec).",
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 2 when a spec file would change, 0 when none.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write the files without asking.")] = False,
    env: EnvOpt = None,
) -> None:
    """Edit spec files to describe the live tables and views they differ from (a change made by hand).

    Each file keeps its comments, key order and layout, and its diff is printed first. Tables with no spec are left
    to `import`.

    Exit codes:
    0  nothing (more) to adopt, or adopted
    2  --check found spec files to change
    1  an error, or cancelled

    Example:
    $ delta-sync adopt specs/ shop.orders --check
    """
    args = list(targets or [])
    specs = None
    if args and (Path(args[0]).exists() or args[0].endswith((".yaml", ".yml", "/"))):
        specs = args.pop(0)
    if not check and not yes and not sys.stdin.isatty():
        # Refused before Spark starts.
        console.err.print("[ds.blocked]Refusing to adopt without confirmation: pass --yes (or --check).[/]")
        raise typer.Exit(1)
    from delta_sync.review import adopting  # the review and its readers: not for `--help`

    adopted = _with_feedback(lambda progress: adopting.adopt(specs, args, env=env, progress=progress))
    for adoption in adopted.changed:
        _print_diff(adoption.diff())
    for warning in adopted.warnings:
        console.err.print(Text(f"warning: {warning}", style="ds.change"))
    for note in adopted.notes:
        console.err.print(Text(note, style="ds.muted"))
    changed = adopted.changed
    if not changed:
        if adopted.warnings:
            console.err.print(Text("No spec file changed; the values above are left to you.", style="ds.change"))
        else:
            console.err.print(Text("Nothing to adopt: the specs describe the live tables and views.", style="ds.ok"))
        return
    if check:
        console.err.print(Text(f"{len(changed)} spec file(s) would change.", style="ds.change"))
        raise typer.Exit(2)
    if not yes and not typer.confirm(f"Write these changes to {len(changed)} spec file(s)?", default=False):
        console.err.print("Cancelled; no spec file was changed.")
        raise typer.Exit(1)
    written = _guard(lambda: adopting.write(adopted))
    console.err.print(Text(f"Adopted the live state into {len(written)} spec file(s).", style="ds.ok"))


def _print_diff(diff: str) -> None:
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "ds.table"
        elif line.startswith("+"):
            style = "ds.create"
        elif line.startswith("-"):
            style = "ds.remove"
        elif line.startswith("@@"):
            style = "ds.muted"
        else:
            style = ""
        console.out.print(Text(line, style=style))
