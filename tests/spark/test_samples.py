"""Data-check samples on a real 13-column Delta table: the key-like columns and the ones the rule reads,
as an aligned table of SQL literals that Spark reads back as the very values stored."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.sql.literals import sql_literal

from .conftest import Project

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")


COLUMNS = """\
    order_id BIGINT NOT NULL, placed_at TIMESTAMP, placed_on DATE, customer STRING, amount DECIMAL(12,2),
    qty INT, price DOUBLE, paid BOOLEAN, tags ARRAY<STRING>, attrs MAP<STRING,INT>,
    address STRUCT<street:STRING,city:STRING>, payload BINARY, note STRING"""
ROWS = """\
    (1, TIMESTAMP '2026-11-24 23:37:50', DATE '2026-11-23', 'O''Brien', -5.00, 2, 1.5, true,
     array('a', 'b'), map('k', 1), named_struct('street', 'Main St', 'city', 'Springfield'), X'CAFE', 'first'),
    (2, TIMESTAMP '2026-11-24 10:00:00', DATE '2026-11-24', 'ok', 7.25, 1, 2.0, false,
     array(), map(), named_struct('street', NULL, 'city', 'x'), NULL, NULL),
    (3, TIMESTAMP '2026-11-25 08:00:00.5', NULL, 'Zoë \\\\ back', NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, X'00', 'line one\\nline two')"""


def spec(schema: str) -> str:
    types = [part.strip().split(" ", 1) for part in COLUMNS.replace("\n", " ").split(", ")]
    lines = [f"table: {schema}.orders", "columns:"]
    for name, sql_type in types:
        not_null = sql_type.endswith(" NOT NULL")
        lines += [f"  - name: {name}", f'    type: "{sql_type.removesuffix(" NOT NULL").lower()}"']
        lines += ["    nullable: false"] if not_null else []
    lines += ["checks:", "  on_time: placed_on >= CAST(placed_at AS DATE) AND customer <> ''"]
    return "\n".join(lines) + "\n"


def test_samples_show_key_and_rule_columns_as_sql_literals(project: Project, schema: str) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {schema}.orders ({COLUMNS}) USING DELTA")
    project.sql(f"INSERT INTO {schema}.orders VALUES {ROWS}")
    project.write("orders.yaml", spec(schema))

    planned = CliRunner().invoke(cli.app, ["plan", str(project.specs)])

    assert planned.exit_code == 3, planned.output
    lines = planned.stdout.splitlines()
    start = lines.index("        sample rows:")
    header, *rows = [line.rstrip() for line in lines[start + 1 : start + 4]]
    assert lines[start + 4].strip().startswith("-> fix those rows first")
    assert header == "          order_id  placed_at                               placed_on          customer"
    assert sorted(rows) == [
        "          1         TIMESTAMP '2026-11-24 23:37:50'         DATE '2026-11-23'  'O\\'Brien'",
        "          3         TIMESTAMP '2026-11-25 08:00:00.500000'  NULL               'Zoë \\\\ back'",
    ]


def test_every_literal_reads_back_as_the_value_stored(project: Project, schema: str) -> None:
    spark = project.catalog.spark
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.orders ({COLUMNS}) USING DELTA")
    spark.sql(f"INSERT INTO {schema}.orders VALUES {ROWS}")
    stored = spark.sql(f"SELECT * FROM {schema}.orders ORDER BY order_id").collect()
    for row in stored:
        literals = ", ".join(f"{sql_literal(value)} AS `{name}`" for name, value in row.asDict().items())
        (read_back,) = spark.sql(f"SELECT {literals}").collect()
        assert read_back == row, literals
