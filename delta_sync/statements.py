"""The unit of apply and of a saved plan: one statement with what it is for. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from delta_sync import ddl
from delta_sync.actions import Action, AddCheck, AddForeignKey, AddPrimaryKey, CreateSchema, Plan, RewriteTable


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement to run, with what it is for: the unit of apply and of a saved plan."""

    table: str
    kind: str
    sql: str
    check: str | None = None
    # A rewrite's restore point: the table version it replaces (recorded in its commit).
    restore_version: int | None = None


def table_of(action: Action) -> str:
    return str(action.schema) if isinstance(action, CreateSchema) else str(action.name)


def statements_of(plan: Plan) -> tuple[Statement, ...]:
    return tuple(
        Statement(table_of(a), type(a).__name__, sql, _rule_of(a), _restore_version(a))
        for a, sql in ddl.plan_statements(plan)
    )


def _restore_version(action: Action) -> int | None:
    return action.restore_version if isinstance(action, RewriteTable) else None


# Kinds of statement that depend on another table (a foreign key and its parent's primary key): they
# run in waves of their own, so that tables applied side by side keep that order.
_DROP_FOREIGN_KEY = "DropForeignKey"
_ADD_FOREIGN_KEY = "AddForeignKey"
# A table renamed runs before any other statement names it by its new name (a foreign key dropped, too),
# but after the leading ADD CONSTRAINTs: rows that violate a new rule still leave every table unchanged.
_RENAME_TABLE = "RenameTable"
_CREATE_VIEW = "CreateView"


def _rule_of(action: Action) -> str | None:
    """The name a data check of the statement goes by: a CHECK's, a key's."""
    if isinstance(action, AddCheck):
        return action.check.name
    if isinstance(action, AddPrimaryKey | AddForeignKey):
        return action.key.name
    return None


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
        elif statement.kind not in (AddCheck.__name__, _DROP_FOREIGN_KEY):
            # A foreign key dropped runs after the leading ADD CONSTRAINTs (waves): it starts nothing.
            started.add(statement.table)
    return frozenset(first)


def waves(statements: Sequence[Statement]) -> list[list[list[int]]]:
    """The order of apply: waves run one after the other; each wave's lanes (one per table, its
    statements in plan order) may run side by side.

    1. the schemas; 2. the ADD CONSTRAINTs that lead their table (checked_first: their rows are
    checked before anything of any table changed); 3. tables renamed and foreign keys dropped (before
    the primary keys they reference, on other tables); 4. everything else, table by table; 5. foreign keys added
    (after the primary keys they reference, on other tables); 6. views, one after the other."""
    first = checked_first(statements)
    buckets: list[dict[str, list[int]]] = [{} for _ in range(6)]
    for index, statement in enumerate(statements):
        if statement.kind == CreateSchema.__name__:
            wave = 0
        elif index in first:
            wave = 1
        elif statement.kind in (_RENAME_TABLE, _DROP_FOREIGN_KEY):
            wave = 2
        elif statement.kind == _ADD_FOREIGN_KEY:
            wave = 4
        elif statement.kind == _CREATE_VIEW:
            # One lane: a view over a view runs after the view it reads.
            buckets[5].setdefault("", []).append(index)
            continue
        else:
            wave = 3
        buckets[wave].setdefault(statement.table, []).append(index)
    return [list(bucket.values()) for bucket in buckets if bucket]
