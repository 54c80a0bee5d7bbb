"""Key DDL on real Spark and Delta: the property mode (what open-source Delta gets) applied and read back
until a re-plan is empty; the constraint mode (for catalogs that accept key constraints, Unity Catalog)
parsed by Spark's parser, and refused by open-source Delta, which is why the property mode exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_sync.model import keys
from delta_sync.model.catalog import StatementFailed
from delta_sync.model.state import ForeignKey, PrimaryKey, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import AddForeignKey, AddPrimaryKey, DropPrimaryKey, Plan
from delta_sync.review import pipeline
from delta_sync.spark.catalog import SparkCatalog
from tests.spark.conftest import Project

GOLDEN = Path(__file__).parent.parent / "unit" / "golden" / "keys_constraints.sql"


def customers(schema: str) -> str:
    return f"""\
        table: {schema}.customers
        columns:
          - {{name: id, type: bigint, nullable: false}}
          - {{name: region, type: string, nullable: false}}
        primary_key: [id]
        """


def orders(schema: str, key: str = "[id]") -> str:
    return f"""\
        table: {schema}.orders
        columns:
          - {{name: id, type: bigint, nullable: false}}
          - {{name: line, type: int, nullable: false}}
          - {{name: customer_id, type: bigint}}
        primary_key: {key}
        foreign_keys:
          - columns: [customer_id]
            references: {schema}.customers(id)
        """


def run(catalog: SparkCatalog, plan: Plan) -> None:
    for _action, statement in ddl.plan_statements(plan):
        catalog.execute(statement)


def test_keys_kept_in_properties_apply_and_read_back(project: Project, schema: str) -> None:
    project.write("customers.yaml", customers(schema))
    project.write("orders.yaml", orders(schema))
    created = project.plan()
    assert [type(a) for a in created.actions if isinstance(a, AddPrimaryKey | AddForeignKey)] == [
        AddPrimaryKey,
        AddPrimaryKey,
        AddForeignKey,
    ]
    run(project.catalog, created)

    parent, child = TableName(None, schema, "customers"), TableName(None, schema, "orders")
    fk_name = keys.foreign_key_name(child, ("customer_id",), parent)
    stored = project.properties(f"{schema}.orders")
    assert stored[keys.PRIMARY_KEY_PROPERTY] == f'{{"name":"pk_{schema}_orders__id","columns":["id"]}}'
    assert stored[keys.FOREIGN_KEY_PREFIX + fk_name] == (
        f'{{"columns":["customer_id"],"references":"{schema}.customers","parent_columns":["id"]}}'
    )
    live = project.catalog.read([parent, child])
    assert live.tables[child].primary_key == PrimaryKey(f"pk_{schema}_orders__id", ("id",))
    assert live.tables[child].foreign_keys == (ForeignKey(fk_name, ("customer_id",), parent, ("id",)),)
    # Read back as keys, not as properties: nothing left to do.
    assert project.plan().is_empty

    # A changed key: its property is unset and set again, and reads back changed.
    project.write("orders.yaml", orders(schema, "[id, line]"))
    changed = project.plan()
    assert [type(a) for a in changed.actions] == [DropPrimaryKey, AddPrimaryKey]
    run(project.catalog, changed)
    after = project.catalog.read([child]).tables[child]
    assert after.primary_key == PrimaryKey(f"pk_{schema}_orders__id_line", ("id", "line"))
    assert after.foreign_keys == (ForeignKey(fk_name, ("customer_id",), parent, ("id",)),)
    assert pipeline.make_plan(project.catalog, project.desired()).is_empty


def golden_statements() -> list[str]:
    text = GOLDEN.read_text(encoding="utf-8")
    return [statement for statement in text.split(";\n") if statement.strip()]


def test_every_constraint_mode_statement_parses(catalog: SparkCatalog) -> None:
    statements = golden_statements()
    assert any("PRIMARY KEY" in s for s in statements)
    assert any("FOREIGN KEY" in s for s in statements)
    assert catalog.statement_problems(statements) == []
    # The parser is the real one: a key statement Spark's grammar lacks is refused.
    assert len(catalog.statement_problems(["ALTER TABLE `s`.`t` DROP PRIMARY KEY"])) == 1


def test_a_key_is_dropped_by_sparks_constraint_command_not_deltas_check_one(catalog: SparkCatalog) -> None:
    # Delta's parser takes `DROP CONSTRAINT [IF EXISTS] name` as the drop of a CHECK (which IF EXISTS would
    # let pass silently on a key); with RESTRICT it is Spark's DROP CONSTRAINT, which catalogs with keys serve.
    parser = catalog.spark._jsparkSession.sessionState().sqlParser()
    drops = [s for s in golden_statements() if "DROP CONSTRAINT" in s]
    assert drops
    assert {parser.parsePlan(s).getClass().getSimpleName() for s in drops} == {"DropConstraint"}
    plain = drops[0].removesuffix(" RESTRICT")
    assert parser.parsePlan(plain).getClass().getSimpleName() == "AlterTableDropConstraint"


def test_open_source_delta_refuses_key_constraints(project: Project, schema: str) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {schema}.t (id BIGINT NOT NULL, parent BIGINT) USING DELTA")
    name = TableName(None, schema, "t")
    primary = PrimaryKey("pk_t", ("id",))
    foreign = ForeignKey("fk_t", ("parent",), name, ("id",))
    refused = [
        ddl.to_sql(AddPrimaryKey(name, primary, as_constraint=True))[0],
        ddl.to_sql(AddForeignKey(name, foreign, as_constraint=True))[0],
        ddl.to_sql(DropPrimaryKey(name, primary, as_constraint=True))[0],
    ]
    for statement in refused:
        with pytest.raises(StatementFailed) as failed:
            project.catalog.execute(statement)
        assert "UNSUPPORTED_FEATURE.TABLE_OPERATION" in failed.value.failure.message
        assert "does not support table constraint" in failed.value.failure.message
    assert keys.PRIMARY_KEY_PROPERTY not in project.properties(f"{schema}.t")
