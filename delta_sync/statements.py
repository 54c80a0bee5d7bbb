"""The unit of apply and of a saved plan: one statement with what it is for. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from delta_sync import ddl
from delta_sync.actions import Action, AddCheck, CreateSchema, Plan


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement to run, with what it is for: the unit of apply and of a saved plan."""

    table: str
    kind: str
    sql: str
    check: str | None = None


def table_of(action: Action) -> str:
    return str(action.schema) if isinstance(action, CreateSchema) else str(action.name)


def statements_of(plan: Plan) -> tuple[Statement, ...]:
    return tuple(
        Statement(table_of(a), type(a).__name__, sql, a.check.name if isinstance(a, AddCheck) else None)
        for a, sql in ddl.plan_statements(plan)
    )


def checked_first(statements: Sequence[Statement]) -> frozenset[int]:
    """The ADD CONSTRAINTs that lead their table's statements: each scans the table's rows before
    anything of the table changed, and commits nothing if one violates (the planner puts a new rule
    over unchanged columns first, see planner._checks_first)."""
    first: set[int] = set()
    started: set[str] = set()
    for index, statement in enumerate(statements):
        if statement.kind == CreateSchema.__name__:
            continue
        if statement.kind == AddCheck.__name__ and statement.table not in started:
            first.add(index)
        elif statement.kind != AddCheck.__name__:
            started.add(statement.table)
    return frozenset(first)
