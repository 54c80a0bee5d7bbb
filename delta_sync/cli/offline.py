"""The commands that read spec files only, no Spark and no catalog: `validate` (every problem with
file and line), `fmt` (rewrite specs in their canonical layout), `graph` (the tables, keys and views as a
diagram) and `schema` (the JSON Schema of a spec or of a saved plan file)."""

from __future__ import annotations

import json
import os
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail, _guard
from delta_sync.cli.options import EnvOpt, SpecsArg, SpecsArgs, _env
from delta_sync.model.errors import DeltaSyncError, SpecError, SpecProblem

if TYPE_CHECKING:
    from delta_sync.model.state import CatalogState, TableName
    from delta_sync.render.graph import Graph
    from delta_sync.specs.settings import Environment, Project


def _load(specs: Path | None, env: Environment, project: Project) -> CatalogState:
    from delta_sync.specs.desired_state import with_project
    from delta_sync.specs.spec_files import load_specs

    loaded = load_specs(specs or project.specs, env.vars, env.catalog, env.name)
    return with_project(loaded, env.table_defaults, env.ignore)


def validate(specs: SpecsArgs = None, env: EnvOpt = None) -> None:
    """Check spec files offline (no Spark), every problem with its file and line.

    Several paths (a pre-commit hook's changed files) are checked each on its own, and every problem of all of them
    is shown.

    Exit codes:
    0  every spec is valid
    1  a spec has a problem, or the project file does

    Example:
    $ delta-sync validate specs/
    """
    project, environment = _env(env)
    problems: list[SpecProblem] = []
    count = views = tombstones = 0
    paths: list[Path | None] = list(specs) if specs else [None]
    for path in paths:
        try:
            loaded = _load(path, environment, project)
            count += len(loaded.tables)
            views += len(loaded.views)
            tombstones += len(loaded.dropped)
        except SpecError as error:
            problems.extend(error.problems)
        except DeltaSyncError as error:
            _fail(error)
    if problems:
        _fail(SpecError(problems))
    found = [f"{count} table spec{'s' if count != 1 else ''}"]
    found += [f"{views} view spec{'s' if views != 1 else ''}"] if views else []
    found += [f"{tombstones} tombstone{'s' if tombstones != 1 else ''}"] if tombstones else []
    console.err.print(f"[ds.ok]{', '.join(found)} valid.[/]")


def fmt(
    specs: SpecsArgs = None,
    check: Annotated[
        bool, typer.Option("--check", help="Change nothing; list the files that would change and exit 1 if any.")
    ] = False,
    env: EnvOpt = None,
) -> None:
    """Rewrite spec files in one canonical layout (key order, type spelling), keeping their comments.

    Exit codes:
    0  nothing to change, or the files rewritten
    1  --check found files to rewrite, or an error

    Example:
    $ delta-sync fmt --check specs/
    """
    from delta_sync.specs import fmt as formatter
    from delta_sync.specs.spec_files import spec_paths

    project, _environment = _env(env)
    files = [f for path in specs or [project.specs] for f in (spec_paths(path) if path.is_dir() else [path])]
    changed = []
    for file in files:
        if not file.is_file():
            _fail(DeltaSyncError(f"{file}: no such spec file or folder"))
        if _guard(partial(formatter.needs_format if check else formatter.format_file, file)):
            changed.append(file)
    for file in changed:
        shown = os.path.relpath(file) if file.resolve().is_relative_to(Path.cwd().resolve()) else str(file)
        console.out.print(Text(f"{'would reformat' if check else 'reformatted'} {shown}"))
    unchanged = len(files) - len(changed)
    console.err.print(
        Text(f"{len(changed)} file(s) {'to reformat' if check else 'reformatted'}, {unchanged} unchanged.")
    )
    if check and changed:
        raise typer.Exit(1)


def schema(
    plan_file: Annotated[bool, typer.Option("--plan", help="The schema of a saved plan file instead.")] = False,
) -> None:
    """Print the JSON Schema of a spec file (for editors), or of a saved plan file.

    Exit codes:
    0  printed

    Example:
    $ delta-sync schema > delta-sync.schema.json
    """
    if plan_file:
        from delta_sync.planfile import document as planfile

        console.out.print_json(json.dumps(planfile.SavedPlan.model_json_schema()))
        return
    from delta_sync.specs.spec_models import spec_json_schema

    console.out.print_json(json.dumps(spec_json_schema()))


class GraphFormat(StrEnum):
    # A Mermaid erDiagram: GitHub renders it in Markdown (a ```mermaid block).
    mermaid = "mermaid"
    # Graphviz: `dot -Tsvg`.
    dot = "dot"


def graph(
    specs: SpecsArg = None,
    format: Annotated[GraphFormat, typer.Option("--format", "-f", help="Output format.")] = GraphFormat.mermaid,
    around: Annotated[
        list[str] | None,
        typer.Option(
            "--around",
            metavar="NAME",
            help="Only this table or view and its direct neighbours (repeat it for several), for a large project.",
        ),
    ] = None,
    env: EnvOpt = None,
) -> None:
    """Print the tables with their keys and the views reading them, as a diagram (offline: no Spark).

    Mermaid (the default) is an erDiagram that GitHub renders in Markdown: each table with its primary and foreign
    key columns, a line from each foreign key to the table it references, and a dashed line from each view to what
    it reads. A name a key or a view reads that no spec declares is shown as not in the specs.

    Exit codes:
    0  printed
    1  unreadable specs, or an --around name no spec declares

    Example:
    $ delta-sync graph specs/ --format dot | dot -Tsvg > schema.svg
    """
    from delta_sync.render import diagram
    from delta_sync.render.graph import around as near
    from delta_sync.render.graph import project_graph

    project, environment = _env(env)
    desired = _guard(lambda: _load(specs, environment, project))
    shown = project_graph(desired)
    if around:
        shown = near(shown, _guard(lambda: _named(shown, around)))
    text = diagram.mermaid(shown) if format is GraphFormat.mermaid else diagram.dot(shown)
    console.out.out(text, end="", highlight=False)
    console.err.print(Text(_counted(shown), style="ds.muted"))


def _named(shown: Graph, names: list[str]) -> list[TableName]:
    """The nodes `names` name (schema.table matches in any catalog; catalog.schema.table in its own)."""
    from delta_sync.model.state import TableName

    found = []
    for text in names:
        try:
            wanted = TableName.parse(text.strip())
        except ValueError as error:
            raise DeltaSyncError(f"--around {text}: {error}") from None
        matches = [
            n.name
            for n in shown.nodes
            if (n.name.schema, n.name.name) == (wanted.schema, wanted.name)
            and (wanted.catalog is None or n.name.catalog == wanted.catalog)
            and "not in the specs" not in n.marks
        ]
        if not matches:
            raise DeltaSyncError(f"--around {text}: no table or view of the specs has that name")
        found += matches
    return found


def _counted(shown: Graph) -> str:
    views = sum(1 for n in shown.nodes if n.view)
    tables = len(shown.nodes) - views
    keys = sum(1 for e in shown.edges if not e.reads)
    reads = sum(1 for e in shown.edges if e.reads)
    return (
        f"{tables} table{'s' if tables != 1 else ''}, {views} view{'s' if views != 1 else ''}, "
        f"{keys} foreign key{'s' if keys != 1 else ''}, {reads} read{'s' if reads != 1 else ''} by views."
    )
