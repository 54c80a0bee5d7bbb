"""A table's whole life on real Delta: created at a location of its own (external), renamed (rows,
rules, properties and history kept), dropped by a tombstone, and the schema's other tables listed as
unmanaged, or dropped by strict mode. Each step re-plans empty after apply.

One catalog and one schema for every step: each Delta commit through Derby costs about a second.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from delta_sync.model.state import TableName, canonical_location
from delta_sync.planning.actions import RemoveTable, RenameTable, Unsupported
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.render.document import plan_json
from delta_sync.review import execution, pipeline

from .conftest import Project

ALLOW = frozenset({Hazard.BREAKING, Hazard.DESTRUCTIVE})


def orders(schema: str, name: str = "orders", extra: str = "", renamed: str = "") -> str:
    return f"""\
        table: {schema}.{name}
        {renamed}comment: Orders
        columns:
          - name: id
            type: bigint
            nullable: false
          - name: amount
            type: decimal(12,2)
        {extra}checks:
          positive: amount > 0
        properties:
          team: shop
        """


def apply(project: Project, **kwargs: object) -> None:
    """Review under ALLOW, run, and check that a second plan is empty."""
    desired = project.desired()
    desired = dataclasses.replace(desired, **kwargs)  # type: ignore[arg-type]
    review = pipeline.review(project.catalog, desired, ALLOW, applying=True)
    assert not review.assessment.blocks, review.assessment.blocks
    execution.apply_plan(project.catalog, review.plan)
    again = pipeline.make_plan(project.catalog, desired)
    assert again.is_empty, again.actions


def history(project: Project, table: str) -> list[str]:
    return [str(row[4]) for row in project.sql(f"DESCRIBE HISTORY {table}")]


def test_location_rename_tombstone_unmanaged_and_strict(project: Project, schema: str, tmp_path: Path) -> None:
    external = tmp_path / "files" / "events"
    project.write("orders.yaml", orders(schema))
    project.write("scratch.yaml", orders(schema, "scratch"))
    project.write(
        "events.yaml",
        f"""\
        table: {schema}.events
        location: {external}/
        columns:
          - name: id
            type: bigint
        """,
    )
    apply(project)
    project.sql(f"INSERT INTO {schema}.orders VALUES (1, 10.00), (2, 20.00)")
    project.sql(f"INSERT INTO {schema}.scratch VALUES (1, 1.00)")
    project.sql(f"INSERT INTO {schema}.events VALUES (7)")

    # The external table is where the spec put it, and the spec's spelling of it converges.
    (detail,) = project.sql(f"DESCRIBE DETAIL {schema}.events")
    assert canonical_location(str(detail[4])) == f"file:{external}"
    assert (external / "_delta_log").is_dir()
    current = project.catalog.read([TableName(None, schema, "events"), TableName(None, schema, "orders")])
    assert current.tables[TableName(None, schema, "events")].location == f"file:{external}"
    assert current.tables[TableName(None, schema, "orders")].location is None

    # Tables and views no spec names are listed, as information only.
    project.sql(f"CREATE TABLE {schema}.legacy (id BIGINT) USING DELTA")
    project.sql(f"CREATE VIEW {schema}.legacy_view AS SELECT id FROM {schema}.legacy")
    plan = project.plan()
    assert plan.is_empty
    assert [str(n) for n in plan.unmanaged] == [f"{schema}.legacy", f"{schema}.legacy_view"]
    assert plan_json(plan)["unmanaged"] == [f"{schema}.legacy", f"{schema}.legacy_view"]
    text = render.plain_text(render.render_text(plan), width=400)
    assert f"not in any spec (2): {schema}.legacy, {schema}.legacy_view" in text

    # A location the table does not have is blocked with the way out.
    columns = "columns:\n  - {name: id, type: bigint}\n"
    project.write("events.yaml", f"table: {schema}.events\nlocation: {tmp_path}/elsewhere\n{columns}")
    (blocked,) = project.plan().blocked
    assert blocked.subject == "location"
    assert "only set when the table is created" in blocked.remedy
    project.write("events.yaml", f"table: {schema}.events\nlocation: file://{external}\n{columns}")
    assert project.plan().is_empty

    # Rename (with a change after it) and a tombstone, in one plan.
    before = history(project, f"{schema}.orders")
    (project.specs / "orders.yaml").unlink()
    note = "  - {name: note, type: string}\n        "
    project.write("orders_v2.yaml", orders(schema, "orders_v2", note, f"renamed_from: {schema}.orders\n        "))
    project.write("scratch.yaml", f"table: {schema}.scratch\ndrop: true\n")
    review = pipeline.review(project.catalog, project.desired())
    kinds = {type(a).__name__ for a in review.plan.actions}
    assert {"RenameTable", "RemoveTable", "AddColumns"} <= kinds
    assert "CreateTable" not in kinds
    hazards = {(f.hazard, f.table.name) for f in review.assessment.findings}
    assert (Hazard.BREAKING, "orders_v2") in hazards
    assert (Hazard.DESTRUCTIVE, "scratch") in hazards
    # Blocked until allowed.
    assert {b.finding.hazard for b in review.assessment.blocks} == {Hazard.BREAKING, Hazard.DESTRUCTIVE}
    rename = next(a for a in review.plan.actions if isinstance(a, RenameTable))
    assert str(rename.before) == f"{schema}.orders"
    drop = next(a for a in review.plan.actions if isinstance(a, RemoveTable))
    assert drop.num_files == 1
    assert drop.origin is not None
    assert drop.origin.file.endswith("scratch.yaml")
    apply(project)

    assert project.sql(f"SELECT id, amount, note FROM {schema}.orders_v2 ORDER BY id") == [(1, 10, None), (2, 20, None)]
    properties = project.properties(f"{schema}.orders_v2")
    assert properties["team"] == "shop"
    assert properties["delta.constraints.positive"] == "amount > 0"
    assert history(project, f"{schema}.orders_v2")[-len(before) :] == before
    tables = {str(r[1]) for r in project.sql(f"SHOW TABLES IN {schema}")}
    assert "orders" not in tables
    assert "scratch" not in tables
    # The rule still holds on the renamed table.
    with pytest.raises(Exception, match="positive"):  # Delta's violation arrives as a Py4J error
        project.sql(f"INSERT INTO {schema}.orders_v2 VALUES (3, -1.00, 'x')")

    # Both names existing is refused, like an ambiguous column rename.
    project.sql(f"CREATE TABLE {schema}.orders (id BIGINT) USING DELTA")
    (both,) = [a for a in project.plan().blocked if isinstance(a, Unsupported)]
    assert "both exist" in both.reason
    project.sql(f"DROP TABLE {schema}.orders")

    # Strict mode: what no spec names is dropped (a view with DROP VIEW), external files stay.
    strict = dataclasses.replace(project.desired(), strict=True)
    plan = pipeline.make_plan(project.catalog, strict)
    dropped = {str(a.name): a.view for a in plan.actions if isinstance(a, RemoveTable)}
    assert dropped == {f"{schema}.legacy": False, f"{schema}.legacy_view": True}
    assert plan.unmanaged == ()
    apply(project, strict=True)
    assert {str(r[1]) for r in project.sql(f"SHOW TABLES IN {schema}")} == {"orders_v2", "events"}

    # A tombstone of an external table drops the entry, not the files.
    project.write("events.yaml", f"table: {schema}.events\ndrop: true\n")
    apply(project)
    assert (external / "_delta_log").is_dir()
    assert {str(r[1]) for r in project.sql(f"SHOW TABLES IN {schema}")} == {"orders_v2"}
