"""The actions on a table's columns (and nested struct fields, by `parent`): added, renamed, dropped,
retyped, loosened to nullable, commented and given a default. Each states its `phase`."""

from __future__ import annotations

from dataclasses import dataclass

from delta_sync.model.state import Column, Origin, TableName
from delta_sync.planning.phases import Phase


@dataclass(frozen=True, slots=True)
class AddColumns:
    name: TableName
    columns: tuple[Column, ...]
    parent: tuple[str, ...] = ()
    phase = Phase.ADD_COLUMNS


@dataclass(frozen=True, slots=True)
class SetColumnComment:
    name: TableName
    column: str
    before: str | None
    after: str | None
    origin: Origin | None = None
    # Path of the struct holding `column` when it is a nested field; () for a top-level column.
    parent: tuple[str, ...] = ()
    phase = Phase.COLUMN_COMMENT


@dataclass(frozen=True, slots=True)
class RenameColumn:
    name: TableName
    before: str
    after: str
    origin: Origin | None = None
    phase = Phase.RENAME_COLUMN


@dataclass(frozen=True, slots=True)
class DropColumns:
    name: TableName
    columns: tuple[Column, ...]
    parent: tuple[str, ...] = ()
    origin: Origin | None = None
    # A rollback counts the values the columns hold (None: not counted) and names who wrote them.
    values: int | None = None
    written_by: tuple[str, ...] = ()
    phase = Phase.DROP_COLUMNS


@dataclass(frozen=True, slots=True)
class AlterColumnType:
    name: TableName
    column: str
    before: str
    after: str
    origin: Origin | None = None
    parent: tuple[str, ...] = ()
    phase = Phase.ALTER_TYPE


@dataclass(frozen=True, slots=True)
class DropNotNull:
    name: TableName
    column: str
    origin: Origin | None = None
    parent: tuple[str, ...] = ()
    phase = Phase.DROP_NOT_NULL


@dataclass(frozen=True, slots=True)
class SetDefault:
    name: TableName
    column: str
    before: str | None
    after: str | None
    origin: Origin | None = None
    phase = Phase.SET_DEFAULT
