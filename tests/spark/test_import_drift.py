"""import writes specs that plan clean; drift names what changed outside delta-sync, and when."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.review import environments, pipeline
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.specs.spec_files import load_specs

from .conftest import Project

runner = CliRunner()


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def test_import_round_trip_of_every_feature(project: Project, schema: str, tmp_path: Path) -> None:
    sql = project.sql
    sql(f"CREATE SCHEMA {schema}")
    sql(
        f"""CREATE TABLE {schema}.orders (
            id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5) COMMENT 'it''s the \\\\key',
            placed_at TIMESTAMP NOT NULL,
            placed_on DATE GENERATED ALWAYS AS (CAST(placed_at AS DATE)),
            status STRING DEFAULT 'new' COMMENT 'line one\\nline "two"',
            amount DECIMAL(18,2),
            address STRUCT<street: STRING COMMENT 'a `street`', zip: INT NOT NULL>,
            tags ARRAY<STRING>,
            attrs MAP<STRING, DOUBLE>
        ) USING DELTA
        PARTITIONED BY (placed_on)
        COMMENT 'Orders: "quoted", \\'single\\' and ${{x}}'
        TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported', 'owner.team' = 'sales',
                       'delta.enableChangeDataFeed' = 'true')"""
    )
    sql(f"ALTER TABLE {schema}.orders ADD CONSTRAINT positive CHECK (amount >= 0)")
    sql(f"ALTER TABLE {schema}.orders ADD CONSTRAINT ds_nn_amount CHECK (`amount` IS NOT NULL)")
    sql(f"CREATE TABLE {schema}.events (id BIGINT, kind STRING) USING DELTA CLUSTER BY (kind)")

    out = tmp_path / "imported"
    result = invoke("import", schema, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "Wrote 2 spec file(s)" in result.stderr
    orders = (out / schema / "orders.yaml").read_text()
    assert "nullable: false" in orders
    assert "ds_nn_amount" not in orders  # recognised as the column's NOT NULL
    assert "delta.feature" not in orders

    desired = load_specs(out)
    plan = pipeline.make_plan(project.catalog, desired)
    assert plan.is_empty, [type(a).__name__ for a in plan.actions]
    assert invoke("plan", str(out), "--detailed-exitcode").exit_code == 0

    again = invoke("import", schema, "--out", str(out))
    assert again.exit_code == 1
    assert "would overwrite existing spec files" in again.stderr
    assert invoke("import", f"{schema}.events", "--out", str(out), "--force").exit_code == 0

    # The fast read (metastore entry + Delta snapshot) and the SQL-only one other catalogs use agree.
    for name in desired.tables:
        fast = project.catalog.read([name]).table(name)
        described = project.catalog._read_described(name)
        assert fast == described
        assert fast is not None
        assert described is not None
        assert (fast.num_files, fast.version) == (described.num_files, described.version)


def test_drift_names_the_change_the_operation_and_the_time(project: Project, schema: str) -> None:
    project.write(
        "t.yaml",
        f"""\
        table: {schema}.accounts
        columns:
          - name: id
            type: bigint
        properties:
          team: finance
        """,
    )
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    in_sync = invoke("drift", str(project.specs))
    assert in_sync.exit_code == 0, in_sync.output

    changed = invoke("sql", f"ALTER TABLE {schema}.accounts SET TBLPROPERTIES ('team' = 'growth')")
    assert changed.exit_code == 0
    drifted = invoke("drift", str(project.specs))
    assert drifted.exit_code == 2, drifted.output
    assert 'property team: "growth" -> "finance"' in drifted.stdout
    assert f"{schema}.accounts: SET TBLPROPERTIES at 20" in drifted.stdout
    assert "(version 1)" in drifted.stdout
    # Open-source Delta records no user: drift says so and names the engine that wrote the commit.
    assert "(user not recorded; written by Apache-Spark/4.2" in drifted.stdout
