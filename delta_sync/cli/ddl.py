"""`ddl`: the CREATE TABLE delta-sync would run for one table's spec, with the CHECKs and keys a plan adds after
it, as `plan --format sql` prints them for a new table. Offline: no Spark, no catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from delta_sync.cli import console
from delta_sync.cli.console import _guard
from delta_sync.cli.options import EnvOpt, _env


def ddl(
    table: Annotated[
        str,
        typer.Argument(metavar="TABLE", help="The table: schema.table or catalog.schema.table.", show_default=False),
    ],
    specs: Annotated[
        Path | None,
        typer.Argument(
            metavar="SPECS",
            help="Folder or file of table specs (default: the project's, else specs/).",
            show_default=False,
        ),
    ] = None,
    env: EnvOpt = None,
) -> None:
    """Print the CREATE TABLE delta-sync would run for a table's spec, then its CHECKs and keys (offline).

    Exit codes:
    0  printed
    1  no spec declares the table, or a spec has a problem

    Example:
    $ delta-sync ddl shop.orders
    """
    from delta_sync.review import declarations
    from delta_sync.review.environments import specs_folder

    project, environment = _env(env)

    def script() -> str:
        desired = declarations.load_declared(project, environment, specs)
        found = declarations.declared_table(desired, table, specs_folder(project, specs))
        return declarations.create_script(found)

    console.out.out(_guard(script), end="", highlight=False)
