"""A real Unity Catalog OSS server as an environment's catalog, through the delta-sync command line:
managed Delta tables are created and evolved (column, comments, property, CHECK) until a re-plan is
empty, and a rename, which Unity Catalog refuses, is blocked in the plan before anything runs.

The server (tests/servers/unity.py) and the connector (the environment's `packages:`) come from
Maven Central; where the server's jars cannot be had, the module is skipped with Maven's answer.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.servers.unity import CONNECTOR, Unavailable, UnityCatalog, unity_catalog
from tests.spark.cli import ENGINE, Cli

pytestmark = pytest.mark.spark

TABLE = "unity.shop.orders"

PROJECT = """\
default_env: uc
envs:
  uc:
    catalog: {catalog}
    spark:
      master: local[2]
      packages: [{connector}]
      conf:
{conf}        spark.sql.shuffle.partitions: 2
        spark.databricks.delta.snapshotPartitions: 2
"""

ORDERS = """\
table: shop.orders
comment: Orders placed in the web shop
columns:
  - name: order_id
    type: bigint
    nullable: false
  - name: email
    type: string
  - name: amount
    type: decimal(18,2)
checks:
  amount_non_negative: amount >= 0
properties:
  owner.team: shop
"""

EVOLVED = """\
table: shop.orders
comment: Orders, all channels
columns:
  - name: order_id
    type: bigint
    nullable: false
    comment: Surrogate key
  - name: email
    type: string
  - name: amount
    type: decimal(18,2)
  - name: currency
    type: string
    comment: ISO 4217
checks:
  amount_non_negative: amount >= 0
  has_at: email LIKE '%@%'
properties:
  owner.team: orders
  quality: gold
"""

RENAMED = EVOLVED.replace(
    "  - name: email\n    type: string\n", "  - name: login\n    type: string\n    renamed_from: email\n"
)


@pytest.fixture(scope="module")
def uc(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnityCatalog]:
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(unity_catalog(tmp_path_factory.mktemp("unitycatalog")))
        except Unavailable as exc:
            pytest.skip(f"the Unity Catalog server cannot run here: {exc}")
        stack.enter_context(servers.logs_kept_on_failure(request, [server.process]))
        yield server


@pytest.fixture
def project(tmp_path: Path, uc: UnityCatalog) -> Iterator[Path]:
    conf = "".join(f"        {key}: {json.dumps(value)}\n" for key, value in uc.spark_conf().items())
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(catalog=uc.catalog, connector=CONNECTOR, conf=conf))
    (tmp_path / "specs").mkdir()
    yield tmp_path
    Cli(tmp_path, ENGINE).close()


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command as at a terminal: through the project's warm engine (tests/spark/cli.py)."""
    return Cli(cwd, ENGINE).run(args, timeout=900)


def out(done: subprocess.CompletedProcess[str], uc: UnityCatalog) -> str:
    return f"{done.stdout}\n{done.stderr}\n{uc.process.report()}"


def rows(project: Path, query: str) -> list[dict[str, Any]]:
    done = run(["sql", "--format", "json", query], project)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return found


def write(project: Path, text: str) -> None:
    (project / "specs" / "orders.yaml").write_text(textwrap.dedent(text))


def test_managed_tables_are_created_and_evolved_until_the_plan_is_empty(project: Path, uc: UnityCatalog) -> None:
    write(project, ORDERS)
    created = run(["apply", "--yes"], project)
    assert created.returncode == 0, out(created, uc)
    assert TABLE in created.stdout + created.stderr
    assert run(["plan", "--detailed-exitcode"], project).returncode == 0

    # The server has it as a managed Delta table, with its comment.
    record = uc.table(TABLE)
    assert record["table_type"] == "MANAGED", record
    assert record["data_source_format"] == "DELTA", record
    assert record.get("comment") == "Orders placed in the web shop", record

    inserted = run(
        ["sql", f"INSERT INTO {TABLE} VALUES (1, 'a@example.com', 5.00), (2, 'b@example.com', 7.50)"], project
    )
    assert inserted.returncode == 0, out(inserted, uc)

    write(project, EVOLVED)
    planned = run(["plan", "--detailed-exitcode"], project)
    assert planned.returncode == 2, out(planned, uc)
    for change in ("currency", "Orders, all channels", "has_at", "quality", "Surrogate key"):
        assert change in planned.stdout, planned.stdout

    evolved = run(["apply", "--yes"], project)
    assert evolved.returncode == 0, out(evolved, uc)
    replanned = run(["plan", "--detailed-exitcode"], project)
    assert replanned.returncode == 0, out(replanned, uc)
    assert "No changes" in replanned.stdout

    properties = {r["key"]: r["value"] for r in rows(project, f"SHOW TBLPROPERTIES {TABLE}")}
    assert properties["owner.team"] == "orders"
    assert properties["quality"] == "gold"
    assert "@" in properties["delta.constraints.has_at"]
    assert properties.get("delta.feature.catalogManaged") == "supported", properties
    assert rows(project, f"SELECT count(*) AS n, count(currency) AS c FROM {TABLE}") == [{"n": 2, "c": 0}]
    assert uc.table(TABLE).get("comment") == "Orders, all channels"


def test_a_rename_is_blocked_as_unsupported_before_anything_runs(project: Path, uc: UnityCatalog) -> None:
    write(project, EVOLVED)
    assert run(["apply", "--yes"], project).returncode == 0
    history = rows(project, f"DESCRIBE HISTORY {TABLE}")

    write(project, RENAMED)
    planned = run(["plan", "--detailed-exitcode", "--allow", "breaking", "--allow", "irreversible"], project)
    assert planned.returncode == 3, out(planned, uc)
    text = planned.stdout + planned.stderr
    assert "catalog `unity` (Unity Catalog) refuses RENAME COLUMN" in text, text
    assert "keep the name `email`" in text

    as_json = run(["plan", "--format", "json"], project)
    assert as_json.returncode == 3, out(as_json, uc)
    assert '"unsupported"' in as_json.stdout

    refused = run(["apply", "--yes"], project)
    assert refused.returncode == 3, out(refused, uc)
    assert rows(project, f"DESCRIBE HISTORY {TABLE}") == history  # nothing ran
    columns = [r["col_name"] for r in rows(project, f"DESCRIBE TABLE {TABLE}")]
    assert "email" in columns
    assert "login" not in columns
