"""The waves of apply: what may run side by side, and what must wait for another table."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from delta_sync.model.state import TableName
from delta_sync.planning.actions import Action, AddCheck, AddColumns, ClusterBy, Plan, sort_key
from delta_sync.planning.actions.phases import Phase
from delta_sync.planning.statements import Kind, Statement, checked_first, statements_of, waves
from tests.unit.test_saved_plan_integrity import sample


def s(table: str, kind: Kind, check: str | None = None) -> Statement:
    return Statement(table, kind, f"{kind} on {table}", check)


def test_waves_keep_foreign_keys_around_the_keys_they_reference() -> None:
    work = [
        s("shop", Kind.CREATE_SCHEMA),
        s("shop.customers", Kind.ADD_CHECK, "email_set"),  # leads its table: the data check comes first
        s("shop.customers", Kind.DROP_PRIMARY_KEY),
        s("shop.customers", Kind.ADD_PRIMARY_KEY),
        s("shop.orders", Kind.DROP_FOREIGN_KEY),
        s("shop.orders", Kind.ADD_COLUMNS),
        s("shop.orders", Kind.ADD_FOREIGN_KEY),
    ]
    assert waves(work) == [[[0]], [[1]], [[4]], [[2, 3], [5]], [[6]]]


def test_a_plan_without_keys_or_leading_rules_is_schemas_then_tables() -> None:
    work = [
        s("a", Kind.CREATE_SCHEMA),
        s("a.t", Kind.CREATE_TABLE),
        s("a.t", Kind.ADD_CHECK, "c"),
        s("a.u", Kind.CREATE_TABLE),
    ]
    assert waves(work) == [[[0]], [[1, 2], [3]]]
    assert waves([]) == []


def test_a_foreign_key_dropped_does_not_take_the_lead_from_a_new_rule() -> None:
    work = [
        s("shop.orders", Kind.DROP_FOREIGN_KEY),
        s("shop.orders", Kind.ADD_CHECK, "c"),
        s("shop.orders", Kind.ADD_COLUMNS),
    ]
    assert checked_first(work) == {1}
    assert waves(work) == [[[1]], [[0]], [[2]]]


def one_of_each() -> list[Action]:
    """An action of every type, on one table; a type that may run early in its table both ways."""
    found: list[Action] = []
    for cls in typing.get_args(Action):
        action = sample(cls, "c")
        found.append(action)
        if isinstance(action, AddCheck):
            found.append(dataclasses.replace(action, first=not action.first))
        if isinstance(action, ClusterBy):
            found.append(dataclasses.replace(action, early=not action.early))
    return found


@pytest.mark.parametrize("action", one_of_each(), ids=lambda a: f"{type(a).__name__}-{a.phase.name}")
def test_every_action_type_has_a_phase_and_waves_read_the_stage_sort_key_sorts_by(action: Action) -> None:
    # waves knows a statement by its kind (its action type) only, sort_key knows the action.
    by_type = type(action).phase
    assert isinstance(by_type, Phase)
    assert by_type.stage == action.phase.stage == sort_key(action)[0]
    for statement in statements_of(Plan((action,), ())):
        assert statement.kind.stage == sort_key(action)[0]


def test_waves_run_a_plan_of_every_action_type_in_its_order_but_for_a_leading_rule() -> None:
    rule = next(a for a in one_of_each() if isinstance(a, AddCheck) and a.first)
    other = TableName("c", "c", "lead")
    leading: list[Action] = [dataclasses.replace(rule, name=other), AddColumns(other, ())]
    work = statements_of(Plan(tuple(sorted([*one_of_each(), *leading], key=sort_key)), ()))
    assert {s.kind for s in work} == set(Kind)

    first = sorted(checked_first(work))
    assert [(work[i].table, work[i].kind) for i in first] == [("c.c.lead", Kind.ADD_CHECK)]
    schema = [i for i, s in enumerate(work) if s.kind is Kind.CREATE_SCHEMA]
    rest = [i for i in range(len(work)) if i not in {*schema, *first}]
    assert [i for wave in waves(work) for lane in wave for i in lane] == [*schema, *first, *rest]
