"""`rollback` on real Delta with rows, through the library on the test process's session: RESTORE when
nobody wrote since the plan, the reverse change planned forward when someone did (their rows kept), DROP
TABLE for a table the plan created; blocked, twice, half-applied, unknown ids, saved plan files, features."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import delta_sync
from delta_sync.cli import main as cli
from delta_sync.model.state import TableName
from delta_sync.review import environments, execution
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

ORDERS = """\
table: {schema}.orders
comment: one row per order
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: decimal(10,2)
"""

CHANGED = (
    ORDERS.replace("one row per order", "orders, one per row")
    + """\
  - name: note
    type: string
  - name: region
    type: string
checks:
  positive: amount > 0
properties:
  team: sales
"""
)


@pytest.fixture
def spark(catalog: SparkCatalog, project: Project, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(project.root)
    return catalog.spark


def rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table}").collect())


def history(spark: Any, table: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {table}").collect()]


def described(spark: Any, table: str) -> tuple[Any, ...]:
    detail = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]
    schema = spark.table(table).schema.jsonValue()
    properties = dict(detail["properties"] or {})
    return schema, detail["description"], properties


def stamp(entry: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(entry["userMetadata"])["delta-sync"])


def start(spark: Any, project: Project, schema: str) -> str:
    """The orders table with three rows, made by a first plan; returns its name."""
    project.write("orders.yaml", ORDERS.format(schema=schema))
    delta_sync.apply(project.specs, spark=spark)
    table = f"{schema}.orders"
    spark.sql(f"INSERT INTO {table} VALUES (1, 10.00), (2, 20.00), (3, 30.00)")
    return table


def test_restore_when_nobody_wrote_since(spark: Any, project: Project, schema: str) -> None:
    table = start(spark, project, schema)
    before_rows, before_shape = rows(spark, table), described(spark, table)
    before_version = history(spark, table)[0]["version"]
    project.write("orders.yaml", CHANGED.format(schema=schema))
    applied = delta_sync.apply(project.specs, spark=spark)
    assert applied.applied == 3  # columns, the rule, properties and comment
    spark.sql(f"OPTIMIZE {table}")  # changes no row: a RESTORE across it discards nothing

    reviewed = delta_sync.plan_rollback(applied.plan_id, spark=spark)
    assert not reviewed.blocked
    assert [type(a).__name__ for a in reviewed.actions if type(a).__name__ != "Notice"] == ["RestoreTable"]
    name = TableName.parse(table).sql()
    assert [s.sql for s in reviewed.statements] == [f"RESTORE TABLE {name} TO VERSION AS OF {before_version}"]
    text = reviewed.render()
    assert f"restore to version {before_version}" in text
    assert "- column note string" in text
    assert "- check positive: amount > 0" in text
    assert "columnMapping" not in text
    assert reviewed.document["rollback"]["tables"][0]["way"] == "restore"

    done = delta_sync.rollback(reviewed, spark=spark)
    assert done.applied == 1
    assert rows(spark, table) == before_rows
    assert described(spark, table) == before_shape
    latest = history(spark, table)[0]
    assert latest["operation"] == "RESTORE"
    assert stamp(latest) == {"plan": done.plan_id, "rollback": applied.plan_id, "action": "RestoreTable"}

    # Twice: nothing left to undo.
    again = delta_sync.plan_rollback(applied.plan_id, spark=spark)
    assert again.is_empty
    assert again.exit_code == 0
    assert again.document["rollback"]["nothing_to_undo"][0]["table"] == table
    assert delta_sync.rollback(applied.plan_id, spark=spark).applied == 0

    # The specs no longer match: plan shows the change again; drift counts the rollback as delta-sync's own.
    assert delta_sync.plan(project.specs, spark=spark).exit_code == 2
    drifted = delta_sync.drift(project.specs, spark=spark)
    assert drifted.commits == {TableName.parse(table): []}

    # Applying the specs again converges as before.
    delta_sync.apply(project.specs, spark=spark)
    assert delta_sync.plan(project.specs, spark=spark).is_empty


def test_forward_when_others_wrote_keeps_their_rows(spark: Any, project: Project, schema: str) -> None:
    table = start(spark, project, schema)
    project.write(
        "orders.yaml",
        ORDERS.format(schema=schema) + "checks:\n  positive: amount > 0\nproperties:\n  team: sales\n",
    )
    applied = delta_sync.apply(project.specs, spark=spark)
    spark.sql(f"INSERT INTO {table} VALUES (4, 40.00), (5, 50.00)")
    writer = history(spark, table)[0]["version"]

    reviewed = delta_sync.plan_rollback(applied.plan_id, spark=spark)
    assert not reviewed.blocked
    assert sorted(s.kind for s in reviewed.statements) == ["DropCheck", "UnsetProperties"]
    assert f"version {writer} (WRITE" in reviewed.render()
    assert reviewed.document["rollback"]["tables"][0]["way"] == "forward"
    done = delta_sync.rollback(reviewed, spark=spark)
    assert done.applied == 2
    assert [r[0] for r in rows(spark, table)] == [1, 2, 3, 4, 5]
    shape = described(spark, table)
    assert "team" not in shape[2]
    assert "delta.constraints.positive" not in shape[2]
    assert all(stamp(h)["rollback"] == applied.plan_id for h in history(spark, table)[:2])
    assert delta_sync.plan_rollback(applied.plan_id, spark=spark).is_empty


def test_a_column_that_now_holds_data_is_blocked_as_destructive(spark: Any, project: Project, schema: str) -> None:
    table = start(spark, project, schema)
    project.write("orders.yaml", ORDERS.format(schema=schema) + "  - name: note\n    type: string\n")
    applied = delta_sync.apply(project.specs, spark=spark)
    spark.sql(f"INSERT INTO {table} VALUES (4, 40.00, 'rush'), (5, 50.00, 'gift'), (6, 60.00, NULL)")
    writer = history(spark, table)[0]["version"]

    with pytest.raises(delta_sync.BlockedPlanError) as blocked:
        delta_sync.rollback(applied.plan_id, spark=spark)
    assert blocked.value.exit_code == 3
    reasons = {b.finding.hazard.value: b.why for b in blocked.value.plan.blocks}
    assert f"loses the values of 2 rows written since the plan by version {writer} (WRITE" in reasons["destructive"]
    assert history(spark, table)[0]["version"] == writer  # nothing ran

    done = delta_sync.rollback(applied.plan_id, spark=spark, allow=["destructive", "irreversible", "breaking"])
    assert done.applied >= 2
    assert [r[0] for r in rows(spark, table)] == [1, 2, 3, 4, 5, 6]
    assert spark.table(table).columns == ["id", "amount"]


def test_a_created_table_is_dropped_unless_others_wrote_to_it(spark: Any, project: Project, schema: str) -> None:
    project.write("a.yaml", f"table: {schema}.a\ncolumns:\n  - name: id\n    type: int\n")
    project.write("b.yaml", f"table: {schema}.b\ncolumns:\n  - name: id\n    type: int\n")
    applied = delta_sync.apply(project.specs, spark=spark)
    spark.sql(f"INSERT INTO {schema}.b VALUES (1)")

    with pytest.raises(delta_sync.BlockedPlanError) as blocked:
        delta_sync.rollback(applied.plan_id, spark=spark)
    [block] = blocked.value.plan.blocks
    assert block.finding.table == TableName.parse(f"{schema}.b")
    assert "version 1 (WRITE" in block.why
    assert spark.catalog.tableExists(f"{schema}.a")

    done = delta_sync.rollback(applied.plan_id, spark=spark, allow=["destructive"])
    dropped = [f"DROP TABLE {TableName.parse(f'{schema}.{t}').sql()}" for t in "ab"]
    assert sorted(s.sql for s in done.statements) == dropped
    assert not spark.catalog.tableExists(f"{schema}.a")
    assert not spark.catalog.tableExists(f"{schema}.b")
    assert spark.catalog.databaseExists(schema)  # a schema the plan created is left


def test_a_half_applied_plan_rolls_back_what_landed(
    spark: Any, project: Project, schema: str, catalog: SparkCatalog
) -> None:
    table = start(spark, project, schema)
    before_shape = described(spark, table)
    project.write("orders.yaml", CHANGED.format(schema=schema))
    reviewed = delta_sync.plan(project.specs, spark=spark)
    landed = reviewed.statements[:2]  # apply stopped after two statements
    execution.run_statements(catalog, landed, reviewed.id)
    assert described(spark, table) != before_shape

    done = delta_sync.rollback(reviewed.id, spark=spark)
    assert [s.kind for s in done.statements] == ["RestoreTable"]
    assert described(spark, table) == before_shape


def test_an_unknown_plan_id_is_an_error(spark: Any, project: Project, schema: str) -> None:
    start(spark, project, schema)
    with pytest.raises(delta_sync.UnknownPlanError) as unknown:
        delta_sync.rollback("0123456789abcdef", spark=spark)
    assert unknown.value.exit_code == 1
    assert f"no commit of it in the history of {schema}.orders" in str(unknown.value)
    with pytest.raises(delta_sync.DeltaSyncError, match="neither a saved plan file nor a plan id"):
        delta_sync.rollback("no such; plan", spark=spark)


def test_through_saved_plan_files_and_dropped_features(spark: Any, project: Project, schema: str) -> None:
    table = start(spark, project, schema)
    before_shape = described(spark, table)
    project.write("orders.yaml", ORDERS.format(schema=schema).replace("decimal(10,2)", "decimal(12,2)"))
    made = delta_sync.plan(project.specs, spark=spark, allow=["irreversible", "breaking"])
    saved = made.save(project.root / "plan.json")
    delta_sync.apply(saved, spark=spark, allow=["irreversible", "breaking"])

    undo = delta_sync.plan_rollback(saved, spark=spark)
    text = undo.render()
    assert "keeps the typeWidening feature" in text
    assert "--allow irreversible also drops it" in text
    assert [s.kind for s in undo.statements] == ["RestoreTable"]

    # Saved, reviewed, run with apply: the commits still name the plan they undo.
    dropping = delta_sync.plan_rollback(saved, spark=spark, allow=["irreversible"])
    assert [s.kind for s in dropping.statements] == ["RestoreTable", "DropFeature"]
    path = dropping.save(project.root / "rollback.json")
    # Edited anywhere, a saved rollback plan is refused as any saved plan is, before anything runs.
    edited = project.root / "edited-rollback.json"
    edited.write_text(path.read_text().replace(" TO VERSION AS OF ", " TO VERSION AS OF 0 -- ", 1))
    with pytest.raises(delta_sync.RefusedPlanError, match=r"was edited after it was made \(`actions\[\d+\]"):
        delta_sync.apply(edited, spark=spark, allow=["irreversible"])
    done = delta_sync.apply(path, spark=spark, allow=["irreversible"])
    assert done.applied == 2
    assert described(spark, table)[:2] == before_shape[:2]
    features = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["tableFeatures"]
    assert "typeWidening" not in features
    stamps = [stamp(h) for h in history(spark, table) if h["userMetadata"]]
    assert any(s.get("rollback") == made.id and s["action"] == "DropFeature" for s in stamps)
    assert delta_sync.plan_rollback(saved, spark=spark).is_empty


def test_a_rename_is_renamed_back_forward(spark: Any, project: Project, schema: str) -> None:
    table = start(spark, project, schema)
    renamed = ORDERS.format(schema=schema).replace("- name: amount\n", "- name: total\n    renamed_from: amount\n")
    project.write("orders.yaml", renamed)
    applied = delta_sync.apply(project.specs, spark=spark, allow=["breaking", "irreversible"])
    spark.sql(f"INSERT INTO {table} VALUES (4, 40.00)")

    reviewed = delta_sync.plan_rollback(applied.plan_id, spark=spark, allow=["breaking"])
    assert [s.kind for s in reviewed.statements] == ["RenameColumn"]
    assert "rename column total -> amount" in reviewed.render()
    assert "keeps the columnMapping feature" in reviewed.render()
    delta_sync.rollback(reviewed, spark=spark, allow=["breaking"])
    assert spark.table(table).columns == ["id", "amount"]
    assert [r[0] for r in rows(spark, table)] == [1, 2, 3, 4]
    assert delta_sync.plan_rollback(applied.plan_id, spark=spark).is_empty


def test_after_a_rollback_that_only_dropped_tables_there_is_nothing_left_to_undo(
    spark: Any, project: Project, schema: str, catalog: SparkCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dropped table keeps no history, so the plan's id is found nowhere once its rollback dropped every
    table it created: that is nothing left to undo (exit 0), not an unknown id (exit 1)."""
    project.write("a.yaml", f"table: {schema}.a\ncolumns:\n  - name: id\n    type: int\n")
    project.write("b.yaml", f"table: {schema}.b\ncolumns:\n  - name: id\n    type: int\n")
    applied = delta_sync.apply(project.specs, spark=spark)
    done = delta_sync.rollback(applied.plan_id, spark=spark)
    assert sorted(s.kind for s in done.statements) == ["DropTable", "DropTable"]
    assert not spark.catalog.tableExists(f"{schema}.a")

    again = delta_sync.plan_rollback(applied.plan_id, spark=spark)
    assert again.is_empty
    assert again.exit_code == 0
    left = again.document["rollback"]["nothing_to_undo"]
    assert [e["table"] for e in left] == [f"{schema}.a", f"{schema}.b"]
    assert "does not exist" in left[0]["why"]
    assert delta_sync.rollback(applied.plan_id, spark=spark).applied == 0

    # The command says so too, with exit 0.
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    result = CliRunner().invoke(cli.app, ["rollback", applied.plan_id, "--yes"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"Nothing to roll back: plan {applied.plan_id} has nothing left to undo" in result.stderr
    assert f"{schema}.a: nothing to undo: it does not exist" in result.stdout

    # An id of no plan, where every table of the specs exists, is still an error.
    project.write("a.yaml", f"table: {schema}.a\ncolumns:\n  - name: id\n    type: int\n")
    delta_sync.apply(project.specs, spark=spark)
    with pytest.raises(delta_sync.UnknownPlanError):
        delta_sync.rollback("0123456789abcdef", spark=spark)
