"""The command line: parse -> api -> render -> exit code. Results on stdout, everything else on stderr.

This module holds the `delta-sync` app, its root options (--version, --no-engine) and `main`, and registers
on the app the commands of the modules beside it."""

from __future__ import annotations

import sys
from functools import partial
from typing import Annotated

import typer
from rich.text import Text

from delta_sync.cli import adopt, catalog, changes, console, ddl, doctor, engine, lint, offline, plans
from delta_sync.cli.help import Command
from delta_sync.cli.options import _Commands
from delta_sync.version import __version__

app = typer.Typer(
    cls=_Commands,
    help="""Declarative, safe schema migrations for Delta Lake tables.

    Example:
    $ delta-sync plan specs/
    """,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        console.out.print(f"delta-sync {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    no_engine: Annotated[
        bool,
        typer.Option(
            "--no-engine",
            help="Start Spark in this process instead of borrowing the warm engine's (also DELTA_SYNC_NO_ENGINE=1; "
            "the default when CI=true). Accepted after the command too.",
        ),
    ] = False,
) -> None:
    pass


# In the order --help lists them. Each command is a help.Command, whose help reads well.
command = partial(app.command, cls=Command)
command()(offline.validate)
command()(lint.lint)
command()(offline.fmt)
command()(offline.graph)
command()(plans.show)
command()(offline.schema)
command()(ddl.ddl)
command()(plans.plan)
command()(changes.apply)
command()(changes.rollback)
command("import")(catalog.import_)
command()(adopt.adopt)
command()(catalog.drift)
command()(catalog.check)
command()(catalog.sql)
app.add_typer(catalog.rehearsal_app, name="rehearsal")
command()(doctor.doctor)
app.add_typer(engine.engine_app, name="engine")


def main() -> None:
    from delta_sync.spark import engine_control

    args = sys.argv[1:]
    end = args.index("--") if "--" in args else len(args)
    no_engine = "--no-engine" in args[:end]
    if no_engine:
        sys.argv = [sys.argv[0], *(a for i, a in enumerate(args) if not (a == "--no-engine" and i < end))]
    engine_control.enable(not no_engine)
    engine_control.notify = lambda message: console.err.print(Text(message, style="ds.change"))
    app()
