"""Keys on real Delta, end to end: declared in specs, kept in table properties (open-source Delta refuses
key constraints), checked against the data at plan, apply and `check`, imported back, seen by drift."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.model import keys
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

runner = CliRunner()


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def customers(schema: str, key: str = "primary_key: [id]") -> str:
    return f"""\
        table: {schema}.customers
        columns:
          - name: id
            type: bigint
            nullable: false
          - name: region
            type: string
            nullable: false
          - name: email
            type: string
        {key}
        """


def orders(schema: str, foreign: bool = True) -> str:
    fk = (
        f"""
        foreign_keys:
          - columns: [customer_id]
            references: {schema}.customers(id)"""
        if foreign
        else ""
    )
    return f"""\
        table: {schema}.orders
        columns:
          - name: order_id
            type: bigint
            nullable: false
          - name: customer_id
            type: bigint
        primary_key: [order_id]{fk}
        """


def test_keys_from_create_to_check(project: Project, schema: str, tmp_path: Path) -> None:
    # A parent and a child created in the same plan: the child has no rows, so nothing to check yet.
    project.write("customers.yaml", customers(schema))
    project.write("orders.yaml", orders(schema))
    created = invoke("apply", str(project.specs), "--yes")
    assert created.exit_code == 0, created.output
    assert f"+ primary key pk_{schema}_customers__id (id)" in created.stdout
    assert invoke("plan", str(project.specs), "--detailed-exitcode").exit_code == 0
    stored = project.properties(f"{schema}.customers")
    assert json.loads(stored[keys.PRIMARY_KEY_PROPERTY]) == {"name": f"pk_{schema}_customers__id", "columns": ["id"]}
    assert f"delta_sync.foreign_key.fk_{schema}_orders__customer_id__{schema}_customers" in project.properties(
        f"{schema}.orders"
    )

    # Rows that break both keys: a repeated id and an order of a customer who does not exist.
    project.sql(f"INSERT INTO {schema}.customers VALUES (1, 'eu', 'a@x'), (1, 'us', 'b@x'), (2, 'eu', NULL)")
    project.sql(f"INSERT INTO {schema}.orders VALUES (10, 1), (11, 3), (12, NULL)")
    checked = invoke("check", str(project.specs))
    assert checked.exit_code == 3, checked.output
    assert f"{schema}.customers: primary key pk_{schema}_customers__id (id): 1 key value repeats" in checked.stdout
    assert "1 row has no parent row" in checked.stdout
    assert "      customer_id  rows\n      3            1\n" in checked.stdout  # as the README shows it
    data = json.loads(invoke("check", str(project.specs), "--format", "json").stdout)
    assert {(k["table"], k["kind"], k["violations"]) for k in data["keys"]} == {
        (f"{schema}.customers", "primary key", 1),
        (f"{schema}.orders", "primary key", 0),
        (f"{schema}.orders", "foreign key", 1),
    }

    # Changing the key to (id, region) is checked against the rows as they are: it holds, and is applied.
    project.write("customers.yaml", customers(schema, "primary_key: [id, region]"))
    project.write("orders.yaml", orders(schema, foreign=False))
    planned = invoke("plan", str(project.specs), "--detailed-exitcode")
    assert planned.exit_code == 2, planned.output
    assert "~ primary key" in planned.stdout
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    assert invoke("plan", str(project.specs), "--detailed-exitcode").exit_code == 0

    # Back to (id) with the repeated id still there: blocked by the data, at plan and at apply.
    project.write("customers.yaml", customers(schema))
    blocked = invoke("plan", str(project.specs))
    assert blocked.exit_code == 3, blocked.output
    assert "blocked (data-dependent)" in blocked.stdout
    assert "will fail: 1 key value repeats or is NULL in" in blocked.stdout, blocked.stdout  # the count...
    assert "sample rows:\n          id  rows\n          1   2\n" in blocked.stdout  # ...the value, its rows
    refused = invoke("apply", str(project.specs), "--yes")
    assert refused.exit_code == 3, refused.output
    project.sql(f"DELETE FROM {schema}.customers WHERE region = 'us'")
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0

    # The foreign key back, with an orphan in the data: blocked; without it: applied.
    project.write("orders.yaml", orders(schema))
    assert invoke("plan", str(project.specs)).exit_code == 3
    project.sql(f"DELETE FROM {schema}.orders WHERE customer_id = 3")
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    assert invoke("check", str(project.specs)).exit_code == 0

    # A foreign key to a parent the same plan creates: the parent is read as empty, so every row is an orphan.
    project.write(
        "regions.yaml",
        f"""\
        table: {schema}.regions
        columns:
          - name: region
            type: string
            nullable: false
        primary_key: [region]
        """,
    )
    project.write(
        "customers.yaml",
        textwrap.dedent(customers(schema))
        + f"foreign_keys:\n  - columns: [region]\n    references: {schema}.regions(region)\n",
    )
    orphans = invoke("plan", str(project.specs))
    assert orphans.exit_code == 3, orphans.output
    assert "rows have no parent row" in orphans.stdout
    (project.specs / "regions.yaml").unlink()
    project.write("customers.yaml", customers(schema))

    # import writes the keys back; drift sees a key changed by hand.
    out = tmp_path / "imported"
    imported = invoke("import", schema, "--out", str(out))
    assert imported.exit_code == 0, imported.output
    assert invoke("plan", str(out), "--detailed-exitcode").exit_code == 0
    project.sql(
        f"ALTER TABLE {schema}.customers SET TBLPROPERTIES "
        f'(\'{keys.PRIMARY_KEY_PROPERTY}\' = \'{{"name":"by_hand","columns":["email"]}}\')'
    )
    drifted = invoke("drift", str(project.specs))
    assert drifted.exit_code == 2, drifted.output
    assert "primary key" in drifted.stdout
    assert "SET TBLPROPERTIES" in drifted.stdout
