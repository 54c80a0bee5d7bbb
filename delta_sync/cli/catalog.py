"""The commands that work on the environment's catalog outside plan and apply: `import` (specs from
live tables), `drift` (who changed a table since the last apply), `check` (declared keys against the
data), `sql` (one statement, confirmed when it deletes or overwrites), and `rehearsal clean` (the clones
a killed rehearsal left behind)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail, _Feedback, _guard, _status, _with_feedback
from delta_sync.cli.help import Command
from delta_sync.cli.options import EnvOpt, SpecsArg, SqlFormat, _Commands
from delta_sync.model.errors import DeltaSyncError

if TYPE_CHECKING:
    from delta_sync.model.catalog import Catalog, QueryResult
    from delta_sync.review.readonly import KeyCheck
    from delta_sync.review.results import Imported, Progress


def import_(
    targets: Annotated[
        list[str],
        typer.Argument(metavar="TARGET", help="SCHEMA (all its tables), SCHEMA.TABLE or CATALOG.SCHEMA.TABLE."),
    ],
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", help="Folder to write the specs into.")] = Path(
        "specs"
    ),
    force: Annotated[bool, typer.Option("--force", help="Overwrite spec files that already exist.")] = False,
    env: EnvOpt = None,
) -> None:
    """Write spec files from live tables, one per table, so that `plan` right after shows no changes.

    Exit codes:
    0  written (a file that exists is skipped without --force)
    1  an error

    Example:
    $ delta-sync import shop --out specs/
    """
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    from delta_sync.review import library

    columns = (
        TextColumn("Importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    bar = Bar(*columns, console=console.err, transient=True)
    task = bar.add_task("", start=False)

    def run(feedback: _Feedback) -> Imported:
        def progress(event: Progress) -> None:
            if event.step is None:
                feedback(event)
                return
            if not bar.live.is_started:
                feedback.pause()
                bar.start()
            bar.update(task, total=event.total, completed=event.step, description=event.table or "")

        try:
            return library.import_specs(targets, out_dir, env=env, force=force, progress=progress)
        finally:
            bar.stop()

    imported = _with_feedback(run)
    written, skipped = imported.written, imported.skipped
    for line in skipped:
        console.err.print(Text(f"skipped {line}", style="ds.change"))
    console.err.print(Text(f"Wrote {len(written)} spec file(s) under {out_dir}/.", style="ds.ok"))


rehearsal_app = typer.Typer(
    cls=_Commands,
    help="""The shallow clones made by plan --rehearse.

    Example:
    $ delta-sync rehearsal clean
    """,
    no_args_is_help=True,
    add_completion=False,
)


@rehearsal_app.command("clean", cls=Command)
def rehearsal_clean(specs: SpecsArg = None, env: EnvOpt = None) -> None:
    """Drop the clones that rehearsals left behind.

    A rehearsal killed before it dropped its clones leaves them; the next rehearsal drops those too, for clones
    whose process is gone.

    Exit codes:
    0  dropped, or none to drop
    1  an error

    Example:
    $ delta-sync rehearsal clean --env dev
    """
    from delta_sync.review import library

    dropped = _with_feedback(lambda progress: library.clean_rehearsals(specs, env=env, progress=progress))
    for name in dropped:
        console.out.print(Text(f"dropped {name}", style="ds.change"))
    console.err.print(Text(f"{len(dropped)} leftover clone(s) dropped.", style="ds.ok"))


def drift(
    specs: SpecsArg = None,
    format: Annotated[
        SqlFormat, typer.Option("--format", "-f", help="Output format (table = text).")
    ] = SqlFormat.table,
    env: EnvOpt = None,
) -> None:
    """Compare specs and live tables; for each drifted table, who changed it and when since the last apply.

    Exit codes:
    0  in sync
    2  drifted
    1  an error

    Example:
    $ delta-sync drift --env prod --format json
    """
    from delta_sync.render import text as render
    from delta_sync.render.counts import views_of
    from delta_sync.render.document import plan_json
    from delta_sync.review import library

    result = _with_feedback(lambda progress: library.drift(specs, env=env, progress=progress))
    if format is SqlFormat.json:
        data = plan_json(result.plan)
        data["drift"] = {
            str(name): [
                {
                    "version": c.version,
                    "timestamp": c.timestamp,
                    "operation": c.operation,
                    "user": c.user,
                    "engine": c.engine,
                }
                for c in commits
            ]
            for name, commits in result.commits.items()
        }
        console.out.print_json(json.dumps(data))
    else:
        console.out.print(render.render_text(result.plan, views=views_of(result.plan, result.desired)))
        for name, commits in result.commits.items():
            if not commits:
                console.out.print(
                    Text(f"{name}: no commits since the last delta-sync apply were found", style="ds.muted")
                )
            for c in commits:
                # Open-source Delta records no user; the writing engine is what is known then.
                who = f" by {c.user}" if c.user else f" (user not recorded; written by {c.engine})" if c.engine else ""
                console.out.print(
                    Text(f"{name}: {c.operation} at {c.timestamp}{who} (version {c.version})", style="ds.change")
                )
    if result.commits:
        raise typer.Exit(2)


def check(
    specs: SpecsArg = None,
    format: Annotated[
        SqlFormat, typer.Option("--format", "-f", help="Output format (table = text).")
    ] = SqlFormat.table,
    env: EnvOpt = None,
) -> None:
    """Check every declared primary and foreign key against the data as it is now (no engine enforces them).

    Exit codes:
    0  every key holds
    3  the data breaks one
    1  an error

    Example:
    $ delta-sync check --env prod
    """
    from delta_sync.model.state import PrimaryKey
    from delta_sync.review import library

    found = _with_feedback(lambda progress: library.check_keys(specs, env=env, progress=progress))
    if format is SqlFormat.json:
        data = [
            {
                "table": str(c.table),
                "key": c.key.name,
                "kind": "primary key" if isinstance(c.key, PrimaryKey) else "foreign key",
                "columns": list(c.key.columns),
                "violations": c.result.violations,
                "holds": c.holds,
            }
            for c in found
        ]
        console.out.print_json(json.dumps({"keys": data, "ok": all(c.holds for c in found)}))
    else:
        if not found:
            console.err.print("[ds.muted]No keys are declared in the specs.[/]")
        for c in found:
            console.out.print(_key_check_text(c))
    if not all(c.holds for c in found):
        raise typer.Exit(3)


def _key_check_text(found: KeyCheck) -> Text:
    from delta_sync.model.state import ForeignKey, PrimaryKey
    from delta_sync.sql import literals

    key = found.key
    what = f"primary key {key.name} ({', '.join(key.columns)})"
    if isinstance(key, ForeignKey):
        what = f"foreign key {key.name} ({', '.join(key.columns)}) -> {key.table} ({', '.join(key.references)})"
    if found.holds:
        line = Text("✓ ", style="ds.ok")
        line.append(f"{found.table}: {what} holds")
        return line
    count = found.result.violations
    one = count == 1
    if isinstance(key, PrimaryKey):
        broken = "key value repeats or has a NULL part" if one else "key values repeat or have a NULL part"
    else:
        broken = "row has no parent row" if one else "rows have no parent row"
    line = Text("✗ ", style="ds.blocked")
    line.append(f"{found.table}: {what}: {count} {broken}")
    for row in literals.table_lines(found.result.samples):
        line.append(f"\n      {row}", style="ds.muted")
    return line


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


def sql(
    statement: Annotated[str, typer.Argument(metavar="STATEMENT", help="One SQL statement.")],
    format: Annotated[SqlFormat, typer.Option("--format", "-f", help="Output format.")] = SqlFormat.table,
    limit: Annotated[int, typer.Option(metavar="N", help="Most rows to print.")] = 1000,
    env: EnvOpt = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Run a statement that deletes or overwrites rows or objects without asking."),
    ] = False,
) -> None:
    """Run SQL against the environment's catalog (backfills, inspection).

    Spark parses the statement first, running nothing. One that can delete or overwrite rows or objects is
    confirmed at a terminal, and needs --yes elsewhere: DELETE or UPDATE without WHERE; MERGE with a THEN DELETE
    clause or WHEN NOT MATCHED BY SOURCE; INSERT OVERWRITE, INSERT ... REPLACE WHERE (or USING, ON), LOAD DATA ...
    OVERWRITE; TRUNCATE; DROP TABLE, VIEW, SCHEMA, FUNCTION or INDEX; ALTER TABLE ... DROP COLUMN, CONSTRAINT,
    PARTITION or FEATURE, and REPLACE COLUMNS; CREATE OR REPLACE (table, view, function, clone), REPLACE TABLE;
    RESTORE; VACUUM (not DRY RUN); EXECUTE IMMEDIATE of a statement known only when it runs; a SQL script holding
    any of these (on Spark Connect, every script).

    Exit codes:
    0  run
    1  an error, a refusal, or cancelled

    Example:
    $ delta-sync sql "SELECT count(*) FROM shop.orders" --env dev
    """
    from rich.table import Table as RichTable

    from delta_sync.review import environments

    def opened() -> tuple[Catalog, str | None]:
        with _status("Starting Spark...") as on_status:
            catalog = environments.open_catalog(environments.environment(env)[1], on_status)
            if yes:
                return catalog, None
            on_status("Parsing the statement...")
            return catalog, catalog.statement_danger(statement)

    # The prompt waits for the spinner to end: Spark is started first, since only its parser can tell.
    catalog, danger = _guard(opened)
    if danger is not None:
        if not sys.stdin.isatty():
            _fail(DeltaSyncError(f"not run: {danger}; pass --yes to run it without a terminal to confirm at"))
        if not typer.confirm(f"{danger}. Run it?", default=False, err=True):
            console.err.print("Cancelled; nothing was run.")
            raise typer.Exit(1)

    def run() -> QueryResult:
        with _status("Running..."):
            return catalog.query(statement, limit)

    result = _guard(run)
    if format is SqlFormat.json:
        rows = [dict(zip(result.columns, map(_jsonable, row), strict=True)) for row in result.rows]
        console.out.print_json(
            json.dumps({"columns": list(result.columns), "rows": rows, "truncated": result.truncated})
        )
        return
    if not result.columns:
        console.err.print("[ds.ok]OK[/]")
        return
    grid = RichTable(*result.columns)
    for row in result.rows:
        grid.add_row(*("NULL" if v is None else str(v) for v in row))
    console.out.print(grid)
    if result.truncated:
        console.err.print(f"[ds.muted](first {limit} rows shown; use --limit)[/]")
