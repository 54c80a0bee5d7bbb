"""The spec as a schema for the pipelines that write the table, without a JVM: the JSON form of a spec's Spark
schema (nested types, NOT NULL, comments, generated, identity and default columns), `delta-sync ddl` printing
what `plan --format sql` prints for a fresh table, and an unknown table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import delta_sync
from delta_sync.cli import main as cli
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning.diff.planner import plan
from delta_sync.render.sql import render_sql
from delta_sync.specs.spec_files import load_specs
from delta_sync.sql.schema_json import table_schema_json

runner = CliRunner()

EVENTS = """\
table: app.events
comment: What happened
columns:
  - name: id
    type: bigint
    nullable: false
    identity: {start: 10, step: 5}
  - name: at
    type: timestamp
    nullable: false
    comment: When it happened
  - name: day
    type: date
    generated: CAST(at AS DATE)
  - name: source
    type: string
    default: "'web'"
  - name: code
    type: char(3)
  - name: payload
    type: "struct<kind:string NOT NULL COMMENT 'What kind', tags:array<struct<k:string,v:int>>>"
    comment: The body
  - name: counts
    type: map<string,bigint>
checks:
  recent: at > '2020-01-01'
primary_key: {name: events_pk, columns: [id]}
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "events.yaml").write_text(EVENTS)
    (tmp_path / "delta-sync.yaml").write_text("specs: specs\n")
    return folder


def _field(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in schema["fields"] if f["name"] == name)


def test_the_json_schema_of_a_spec(tmp_path: Path) -> None:
    table = load_specs(_folder(tmp_path)).tables[TableName(None, "app", "events")]
    schema = table_schema_json(table)
    assert [f["name"] for f in schema["fields"]] == ["id", "at", "day", "source", "code", "payload", "counts"]
    assert _field(schema, "id") == {
        "name": "id",
        "type": "long",
        "nullable": False,
        "metadata": {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False},
    }
    assert _field(schema, "at") == {
        "name": "at",
        "type": "timestamp",
        "nullable": False,
        "metadata": {"comment": "When it happened"},
    }
    assert _field(schema, "day")["metadata"] == {"delta.generationExpression": "CAST(at AS DATE)"}
    # A writer gives every column a value: the default stays out (see sql.schema_json).
    assert _field(schema, "source") == {"name": "source", "type": "string", "nullable": True, "metadata": {}}
    assert _field(schema, "code") == {
        "name": "code",
        "type": "string",
        "nullable": True,
        "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "char(3)"},
    }
    payload = _field(schema, "payload")
    assert payload["metadata"] == {"comment": "The body"}
    assert payload["type"] == {
        "type": "struct",
        "fields": [
            {"name": "kind", "type": "string", "nullable": False, "metadata": {"comment": "What kind"}},
            {
                "name": "tags",
                "type": {
                    "type": "array",
                    "elementType": {
                        "type": "struct",
                        "fields": [
                            {"name": "k", "type": "string", "nullable": True, "metadata": {}},
                            {"name": "v", "type": "integer", "nullable": True, "metadata": {}},
                        ],
                    },
                    "containsNull": True,
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    assert _field(schema, "counts")["type"] == {
        "type": "map",
        "keyType": "string",
        "valueType": "long",
        "valueContainsNull": True,
    }
    # pyspark takes it as it is and gives it back unchanged (no JVM for either).
    from pyspark.sql.types import StructType

    assert StructType.fromJson(schema).jsonValue() == schema


def test_spark_schema_from_the_project_around_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    schema = delta_sync.spark_schema("app.events")
    assert schema.simpleString().startswith("struct<id:bigint,at:timestamp,day:date,source:string,code:string,")
    assert schema["at"].nullable is False
    assert schema["at"].metadata == {"comment": "When it happened"}
    assert schema["payload"].dataType["kind"].nullable is False
    with pytest.raises(DeltaSyncError, match=r"no table spec in .*specs declares app\.nope"):
        delta_sync.spark_schema("app.nope", tmp_path / "specs")


def _plan_section(folder: Path, name: str) -> list[str]:
    """The lines `plan --format sql` prints under the table's comment, planned against an empty catalog."""
    desired = load_specs(folder)
    script = render_sql(plan(CatalogState(tables={}), desired)).splitlines()
    start = script.index(f"-- {name}") + 1
    end = script.index("", start) if "" in script[start:] else len(script)
    return script[start:end]


def test_ddl_prints_what_a_plan_of_a_fresh_table_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["ddl", "app.events"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == _plan_section(folder, "app.events")
    assert result.stdout.startswith(
        "CREATE TABLE `app`.`events` (\n  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY"
    )
    assert "ADD CONSTRAINT recent CHECK" in result.stdout
    # The key as Delta's session catalog keeps it: a table property after the table is created.
    assert result.stdout.splitlines()[-1].startswith(
        "ALTER TABLE `app`.`events` SET TBLPROPERTIES ('delta_sync.primary_key'"
    )
    # A folder given on the command line, and the table named with the session catalog.
    given = runner.invoke(cli.app, ["ddl", "spark_catalog.app.events", str(folder)])
    assert given.exit_code == 0, given.output
    assert given.stdout == result.stdout


def test_ddl_of_an_unknown_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["ddl", "app.nope"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == f"Error: no table spec in {folder} declares app.nope"
    bad = runner.invoke(cli.app, ["ddl", "events"])
    assert bad.exit_code == 1
    assert "schema.table" in bad.stderr
    assert "Traceback" not in bad.output
