"""apply --env through spark-submit to a real Spark standalone cluster (a master and one worker on
127.0.0.1, started from the installed pyspark): the driver's executors run on the worker, the
tables converge, and evolved specs apply on top of rows written in between. On a warehouse on the session's S3
server (tests/servers/s3.py), the executors write a backfill's data files to the bucket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.servers import StandaloneCluster
from tests.servers.s3 import S3

APP_NAME = "delta-sync apply"

PROJECT = """\
default_env: cluster
envs:
  cluster:
    submit:
      master: {master}
      conf:
        spark.executor.memory: 512m
        spark.cores.max: "1"
        spark.sql.shuffle.partitions: 2
        spark.databricks.delta.snapshotPartitions: 2
        spark.pyspark.python: {python}
"""

# The same cluster, the warehouse on S3 (README "Object storage"), the secret from the environment.
LAKE_CONF = """\
        spark.sql.warehouse.dir: s3a://{bucket}/standalone/warehouse
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.access.key: {key}
        spark.hadoop.fs.s3a.secret.key: ${{env:LAKE_SECRET}}
"""

EVENTS = """\
table: ops.events
comment: What happened in the shop
columns:
  - name: event_id
    type: bigint
    nullable: false
    comment: Surrogate key
  - name: kind
    type: string
    nullable: false
  - name: amount
    type: int
  - name: event_date
    type: date
    nullable: false
checks:
  amount_non_negative: amount IS NULL OR amount >= 0
partitioned_by: [event_date]
"""

USERS = """\
table: ops.users
comment: People with an account
columns:
  - name: user_id
    type: bigint
    nullable: false
  - name: email
    type: string
    nullable: false
    comment: Login address
checks:
  email_has_at: email LIKE '%@%'
"""


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with (
        servers.standalone_cluster(tmp_path_factory.mktemp("standalone")) as started,
        servers.logs_kept_on_failure(request, started.servers),
    ):
        yield started


@pytest.fixture
def project(tmp_path: Path, cluster: StandaloneCluster) -> Path:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT.format(master=cluster.url, python=sys.executable))
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "events.yaml").write_text(EVENTS)
    (tmp_path / "specs" / "users.yaml").write_text(USERS)
    return tmp_path


def run(args: list[str], cwd: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTA_SYNC_HOME"}
    # The driver (spark-submit's, client mode) listens where the executors on 127.0.0.1 reach it.
    env.update({"COLUMNS": "200", "SPARK_LOCAL_IP": servers.LOCALHOST, **(extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "delta_sync", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def rows(project: Path, query: str, extra: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = run(["sql", "--env", "cluster", "--format", "json", query], project, extra)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return found


def explain(project: Path, cluster: StandaloneCluster, done: subprocess.CompletedProcess[str]) -> str:
    log = project / ".delta-sync" / "cluster" / "logs" / "submit.log"
    submitted = "\n".join(log.read_text(errors="replace").splitlines()[-60:]) if log.is_file() else "(no submit.log)"
    return f"{done.stdout}\n{done.stderr}\n--- {log} ---\n{submitted}\n{cluster.report()}"


def finished_apps(cluster: StandaloneCluster, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The master's completed applications, once there are `count` (a driver's exit is noticed shortly after)."""
    deadline = time.monotonic() + timeout
    while True:
        apps: list[dict[str, Any]] = cluster.state().get("completedapps", [])
        if len(apps) >= count or time.monotonic() > deadline:
            return apps
        time.sleep(1.0)


def test_apply_through_a_standalone_cluster_converges(project: Path, cluster: StandaloneCluster) -> None:
    applied = run(["apply", "--env", "cluster", "--yes"], project)
    assert applied.returncode == 0, explain(project, cluster, applied)
    assert f"through spark-submit --master {cluster.url}" in applied.stderr
    assert "✓ [" in applied.stderr  # the driver's progress, streamed
    assert "Applied plan" in applied.stderr

    # The application ran on the cluster: the master knows it, and its executor had a folder on the worker.
    apps = finished_apps(cluster, 1)
    assert [app["name"] for app in apps] == [APP_NAME], json.dumps(cluster.state(), indent=2)
    first_app = apps[0]["id"]
    assert (cluster.work_dir / first_app).is_dir(), sorted(p.name for p in cluster.work_dir.iterdir())

    # Rows written in between (in-process local mode, on the same embedded catalog).
    inserted = run(
        [
            "sql",
            "--env",
            "cluster",
            "INSERT INTO ops.events VALUES (1, 'click', 5, DATE'2024-05-01'), (2, 'view', NULL, DATE'2024-05-01'),"
            " (3, 'click', 7, DATE'2024-05-02')",
        ],
        project,
    )
    assert inserted.returncode == 0, inserted.stdout + inserted.stderr
    assert rows(project, "SELECT count(*) AS n FROM ops.users") == [{"n": 0}]

    # Evolved specs: a new column, a CHECK the rows satisfy (validated by a job on the executor), a comment.
    events = project / "specs" / "events.yaml"
    events.write_text(
        EVENTS.replace(
            "  - name: event_date",
            "  - name: source\n    type: string\n    comment: Where it came from\n  - name: event_date",
        ).replace("checks:\n", "checks:\n  known_kind: kind IN ('click', 'view')\n")
    )
    users = project / "specs" / "users.yaml"
    users.write_text(USERS.replace("People with an account", "Everyone who signed up"))
    assert run(["plan", "--env", "cluster", "--detailed-exitcode"], project).returncode == 2

    evolved = run(["apply", "--env", "cluster", "--yes"], project)
    assert evolved.returncode == 0, explain(project, cluster, evolved)
    assert "✓ [" in evolved.stderr
    assert "known_kind" in evolved.stderr

    replanned = run(["plan", "--env", "cluster", "--detailed-exitcode"], project)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    assert rows(project, "SELECT count(*) AS n, count(source) AS sourced FROM ops.events") == [{"n": 3, "sourced": 0}]
    properties = {r["key"]: r["value"] for r in rows(project, "SHOW TBLPROPERTIES ops.events")}
    assert "click" in properties["delta.constraints.known_kind"]
    detail = rows(project, "DESCRIBE DETAIL ops.users")
    assert detail[0]["description"] == "Everyone who signed up"

    apps = finished_apps(cluster, 2)
    assert [app["name"] for app in apps] == [APP_NAME, APP_NAME], json.dumps(cluster.state(), indent=2)
    second_app = next(app["id"] for app in apps if app["id"] != first_app)
    executor_logs = list((cluster.work_dir / second_app).glob("*/stderr"))
    assert executor_logs, sorted(str(p) for p in cluster.work_dir.rglob("*"))
    # The CHECK was validated against the rows by tasks that ran on the worker's executor.
    assert any("Finished task" in log.read_text(errors="replace") for log in executor_logs), cluster.report()


def test_executors_on_the_cluster_write_a_backfill_to_s3(tmp_path: Path, cluster: StandaloneCluster, s3: S3) -> None:
    """spark-submit's executors, on the worker, reach S3 with the jars and settings the command gave the driver:
    a NOT NULL column's backfill rewrites the table's data files in the bucket."""
    (tmp_path / "delta-sync.yaml").write_text(
        PROJECT.format(master=cluster.url, python=sys.executable)
        + LAKE_CONF.format(bucket=s3.bucket, endpoint=s3.endpoint, key=s3.access_key)
    )
    (tmp_path / "specs").mkdir()
    secret = {"LAKE_SECRET": s3.secret_key}
    table = "standalone/warehouse/ops.db/events/"
    # A table a job filled before delta-sync manages it (one JVM, local mode: the rows are not what is tested).
    made = run(
        [
            "sql",
            "--env",
            "cluster",
            "BEGIN CREATE SCHEMA ops; CREATE TABLE ops.events (event_id BIGINT NOT NULL, kind STRING NOT NULL,"
            " amount INT, event_date DATE NOT NULL) USING delta PARTITIONED BY (event_date);"
            " INSERT INTO ops.events VALUES (1, 'click', 5, DATE'2024-05-01'), (2, 'view', NULL, DATE'2024-05-01'),"
            " (3, 'click', 7, DATE'2024-05-02'); END",
        ],
        tmp_path,
        secret,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    before = {key for key in s3.keys(prefix=table) if key.endswith(".parquet")}
    assert before, s3.keys(prefix=table)

    (tmp_path / "specs" / "events.yaml").write_text(
        EVENTS.replace(
            "  - name: event_date",
            "  - name: tier\n    type: string\n    nullable: false\n    backfill: \"'basic'\"\n  - name: event_date",
        )
    )
    earlier = {app["id"] for app in cluster.state().get("completedapps", [])}  # the module's other test's
    applied = run(["apply", "--env", "cluster", "--yes", "--allow", "rewrite"], tmp_path, secret)
    assert applied.returncode == 0, explain(tmp_path, cluster, applied)
    assert f"through spark-submit --master {cluster.url}" in applied.stderr
    # The backfill's new data files are in the bucket; in client mode only the executors run tasks, so they
    # wrote them, through S3A, on the worker.
    written = {key for key in s3.keys(prefix=table) if key.endswith(".parquet")} - before
    assert written, s3.keys(prefix=table)
    (app,) = [app for app in finished_apps(cluster, len(earlier) + 1) if app["id"] not in earlier]
    assert app["name"] == APP_NAME, app
    # Its executor read the table's files through S3A: the jars spark-submit was given reached the worker.
    executor_logs = "".join(log.read_text(errors="replace") for log in (cluster.work_dir / app["id"]).glob("*/stderr"))
    assert f"Reading File path: s3a://{s3.bucket}/{table}" in executor_logs, cluster.report()
    # The secret reached it with the application's settings, not on its command line (which the worker logs).
    assert s3.secret_key not in executor_logs + cluster.worker.log.read_text(errors="replace")

    replanned = run(["plan", "--env", "cluster", "--detailed-exitcode"], tmp_path, secret)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    counted = rows(tmp_path, "SELECT count(*) AS n, count_if(tier = 'basic') AS basic FROM ops.events", secret)
    assert counted == [{"n": 3, "basic": 3}]
