"""A real second process appends rows in a loop while apply rewrites the same table (string -> int, one
REPLACE TABLE ... AS SELECT) and backfills a column that becomes NOT NULL (UPDATE, then ADD CONSTRAINT).

The appender writes (id, kind, region) by path, never `amount`: its rows are valid before and after the
rewrite (a missing column is NULL, as string or as int) and before and after the NOT NULL (it always gives
region a value). Delta's REPLACE ... AS SELECT of a table from itself fails with DELTA_CONCURRENT_APPEND when
a commit lands during it, nothing committed; apply re-reads, re-plans and retries (execution.CONFLICT_RETRIES).
Whatever the race, no row the appender saw committed is lost, and the table ends as the specs say."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.model.catalog import StatementFailed
from delta_sync.review import environments, execution, pipeline
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

runner = CliRunner()

# Path-based Delta writes need no metastore, so this process can run beside the test's Derby catalog.
APPENDER = """
    import sys, time
    from pathlib import Path
    from pyspark.sql import SparkSession
    from delta_sync.spark.jars import delta_jars
    location, stop = sys.argv[1], Path(sys.argv[2])
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    builder = builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    builder = builder.config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    for key, value in delta_jars().spark_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    committed, batch, conflicts = 0, 0, 0
    while not stop.exists():
        rows = [(1000 + batch * 10 + i, "x", "eu") for i in range(10)]
        try:
            frame = spark.createDataFrame(rows, "id bigint, kind string, region string")
            frame.write.format("delta").mode("append").save(location)
            committed += len(rows)
            batch += 1
            print("committed", committed, flush=True)
        except Exception as exc:  # a commit race lost to apply: the batch did not land, so retry it
            conflicts += 1
            print("conflict", type(exc).__name__, str(exc).splitlines()[0][:200], flush=True)
    print("done", committed, conflicts, flush=True)
"""

V1 = """\
table: {schema}.events
columns:
  - name: id
    type: bigint
  - name: kind
    type: string
  - name: amount
    type: string
  - name: region
    type: string
"""
V2 = """\
table: {schema}.events
columns:
  - name: id
    type: bigint
  - name: kind
    type: string
  - name: amount
    type: int
  - name: region
    type: string
    nullable: false
    backfill: "'unknown'"
"""
SEEDED = 100


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "220")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def test_rewrite_and_backfill_while_another_process_appends(
    project: Project, schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = f"{schema}.events"
    project.write("events.yaml", V1.format(schema=schema))
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(
        f"INSERT INTO {table} SELECT id, 'y', CAST(id * 7 AS string), IF(id % 3 = 0, NULL, 'us') "
        f"FROM range(1, {SEEDED + 1})"
    )
    location = project.sql(f"DESCRIBE DETAIL {table}")[0][4]

    # What each statement apply ran did (ok, or the engine's error class), each back-off before a retry,
    # and each apply's plan id.
    executed: list[tuple[str, str]] = []
    backoffs: list[float] = []
    plan_ids: list[str] = []

    def execute(sql: str, metadata: str | None = None, run: Any = project.catalog.execute) -> None:
        try:
            run(sql, metadata)
        except StatementFailed as failed:
            executed.append((sql.split()[0], str(failed.failure.error_class)))
            raise
        executed.append((sql.split()[0], "ok"))

    def wait(seconds: float) -> None:
        backoffs.append(seconds)
        time.sleep(seconds)

    def new_plan_id(make: Any = pipeline.new_plan_id) -> str:
        plan_ids.append(make())
        return plan_ids[-1]

    monkeypatch.setattr(project.catalog, "execute", execute)
    monkeypatch.setattr(execution, "apply_converging", functools.partial(execution.apply_converging, sleep=wait))
    monkeypatch.setattr(pipeline, "new_plan_id", new_plan_id)

    stop = tmp_path / "stop"
    appender = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(APPENDER), str(location), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ},
    )
    assert appender.stdout is not None
    said: list[tuple[float, str]] = []  # the appender's lines, with when each came
    runs: list[tuple[int, float, float]] = []  # each apply: exit code, start, end
    try:
        while not appender.stdout.readline().startswith("committed"):
            assert appender.poll() is None, "the appender died before its first commit"
        reader = threading.Thread(
            target=lambda: said.extend((time.monotonic(), line.strip()) for line in appender.stdout or ()),
            daemon=True,
        )
        reader.start()
        project.write("events.yaml", V2.format(schema=schema))
        for _attempt in range(3):
            started = time.monotonic()
            applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
            runs.append((applied.exit_code, started, time.monotonic()))
            if applied.exit_code == 0:
                break
            # Conflicts outlasted the retries: exit 1, naming them; nothing half-done (see below), so re-run.
            assert applied.exit_code == 1, applied.output
            assert "Gave up after 5 conflicts with concurrent writers" in applied.output, applied.output
            assert "DELTA_CONCURRENT_APPEND" in applied.output or "ConcurrentAppend" in applied.output
        time.sleep(2)  # let the appender commit after the last statement too
    finally:
        stop.touch()
        appender.wait(timeout=300)
    reader.join(timeout=60)
    commits = [t for t, line in said if line.startswith("committed")]
    conflicts = [line for _t, line in said if line.startswith("conflict")]
    committed = int([line for _t, line in said if line.startswith("done")][-1].split()[1])
    during = [sum(1 for t in commits if start <= t <= end) for _rc, start, end in runs]
    summary = (
        f"applies (exit code, appender commits during it): {[(r[0], n) for r, n in zip(runs, during, strict=True)]}; "
        f"statements: {executed}; back-offs {backoffs}; appender: {committed} rows committed, "
        f"{len(conflicts)} conflicts {conflicts[:3]}"
    )
    print("\n" + summary)
    assert sum(during) > 0, "the appender committed nothing while apply ran: nothing was concurrent\n" + summary
    if runs[-1][0] != 0:
        # The appender never let a REPLACE through: once it stopped, one re-run converges.
        applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
        assert applied.exit_code == 0, applied.output + summary
    applies = list(plan_ids)

    again = invoke("plan", str(project.specs), "--detailed-exitcode")
    assert again.exit_code == 0, again.output + summary
    counts = project.sql(f"SELECT count(*), count(DISTINCT id), count_if(region IS NULL) FROM {table}")
    assert counts == [(SEEDED + committed, SEEDED + committed, 0)], summary
    seeded = project.sql(
        f"SELECT count(*), sum(amount), count_if(region = 'unknown') FROM {table} WHERE id <= {SEEDED}"
    )
    assert seeded == [(SEEDED, 7 * SEEDED * (SEEDED + 1) // 2, SEEDED // 3)], summary
    assert project.sql(f"SELECT count_if(amount IS NOT NULL) FROM {table} WHERE id > {SEEDED}") == [(0,)]

    history = project.catalog.spark.sql(f"DESCRIBE HISTORY {table}").collect()
    stamps: dict[str, Any] = {}
    for commit in history:  # newest first: each operation's last commit
        if commit["userMetadata"]:
            stamps.setdefault(str(commit["operation"]), json.loads(str(commit["userMetadata"]))["delta-sync"])
    assert stamps["REPLACE TABLE AS SELECT"]["action"] == "RewriteTable", summary
    assert stamps["UPDATE"]["action"] == "Backfill", summary
    # Stamped by this test's applies; the constraint, the plan's last statement, by the one that finished.
    assert {stamps[op]["plan"] for op in ("REPLACE TABLE AS SELECT", "UPDATE", "ADD CONSTRAINT")} <= set(applies)
    assert stamps["ADD CONSTRAINT"]["plan"] == applies[-1], summary
