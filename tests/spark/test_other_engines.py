"""Expressions as Delta stores them and as other engines write them, on real Spark and Delta.

Delta keeps a CHECK added by ALTER TABLE as its tokens joined by spaces; delta-rs (the `deltalake`
package) stores casts as `x::t`, which Spark's SELECT parses and Delta's ADD CONSTRAINT does not.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from delta_sync.model.state import TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import AddCheck
from delta_sync.review import readonly
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project


def _import(project: Project, catalog: SparkCatalog, name: str) -> str:
    table = TableName.parse(name)
    written, skipped = readonly.import_specs(catalog, [table], project.specs)
    assert skipped == []
    (path,) = written
    return path.read_text()


def test_statement_problems_parse_without_running(catalog: SparkCatalog, schema: str) -> None:
    good = f"ALTER TABLE {schema}.missing ADD CONSTRAINT ok CHECK (amount >= CAST('0' AS DECIMAL(12,2)))"
    colons = f"ALTER TABLE {schema}.missing ADD CONSTRAINT c CHECK (amount >= '0'::decimal(12, 2))"
    broken = f"CREATE TABLE {schema}.t (\n  id INT,\n) USING DELTA"
    problems = catalog.statement_problems([good, colons, broken, f"CREATE SCHEMA {schema}"])
    assert len(problems) == 2
    assert problems[0].startswith(f"Spark's parser refuses `{colons}`: [PARSE_SYNTAX_ERROR]")
    # The statement's first line only, and one line of reason.
    assert problems[1].startswith(f"Spark's parser refuses `CREATE TABLE {schema}.t (`: [PARSE_SYNTAX_ERROR]")
    assert all("\n" not in p for p in problems)
    # Parsing only: nothing ran.
    assert schema not in [row[0] for row in catalog.spark.sql("SHOW SCHEMAS").collect()]


def test_imported_checks_read_naturally_and_plan_nothing(project: Project, schema: str) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(
        f"CREATE TABLE {schema}.orders (id BIGINT, status STRING, note STRING, `odd name` INT) USING DELTA "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    rules = {
        "known_status": "status IN ('new', 'it''s paid')",
        "note_shape": "note IS NULL OR (length(trim(note)) > 0 AND note NOT LIKE '%( , )%')",
        "odd": "`odd name` BETWEEN -1 AND 10",
    }
    for rule, expression in rules.items():
        project.sql(f"ALTER TABLE {schema}.orders ADD CONSTRAINT {rule} CHECK ({expression})")
    stored = project.properties(f"{schema}.orders")
    assert stored["delta.constraints.known_status"] == "status IN ( 'new' , 'it' 's paid' )"

    text = _import(project, project.catalog, f"{schema}.orders")
    assert "known_status: status IN ('new', 'it' 's paid')" in text
    assert "note_shape: note IS NULL OR (length(trim(note)) > 0 AND note NOT LIKE '%( , )%')" in text
    assert "odd: '`odd name` BETWEEN -1 AND 10'" in text
    assert project.plan().is_empty


def _write_with_delta_rs(location: Path) -> None:
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "amount": pa.array([Decimal("1.00"), Decimal("2.50")], pa.decimal128(12, 2)),
        }
    )
    write_deltalake(str(location), rows)
    DeltaTable(str(location)).alter.add_constraint({"amount_positive": "amount >= 0"})


def test_a_table_delta_rs_wrote_keeps_its_check_through_a_widening(
    project: Project, schema: str, tmp_path: Path
) -> None:
    location = tmp_path / "payments"
    _write_with_delta_rs(location)
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {schema}.payments USING DELTA LOCATION '{location}'")
    stored = project.properties(f"{schema}.payments")["delta.constraints.amount_positive"]
    assert stored == "amount >= '0'::decimal(12, 2)"

    spec = _import(project, project.catalog, f"{schema}.payments")
    assert "amount_positive: amount >= CAST('0' AS decimal(12, 2))" in spec
    assert project.plan().is_empty

    spec_path = project.specs / schema / "payments.yaml"
    spec_path.write_text(spec.replace("type: decimal(12,2)", "type: decimal(14,2)"))
    plan = project.plan()
    (readded,) = [a for a in plan.actions if isinstance(a, AddCheck)]
    assert readded.moved_for is not None
    assert "Delta refuses to retype or drop a column that a CHECK reads" in readded.moved_for
    statements = [sql for _a, sql in ddl.plan_statements(plan)]
    assert project.catalog.statement_problems(statements) == []

    project.apply()
    assert project.plan().is_empty
    assert "delta.constraints.amount_positive" in project.properties(f"{schema}.payments")
    columns = {r[0]: r[1] for r in project.sql(f"DESCRIBE TABLE {schema}.payments")}
    assert columns["amount"] == "decimal(14,2)"
    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        project.sql(f"INSERT INTO {schema}.payments VALUES (3, -1.00)")
