"""What a plan is made of: immutable actions, each carrying the before and after values it needs.

The order of execution is defined here and nowhere else: each action type states its `phase`, and
the phase its `Stage`, the order across tables (schemas first, tables renamed, foreign keys to drop, then
table by table in name order, then foreign keys to add, then views). `sort_key` orders a plan by them, and
`statements.waves` groups its statements for apply by the same stages. Within a table by phase:
- a new CHECK over columns the plan leaves alone before anything else: ADD CONSTRAINT checks the
  rows as they are (it scans them, and commits nothing if one violates), so it is the table's probe;
- table features (column mapping, type widening, defaults) before the changes that need them;
- CHECKs that reference a renamed, retyped or dropped column are dropped before that change and
  re-added at the very end (ADD CONSTRAINT scans the data, and may need columns added earlier);
- clustering is changed before a clustering column is dropped, or after new columns exist;
- renames before drops before type changes before additions, so names never collide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import assert_never

from delta_sync.model.state import Check, Column, ForeignKey, Origin, PrimaryKey, SchemaName, Table, TableName, View


class Stage(IntEnum):
    """The order across tables. A foreign key depends on its parent's primary key, which another table's
    changes may drop or add (a catalog with key constraints refuses to drop a referenced key, or to
    reference a missing one): foreign keys are dropped before every table's changes and added after them."""

    SCHEMAS = 0
    # Before any statement names the table by its new name (a foreign key dropped, too).
    RENAMED_TABLES = 1
    DROPPED_FOREIGN_KEYS = 2
    TABLES = 3
    ADDED_FOREIGN_KEYS = 4
    # Views after every table, views over views after the views they read (CreateView.depth).
    VIEWS = 5


class Phase(IntEnum):
    CREATE_SCHEMA = 0
    UNSUPPORTED = 1
    # A table a tombstone (or strict mode) drops has no other action.
    DROP_TABLE = 2
    NOTICE = 3
    # A renamed table's other changes are planned against its new name.
    RENAME_TABLE = 4
    CREATE_TABLE = 5
    # A rewrite replaces the table's data and metadata at once: every other change of the table is
    # planned against what the rewrite leaves, so it comes first.
    REWRITE = 6
    ADD_CHECK_FIRST = 7
    ENABLE_FEATURE = 8
    # Keys go before any column change (a key's column may be dropped or renamed) and come back last.
    DROP_FOREIGN_KEY = 9
    DROP_PRIMARY_KEY = 10
    DROP_CHECK = 11
    CLUSTER_BY_EARLY = 12
    RENAME_COLUMN = 13
    DROP_COLUMNS = 14
    ALTER_TYPE = 15
    DROP_NOT_NULL = 16
    ADD_COLUMNS = 17
    # After the column exists, before the NOT NULL rule that needs its values (an ADD_CHECK).
    BACKFILL = 18
    SET_DEFAULT = 19
    SET_PROPERTIES = 20
    UNSET_PROPERTIES = 21
    CLUSTER_BY = 22
    TABLE_COMMENT = 23
    COLUMN_COMMENT = 24
    ADD_CHECK = 25
    ADD_PRIMARY_KEY = 26
    ADD_FOREIGN_KEY = 27
    # A rollback's last step, after the table is back as it was: the feature the plan enabled goes.
    DROP_FEATURE = 28
    # Information on a table's change: a view that reads the table stops working (no statement).
    BREAKS_VIEW = 29
    # Views come after every table (Stage.VIEWS).
    CREATE_VIEW = 30

    @property
    def stage(self) -> Stage:
        return _OUTSIDE_TABLES.get(self, Stage.TABLES)


# The phases that do not run in their table's turn.
_OUTSIDE_TABLES = {
    Phase.CREATE_SCHEMA: Stage.SCHEMAS,
    Phase.RENAME_TABLE: Stage.RENAMED_TABLES,
    Phase.DROP_FOREIGN_KEY: Stage.DROPPED_FOREIGN_KEYS,
    Phase.ADD_FOREIGN_KEY: Stage.ADDED_FOREIGN_KEYS,
    Phase.CREATE_VIEW: Stage.VIEWS,
}


class _EarlyWhen:
    """The phase of a type whose actions run early in their table when `flag` is set. Read on the type
    (statements.waves knows a statement by its type only) it is the usual phase: both are in one stage."""

    def __init__(self, flag: str, early: Phase, usual: Phase) -> None:
        self.flag, self.early, self.usual = flag, early, usual

    def __get__(self, action: object, owner: type | None = None) -> Phase:
        return self.early if action is not None and getattr(action, self.flag) else self.usual


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
    no spec names (`origin` None). A managed table's files go with it; an external table's stay."""

    name: TableName
    origin: Origin | None = None
    view: bool = False
    # The table as read: None for a view.
    num_files: int | None = None
    size_bytes: int | None = None
    location: str | None = None
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
    # First of its table's changes: a new rule that reads only columns the plan leaves alone.
    first: bool = False
    # Why an unchanged rule is dropped and re-added: the plan changes a column it reads.
    moved_for: str | None = None
    phase = _EarlyWhen("first", Phase.ADD_CHECK_FIRST, Phase.ADD_CHECK)


@dataclass(frozen=True, slots=True)
class DropCheck:
    name: TableName
    check: Check
    phase = Phase.DROP_CHECK


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
    phase = _EarlyWhen("early", Phase.CLUSTER_BY_EARLY, Phase.CLUSTER_BY)


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


@dataclass(frozen=True, slots=True)
class DropFeature:
    """`ALTER TABLE t DROP FEATURE f`: a rollback removes a table feature the plan enabled (only when
    allowed: it may rewrite data files and it cannot be undone by another rollback)."""

    name: TableName
    feature: str
    reason: str
    phase = Phase.DROP_FEATURE


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
        case SetColumnComment() | AlterColumnType() | DropNotNull():
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
