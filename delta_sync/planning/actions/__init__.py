"""What a plan is made of, and the one import point for it: the union of the actions (`Action`; the types live
in table_actions, column_actions, constraint_actions and data_actions, and are imported from here), the part of
its table an action is about (`subject`), the plan's order (`sort_key`, by the phases of
delta_sync.planning.actions.phases), and the `Plan` with its `Summary`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from delta_sync.model.state import TableName
from delta_sync.planning.actions.column_actions import (
    AddColumns,
    AlterColumnType,
    DropColumns,
    DropNotNull,
    MoveColumn,
    Place,
    RenameColumn,
    SetColumnComment,
    SetDefault,
)
from delta_sync.planning.actions.constraint_actions import (
    AddCheck,
    AddForeignKey,
    AddPrimaryKey,
    DropCheck,
    DropForeignKey,
    DropPrimaryKey,
)
from delta_sync.planning.actions.data_actions import Backfill, Conversion, DropTable, RestoreTable, RewriteTable
from delta_sync.planning.actions.table_actions import (
    TABLE_COMMENT_KEY,
    BreaksView,
    ClusterBy,
    CreateSchema,
    CreateTable,
    CreateView,
    DropFeature,
    EnableFeature,
    Notice,
    PropertyChange,
    RemoveTable,
    RenameTable,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)

__all__ = [
    "TABLE_COMMENT_KEY",
    "Action",
    "AddCheck",
    "AddColumns",
    "AddForeignKey",
    "AddPrimaryKey",
    "AlterColumnType",
    "Backfill",
    "BreaksView",
    "ClusterBy",
    "Conversion",
    "CreateSchema",
    "CreateTable",
    "CreateView",
    "DropCheck",
    "DropColumns",
    "DropFeature",
    "DropForeignKey",
    "DropNotNull",
    "DropPrimaryKey",
    "DropTable",
    "EnableFeature",
    "MoveColumn",
    "Notice",
    "Place",
    "Plan",
    "PropertyChange",
    "RemoveTable",
    "RenameColumn",
    "RenameTable",
    "RestoreTable",
    "RewriteTable",
    "SetColumnComment",
    "SetDefault",
    "SetProperties",
    "SetTableComment",
    "Summary",
    "UnsetProperties",
    "Unsupported",
    "sort_key",
    "subject",
]

Action = (
    CreateSchema
    | CreateTable
    | EnableFeature
    | RenameColumn
    | DropColumns
    | AlterColumnType
    | DropNotNull
    | SetDefault
    | UnsetProperties
    | ClusterBy
    | Notice
    | AddColumns
    | MoveColumn
    | SetColumnComment
    | SetTableComment
    | SetProperties
    | AddCheck
    | DropCheck
    | Unsupported
    | AddPrimaryKey
    | DropPrimaryKey
    | AddForeignKey
    | DropForeignKey
    | Backfill
    | RewriteTable
    | RestoreTable
    | DropTable
    | DropFeature
    | RenameTable
    | RemoveTable
    | CreateView
    | BreaksView
)


def subject(action: Action) -> str:
    match action:
        case AddColumns() | DropColumns():
            return ".".join(action.parent).lower()
        case (
            CreateSchema()
            | CreateTable()
            | SetTableComment()
            | SetProperties()
            | UnsetProperties()
            | ClusterBy()
            | RewriteTable()
            | RestoreTable()
            | DropTable()
            | RenameTable()
            | RemoveTable()
            | CreateView()
        ):
            return ""
        case BreaksView():
            return str(action.view)
        case EnableFeature():
            return action.key
        case DropFeature():
            return action.feature
        case RenameColumn():
            return action.before.lower()
        case SetColumnComment() | AlterColumnType() | DropNotNull() | MoveColumn():
            return ".".join((*action.parent, action.column)).lower()
        case SetDefault() | Backfill():
            return action.column.lower()
        case Notice():
            return action.subject
        case AddCheck() | DropCheck():
            return action.check.name
        case Unsupported():
            return action.subject
        case AddPrimaryKey() | DropPrimaryKey() | AddForeignKey() | DropForeignKey():
            return action.key.name
        case _:
            assert_never(action)


def sort_key(action: Action) -> tuple[int, str, int, str]:
    """By stage, then table by table in name order, then by phase and subject."""
    if isinstance(action, CreateSchema):
        where = str(action.schema)
    elif isinstance(action, CreateView):
        where = f"{action.depth:04d} {action.name}"
    else:
        where = str(action.name)
    return (action.phase.stage, where, action.phase, subject(action))


@dataclass(frozen=True, slots=True)
class Summary:
    create: int
    change: int
    unchanged: int
    blocked: int
    drop: int = 0

    def __str__(self) -> str:
        text = f"{self.create} to create, {self.change} to change"
        text += f", {self.drop} to drop" if self.drop else ""
        text += f", {self.unchanged} unchanged"
        return f"{text}, {self.blocked} blocked" if self.blocked else text


@dataclass(frozen=True, slots=True)
class Plan:
    actions: tuple[Action, ...]
    tables: tuple[TableName, ...]
    # Tables and views in the specs' schemas that no spec names (information only; strict mode drops them).
    unmanaged: tuple[TableName, ...] = ()
    # Tables whose column order differs from the spec's while the project does not manage it
    # (`column_order: ignore`; information only).
    unordered: tuple[TableName, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.changes

    @property
    def read_names(self) -> tuple[TableName, ...]:
        """The tables the plan depends on as they are now: its tables and the names it renames from."""
        before = {a.before for a in self.actions if isinstance(a, RenameTable)}
        return tuple(sorted({*self.tables, *before}))

    @property
    def changes(self) -> tuple[Action, ...]:
        """Actions that do something (notices and broken views only inform)."""
        return tuple(a for a in self.actions if not isinstance(a, Notice | BreaksView))

    @property
    def blocked(self) -> tuple[Unsupported, ...]:
        return tuple(a for a in self.actions if isinstance(a, Unsupported))

    def actions_for(self, name: TableName) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if not isinstance(a, CreateSchema) and a.name == name)

    @property
    def summary(self) -> Summary:
        return self.summary_with(frozenset())

    def summary_with(self, blocked_tables: frozenset[TableName]) -> Summary:
        """Counts per table; a table blocked by the plan or by policy counts only as blocked."""
        created = {a.name for a in self.actions if isinstance(a, CreateTable)}
        created |= {a.name for a in self.actions if isinstance(a, CreateView) and not a.replacing}
        dropped = {a.name for a in self.actions if isinstance(a, RemoveTable)}
        touched = {a.name for a in self.changes if not isinstance(a, CreateSchema)}
        blocked = {a.name for a in self.blocked} | blocked_tables
        return Summary(
            create=len(created - blocked),
            change=len(touched - created - dropped - blocked),
            unchanged=len(set(self.tables) - touched),
            blocked=len(blocked),
            drop=len(dropped - blocked),
        )
