"""The unit of apply and of a saved plan: one statement with what it is for. Pure."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from delta_sync.planning import ddl
from delta_sync.planning.actions import Action, AddCheck, AddForeignKey, AddPrimaryKey, CreateSchema, Plan, RewriteTable
from delta_sync.planning.actions.phases import Stage


class Kind(StrEnum):
    """The action type a statement comes from, by its name: saved plans and commits record it so."""

    CREATE_SCHEMA = "CreateSchema"
    CREATE_TABLE = "CreateTable"
    ENABLE_FEATURE = "EnableFeature"
    RENAME_COLUMN = "RenameColumn"
    DROP_COLUMNS = "DropColumns"
    ALTER_COLUMN_TYPE = "AlterColumnType"
    DROP_NOT_NULL = "DropNotNull"
    SET_DEFAULT = "SetDefault"
    UNSET_PROPERTIES = "UnsetProperties"
    CLUSTER_BY = "ClusterBy"
    ADD_COLUMNS = "AddColumns"
    MOVE_COLUMN = "MoveColumn"
    SET_COLUMN_COMMENT = "SetColumnComment"
    SET_TABLE_COMMENT = "SetTableComment"
    SET_PROPERTIES = "SetProperties"
    ADD_CHECK = "AddCheck"
    DROP_CHECK = "DropCheck"
    ADD_PRIMARY_KEY = "AddPrimaryKey"
    DROP_PRIMARY_KEY = "DropPrimaryKey"
    ADD_FOREIGN_KEY = "AddForeignKey"
    DROP_FOREIGN_KEY = "DropForeignKey"
    BACKFILL = "Backfill"
    REWRITE_TABLE = "RewriteTable"
    RESTORE_TABLE = "RestoreTable"
    DROP_TABLE = "DropTable"
    DROP_FEATURE = "DropFeature"
    RENAME_TABLE = "RenameTable"
    REMOVE_TABLE = "RemoveTable"
    CREATE_VIEW = "CreateView"

    @property
    def stage(self) -> Stage:
        return _TYPES[self].phase.stage


_TYPES: dict[str, type[Action]] = {cls.__name__: cls for cls in typing.get_args(Action)}


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement to run, with what it is for: the unit of apply and of a saved plan."""

    table: str
    kind: Kind
    sql: str
    check: str | None = None
    # A rewrite's restore point: the table version it replaces (recorded in its commit).
    restore_version: int | None = None


def table_of(action: Action) -> str:
    return str(action.schema) if isinstance(action, CreateSchema) else str(action.name)


def statements_of(plan: Plan) -> tuple[Statement, ...]:
    return tuple(
        Statement(table_of(a), Kind(type(a).__name__), sql, _rule_of(a), _restore_version(a))
        for a, sql in ddl.plan_statements(plan)
    )


def _restore_version(action: Action) -> int | None:
    return action.restore_version if isinstance(action, RewriteTable) else None


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
    over unchanged columns first, see constraint_diff.checks_first)."""
    first: set[int] = set()
    started: set[str] = set()
    for index, statement in enumerate(statements):
        if statement.kind is Kind.CREATE_SCHEMA:
            continue
        if statement.kind is Kind.ADD_CHECK and statement.table not in started:
            first.add(index)
        elif statement.kind not in (Kind.ADD_CHECK, Kind.DROP_FOREIGN_KEY):
            # A foreign key dropped runs after the leading ADD CONSTRAINTs (waves): it starts nothing.
            started.add(statement.table)
    return frozenset(first)


def waves(statements: Sequence[Statement]) -> list[list[list[int]]]:
    """The order of apply: waves run one after the other; each wave's lanes (one per table, its
    statements in plan order) may run side by side.

    The waves are the stages of the statements' actions (phases.Stage), in their order, but for two
    things: the ADD CONSTRAINTs that lead their table (checked_first) run in a wave of their own right
    after the schemas, so that their rows are checked before anything of any table changed; tables
    renamed run in one wave with the foreign keys dropped (a table's lane keeps its rename first).
    Views run in one lane: a view over a view after the view it reads."""
    first = checked_first(statements)
    buckets: dict[tuple[Stage, bool], dict[str, list[int]]] = {}
    for index, statement in enumerate(statements):
        stage = statement.kind.stage
        if index in first:
            wave = (Stage.SCHEMAS, True)
        else:
            wave = (Stage.DROPPED_FOREIGN_KEYS if stage is Stage.RENAMED_TABLES else stage, False)
        lane = "" if stage is Stage.VIEWS else statement.table
        buckets.setdefault(wave, {}).setdefault(lane, []).append(index)
    return [list(buckets[wave].values()) for wave in sorted(buckets)]
