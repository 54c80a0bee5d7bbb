"""A real second process appends rows in a loop while apply changes the same table."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from delta_sync.model.state import TableName
from delta_sync.planning.statements import statements_of
from delta_sync.review import execution, pipeline

from .conftest import Project

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
        rows = [(batch * 10 + i, "x") for i in range(10)]
        try:
            spark.createDataFrame(rows, "id bigint, kind string").write.format("delta").mode("append").save(location)
            committed += len(rows)
            batch += 1
            print("committed", committed, flush=True)
        except Exception as exc:  # a commit race lost to apply: the batch did not land, so retry it
            conflicts += 1
            print("conflict", type(exc).__name__, flush=True)
    print("done", committed, conflicts, flush=True)
"""


def test_apply_converges_while_another_process_appends(project: Project, schema: str, tmp_path: Path) -> None:
    project.write(
        "events.yaml",
        f"""\
        table: {schema}.events
        columns:
          - name: id
            type: bigint
          - name: kind
            type: string
        """,
    )
    project.apply()
    name = TableName(None, schema, "events")
    location = project.sql(f"DESCRIBE DETAIL {schema}.events")[0][4]
    stop = tmp_path / "stop"
    appender = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(APPENDER), str(location), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ},
    )
    assert appender.stdout is not None
    try:
        while not appender.stdout.readline().startswith("committed"):
            assert appender.poll() is None, "the appender died before its first commit"
        project.write(
            "events.yaml",
            f"""\
            table: {schema}.events
            comment: Events, while someone writes
            columns:
              - name: id
                type: bigint
              - name: kind
                type: string
                comment: what happened
              - name: source
                type: string
              - name: score
                type: int
            checks:
              known_kind: kind IN ('x', 'y')
            properties:
              team: platform
            """,
        )
        desired = project.desired()
        plan = pipeline.make_plan(project.catalog, desired)
        backoffs: list[float] = []

        def wait(seconds: float) -> None:
            backoffs.append(seconds)
            time.sleep(seconds)

        ran = execution.apply_converging(project.catalog, desired, plan, sleep=wait)
        assert ran >= len(statements_of(plan))
        time.sleep(2)  # let the appender commit after the last ALTER too
    finally:
        stop.touch()
        out, _ = appender.communicate(timeout=300)
    final = [line for line in out.splitlines() if line.startswith("done")][-1].split()
    committed = int(final[1])
    assert committed > 0
    assert pipeline.make_plan(project.catalog, desired).is_empty
    counts = project.sql(f"SELECT count(*), count(DISTINCT id) FROM {schema}.events")
    assert counts == [(committed, committed)], f"apply retried {len(backoffs)} time(s); appender: {final}"
    assert project.catalog.read([name]).tables[name].comment == "Events, while someone writes"
