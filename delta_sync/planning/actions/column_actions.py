"""The actions on a table's columns (and nested struct fields, by `parent`): added (at their place), moved,
renamed, dropped, retyped, loosened to nullable, commented and given a default. Each states its `phase`."""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_sync.model.state import OMIT_EMPTY, Column, Origin, TableName, quote_ident
from delta_sync.planning.actions.phases import Phase


@dataclass(frozen=True, slots=True)
class Place:
    """Where a column goes among its siblings: right after `after`, or first (`after` None)."""

    after: str | None

    def sql(self) -> str:
        return "FIRST" if self.after is None else f"AFTER {quote_ident(self.after)}"

    def text(self) -> str:
        return "first" if self.after is None else f"after {self.after}"


@dataclass(frozen=True, slots=True)
class AddColumns:
    name: TableName
    columns: tuple[Column, ...]
    parent: tuple[str, ...] = ()
    # Each column's place, in `columns` order (None: at the end); empty when every column goes at the end,
    # which is how plans saved before column order was managed read.
    places: tuple[Place | None, ...] = field(default=(), metadata={OMIT_EMPTY: True})
    phase = Phase.ADD_COLUMNS

    def place_of(self, index: int) -> Place | None:
        return self.places[index] if self.places else None


@dataclass(frozen=True, slots=True)
class MoveColumn:
    """`ALTER TABLE t ALTER COLUMN c FIRST | AFTER x`: metadata only, Delta reads Parquet by name."""

    name: TableName
    column: str
    place: Place
    origin: Origin | None = None
    parent: tuple[str, ...] = ()
    phase = Phase.MOVE_COLUMN


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
