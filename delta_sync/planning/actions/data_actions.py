"""The actions that rewrite or remove a table's data: a backfill of a column that becomes NOT NULL, a rewrite
(REPLACE TABLE ... AS SELECT with its conversions), and a rollback's restore to a version and drop of a table
the plan created. Each states its `phase`."""

from __future__ import annotations

from dataclasses import dataclass

from delta_sync.model.state import Check, Origin, TableName
from delta_sync.planning.actions.phases import Phase


@dataclass(frozen=True, slots=True)
class Backfill:
    """`UPDATE t SET c = <expression> WHERE c IS NULL`: gives the rows a column that becomes NOT NULL
    lacks a value (rewrites the data files holding them, in one commit)."""

    name: TableName
    column: str
    expression: str
    type: str
    origin: Origin | None = None
    phase = Phase.BACKFILL


@dataclass(frozen=True, slots=True)
class Conversion:
    """How a rewrite turns a column's existing values into its new type."""

    column: str
    before: str
    after: str
    # SQL over the table's current columns; CAST(column AS after) unless the spec says `using`.
    expression: str
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class RewriteTable:
    """One `REPLACE TABLE t ... AS SELECT ... FROM t`: a single Delta commit on the same table (its history
    kept, so `restore_version` is a restore point) that converts column types and sets the layout, and
    carries what REPLACE would otherwise drop: the table's properties, comment, CHECKs and NOT NULLs (as
    delta-sync's NOT NULL CHECKs). Delta enforces the carried rules on the rewritten rows: one violation
    and nothing commits."""

    name: TableName
    # The table's columns, in order: a column without a conversion is selected as it is.
    columns: tuple[str, ...]
    conversions: tuple[Conversion, ...]
    partitioned_by: tuple[str, ...]
    clustered_by: tuple[str, ...]
    comment: str | None
    properties: tuple[tuple[str, str], ...]
    checks: tuple[Check, ...]
    # What makes the rewrite necessary, one line each, for the plan.
    reasons: tuple[str, ...]
    # The table as the plan read it: the version to restore, and the size the rewrite reads and writes.
    restore_version: int | None = None
    num_files: int | None = None
    size_bytes: int | None = None
    origin: Origin | None = None
    phase = Phase.REWRITE

    def conversion(self, column: str) -> Conversion | None:
        return next((c for c in self.conversions if c.column.lower() == column.lower()), None)


@dataclass(frozen=True, slots=True)
class RestoreTable:
    """A rollback's `RESTORE TABLE t TO VERSION AS OF v`: one commit that gives the table the rows and the
    metadata it had before the plan (not its protocol: features the plan enabled stay). Only when nobody
    wrote the table since the plan, so it discards nothing but the plan's own changes."""

    name: TableName
    version: int
    plan_id: str
    # The table versions it undoes (the plan's commits and those since that change no data or schema).
    undoes: tuple[int, ...]
    # What the table gets back, one line each (the reverse change, as `plan` would show it).
    changes: tuple[str, ...] = ()
    phase = Phase.REWRITE


@dataclass(frozen=True, slots=True)
class DropTable:
    """A rollback's `DROP TABLE t` of a table the plan created."""

    name: TableName
    plan_id: str
    # Commits by others that wrote rows into the table since it was created: what dropping it discards.
    written_by: tuple[str, ...] = ()
    phase = Phase.REWRITE
