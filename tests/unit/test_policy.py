"""The pure decisions between planner and shell (policy) and the words of a failed apply (outcomes)."""

from __future__ import annotations

import json

import pytest

from delta_sync.model.errors import UnsafePlanError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, Column, SchemaName, Table, TableName
from delta_sync.planning.actions import CreateSchema
from delta_sync.planning.diff import planner
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import CHECKED_BY_CONSTRAINT
from delta_sync.planning.statements import statements_of
from delta_sync.review import outcomes, policy, results

T = TableName(None, "s", "t")
U = TableName(None, "s", "u")
SCHEMAS = frozenset({SchemaName(None, "s")})


def have() -> CatalogState:
    t = Table(T, (Column("a", "int"), Column("b", "string")), num_files=3)
    u = Table(U, (Column("x", "int"), Column("gone", "string")), num_files=1)
    return CatalogState({T: t, U: u}, SCHEMAS)


def want() -> CatalogState:
    t = Table(
        T,
        (Column("a", "int", nullable=False), Column("b", "string"), Column("c", "string")),
        checks=(Check("a_pos", "a > 0"), Check("c_set", "c IS NOT NULL OR a > 1")),
    )
    u = Table(U, (Column("x", "int"),))
    return CatalogState({T: t, U: u})


def test_rules_to_scan_when_planning_and_when_applying() -> None:
    plan = planner.plan(have(), want())
    scan, left = policy.rules_to_scan(plan, have(), applying=False)
    assert [(t, sorted(c.name for c in checks)) for t, checks in scan] == [(T, ["a_pos", "c_set", "ds_nn_a"])]
    assert left == []
    scan, left = policy.rules_to_scan(plan, have(), applying=True)
    # Rules over unchanged columns lead their table: their own ADD CONSTRAINT is their data check.
    assert [(t, [c.name for c in checks]) for t, checks in scan] == [(T, ["c_set"])]
    assert sorted((p.check, p.source) for p in left) == [
        ("a_pos", CHECKED_BY_CONSTRAINT),
        ("ds_nn_a", CHECKED_BY_CONSTRAINT),
    ]
    assert policy.leading_rules(plan) == {("s.t", "a_pos"), ("s.t", "ds_nn_a")}


def test_new_rules_leave_out_delta_syncs_own_not_null_rules() -> None:
    plan = planner.plan(have(), want())
    ((table, checks),) = policy.new_rules(plan, want())
    assert table.name == T
    assert [c.name for c in checks] == ["a_pos", "c_set"]


def test_without_blocked_keeps_the_other_tables() -> None:
    plan = planner.plan(have(), want())
    review = results.Assessed(plan, have(), assess(plan, have(), [], allowed=()))
    assert review.assessment.blocked_tables == {U}  # dropping `gone` is destructive
    kept = policy.without_blocked(review)
    assert {a.name for a in kept.actions if not isinstance(a, CreateSchema)} == {T}
    with pytest.raises(UnsafePlanError, match=r"s.u: destructive: dropping `gone`") as raised:
        policy.refuse_blocked(review, "p1", ["breaking"])
    assert "(the plan was made with --allow breaking)" in str(raised.value)
    policy.refuse_blocked(results.Assessed(kept, have(), assess(kept, have(), [], ())), "p1")  # nothing blocked


def test_commit_metadata_names_the_plan_and_the_action() -> None:
    statement = statements_of(planner.plan(have(), want()))[0]
    expected = {"delta-sync": {"plan": "p9", "action": statement.kind}}
    assert json.loads(policy.commit_metadata("p9", statement)) == expected


def _failure(index: int, applied: tuple[str, ...] = ()) -> outcomes.StatementError:
    failure = EngineFailure(outcomes.VIOLATION, "violated", {"numRows": "2"})
    return outcomes.StatementError("x", failure=failure, statement="", index=index, applied=applied)


def test_a_violation_of_a_leading_rule_is_data_blocked_with_samples() -> None:
    plan = planner.plan(have(), want())
    statements = statements_of(plan)
    index = next(i for i, s in enumerate(statements) if s.check == "a_pos")
    rule = outcomes.violated_rule(plan, statements, _failure(index))
    assert rule is not None
    blocked = outcomes.data_blocked(rule, statements, _failure(index), [(("a", "-1"), ("b", "'x'"))])
    text = str(blocked)
    assert blocked.exit_code == 3
    assert "blocked by the data: 2 existing rows of s.t violate `a_pos` (a > 0)" in text
    assert "  violating rows (1 shown):\n    a   b\n    -1  'x'\n" in text
    assert "nothing was applied" in text
    assert f"not applied: {len(statements)} statement(s)" in text


def test_a_violation_of_a_rule_after_other_changes_is_an_ordinary_failure() -> None:
    plan = planner.plan(have(), want())
    statements = statements_of(plan)
    index = next(i for i, s in enumerate(statements) if s.check == "c_set")
    assert outcomes.violated_rule(plan, statements, _failure(index)) is None
