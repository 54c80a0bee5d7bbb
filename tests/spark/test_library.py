"""delta-sync as a library, on the test process's own SparkSession (no second JVM): plan and apply on real
Delta with rows, a blocked plan raising with its review, a saved plan round-tripping (and refused once
applied), the caller's session left running with its settings as they were, progress through logging; a
statement over statement_timeout cancelled by the call's own job tag, the caller's SIGINT handler given back."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

import delta_sync
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import TableName
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
    type: int
"""


@pytest.fixture
def spark(catalog: SparkCatalog, project: Project, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(project.root)  # the library reads delta-sync.yaml (here: none) around the working directory
    return catalog.spark


def settings(spark: Any) -> dict[str, str]:
    return dict(spark.conf.getAll)


def test_plan_apply_converge_on_the_callers_session(
    spark: Any, project: Project, schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", "3")  # a runtime setting of the caller's own
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "the caller's")
    # Delta's session extension sets spark.sql.parquet.fieldId.* on a session at its first analysis: the
    # caller's session has analysed a query before it is handed over.
    spark.sql("SELECT 1").collect()
    before = settings(spark)

    project.write("orders.yaml", ORDERS.format(schema=schema))
    with caplog.at_level(logging.INFO, logger="delta_sync"):
        first = delta_sync.plan(project.specs, spark=spark)
    assert settings(spark) == before, "plan"
    assert "Reading the catalog" not in caplog.text  # the caller's session: nothing to open
    assert first.exit_code == 2
    assert not first.blocked
    assert [s.kind for s in first.statements] == ["CreateSchema", "CreateTable"]
    assert "+ create table" in first.render()
    assert "\x1b[" not in first.render()
    assert first.to_dict()["plan_id"] == first.id

    with caplog.at_level(logging.INFO, logger="delta_sync"):
        created = delta_sync.apply(first, spark=spark)
    assert created.applied == 2
    assert created.exit_code == 0
    assert f"[2/2] {schema}.orders: CREATE TABLE" in caplog.text
    assert settings(spark) == before, "apply"
    spark.sql(f"INSERT INTO {schema}.orders VALUES (1, 10), (2, 20), (3, 30)")
    before = settings(spark)  # the caller's own write sets Delta's lastCommitVersionInSession

    # An in-place change and a backfill on a table with rows, straight from the specs.
    project.write(
        "orders.yaml",
        ORDERS.format(schema=schema)
        + "  - name: region\n    type: string\n    nullable: false\n    backfill: \"'EU'\"\n"
        + "checks:\n  positive: amount > 0\nproperties:\n  team: sales\n",
    )
    changed = delta_sync.apply(project.specs, spark=spark, allow=["rewrite"])
    assert changed.applied >= 4
    rows = spark.sql(f"SELECT id, amount, region FROM {schema}.orders ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, 10, "EU"), (2, 20, "EU"), (3, 30, "EU")]
    commits = changed.commits()
    assert list(commits) == [TableName.parse(f"{schema}.orders")]
    history = {int(r["version"]): r["userMetadata"] for r in spark.sql(f"DESCRIBE HISTORY {schema}.orders").collect()}
    assert len(commits[next(iter(commits))]) == changed.applied
    for commit in next(iter(commits.values())):
        assert changed.plan_id in history[commit.version]

    again = delta_sync.plan(project.specs, spark=spark)
    assert again.is_empty
    assert again.exit_code == 0

    # The caller's session: running, its settings as they were (its own userMetadata included).
    assert settings(spark) == before
    assert spark.sql("SELECT 1").collect()[0][0] == 1
    spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    spark.conf.unset("spark.sql.shuffle.partitions")


def test_a_blocked_plan_raises_with_its_review(spark: Any, project: Project, schema: str) -> None:
    project.write("orders.yaml", ORDERS.format(schema=schema))
    delta_sync.apply(project.specs, spark=spark)
    spark.sql(f"INSERT INTO {schema}.orders VALUES (1, -5), (2, 7)")
    project.write("orders.yaml", ORDERS.format(schema=schema) + "checks:\n  positive: amount > 0\n")

    found = delta_sync.plan(project.specs, spark=spark)
    assert found.blocked
    assert found.exit_code == 3
    assert [p.violations for p in found.probes] == [1]

    # What the data blocks: the rule's own ADD CONSTRAINT finds the row, before anything of the table changed.
    with pytest.raises(delta_sync.DataBlockedError) as data:
        delta_sync.apply(project.specs, spark=spark)
    assert data.value.exit_code == 3
    assert "orders.yaml:" in str(data.value)
    assert "violates `positive`" in str(data.value)
    assert spark.sql(f"SELECT count(*) FROM {schema}.orders").collect()[0][0] == 2
    assert not [c for c in spark.sql(f"SHOW TBLPROPERTIES {schema}.orders").collect() if "constraints" in c[0]]

    # What the policy blocks (dropping a column): raised before anything runs, with the review.
    project.write("orders.yaml", ORDERS.format(schema=schema).replace("  - name: amount\n    type: int\n", ""))
    with pytest.raises(delta_sync.BlockedPlanError) as raised:
        delta_sync.apply(project.specs, spark=spark)
    assert raised.value.exit_code == 3
    assert "destructive" in [b.finding.hazard.value for b in raised.value.plan.blocks]
    assert "allow it with --allow destructive" in str(raised.value)
    assert "amount" in [f.name for f in spark.table(f"{schema}.orders").schema.fields]

    project.write("orders.yaml", ORDERS.format(schema=schema) + "checks:\n  positive: no_such_column > 0\n")
    with pytest.raises(delta_sync.SpecError) as bad:
        delta_sync.plan(project.specs, spark=spark)
    assert bad.value.problems
    assert bad.value.problems[0].file.endswith("orders.yaml")


def test_a_saved_plan_round_trips_and_runs_once(spark: Any, project: Project, schema: str, tmp_path: Path) -> None:
    project.write("orders.yaml", ORDERS.format(schema=schema))
    saved = delta_sync.plan(project.specs, spark=spark).save(tmp_path / "plan.json")

    # Made on a session handed over: never applied through the environment's own catalog, nor in another env.
    with pytest.raises(delta_sync.RefusedPlanError, match=r"made on a SparkSession handed to delta-sync"):
        delta_sync.apply(saved)
    with pytest.raises(delta_sync.RefusedPlanError, match="was made for environment local, not prod"):
        delta_sync.apply(saved, spark=spark, env="prod")
    result = delta_sync.apply(saved, spark=spark)
    assert result.applied == 2
    with pytest.raises(delta_sync.StalePlanError) as stale:
        delta_sync.apply(saved, spark=spark)
    assert stale.value.exit_code == 4
    assert "already applied" in str(stale.value)

    # A plan made, then a table moved under it: refused, nothing run.
    project.write("orders.yaml", ORDERS.format(schema=schema) + "  - name: note\n    type: string\n")
    pending = delta_sync.plan(project.specs, spark=spark)
    spark.sql(f"ALTER TABLE {schema}.orders SET TBLPROPERTIES ('someone' = 'else')")
    with pytest.raises(delta_sync.StalePlanError):
        delta_sync.apply(pending, spark=spark)
    assert "note" not in [f.name for f in spark.table(f"{schema}.orders").schema.fields]


def test_confirm_can_say_no_and_bad_arguments_are_errors(spark: Any, project: Project, schema: str) -> None:
    project.write("orders.yaml", ORDERS.format(schema=schema))
    seen: list[delta_sync.ReviewedPlan] = []

    def no(found: delta_sync.ReviewedPlan) -> bool:
        seen.append(found)
        return False

    with pytest.raises(delta_sync.CancelledError):
        delta_sync.apply(project.specs, spark=spark, confirm=no)
    assert seen
    assert not spark.sql(f"SHOW SCHEMAS LIKE '{schema}'").collect()
    with pytest.raises(delta_sync.DeltaSyncError, match="not a hazard class"):
        delta_sync.plan(project.specs, spark=spark, allow=["everything"])
    with pytest.raises(delta_sync.DeltaSyncError, match="takes a pyspark SparkSession"):
        delta_sync.plan(project.specs, spark="not a session")


READINGS = """\
table: {schema}.readings
comment: sensor readings
columns:
  - name: id
    type: bigint
    nullable: false
    comment: the reading
  - name: at
    type: timestamp
  - name: day
    type: date
    generated: CAST(at AS DATE)
  - name: sensor
    type: "struct<name:string NOT NULL COMMENT 'its name',tags:array<struct<k:string,v:int>>>"
    nullable: false
    comment: where it came from
  - name: levels
    type: map<string,double>
  - name: code
    type: char(3)
"""


def test_a_job_writing_with_the_spec_schema_never_drifts(
    spark: Any, project: Project, schema: str, tmp_path: Path
) -> None:
    """A table registered over a fresh path with `spark_schema` and a job's DataFrame made with it, appended with
    mergeSchema off: the plan of the spec is empty, nested types, NOT NULL, comments and a generated column
    included. (Delta's first write to a path makes its schema nullable, so the table is registered with the schema
    first, as a pipeline's table is, and the job appends.)"""
    import datetime

    project.write("readings.yaml", READINGS.format(schema=schema))
    struct = delta_sync.spark_schema(f"{schema}.readings", project.specs)
    assert struct["id"].nullable is False
    assert struct["id"].metadata["comment"] == "the reading"
    assert struct["sensor"].dataType["name"].nullable is False
    at = datetime.datetime(2024, 5, 1, 12, 30)
    rows = spark.createDataFrame([(1, at, at.date(), ("s1", [("k", 1)]), {"x": 1.5}, "abc")], struct)
    assert rows.schema == struct

    path = tmp_path / "readings"
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    spark.catalog.createTable(
        f"{schema}.readings", path=str(path), source="delta", schema=struct, description="sensor readings"
    )
    rows.write.format("delta").mode("append").option("mergeSchema", "false").save(str(path))
    assert spark.table(f"{schema}.readings").count() == 1

    reviewed = delta_sync.plan(project.specs, spark=spark)
    assert reviewed.is_empty, reviewed.render()


# As in test_policy.py: seconds of one core per row, evaluated in the constraint's own scan (a Spark job).
HEAVY = "name IS NULL OR length(regexp_replace(repeat(name, 8000), '[ab]*c', '')) >= 0"


def test_a_statement_over_statement_timeout_is_cancelled_on_the_callers_session(
    spark: Any, project: Project, schema: str
) -> None:
    assert threading.current_thread() is threading.main_thread()  # where signals land, as in a notebook or a job
    seen: list[int] = []
    callers = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    mine = signal.getsignal(signal.SIGINT)
    try:
        spec = f"table: {schema}.slow\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: name, type: string}}\n"
        project.write("slow.yaml", spec)
        delta_sync.apply(project.specs, spark=spark)
        spark.sql(f"INSERT INTO {schema}.slow SELECT id, 'ab' FROM range(1, 41)")
        project.write("slow.yaml", spec + f'checks:\n  heavy: "{HEAVY}"\n')
        (project.root / "delta-sync.yaml").write_text("envs:\n  local:\n    statement_timeout: 1s\n")

        # No data check first (it would be the one over the limit): the ADD CONSTRAINT's own scan is.
        with pytest.raises(DeltaSyncError) as stopped:
            delta_sync.apply(project.specs, spark=spark, probes=False)
        assert stopped.value.exit_code == 130
        said = str(stopped.value)
        assert "ADD CONSTRAINT heavy" in said, said
        assert "ran longer than statement_timeout 1s, so it was cancelled" in said, said
        assert "Run apply again to continue" in said
        assert signal.getsignal(signal.SIGINT) is mine  # the caller's handler, back
        assert seen == []  # the time limit's SIGINT went to delta-sync's handler, not the caller's
        properties = {r["key"] for r in spark.sql(f"SHOW TBLPROPERTIES {schema}.slow").collect()}
        assert "delta.constraints.heavy" not in properties
        assert spark.sql("SELECT 1").collect()[0][0] == 1  # the caller's session goes on

        # With room for it (one row left to check), the next call adds it.
        spark.sql(f"DELETE FROM {schema}.slow WHERE id > 1")
        (project.root / "delta-sync.yaml").write_text("envs:\n  local:\n    statement_timeout: 10m\n")
        assert delta_sync.apply(project.specs, spark=spark, probes=False).applied == 1
        assert delta_sync.plan(project.specs, spark=spark).is_empty
    finally:
        signal.signal(signal.SIGINT, callers)
