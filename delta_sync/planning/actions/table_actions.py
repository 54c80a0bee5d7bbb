"""The actions on a table as a whole: schemas and tables created, renamed and dropped, views created or
replaced (and a table change that breaks a view), the table's comment, properties and features, its
clustering, and what a plan only tells (`Notice`) or refuses (`Unsupported`). Each states its `phase`."""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_sync.model.state import OMIT_EMPTY, Origin, SchemaName, Table, TableName, View
from delta_sync.planning.actions.phases import EarlyWhen, Phase


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
class RenameTable:
    """`ALTER TABLE before RENAME TO name`: the table keeps its rows, history, rules and properties."""

    name: TableName
    before: TableName
    origin: Origin | None = None
    phase = Phase.RENAME_TABLE


@dataclass(frozen=True, slots=True)
class RemoveTable:
    """`DROP TABLE t` (or `DROP VIEW v`) of what a tombstone names (`origin`), or, in strict mode, of what
    no spec names (`strict`; `origin` is then the project file's `strict: true`, when known). A managed table's
    files go with it; an external table's stay."""

    name: TableName
    origin: Origin | None = None
    view: bool = False
    # The table as read: None for a view.
    num_files: int | None = None
    size_bytes: int | None = None
    location: str | None = None
    strict: bool = field(default=False, metadata={OMIT_EMPTY: True})
    phase = Phase.DROP_TABLE


@dataclass(frozen=True, slots=True)
class CreateView:
    """`CREATE VIEW` (or, `replace`, `CREATE OR REPLACE VIEW`) with the spec's query, comment and columns.
    `depth`: how many views of the specs it reads through (0: tables only), which orders views over views."""

    view: View
    depth: int = 0
    # When replacing: the view as it is, and why it is replaced (one line each).
    before: View | None = None
    reasons: tuple[str, ...] = ()
    phase = Phase.CREATE_VIEW

    @property
    def name(self) -> TableName:
        return self.view.name

    @property
    def replacing(self) -> bool:
        return self.before is not None or bool(self.reasons)


@dataclass(frozen=True, slots=True)
class BreaksView:
    """A change of table `name` that makes a view reading it fail (found by analysing the view's query
    against the table as the plan leaves it). No statement: the finding is the point."""

    name: TableName
    view: TableName
    # The engine's error for the view's query (its first line), and the view's spec if it has one.
    error: str
    origin: Origin | None = None
    # The plan re-creates the view (from its spec) after the change.
    replaced: bool = False
    phase = Phase.BREAKS_VIEW


@dataclass(frozen=True, slots=True)
class SetTableComment:
    name: TableName
    before: str | None
    after: str | None
    origin: Origin | None = None
    phase = Phase.TABLE_COMMENT


# A change of this key in SetProperties is the table comment (Delta reads it so in SET TBLPROPERTIES).
TABLE_COMMENT_KEY = "comment"


@dataclass(frozen=True, slots=True)
class PropertyChange:
    key: str
    before: str | None
    after: str
    # The value is the project's default (`defaults:` in delta-sync.yaml), not the spec's own.
    default: bool = field(default=False, metadata={OMIT_EMPTY: True})


@dataclass(frozen=True, slots=True)
class SetProperties:
    name: TableName
    changes: tuple[PropertyChange, ...]
    origin: Origin | None = None
    phase = Phase.SET_PROPERTIES


@dataclass(frozen=True, slots=True)
class EnableFeature:
    """A table property that switches on a Delta feature another action needs (irreversible)."""

    name: TableName
    key: str
    value: str
    reason: str
    # The spec line of the change that needs the feature (informational: not part of equality).
    origin: Origin | None = field(default=None, compare=False)
    phase = Phase.ENABLE_FEATURE


@dataclass(frozen=True, slots=True)
class UnsetProperties:
    name: TableName
    removed: tuple[tuple[str, str], ...]
    origin: Origin | None = None
    phase = Phase.UNSET_PROPERTIES


@dataclass(frozen=True, slots=True)
class ClusterBy:
    name: TableName
    before: tuple[str, ...]
    after: tuple[str, ...]
    # Before DROP COLUMNS when it releases a column being dropped and needs no new one.
    early: bool = False
    origin: Origin | None = None
    phase = EarlyWhen("early", Phase.CLUSTER_BY_EARLY, Phase.CLUSTER_BY)


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that needs no statement and blocks nothing."""

    name: TableName
    subject: str
    message: str
    origin: Origin | None = None
    phase = Phase.NOTICE


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A difference delta-sync will not apply; it blocks apply and says what to do instead."""

    name: TableName
    subject: str
    reason: str
    remedy: str
    origin: Origin | None = None
    phase = Phase.UNSUPPORTED


@dataclass(frozen=True, slots=True)
class DropFeature:
    """`ALTER TABLE t DROP FEATURE f`: a rollback removes a table feature the plan enabled (only when
    allowed: it may rewrite data files and it cannot be undone by another rollback)."""

    name: TableName
    feature: str
    reason: str
    phase = Phase.DROP_FEATURE
