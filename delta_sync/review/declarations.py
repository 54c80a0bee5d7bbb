"""One table as its spec declares it, offline: the table looked up by name (`declared_table`), the statements
a plan would run to create it (`create_script`, for `delta-sync ddl`) and the JSON form of its Spark schema
(`delta_sync.spark_schema`, through `delta_sync.sql.schema_json`). No Spark, no catalog."""

from __future__ import annotations

import os
from pathlib import Path

from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, Table, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import CreateSchema, Notice, Unsupported
from delta_sync.planning.diff.planner import plan
from delta_sync.review.environments import specs_folder
from delta_sync.specs.settings import Environment, Project


def load_declared(project: Project, environment: Environment, specs: str | os.PathLike[str] | None) -> CatalogState:
    """The specs of `specs` (default: the project's folder) as `environment` reads them: its vars and catalog,
    its `defaults:` and `ignore:` (the project's with its own). Unlike a plan's, not refused in a `strict: true`
    environment for a part of the folder: nothing is read or dropped here."""
    from delta_sync.specs.desired_state import with_project
    from delta_sync.specs.spec_files import load_specs

    folder = specs_folder(project, specs)
    loaded = load_specs(folder, environment.vars, environment.catalog, environment.name)
    return with_project(loaded, environment.table_defaults, environment.ignore)


def declared_table(desired: CatalogState, text: str, folder: Path) -> Table:
    """The table `text` (schema.table or catalog.schema.table) names among `desired`'s; `schema.table` also
    finds the table in the environment's catalog when that is the only one of that name."""
    try:
        name = TableName.parse(text.strip())
    except ValueError as error:
        raise DeltaSyncError(f"{text}: {error}") from None
    table = desired.tables.get(name)
    if table is None and name.catalog is None:
        found = [t for n, t in desired.tables.items() if (n.schema, n.name) == (name.schema, name.name)]
        table = found[0] if len(found) == 1 else None
    if table is None:
        raise DeltaSyncError(f"no table spec in {folder} declares {name}")
    return table


def create_script(table: Table) -> str:
    """The statements a plan runs to create `table` in an existing schema, as `plan --format sql` prints them:
    its CREATE TABLE (with the column mapping a name may need), then its CHECKs and keys. Keys are planned for
    Delta's session catalog (kept in table properties), the catalog plans assume without a session to ask."""
    created = plan(
        CatalogState(tables={}, schemas=frozenset({table.name.schema_name})),
        CatalogState(tables={table.name: table}),
    )
    lines: list[str] = []
    for action in created.actions:
        if isinstance(action, Notice | CreateSchema) or action.name != table.name:
            continue
        if isinstance(action, Unsupported):
            lines.append(f"-- BLOCKED: {action.reason}. Fix: {action.remedy}")
        lines.extend(f"{sql};" for sql in ddl.to_sql(action))
    return "\n".join(lines) + "\n"
