"""A real Hive metastore over thrift (started from pyspark's Hive 2.3 classes on 127.0.0.1): plan in one
delta-sync process, apply in another, evolve, and a third process sees the same catalog converged.

Each role (planner, applier, writer, reader) is its own process with its own embedded-catalog folder, so
nothing but the metastore server carries the catalog from one to the next. Its commands take the path a user's
take at a terminal (tests/spark/cli.py): each role's warm engine, started by its first command; the race of two
applies runs in-process, as two CI jobs would.

The same metastore server also fronts a warehouse on the session's S3 server (tests/servers/s3.py), the usual
on-premises and EMR shape: it is started with what it needs to reach S3 (tests/servers/metastore.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.servers.metastore import HiveMetastore, hive_metastore
from tests.servers.s3 import S3
from tests.spark.cli import ENGINE, IN_PROCESS, Cli, environ, stop_engines

pytestmark = pytest.mark.spark

PROJECT = """\
default_env: shared
envs:
  shared:
    vars: {{suffix: _hms}}
    spark:
      master: local[1]
      conf:
        spark.hadoop.hive.metastore.uris: {uri}
        spark.sql.warehouse.dir: {warehouse}
"""

ORDERS = """\
table: sales${suffix}.orders
comment: Orders placed in the shop
columns:
  - name: order_id
    type: bigint
    nullable: false
    comment: Surrogate key
  - name: status
    type: string
  - name: amount
    type: decimal(12,2)
checks:
  amount_non_negative: amount >= 0
properties:
  owner.team: sales
"""


OPEN_ORDERS = """\
view: sales${suffix}.open_orders
comment: Orders not paid yet
sql: SELECT order_id, amount FROM sales${suffix}.orders
  WHERE status = 'new'
"""


# An environment on the metastore server whose warehouse is on S3: the README's "Object storage" settings.
LAKE_PROJECT = """\
default_env: lake
envs:
  lake:
    vars: {{suffix: _s3}}
    spark:
      master: local[1]
      conf:
        spark.hadoop.hive.metastore.uris: {uri}
        spark.sql.warehouse.dir: s3a://{bucket}/hms/warehouse
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.access.key: {key}
        spark.hadoop.fs.s3a.secret.key: ${{env:LAKE_SECRET}}
"""


@pytest.fixture(scope="module")
def metastore(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, s3: S3
) -> Iterator[HiveMetastore]:
    with (
        hive_metastore(tmp_path_factory.mktemp("metastore"), s3) as started,
        servers.logs_kept_on_failure(request, [started.server]),
    ):
        yield started


@pytest.fixture
def project(tmp_path: Path, metastore: HiveMetastore) -> Iterator[Path]:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(uri=metastore.uri, warehouse=metastore.warehouse.as_uri()))
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(ORDERS)
    yield tmp_path
    homes = tmp_path / ".homes"
    stop_engines(*(homes.iterdir() if homes.is_dir() else ()))


def run(
    args: list[str], project: Path, home: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One delta-sync command, with an embedded-catalog folder of its own (`home`), through that folder's
    engine: a table it can see came through the metastore server, not through a shared Derby file."""
    return Cli(project, ENGINE).run(args, env={"DELTA_SYNC_HOME": str(project / ".homes" / home), **(env or {})})


def explain(done: subprocess.CompletedProcess[str], metastore: HiveMetastore) -> str:
    return f"{done.stdout}\n{done.stderr}\n{metastore.server.report()}"


def sql(project: Path, query: str, home: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = run(["sql", "--format", "json", query], project, home, env)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return found


def test_two_processes_share_the_catalog_through_the_metastore(project: Path, metastore: HiveMetastore) -> None:
    plan_file = project / "plan.json"
    planned = run(["plan", "--out", str(plan_file)], project, "planner")
    assert planned.returncode == 0, explain(planned, metastore)
    assert "create table sales_hms.orders" in planned.stdout

    applied = run(["apply", str(plan_file), "--yes"], project, "applier")
    assert applied.returncode == 0, explain(applied, metastore)

    # A third process, its own Derby folder untouched, sees the table through the server.
    tables = sql(project, "SHOW TABLES IN sales_hms", "reader")
    assert [row["tableName"] for row in tables] == ["orders"]
    assert not (project / ".homes" / "reader" / "metastore_db").exists()
    inserted = run(["sql", "INSERT INTO sales_hms.orders VALUES (1, 'new', 10.5), (2, 'paid', 0)"], project, "writer")
    assert inserted.returncode == 0, explain(inserted, metastore)

    # Evolve: a column, a comment, a property and a CHECK, planned by one process and applied by another.
    orders = project / "specs" / "orders.yaml"
    orders.write_text(
        ORDERS.replace(
            "  - name: amount", "  - name: channel\n    type: string\n    comment: web or app\n  - name: amount"
        )
        .replace("owner.team: sales", "owner.team: checkout")
        .replace(
            "amount_non_negative: amount >= 0",
            "amount_non_negative: amount >= 0\n  status_known: status IN ('new', 'paid')",
        )
    )
    # A view over the table, created in the same plan.
    (project / "specs" / "open_orders.yaml").write_text(OPEN_ORDERS)
    # Rehearsed on a shallow clone through the metastore first; the clone and its scratch schema are gone after.
    changed = run(["plan", "--detailed-exitcode", "--out", str(plan_file), "--rehearse"], project, "planner")
    assert changed.returncode == 2, explain(changed, metastore)
    assert "# rehearsal: passed on a shallow clone" in changed.stdout, changed.stdout
    assert not (metastore.warehouse / "sales_hms__delta_sync_rehearsal.db").exists()
    evolved = run(["apply", str(plan_file), "--yes"], project, "applier")
    assert evolved.returncode == 0, explain(evolved, metastore)

    replanned = run(["plan", "--detailed-exitcode"], project, "reader")
    assert replanned.returncode == 0, explain(replanned, metastore)
    assert "No changes. 1 table(s) and 1 view match the specs." in replanned.stdout
    assert sql(project, "SELECT count(*) AS n, sum(order_id) AS ids FROM sales_hms.orders", "reader") == [
        {"n": 2, "ids": 3}
    ]
    assert sql(project, "SELECT order_id FROM sales_hms.open_orders", "reader") == [{"order_id": 1}]
    properties = {row["key"]: row["value"] for row in sql(project, "SHOW TBLPROPERTIES sales_hms.orders", "reader")}
    assert properties["owner.team"] == "checkout"
    assert "status" in properties["delta.constraints.status_known"]
    # The table lives in the metastore's warehouse, not under any process's own folder.
    assert (metastore.warehouse / "sales_hms.db" / "orders" / "_delta_log").is_dir()

    # Rename the table, and replace the view to read it under its new name, in one apply.
    orders.rename(project / "specs" / "orders_v2.yaml")
    (project / "specs" / "orders_v2.yaml").write_text(
        orders.with_name("orders_v2.yaml")
        .read_text()
        .replace(
            "table: sales${suffix}.orders\n", "table: sales${suffix}.orders_v2\nrenamed_from: sales${suffix}.orders\n"
        )
    )
    (project / "specs" / "open_orders.yaml").write_text(OPEN_ORDERS.replace(".orders\n", ".orders_v2\n"))
    renamed = run(["apply", "--yes", "--allow", "breaking"], project, "applier")
    assert renamed.returncode == 0, explain(renamed, metastore)
    assert "rename table sales_hms.orders -> sales_hms.orders_v2" in renamed.stdout
    replanned = run(["plan", "--detailed-exitcode"], project, "reader")
    assert replanned.returncode == 0, explain(replanned, metastore)
    assert sql(project, "SELECT order_id FROM sales_hms.open_orders", "reader") == [{"order_id": 1}]
    assert [row["tableName"] for row in sql(project, "SHOW TABLES IN sales_hms", "reader")] == [
        "open_orders",
        "orders_v2",
    ]


def test_two_applies_at_once_through_the_metastore_both_converge(project: Path, metastore: HiveMetastore) -> None:
    """Two processes apply the same specs at the same moment on one shared catalog: each either
    converges or refuses in a sentence; never a duplicate-constraint error or a half-made table."""
    (project / "specs" / "orders.yaml").write_text(ORDERS.replace("sales${suffix}", "race${suffix}"))
    (project / "specs" / "returns.yaml").write_text(
        ORDERS.replace("sales${suffix}.orders", "race${suffix}.returns").replace("owner.team: sales", "owner.team: ops")
    )
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "delta_sync", "apply", "--yes"],
            cwd=project,
            env=environ(IN_PROCESS, {"DELTA_SYNC_HOME": str(project / ".homes" / name)}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    outputs = [racer.communicate(timeout=600) for racer in racers]
    for racer, (stdout, stderr) in zip(racers, outputs, strict=True):
        text = stdout + stderr
        assert "Traceback" not in text, text
        assert "already exists" not in text or racer.returncode == 0, text
        assert racer.returncode in (0, 1), text
    assert any(racer.returncode == 0 for racer in racers), outputs

    replanned = run(["plan", "--detailed-exitcode"], project, "reader")
    assert replanned.returncode == 0, explain(replanned, metastore)
    for table in ("orders", "returns"):
        properties = {
            row["key"]: row["value"] for row in sql(project, f"SHOW TBLPROPERTIES race_hms.{table}", "reader")
        }
        assert "amount" in properties["delta.constraints.amount_non_negative"]


def test_a_warehouse_on_s3_behind_the_metastore_converges(project: Path, metastore: HiveMetastore, s3: S3) -> None:
    """The metastore server holds the catalog, the S3 server the tables: plan, apply, evolve and an empty
    re-plan, all through one warm engine (one JVM: the environment differs from the other tests', so no engine
    of theirs could serve it)."""
    (project / "delta-sync.yaml").write_text(
        LAKE_PROJECT.format(uri=metastore.uri, bucket=s3.bucket, endpoint=s3.endpoint, key=s3.access_key)
    )
    secret = {"LAKE_SECRET": s3.secret_key}
    plan_file = project / "plan.json"
    planned = run(["plan", "--out", str(plan_file)], project, "lake", secret)
    assert planned.returncode == 0, explain(planned, metastore)
    assert "create table sales_s3.orders" in planned.stdout
    applied = run(["apply", str(plan_file), "--yes"], project, "lake", secret)
    assert applied.returncode == 0, explain(applied, metastore)

    # The metastore server recorded the schema at the S3 warehouse (it made the folder itself: see
    # tests/servers/metastore.py), and the table's log is in the bucket, not on this machine.
    schema = {row["info_name"]: row["info_value"] for row in sql(project, "DESCRIBE SCHEMA sales_s3", "lake", secret)}
    assert schema["Location"] == f"s3a://{s3.bucket}/hms/warehouse/sales_s3.db", schema
    assert "hms/warehouse/sales_s3.db/orders/_delta_log/00000000000000000000.json" in s3.keys(prefix="hms/")
    assert not (project / ".homes" / "lake" / "metastore_db").exists()
    assert not (metastore.warehouse / "sales_s3.db").exists()
    inserted = run(
        ["sql", "INSERT INTO sales_s3.orders VALUES (1, 'new', 10.5), (2, 'paid', 0)"], project, "lake", secret
    )
    assert inserted.returncode == 0, explain(inserted, metastore)

    # Evolve: a column added, planned and applied on top of the rows.
    (project / "specs" / "orders.yaml").write_text(
        ORDERS.replace("  - name: amount", "  - name: channel\n    type: string\n  - name: amount")
    )
    evolved = run(["apply", "--yes"], project, "lake", secret)
    assert evolved.returncode == 0, explain(evolved, metastore)
    assert "+ column channel string" in evolved.stdout, evolved.stdout

    replanned = run(["plan", "--detailed-exitcode"], project, "lake", secret)
    assert replanned.returncode == 0, explain(replanned, metastore)
    assert "No changes. 1 table(s) match the specs." in replanned.stdout
    counted = sql(project, "SELECT count(*) AS n, count(channel) AS channels FROM sales_s3.orders", "lake", secret)
    assert counted == [{"n": 2, "channels": 0}]
