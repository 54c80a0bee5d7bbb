"""apply changes several tables at once on real Delta: each commit carries its own statement's
metadata and each table's commits keep the plan's order; a failure on one table starts no new
statement anywhere, every statement listed as applied is one commit, and a re-run converges."""

from __future__ import annotations

import json
import threading

import pytest

from delta_sync.planning.statements import statements_of
from delta_sync.review import execution
from delta_sync.review.outcomes import DataBlockedError
from tests.spark.conftest import Project

TABLES = 6


def write(project: Project, schema: str, *, evolved: bool, limit: int = 1000) -> None:
    """Six small tables. Evolved, they change differently, so that different kinds of statement run
    side by side: t0, t3: two columns, a comment, a property and a CHECK (3 statements); t1, t4: a
    property and a CHECK (2); t2, t5: two columns (1)."""
    for t in range(TABLES):
        columns, comment, checks = evolved and t % 3 != 1, evolved and t % 3 == 0, evolved and t % 3 != 2
        lines = [f"table: {schema}.t{t}", f"comment: Table {t}{' (evolved)' if comment else ''}", "columns:"]
        lines += ["  - {name: id, type: bigint}", "  - {name: amount, type: int}"]
        if columns:
            lines += ["  - {name: note, type: string}", "  - {name: seen_at, type: timestamp}"]
        lines += ["checks:", "  id_positive: id >= 0"] + ([f"  id_small: id < {limit}"] if checks else [])
        lines += ["properties:", "  team.owner: ops"] + (["  bench.migrated: 'true'"] if checks else [])
        project.write(f"t{t}.yaml", "\n".join(lines) + "\n")


def delta_sync_commits(project: Project, table: str, plan_id: str) -> list[tuple[str, str]]:
    """(operation, the action its userMetadata names) of the commits plan `plan_id` made, oldest first."""
    rows = project.catalog.spark.sql(f"DESCRIBE HISTORY {table}").collect()
    found = []
    for row in sorted(rows, key=lambda r: int(r["version"])):
        meta = json.loads(row["userMetadata"] or "{}").get("delta-sync", {})
        if meta.get("plan") == plan_id:
            found.append((str(row["operation"]), str(meta["action"])))
    return found


OPERATION = {"AddColumns": "ADD COLUMNS", "SetProperties": "SET TBLPROPERTIES", "AddCheck": "ADD CONSTRAINT"}


def test_tables_applied_at_once_converge_and_each_commit_names_its_own_statement(project: Project, schema: str) -> None:
    write(project, schema, evolved=False)
    project.apply()
    for t in range(TABLES):
        project.sql(f"INSERT INTO {schema}.t{t} VALUES (1, 10), (2, 20)")
    write(project, schema, evolved=True)
    desired = project.desired()
    statements = statements_of(project.plan())
    assert len(statements) == 12
    threads: set[str] = set()
    ran = execution.apply_converging(
        project.catalog,
        desired,
        project.plan(),
        on_step=lambda *_a: threads.add(threading.current_thread().name),
        plan_id="parallel01",
        parallel=4,
    )
    assert ran == 12
    assert len(threads) > 1  # tables really ran on several threads
    assert project.plan().is_empty
    for t in range(TABLES):
        planned = [s.kind for s in statements if s.table == f"{schema}.t{t}"]
        assert len(planned) == (3, 2, 1)[t % 3]
        # In the plan's order, and each commit's metadata names the statement that made it.
        assert delta_sync_commits(project, f"{schema}.t{t}", "parallel01") == [(OPERATION[k], k) for k in planned]


def test_a_failing_table_stops_the_apply_and_a_rerun_converges(project: Project, schema: str) -> None:
    write(project, schema, evolved=False)
    project.apply()
    for t in range(TABLES):
        project.sql(f"INSERT INTO {schema}.t{t} VALUES (1, 10), (2, 20)")
    project.sql(f"INSERT INTO {schema}.t3 VALUES (5000, 1)")  # violates id_small on t3 only
    write(project, schema, evolved=True)
    versions = {t: _version(project, f"{schema}.t{t}") for t in range(TABLES)}
    with pytest.raises(DataBlockedError) as raised:
        execution.apply_converging(project.catalog, project.desired(), project.plan(), parallel=4)
    error = raised.value
    assert f"blocked by the data: 1 existing row of {schema}.t3 violates `id_small`" in str(error)
    assert "violating rows (1 shown):" in str(error)
    assert "5000" in str(error)
    # id_small reads a column the plan leaves alone, so it ran first, in the wave of such constraints:
    # t3 is untouched, and nothing but other tables' new constraints (which hold) committed anywhere.
    assert _version(project, f"{schema}.t3") == versions[3]
    assert all("ADD CONSTRAINT id_small" in s for s in error.applied)
    # Every statement listed as applied is one commit, and nothing else committed.
    moved = sum(_version(project, f"{schema}.t{t}") - versions[t] for t in range(TABLES))
    assert moved == len(error.applied) == len(set(error.applied))
    if error.applied:
        assert f"applied on other tables before it ({len(error.applied)})" in str(error)

    project.sql(f"DELETE FROM {schema}.t3 WHERE id = 5000")
    execution.apply_converging(project.catalog, project.desired(), project.plan(), parallel=4)
    assert project.plan().is_empty


def _version(project: Project, table: str) -> int:
    return int(project.catalog.spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]["version"])
