"""The command line: parse -> api -> render -> exit code. Results on stdout, everything else on stderr."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from delta_sync import __version__, api, render
from delta_sync.actions import Action, CreateSchema, Plan
from delta_sync.errors import DeltaSyncError, SpecError
from delta_sync.hazards import ALLOWABLE, Hazard
from delta_sync.model import CatalogState, TableName

app = typer.Typer(
    help="Declarative, safe schema migrations for Delta Lake tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(theme=render.THEME, highlight=False, soft_wrap=True)
err = Console(theme=render.THEME, stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")

SpecsArg = Annotated[Path, typer.Argument(help="Folder (or file) of table specs.", show_default=True)]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow",
        help="Hazard classes to let through: destructive, irreversible, breaking (comma-separated or repeated).",
    ),
]
NoProbesOpt = Annotated[
    bool, typer.Option("--no-probes", help="Do not scan table data to check new CHECK / NOT NULL rules.")
]


class PlanFormat(StrEnum):
    text = "text"
    json = "json"


class SqlFormat(StrEnum):
    table = "table"
    json = "json"


def _fail(error: DeltaSyncError) -> NoReturn:
    # Engine messages contain `[ERROR_CLASS]`: print them as text, never as rich markup.
    message = Text()
    if not isinstance(error, SpecError):
        message.append("Error: ", style="ds.blocked")
    message.append(str(error))
    err.print(message)
    raise typer.Exit(error.exit_code)


def _guard(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except DeltaSyncError as error:
        _fail(error)
    except KeyboardInterrupt:
        err.print("[ds.blocked]Interrupted.[/]")
        raise typer.Exit(130) from None


@contextmanager
def _status(message: str) -> Iterator[Callable[[str], None]]:
    with err.status(message) as status:
        yield lambda text: status.update(text)


def _load(specs: Path) -> CatalogState:
    from delta_sync.spec import load_specs

    return load_specs(specs)


def _allowed(values: list[str] | None) -> frozenset[Hazard]:
    names = [v.strip() for value in values or [] for v in value.split(",") if v.strip()]
    allowed = set()
    for name in names:
        try:
            hazard = Hazard(name)
        except ValueError:
            choices = ", ".join(h.value for h in sorted(ALLOWABLE))
            raise DeltaSyncError(f"--allow {name}: not a hazard class; choose from {choices}") from None
        if hazard not in ALLOWABLE:
            raise DeltaSyncError(f"--allow {name}: {name} changes are always checked or blocked and cannot be allowed")
        allowed.add(hazard)
    return frozenset(allowed)


def _review(specs: Path, allow: list[str] | None, probes: bool) -> tuple[api.Catalog, CatalogState, api.Review]:
    allowed = _allowed(allow)
    desired = _load(specs)
    with _status("Reading the catalog...") as on_status:
        catalog = api.open_local_catalog(on_status)
        result = api.review(catalog, desired, allowed, probes=probes, on_status=on_status)
    return catalog, desired, result


@app.command()
def validate(specs: SpecsArg = Path("specs")) -> None:
    """Check spec files offline (no Spark): every problem with file and line."""
    desired = _guard(lambda: _load(specs))
    count = len(desired.tables)
    err.print(f"[ds.ok]{count} table spec{'s' if count != 1 else ''} valid.[/]")


@app.command()
def schema() -> None:
    """Print the JSON Schema of a spec file, for editors."""
    from delta_sync.spec import spec_json_schema

    out.print_json(json.dumps(spec_json_schema()))


@app.command()
def plan(
    specs: SpecsArg = Path("specs"),
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.text,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 2 when there are changes to apply.")
    ] = False,
    allow: AllowOpt = None,
    no_probes: NoProbesOpt = False,
) -> None:
    """Show what apply would change, and what it risks.

    Exit 0: no changes, or only allowed changes; 2: allowed changes pending (with --detailed-exitcode);
    3: something is blocked; 1: error (bad spec, no connection).
    """
    _catalog, _desired, result = _guard(lambda: _review(specs, allow, not no_probes))
    if format is PlanFormat.json:
        out.print_json(json.dumps(render.plan_json(result.plan, result.assessment)))
    else:
        out.print(render.render_text(result.plan, result.assessment))
    if result.blocked:
        raise typer.Exit(3)
    if detailed_exitcode and not result.plan.is_empty:
        raise typer.Exit(2)


def _describe(action: Action) -> str:
    return str(action.schema) if isinstance(action, CreateSchema) else str(action.name)


@app.command()
def apply(
    specs: SpecsArg = Path("specs"),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    allow: AllowOpt = None,
    no_probes: NoProbesOpt = False,
    skip_blocked: Annotated[
        bool,
        typer.Option("--skip-blocked", help="Apply the tables that are not blocked; leave the others as they are."),
    ] = False,
) -> None:
    """Apply the specs: plan, check, confirm, run each statement, re-read to confirm.

    Exit 0: applied, or nothing to do; 3: refused because something is blocked; 1: error.
    """
    catalog, desired, reviewed = _guard(lambda: _review(specs, allow, not no_probes))
    out.print(render.render_text(reviewed.plan, reviewed.assessment))
    result = reviewed.plan
    if reviewed.blocked:
        if not skip_blocked:
            err.print("[ds.blocked]Nothing applied: resolve or allow the blocked items above first.[/]")
            raise typer.Exit(3)
        result = api.without_blocked(reviewed)
        skipped = ", ".join(str(t) for t in sorted(reviewed.assessment.blocked_tables))
        err.print(Text(f"--skip-blocked: leaving {skipped} as they are.", style="ds.change"))
    if result.is_empty:
        if reviewed.blocked:
            raise typer.Exit(3)
        return
    if not yes:
        if not sys.stdin.isatty():
            err.print("[ds.blocked]Refusing to apply without confirmation: pass --yes.[/]")
            raise typer.Exit(1)
        if not typer.confirm("Apply these changes?", default=False):
            err.print("Cancelled; nothing applied.")
            raise typer.Exit(1)
    _guard(lambda: _apply(catalog, desired, result, reviewed.assessment.blocked_tables))
    if reviewed.blocked:
        raise typer.Exit(3)


def _step_text(index: int, total: int, action: Action, sql: str) -> Text:
    first = sql.splitlines()[0]
    return Text(f"[{index + 1}/{total}] {_describe(action)}: {first[:100]}{'...' if len(first) > 100 else ''}")


def _apply(catalog: api.Catalog, desired: CatalogState, result: Plan, skipped: frozenset[TableName]) -> None:
    started = {"at": time.monotonic()}
    with err.status("Applying...") as status:

        def on_step(index: int, total: int, action: Action, sql: str) -> None:
            started["at"] = time.monotonic()
            status.update(_step_text(index, total, action, sql))

        def on_done(index: int, total: int, action: Action, sql: str) -> None:
            line = Text("✓ ", style="ds.ok")
            line.append_text(_step_text(index, total, action, sql))
            line.append(f" ({time.monotonic() - started['at']:.1f}s)", style="ds.muted")
            err.print(line)

        count = api.apply_plan(catalog, result, on_step, on_done)
        status.update("Re-reading the catalog to confirm...")
        api.verify_converged(catalog, desired, skipped)
    matching = len(desired.tables) - len(skipped)
    err.print(
        f"[ds.ok]Applied {count} statement{'s' if count != 1 else ''}; "
        f"{'all ' if not skipped else ''}{matching} table(s) match the specs.[/]"
    )


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="One SQL statement.")],
    format: Annotated[SqlFormat, typer.Option("--format", "-f", help="Output format.")] = SqlFormat.table,
    limit: Annotated[int, typer.Option(help="Most rows to print.")] = 1000,
) -> None:
    """Run SQL against the environment's catalog (backfills, inspection)."""

    def run() -> api.QueryResult:
        with _status("Starting Spark...") as on_status:
            catalog = api.open_local_catalog(on_status)
            on_status("Running...")
            return catalog.query(statement, limit)

    result = _guard(run)
    if format is SqlFormat.json:
        rows = [dict(zip(result.columns, map(_jsonable, row), strict=True)) for row in result.rows]
        out.print_json(json.dumps({"columns": list(result.columns), "rows": rows, "truncated": result.truncated}))
        return
    if not result.columns:
        err.print("[ds.ok]OK[/]")
        return
    grid = RichTable(*result.columns)
    for row in result.rows:
        grid.add_row(*("NULL" if v is None else str(v) for v in row))
    out.print(grid)
    if result.truncated:
        err.print(f"[ds.muted](first {limit} rows shown; use --limit)[/]")


def _version(value: bool) -> None:
    if value:
        out.print(f"delta-sync {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    pass


def main() -> None:
    app()
