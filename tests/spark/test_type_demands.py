"""What users of schema tools asked for (issue 45, point 4), on real Delta: maps of doubles, maps of arrays of
structs and columns with a DEFAULT re-plan empty after apply and after import; a type change of a column a
generated column reads is blocked with Delta's reason and the way out (Delta refuses it); a rewrite of a
column-mapped table says which columns get new physical names and that streams need schema tracking."""

from __future__ import annotations

import json

import pytest
import yaml

from delta_sync.model.state import TableName
from delta_sync.planning.actions import Unsupported
from delta_sync.planning.hazards import Hazard
from delta_sync.review import execution, pipeline
from delta_sync.specs import importer

from .conftest import Project

ALLOW = frozenset({Hazard.BREAKING, Hazard.IRREVERSIBLE, Hazard.REWRITE})


def write(project: Project, name: str, spec: dict[str, object]) -> None:
    project.write(f"{name}.yaml", yaml.safe_dump(spec, sort_keys=False))


def apply(project: Project) -> None:
    review = pipeline.review(project.catalog, project.desired(), ALLOW, applying=True)
    assert not review.assessment.blocks, review.assessment.blocks
    execution.apply_plan(project.catalog, review.plan)


def test_maps_and_defaults_replan_empty_after_apply_and_after_import(project: Project, schema: str) -> None:
    table = f"{schema}.metrics"
    write(
        project,
        "metrics",
        {
            "table": table,
            "columns": [
                {"name": "id", "type": "bigint"},
                {"name": "weights", "type": "map<double,double>"},
                {"name": "items", "type": "map<string,array<struct<sku:string,qty:int,price:decimal(10,2)>>>"},
                {"name": "status", "type": "string", "default": "'new'"},
            ],
        },
    )
    apply(project)
    assert pipeline.make_plan(project.catalog, project.desired()).is_empty
    project.sql(f"INSERT INTO {table} (id, weights, items) VALUES (1, map(1.5D, 2.5D), map('a', array()))")
    # A DEFAULT added to an existing table, and a second map column.
    spec = yaml.safe_load((project.specs / "metrics.yaml").read_text())
    spec["columns"].append({"name": "priority", "type": "int", "default": "3"})
    spec["columns"].append({"name": "pairs", "type": "map<double,map<string,double>>"})
    write(project, "metrics", spec)
    apply(project)
    again = pipeline.make_plan(project.catalog, project.desired())
    assert again.is_empty, again.actions
    assert project.sql(f"SELECT status FROM {table}") == [("new",)]
    # import writes what the table is; planning that spec changes nothing.
    live = project.catalog.read([TableName.parse(table)]).tables[TableName.parse(table)]
    (project.specs / "metrics.yaml").write_text(importer.spec_text(live))
    imported = pipeline.make_plan(project.catalog, project.desired())
    assert imported.is_empty, imported.actions


def test_retyping_a_column_a_generated_column_reads_is_blocked_with_delta_s_reason(
    project: Project, schema: str
) -> None:
    table = f"{schema}.orders"
    columns: list[dict[str, object]] = [
        {"name": "qty", "type": "int"},
        {"name": "double_qty", "type": "int", "generated": "qty * 2"},
    ]
    properties = {"delta.enableTypeWidening": "true"}
    write(project, "orders", {"table": table, "columns": columns, "properties": properties})
    apply(project)
    columns[0]["type"] = "bigint"
    write(project, "orders", {"table": table, "columns": columns, "properties": properties})
    plan = pipeline.make_plan(project.catalog, project.desired())
    (blocked,) = [a for a in plan.actions if isinstance(a, Unsupported)]
    assert "DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE" in blocked.reason
    assert "renamed_from" in blocked.remedy
    # The block is honest: Delta itself refuses the statement.
    with pytest.raises(Exception, match="DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE"):
        project.sql(f"ALTER TABLE {table} ALTER COLUMN qty TYPE BIGINT")


def test_a_rewrite_of_a_column_mapped_table_names_the_new_physical_names(project: Project, schema: str) -> None:
    table = f"{schema}.events"
    properties = {"delta.columnMapping.mode": "name"}
    columns: list[dict[str, object]] = [{"name": "id", "type": "bigint"}, {"name": "code", "type": "string"}]
    write(project, "events", {"table": table, "columns": columns, "properties": properties})
    apply(project)
    project.sql(f"INSERT INTO {table} VALUES (1, '7')")
    physical = _physical_names(project, table)
    columns[1] = {"name": "code", "type": "int", "using": "CAST(code AS INT)"}
    write(project, "events", {"table": table, "columns": columns, "properties": properties})
    review = pipeline.review(project.catalog, project.desired(), ALLOW, applying=True)
    reasons = [f.reason for f in review.assessment.findings if f.hazard is Hazard.BREAKING]
    assert any("`code` new physical names" in r and "schemaTrackingLocation" in r for r in reasons), reasons
    execution.apply_plan(project.catalog, review.plan)
    after = _physical_names(project, table)
    # What the finding says is what Delta did: the converted column got a new physical name, the other kept its.
    assert after["id"] == physical["id"]
    assert after["code"] != physical["code"]


def _physical_names(project: Project, table: str) -> dict[str, str]:
    spark = project.catalog.spark
    location = str(spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"])
    empty = spark._jvm.scala.Option.empty()
    snapshot = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location).update(
        False, empty, empty
    )
    fields = json.loads(snapshot.schema().json())["fields"]
    return {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in fields}
