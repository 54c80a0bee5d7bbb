"""connect: environments against a real Spark Connect server (a separate process on 127.0.0.1 with a
token, Delta and its own Hive catalog): the CLI, in subprocesses that cannot start a JVM, creates,
evolves (through a saved plan, after rows were written) and re-plans to nothing; Delta's history
carries the plan ids; import and drift read the same tables; the token is never shown."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.servers.connect import ConnectServer, connect_server

pytestmark = pytest.mark.spark

TOKEN_VARIABLE = "DS_CONNECT_TOKEN"
PROJECT = """\
default_env: remote
envs:
  remote:
    connect: {url}/;token=${{env:DS_CONNECT_TOKEN}}
"""

ORDERS = """\
table: shop.orders
comment: Orders placed in the web shop
columns:
  - name: order_id
    type: bigint
    nullable: false
    comment: Surrogate key
  - name: seq
    type: bigint
    identity: {start: 1, step: 1, always: true}
  - name: total_amount
    type: decimal(18,2)
  - name: created_at
    type: timestamp
  - name: order_date
    type: date
    generated: CAST(created_at AS DATE)
checks:
  total_non_negative: total_amount >= 0
partitioned_by: [order_date]
"""

# Evolved: a column, the table comment, a property and a CHECK (probed against the row written first).
EVOLVED = (
    ORDERS.replace("Orders placed in the web shop", "Orders, all channels")
    .replace(
        "  - name: created_at",
        "  - name: currency\n    type: string\n    comment: ISO 4217 code\n  - name: created_at",
    )
    .replace("checks:\n", "checks:\n  currency_code: currency IS NULL OR length(currency) = 3\n")
    + "properties:\n  owner.team: shop\n"
)

BIG_ORDERS = "view: shop.big_orders\nsql: SELECT order_id, total_amount FROM shop.orders WHERE total_amount > 5\n"

NOISE = ("Traceback", "WARN ", "Warning:", "at org.apache", "py4j", "grpc")


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with (
        connect_server(tmp_path_factory.mktemp("connect")) as started,
        servers.logs_kept_on_failure(request, started.servers),
    ):
        yield started


@pytest.fixture
def project(tmp_path: Path, server: ConnectServer) -> Path:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(url=server.url))
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(ORDERS)
    return tmp_path


def run(
    args: list[str], cwd: Path, token: str, server: ConnectServer, extra: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in a process that could not start a JVM (no java on PATH, no JAVA_HOME): a connect:
    environment needs none. Whatever it prints must be free of the token and of tracebacks."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DELTA_SYNC_HOME", "JAVA_HOME", "SPARK_HOME", "SPARK_REMOTE", "SPARK_CONNECT_AUTHENTICATE_TOKEN")
    }
    env.update({"PATH": str(Path(sys.executable).parent), "COLUMNS": "200", TOKEN_VARIABLE: token, **(extra or {})})
    done = subprocess.run(
        [sys.executable, "-m", "delta_sync", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    shown = done.stdout + done.stderr
    assert server.token not in shown, "the token was printed"
    for noise in NOISE:
        assert noise not in shown, f"{noise!r} in the output of {args}:\n{shown}\n{server.report()}"
    return done


def explain(done: subprocess.CompletedProcess[str], server: ConnectServer) -> str:
    return f"{done.stdout}\n{done.stderr}\n{server.report()}"


def rows(project: Path, server: ConnectServer, query: str) -> list[dict[str, Any]]:
    done = run(["sql", "--format", "json", query], project, server.token, server)
    assert done.returncode == 0, explain(done, server)
    found: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return found


def test_create_evolve_replan_through_spark_connect(project: Path, server: ConnectServer) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run(list(args), project, server.token, server)

    created = cli("apply", "--yes")
    assert created.returncode == 0, explain(created, server)
    assert "Connecting to Spark Connect" not in created.stdout  # status lines stay off stdout
    assert "Applied 3 statements" in created.stderr
    first_plan = created.stderr.split("(plan ")[1].split(")")[0]

    inserted = cli(
        "sql",
        "INSERT INTO shop.orders (order_id, total_amount, created_at) VALUES (1, 9.50, TIMESTAMP'2024-05-01 10:00:00')",
    )
    assert inserted.returncode == 0, explain(inserted, server)

    # Evolve through a saved plan: the new CHECK is probed against the row (a scan on the server).
    (project / "specs" / "orders.yaml").write_text(EVOLVED)
    # A view over the table, its query analysed on the server against the table as the plan leaves it.
    (project / "specs" / "big_orders.yaml").write_text(BIG_ORDERS)
    # Rehearsed first on a shallow clone, on the server; the clone and its scratch schema are gone after.
    planned = cli("plan", "--out", "plan.json", "--rehearse")
    assert planned.returncode == 0, explain(planned, server)
    assert "# rehearsal: passed on a shallow clone" in planned.stdout, planned.stdout
    assert "shop__delta_sync_rehearsal" not in {r["namespace"] for r in rows(project, server, "SHOW SCHEMAS")}
    for change in (
        "+ create view shop.big_orders",
        "+ column currency string",
        '~ comment: "Orders placed in the web shop"',
        "owner.team",
        "currency_code",
    ):
        assert change in planned.stdout, planned.stdout
    saved = (project / "plan.json").read_text()
    assert server.token not in saved
    plan_id = json.loads(saved)["plan_id"]
    applied = cli("apply", "plan.json", "--yes")
    assert applied.returncode == 0, explain(applied, server)
    assert f"Applied plan {plan_id}" in applied.stderr

    replanned = cli("plan", "--detailed-exitcode")
    assert replanned.returncode == 0, explain(replanned, server)
    assert "No changes. 1 table(s) and 1 view match the specs." in replanned.stdout
    assert rows(project, server, "SELECT order_id FROM shop.big_orders") == [{"order_id": 1}]

    # Every delta-sync commit carries its plan id (a session setting, set over Connect); the INSERT none.
    history = rows(project, server, "DESCRIBE HISTORY shop.orders")
    stamped = [
        (r["operation"], json.loads(r["userMetadata"])["delta-sync"]["plan"] if r["userMetadata"] else None)
        for r in reversed(history)
    ]
    assert stamped[:3] == [("CREATE TABLE", first_plan), ("ADD CONSTRAINT", first_plan), ("WRITE", None)], stamped
    assert {p for _op, p in stamped[3:]} == {plan_id}, stamped
    assert "ADD COLUMNS" in {op for op, _p in stamped[3:]}, stamped
    assert rows(project, server, "SELECT order_id, seq, order_date FROM shop.orders") == [
        {"order_id": 1, "seq": 1, "order_date": "2024-05-01"}
    ]

    # import reads Delta's own schema over Connect: generation and identity come back.
    imported = cli("import", "shop", "--out", "imported")
    assert imported.returncode == 0, explain(imported, server)
    spec = (project / "imported" / "shop" / "orders.yaml").read_text()
    assert "generated: CAST(created_at AS DATE)" in spec, spec
    assert "identity:" in spec, spec
    assert "owner.team: shop" in spec, spec
    view = (project / "imported" / "shop" / "big_orders.yaml").read_text()
    assert "view: shop.big_orders" in view, view

    drifted = cli("drift")
    assert drifted.returncode == 0, explain(drifted, server)
    assert "No changes" in drifted.stdout

    # Rolled back over Connect: nobody wrote since the plan, so one RESTORE (the table read as it was from
    # Delta's log with SQL), stamped with the plan it undoes; the specs then differ again.
    undone = cli("rollback", plan_id, "--yes")
    assert undone.returncode == 0, explain(undone, server)
    assert "restore table shop.orders" in undone.stdout
    assert "- column currency string" in undone.stdout
    latest = rows(project, server, "DESCRIBE HISTORY shop.orders LIMIT 1")[0]
    assert latest["operation"] == "RESTORE"
    assert json.loads(latest["userMetadata"])["delta-sync"]["rollback"] == plan_id
    assert "currency" not in rows(project, server, "SELECT * FROM shop.orders")[0]
    assert cli("plan", "--detailed-exitcode").returncode == 2
    again = cli("rollback", plan_id, "--yes")
    assert again.returncode == 0, explain(again, server)
    assert "Nothing to roll back" in again.stderr

    # Renamed, evolved again and the view replaced to read the new name, in one apply.
    (project / "specs" / "orders.yaml").unlink()
    (project / "specs" / "orders_v2.yaml").write_text(
        EVOLVED.replace("table: shop.orders\n", "table: shop.orders_v2\nrenamed_from: shop.orders\n")
    )
    (project / "specs" / "big_orders.yaml").write_text(BIG_ORDERS.replace("shop.orders", "shop.orders_v2"))
    renamed = cli("apply", "--yes", "--allow", "breaking")
    assert renamed.returncode == 0, explain(renamed, server)
    assert "rename table shop.orders -> shop.orders_v2" in renamed.stdout, renamed.stdout
    assert "replace view shop.big_orders" in renamed.stdout, renamed.stdout
    assert cli("plan", "--detailed-exitcode").returncode == 0
    assert rows(
        project, server, "SELECT order_id, currency FROM shop.big_orders JOIN shop.orders_v2 USING (order_id)"
    ) == [{"order_id": 1, "currency": None}]

    # Nothing was kept on this side: no embedded catalog, no Spark logs.
    assert not (project / ".delta-sync").exists()
    for path in project.rglob("*"):
        if path.is_file():
            assert server.token not in path.read_text(errors="replace"), path


def test_a_wrong_token_is_one_clear_error(project: Path, server: ConnectServer) -> None:
    wrong = "not-the-token-" + server.token[:4]
    done = run(["plan"], project, wrong, server)
    assert done.returncode == 1, explain(done, server)
    assert wrong not in done.stdout + done.stderr
    assert done.stdout == ""
    # Progress lines (`[  0.4s] Reading the catalog...`) aside, one line.
    lines = [line for line in done.stderr.strip().splitlines() if not re.match(r"\[\s*\d+\.\d+s\] ", line)]
    assert len(lines) == 1, done.stderr
    message = lines[0]
    assert message.startswith(f"Error: Spark Connect at {server.url}/;token=*** refused the token"), message


def test_the_token_may_come_from_spark_connect_authenticate_token(project: Path, server: ConnectServer) -> None:
    (project / "delta-sync.yaml").write_text(
        PROJECT.format(url=server.url).replace("/;token=${env:DS_CONNECT_TOKEN}", "")
    )
    done = run(
        ["sql", "--format", "json", "SELECT 1 AS one"],
        project,
        "unused",
        server,
        {"SPARK_CONNECT_AUTHENTICATE_TOKEN": server.token},
    )
    assert done.returncode == 0, explain(done, server)
    assert json.loads(done.stdout)["rows"] == [{"one": 1}]


LIBRARY_JOB = """\
import sys
from pyspark.sql import SparkSession
import delta_sync

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
spark.sql("SELECT 1").collect()  # Delta sets spark.sql.parquet.fieldId.* at a session's first analysis
before = dict(spark.conf.getAll)
plan = delta_sync.plan("specs", spark=spark)
print(plan.render())
result = delta_sync.apply(plan, spark=spark)
print(f"applied {result.applied}")
print("versions", sorted(c.version for cs in result.commits().values() for c in cs))
print("left", delta_sync.plan("specs", spark=spark).exit_code)
after = dict(spark.conf.getAll)
print("conf changed", sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
"""


def test_the_library_on_a_callers_spark_connect_session(tmp_path: Path, server: ConnectServer) -> None:
    """`spark=` a Spark Connect session the caller opened: plan, apply (each commit stamped), converge, its
    settings as they were; in a process with no JVM to start."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(
        "table: lib.orders\ncolumns:\n  - name: id\n    type: bigint\n    nullable: false\n"
        "checks:\n  positive: id > 0\nproperties:\n  team: lib\n"
    )
    (tmp_path / "job.py").write_text(LIBRARY_JOB)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "SPARK_REMOTE")}
    env["PATH"] = str(Path(sys.executable).parent)
    done = subprocess.run(
        [sys.executable, "job.py", f"{server.url}/;token={server.token}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, explain(done, server)
    assert "+ create table lib.orders" in done.stdout
    assert "applied 3" in done.stdout, explain(done, server)  # schema, table, its CHECK
    assert "versions [0, 1]" in done.stdout, explain(done, server)
    assert "left 0" in done.stdout
    # A Connect session has no child sessions: statements commit through the caller's own, and Delta records
    # the last version it committed there. That is Delta's bookkeeping, not a setting delta-sync changed.
    assert "conf changed ['spark.databricks.delta.lastCommitVersionInSession']" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr
