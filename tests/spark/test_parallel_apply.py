"""apply changes several tables at once on real Delta: each commit carries its own statement's
metadata, a failure on one table leaves the others converged and the failed one unchanged past
its last good statement, and a re-run converges."""

from __future__ import annotations

import json
import threading

import pytest

from delta_sync import api
from delta_sync.errors import ExecutionError
from tests.spark.conftest import Project

TABLES = 6
OPERATION = {
    "CreateTable": "CREATE TABLE",
    "AddColumns": "ADD COLUMNS",
    "SetProperties": "SET TBLPROPERTIES",
    "AddCheck": "ADD CONSTRAINT",
}


def write(project: Project, schema: str, *, evolved: bool, limit: int = 1000) -> None:
    """Six small tables; evolved: two new columns, a new comment, a property and a CHECK on each."""
    for t in range(TABLES):
        lines = [f"table: {schema}.t{t}", f"comment: Table {t}{' (evolved)' if evolved else ''}", "columns:"]
        lines += ["  - {name: id, type: bigint}", "  - {name: amount, type: int}"]
        if evolved:
            lines += ["  - {name: note, type: string}", "  - {name: seen_at, type: timestamp}"]
        lines += ["checks:", "  id_positive: id >= 0"] + ([f"  id_small: id < {limit}"] if evolved else [])
        lines += ["properties:", "  team.owner: ops"] + (["  bench.migrated: 'true'"] if evolved else [])
        project.write(f"t{t}.yaml", "\n".join(lines) + "\n")


def delta_sync_commits(project: Project, table: str) -> list[tuple[str, dict[str, str]]]:
    rows = project.catalog.spark.sql(f"DESCRIBE HISTORY {table}").collect()
    return [
        (str(r["operation"]), json.loads(r["userMetadata"])["delta-sync"])
        for r in rows
        if r["userMetadata"] and "delta-sync" in r["userMetadata"]
    ]


def test_tables_applied_at_once_converge_and_each_commit_names_its_own_statement(project: Project, schema: str) -> None:
    write(project, schema, evolved=False)
    project.apply()
    for t in range(TABLES):
        project.sql(f"INSERT INTO {schema}.t{t} VALUES (1, 10), (2, 20)")
    write(project, schema, evolved=True)
    desired = project.desired()
    plan = project.plan()
    assert len(api.statements_of(plan)) == 3 * TABLES  # ADD COLUMNS, SET TBLPROPERTIES, ADD CONSTRAINT each
    threads: set[str] = set()
    ran = api.apply_converging(
        project.catalog,
        desired,
        plan,
        on_step=lambda *_a: threads.add(threading.current_thread().name),
        plan_id="parallel01",
        parallel=4,
    )
    assert ran == 3 * TABLES
    assert len(threads) > 1  # tables really ran on several threads
    assert project.plan().is_empty
    for t in range(TABLES):
        commits = delta_sync_commits(project, f"{schema}.t{t}")
        latest = [(op, meta["action"]) for op, meta in commits if meta["plan"] == "parallel01"]
        assert sorted(latest) == sorted(
            [("ADD COLUMNS", "AddColumns"), ("SET TBLPROPERTIES", "SetProperties"), ("ADD CONSTRAINT", "AddCheck")]
        )
        # Every delta-sync commit's metadata names the statement that made it, whichever thread ran it.
        assert all(op == OPERATION.get(meta["action"], op) for op, meta in commits), commits


def test_a_failing_table_stops_the_apply_and_a_rerun_converges(project: Project, schema: str) -> None:
    write(project, schema, evolved=False)
    project.apply()
    for t in range(TABLES):
        project.sql(f"INSERT INTO {schema}.t{t} VALUES (1, 10), (2, 20)")
    project.sql(f"INSERT INTO {schema}.t3 VALUES (5000, 1)")  # violates id_small on t3 only
    write(project, schema, evolved=True)
    versions = {t: _version(project, f"{schema}.t{t}") for t in range(TABLES)}
    with pytest.raises(ExecutionError) as raised:
        api.apply_converging(project.catalog, project.desired(), project.plan(), parallel=4)
    error = raised.value
    assert "ADD CONSTRAINT id_small" in error.statement
    assert f"{schema}.t3" in str(error)
    assert "1 existing row" in str(error)
    # t3 got its two statements before the failing one and nothing after; no statement was run twice.
    assert _version(project, f"{schema}.t3") == versions[3] + 2
    assert len(error.applied) == len(set(error.applied))
    for t in range(TABLES):
        assert _version(project, f"{schema}.t{t}") - versions[t] <= 3

    project.sql(f"DELETE FROM {schema}.t3 WHERE id = 5000")
    api.apply_converging(project.catalog, project.desired(), project.plan(), parallel=4)
    assert project.plan().is_empty


def _version(project: Project, table: str) -> int:
    return int(project.catalog.spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]["version"])
