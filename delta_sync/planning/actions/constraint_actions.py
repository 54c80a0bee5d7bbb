"""The actions on a table's rules: CHECK constraints (NOT NULL on an existing column among them) and primary
and foreign keys, added and dropped. Each states its `phase`; a new CHECK over untouched columns runs first."""

from __future__ import annotations

from dataclasses import dataclass

from delta_sync.model.state import Check, ForeignKey, PrimaryKey, TableName
from delta_sync.planning.actions.phases import EarlyWhen, Phase


@dataclass(frozen=True, slots=True)
class AddCheck:
    name: TableName
    check: Check
    replaces: Check | None = None
    # First of its table's changes: a new rule that reads only columns the plan leaves alone.
    first: bool = False
    # Why an unchanged rule is dropped and re-added: the plan changes a column it reads.
    moved_for: str | None = None
    phase = EarlyWhen("first", Phase.ADD_CHECK_FIRST, Phase.ADD_CHECK)


@dataclass(frozen=True, slots=True)
class DropCheck:
    name: TableName
    check: Check
    phase = Phase.DROP_CHECK


@dataclass(frozen=True, slots=True)
class AddPrimaryKey:
    """Declare the table's primary key: as a constraint where the catalog accepts one
    (`as_constraint`), else in the table property delta_sync.primary_key (delta_sync.model.keys)."""

    name: TableName
    key: PrimaryKey
    as_constraint: bool = False
    phase = Phase.ADD_PRIMARY_KEY


@dataclass(frozen=True, slots=True)
class DropPrimaryKey:
    name: TableName
    key: PrimaryKey
    as_constraint: bool = False
    phase = Phase.DROP_PRIMARY_KEY


@dataclass(frozen=True, slots=True)
class AddForeignKey:
    name: TableName
    key: ForeignKey
    as_constraint: bool = False
    phase = Phase.ADD_FOREIGN_KEY


@dataclass(frozen=True, slots=True)
class DropForeignKey:
    name: TableName
    key: ForeignKey
    as_constraint: bool = False
    phase = Phase.DROP_FOREIGN_KEY
