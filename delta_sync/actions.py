"""What a plan is made of: immutable actions, each carrying the before and after values it needs.

The order of execution is defined here and nowhere else (`Phase` and `sort_key`): schemas first,
then table by table in name order, and within a table by phase. ADD CONSTRAINT comes last
because it scans the data and may reference columns added earlier in the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from delta_sync.model import Check, Column, Origin, SchemaName, Table, TableName


class Phase(IntEnum):
    CREATE_SCHEMA = 0
    UNSUPPORTED = 1
    CREATE_TABLE = 2
    DROP_CHECK = 3
    ADD_COLUMNS = 4
    SET_PROPERTIES = 5
    TABLE_COMMENT = 6
    COLUMN_COMMENT = 7
    ADD_CHECK = 8


@dataclass(frozen=True, slots=True)
class CreateSchema:
    schema: SchemaName
    phase = Phase.CREATE_SCHEMA


@dataclass(frozen=True, slots=True)
class CreateTable:
    table: Table
    phase = Phase.CREATE_TABLE

    @property
    def name(self) -> TableName:
        return self.table.name


@dataclass(frozen=True, slots=True)
class AddColumns:
    name: TableName
    columns: tuple[Column, ...]
    phase = Phase.ADD_COLUMNS


@dataclass(frozen=True, slots=True)
class SetColumnComment:
    name: TableName
    column: str
    before: str | None
    after: str | None
    origin: Origin | None = None
    phase = Phase.COLUMN_COMMENT


@dataclass(frozen=True, slots=True)
class SetTableComment:
    name: TableName
    before: str | None
    after: str | None
    origin: Origin | None = None
    phase = Phase.TABLE_COMMENT


@dataclass(frozen=True, slots=True)
class PropertyChange:
    key: str
    before: str | None
    after: str


@dataclass(frozen=True, slots=True)
class SetProperties:
    name: TableName
    changes: tuple[PropertyChange, ...]
    origin: Origin | None = None
    phase = Phase.SET_PROPERTIES


@dataclass(frozen=True, slots=True)
class AddCheck:
    name: TableName
    check: Check
    replaces: Check | None = None
    phase = Phase.ADD_CHECK


@dataclass(frozen=True, slots=True)
class DropCheck:
    name: TableName
    check: Check
    phase = Phase.DROP_CHECK


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A difference delta-sync will not apply; it blocks apply and says what to do instead."""

    name: TableName
    subject: str
    reason: str
    remedy: str
    origin: Origin | None = None
    phase = Phase.UNSUPPORTED


Action = (
    CreateSchema
    | CreateTable
    | AddColumns
    | SetColumnComment
    | SetTableComment
    | SetProperties
    | AddCheck
    | DropCheck
    | Unsupported
)


def subject(action: Action) -> str:
    match action:
        case CreateSchema() | CreateTable() | AddColumns() | SetTableComment() | SetProperties():
            return ""
        case SetColumnComment():
            return action.column.lower()
        case AddCheck() | DropCheck():
            return action.check.name
        case Unsupported():
            return action.subject


def sort_key(action: Action) -> tuple[int, str, int, str]:
    if isinstance(action, CreateSchema):
        return (0, str(action.schema), action.phase, "")
    return (1, str(action.name), action.phase, subject(action))


@dataclass(frozen=True, slots=True)
class Summary:
    create: int
    change: int
    unchanged: int
    blocked: int

    def __str__(self) -> str:
        text = f"{self.create} to create, {self.change} to change, {self.unchanged} unchanged"
        return f"{text}, {self.blocked} blocked" if self.blocked else text


@dataclass(frozen=True, slots=True)
class Plan:
    actions: tuple[Action, ...]
    tables: tuple[TableName, ...]

    @property
    def is_empty(self) -> bool:
        return not self.actions

    @property
    def blocked(self) -> tuple[Unsupported, ...]:
        return tuple(a for a in self.actions if isinstance(a, Unsupported))

    def actions_for(self, name: TableName) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if not isinstance(a, CreateSchema) and a.name == name)

    @property
    def summary(self) -> Summary:
        created = {a.name for a in self.actions if isinstance(a, CreateTable)}
        touched = {a.name for a in self.actions if not isinstance(a, CreateSchema)}
        blocked = {a.name for a in self.blocked}
        return Summary(
            create=len(created - blocked),
            change=len(touched - created - blocked),
            unchanged=len(set(self.tables) - touched),
            blocked=len(blocked),
        )
