"""Column names Delta takes only with column mapping, on real Spark and Delta 4.4.

Delta 4.4 refuses a CREATE TABLE or ADD COLUMNS whose names hold a space or any of `,;{}()=`,
newline or tab (DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES) unless column mapping is on; `.`, `-`, `:`
and quotes need nothing. The plan knows it before anything runs.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from delta_sync.planning import ddl
from delta_sync.planning.actions import CreateTable, EnableFeature
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard

from .conftest import Project

MODE = "delta.columnMapping.mode"


def write(project: Project, table: str, columns: list[dict[str, Any]]) -> None:
    project.write(f"{table.split('.')[-1]}.yaml", yaml.safe_dump({"table": table, "columns": columns}))


@pytest.mark.parametrize("odd", ["order id", "a,b", "a=b", "a(b)", "a\tb"])
def test_delta_refuses_such_names_without_column_mapping(project: Project, schema: str, odd: str) -> None:
    project.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    quoted = "`" + odd.replace("`", "``") + "`"
    with pytest.raises(Exception, match="DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES"):
        project.sql(f"CREATE TABLE {schema}.t ({quoted} INT) USING DELTA")


def test_create_and_add_such_columns_converge(project: Project, schema: str) -> None:
    table = f"{schema}.orders"
    write(project, table, [{"name": "id", "type": "bigint"}, {"name": "order id", "type": "bigint"}])
    plan = project.plan()
    current = project.catalog.read(plan.tables)
    (create,) = [a for a in plan.actions if isinstance(a, CreateTable)]
    assert create.table.property_map[MODE] == "name"
    blocks = assess(plan, current, (), allowed=()).blocks
    assert [b.finding.hazard for b in blocks] == [Hazard.IRREVERSIBLE]
    assert project.catalog.statement_problems([sql for _a, sql in ddl.plan_statements(plan)]) == []

    project.apply()
    assert project.properties(table)[MODE] == "name"
    assert project.plan().is_empty

    write(
        project,
        table,
        [
            {"name": "id", "type": "bigint"},
            {"name": "order id", "type": "bigint"},
            {"name": "paid (eur)", "type": "decimal(12,2)"},
        ],
    )
    assert project.apply().actions  # ADD COLUMNS of a mapped table: nothing more needed
    project.sql(f"INSERT INTO {table} VALUES (1, 2, 3.50)")
    assert project.sql(f"SELECT `paid (eur)` FROM {table}")[0][0] == pytest.approx(3.5)
    assert project.plan().is_empty


def test_adding_such_a_column_to_a_plain_table_enables_column_mapping_first(project: Project, schema: str) -> None:
    table = f"{schema}.events"
    write(project, table, [{"name": "id", "type": "bigint"}])
    project.apply()
    assert MODE not in project.properties(table)

    write(project, table, [{"name": "id", "type": "bigint"}, {"name": "kind; detail", "type": "string"}])
    plan = project.plan()
    enable = [a for a in plan.actions if isinstance(a, EnableFeature)]
    assert [(a.key, a.value) for a in enable] == [(MODE, "name")]
    project.apply()
    assert project.properties(table)[MODE] == "name"
    assert project.plan().is_empty
