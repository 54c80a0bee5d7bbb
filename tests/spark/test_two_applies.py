"""Two applies of the same specs at once, on real Delta: both end converged, no duplicate-constraint
error, no half-state, no row lost."""

from __future__ import annotations

import threading
from typing import Any

from delta_sync.model.state import TableName
from delta_sync.planning.statements import statements_of
from delta_sync.review import execution, pipeline

from .conftest import Project

BEFORE = """\
table: {schema}.orders
columns:
  - name: id
    type: bigint
  - name: amount
    type: int
"""

AFTER = """\
table: {schema}.orders
comment: Orders, evolved twice at once
columns:
  - name: id
    type: bigint
  - name: amount
    type: int
    nullable: false
  - name: status
    type: string
  - name: channel
    type: string
checks:
  amount_positive: amount > 0
properties:
  owner.team: billing
"""

NEW_TABLE = """\
table: {schema}.refunds
columns:
  - name: id
    type: bigint
checks:
  id_positive: id > 0
"""


def evolve(project: Project, schema: str) -> None:
    project.write("orders.yaml", BEFORE.format(schema=schema))
    project.apply()
    project.sql(f"INSERT INTO {schema}.orders VALUES (1, 10), (2, 20), (3, 30)")
    project.write("orders.yaml", AFTER.format(schema=schema))
    project.write("refunds.yaml", NEW_TABLE.format(schema=schema))


def assert_converged(project: Project, schema: str) -> None:
    assert project.plan().is_empty, project.plan()
    constraints = {k for k in project.properties(f"{schema}.orders") if k.startswith("delta.constraints.")}
    assert constraints == {"delta.constraints.amount_positive", "delta.constraints.ds_nn_amount"}
    assert project.sql(f"SELECT count(*), sum(amount) FROM {schema}.orders") == [(3, 60)]


def test_the_second_of_two_applies_planned_together_recognises_the_work_as_done(project: Project, schema: str) -> None:
    evolve(project, schema)
    desired = project.desired()
    first = pipeline.make_plan(project.catalog, desired)
    second = pipeline.make_plan(project.catalog, desired)  # planned before the first ran: every statement is stale
    assert statements_of(first) == statements_of(second)
    ran = execution.apply_converging(project.catalog, desired, first)
    assert ran == len(statements_of(first))
    versions = project.sql(f"DESCRIBE HISTORY {schema}.orders LIMIT 1")[0][0]

    # Its first statement finds the columns there; the re-read shows nothing left to do.
    assert execution.apply_converging(project.catalog, desired, second, sleep=lambda _s: None) == 0
    assert project.sql(f"DESCRIBE HISTORY {schema}.orders LIMIT 1")[0][0] == versions
    assert_converged(project, schema)


def test_two_applies_racing_on_the_same_tables_both_converge(project: Project, schema: str) -> None:
    evolve(project, schema)
    desired = project.desired()
    start = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def apply(who: str) -> None:
        try:
            plan = pipeline.make_plan(project.catalog, desired)
            start.wait(timeout=120)
            outcomes[who] = execution.apply_converging(project.catalog, desired, plan)
        except Exception as exc:  # recorded, asserted below: a failure must not hide in a thread
            outcomes[who] = exc

    threads = [threading.Thread(target=apply, args=(who,)) for who in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert all(isinstance(v, int) for v in outcomes.values()), {k: str(v) for k, v in outcomes.items()}
    statements = len(statements_of(pipeline.make_plan(project.catalog, desired)))
    assert statements == 0
    assert project.catalog.read([TableName(None, schema, "refunds")]).table(TableName(None, schema, "refunds"))
    assert_converged(project, schema)
