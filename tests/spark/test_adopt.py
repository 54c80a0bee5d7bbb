"""adopt: a table and a view changed by hand are written back into their specs, comments and layout kept,
and `plan` is empty after; a `${var}` stays a reference, or is reported when the live value differs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog

runner = CliRunner()

SPEC = """\
# The orders of the web shop.
table: {schema}.orders
comment: 'Orders of ${{owner}}'   # from the environment
columns:
  - name: id
    type: BIGINT              # kept as written
    nullable: false
    comment: "Surrogate key"
  - name: qty
    type: int                 # widened by hand
  - name: amount
    type: decimal(18,2)
checks:
  positive: amount >= 0       # changed by hand
properties:
  delta.enableTypeWidening: "true"
  team: "finance"             # set by hand
  steward: ${{owner}}
"""

ADOPTED = """\
# The orders of the web shop.
table: {schema}.orders
comment: 'Orders of ${{owner}}'   # from the environment
columns:
  - name: id
    type: BIGINT              # kept as written
    nullable: false
    comment: "The order's key"
  - name: qty
    type: bigint              # widened by hand
  - name: note
    type: string
    comment: added by hand
  - name: amount
    type: decimal(18,2)
checks:
  positive: amount > 0        # changed by hand
properties:
  delta.enableTypeWidening: "true"
  team: "growth"              # set by hand
  steward: ${{owner}}
"""


@pytest.fixture(autouse=True)
def project(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog, tmp_path: Path) -> Path:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delta-sync.yaml").write_text(
        "specs: specs\ndefault_env: local\nenvs:\n  local: {vars: {owner: data}}\n"
    )
    (tmp_path / "specs").mkdir()
    return tmp_path


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def test_a_table_changed_five_ways_by_hand_is_adopted(catalog: SparkCatalog, schema: str, project: Path) -> None:
    spec = project / "specs" / "orders.yaml"
    spec.write_text(SPEC.format(schema=schema))
    applied = invoke("apply", "--yes")
    assert applied.exit_code == 0, applied.output
    sql = catalog.spark.sql
    table = f"{schema}.orders"
    sql(f"ALTER TABLE {table} ADD COLUMNS (note STRING COMMENT 'added by hand' AFTER qty)")
    sql(f"ALTER TABLE {table} ALTER COLUMN id COMMENT 'The order''s key'")
    sql(f"ALTER TABLE {table} DROP CONSTRAINT positive")
    sql(f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (amount > 0)")
    sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('team' = 'growth')")
    sql(f"ALTER TABLE {table} ALTER COLUMN qty TYPE BIGINT")
    assert invoke("plan", "--detailed-exitcode").exit_code == 3  # a type narrowed back is blocked

    check = invoke("adopt", "--check")
    assert check.exit_code == 2, check.output
    assert spec.read_text() == SPEC.format(schema=schema)  # --check writes nothing
    changed = [line for line in check.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [
        '-    comment: "Surrogate key"',
        '+    comment: "The order\'s key"',
        "-    type: int                 # widened by hand",
        "+    type: bigint              # widened by hand",
        "+  - name: note",
        "+    type: string",
        "+    comment: added by hand",
        "-  positive: amount >= 0       # changed by hand",
        "+  positive: amount > 0        # changed by hand",
        '-  team: "finance"             # set by hand',
        '+  team: "growth"              # set by hand',
    ]

    adopted = invoke("adopt", "--yes")
    assert adopted.exit_code == 0, adopted.output
    assert spec.read_text() == ADOPTED.format(schema=schema)  # ${owner} kept: its value is the live one
    assert invoke("plan", "--detailed-exitcode").exit_code == 0
    again = invoke("adopt", "--check")
    assert again.exit_code == 0, again.output
    assert "Nothing to adopt" in again.stderr

    # A value from a var that no longer matches the live one is reported at its line, never replaced.
    sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('steward' = 'finance')")
    reported = invoke("adopt", "--yes")
    assert reported.exit_code == 0, reported.output
    assert (
        "warning: specs/orders.yaml:21: properties.steward is written `${owner}` with a variable" in reported.stderr
    ), reported.stderr
    assert spec.read_text() == ADOPTED.format(schema=schema)

    # A table no spec names is left to import.
    sql(
        f"CREATE TABLE {schema}.other (id INT NOT NULL COMMENT 'the key', tags ARRAY<STRING>, day DATE) USING DELTA "
        "PARTITIONED BY (day) COMMENT 'Imported' TBLPROPERTIES ('team' = 'growth')"
    )
    named = invoke("adopt", "--yes", f"{schema}.other")
    assert named.exit_code == 0, named.output
    assert f"{schema}.other: no spec; left to `delta-sync import {schema}.other`" in named.stderr
    # What import writes is in fmt's layout.
    imported = invoke("import", f"{schema}.other", "--out", "imported")
    assert imported.exit_code == 0, imported.output
    assert invoke("fmt", "imported", "--check").exit_code == 0


def test_a_view_changed_by_hand_is_adopted(catalog: SparkCatalog, schema: str, project: Path) -> None:
    specs = project / "specs"
    (specs / "t.yaml").write_text(
        f"table: {schema}.t\ncolumns:\n  - name: id\n    type: int\n  - name: v\n    type: int\n"
    )
    view = specs / "v.yaml"
    head = f"# big ones\nview: {schema}.v\ncomment: the big ones  # shown in the catalog\nsql: |\n"
    view.write_text(f"{head}  SELECT id FROM {schema}.t WHERE v > 10\n")
    applied = invoke("apply", "--yes")
    assert applied.exit_code == 0, applied.output
    catalog.spark.sql(
        f"CREATE OR REPLACE VIEW {schema}.v COMMENT 'the big ones' AS SELECT id, v FROM {schema}.t WHERE v > 100"
    )
    refused = invoke("adopt")  # no terminal, no --yes
    assert refused.exit_code == 1
    assert "Refusing to adopt without confirmation" in refused.stderr

    adopted = invoke("adopt", "specs", "--yes")
    assert adopted.exit_code == 0, adopted.output
    text = view.read_text()
    assert text.startswith(head), text
    assert "WHERE v > 100" in text
    assert invoke("plan", "--detailed-exitcode").exit_code == 0


def test_a_default_property_changed_by_hand_is_adopted(catalog: SparkCatalog, schema: str, project: Path) -> None:
    (project / "delta-sync.yaml").write_text(
        "specs: specs\ndefault_env: local\nenvs:\n  local: {vars: {owner: data}}\ndefaults:\n"
        "  delta.logRetentionDuration: interval 30 days\n  delta.deletedFileRetentionDuration: interval 7 days\n"
    )
    spec = project / "specs" / "events.yaml"
    bare = f"table: {schema}.events   # gets the defaults\ncolumns:\n  - name: id\n    type: bigint\n"
    spec.write_text(bare)
    applied = invoke("apply", "--yes")
    assert applied.exit_code == 0, applied.output
    sql = catalog.spark.sql
    sql(f"ALTER TABLE {schema}.events SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days')")
    sql(f"ALTER TABLE {schema}.events UNSET TBLPROPERTIES ('delta.deletedFileRetentionDuration')")

    adopted = invoke("adopt", "--yes")
    assert adopted.exit_code == 0, adopted.output
    assert spec.read_text() == bare + (
        "properties:\n  delta.deletedFileRetentionDuration: null\n  delta.logRetentionDuration: interval 60 days\n"
    )
    assert invoke("plan", "--detailed-exitcode").exit_code == 0

    # Back to the default by hand: the spec's own value goes, never a copy of the default.
    sql(f"ALTER TABLE {schema}.events SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 30 days')")
    again = invoke("adopt", "--yes")
    assert again.exit_code == 0, again.output
    assert spec.read_text() == bare + "properties:\n  delta.deletedFileRetentionDuration: null\n"
    assert invoke("plan", "--detailed-exitcode").exit_code == 0
