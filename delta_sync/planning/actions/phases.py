"""The order of a plan's execution, defined here and nowhere else: each action type states its `phase`, and
the phase its `Stage`, the order across tables (schemas first, tables renamed, foreign keys to drop, then
table by table in name order, then foreign keys to add, then views). `actions.sort_key` orders a plan by them, and
`statements.waves` groups its statements for apply by the same stages. Within a table by phase:
- a new CHECK over columns the plan leaves alone before anything else: ADD CONSTRAINT checks the
  rows as they are (it scans them, and commits nothing if one violates), so it is the table's probe;
- table features (column mapping, type widening, defaults) before the changes that need them;
- CHECKs that reference a renamed, retyped or dropped column are dropped before that change and
  re-added at the very end (ADD CONSTRAINT scans the data, and may need columns added earlier);
- clustering is changed before a clustering column is dropped, or after new columns exist;
- renames before drops before type changes before additions, so names never collide; moves of the kept
  columns just before additions, so that each addition goes straight to its place.
"""

from __future__ import annotations

from enum import IntEnum


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
    # Once every kept column has its new name; before additions, which then go straight to their place.
    MOVE_COLUMN = 17
    ADD_COLUMNS = 18
    # After the column exists, before the NOT NULL rule that needs its values (an ADD_CHECK).
    BACKFILL = 19
    SET_DEFAULT = 20
    SET_PROPERTIES = 21
    UNSET_PROPERTIES = 22
    CLUSTER_BY = 23
    TABLE_COMMENT = 24
    COLUMN_COMMENT = 25
    ADD_CHECK = 26
    ADD_PRIMARY_KEY = 27
    ADD_FOREIGN_KEY = 28
    # A rollback's last step, after the table is back as it was: the feature the plan enabled goes.
    DROP_FEATURE = 29
    # Information on a table's change: a view that reads the table stops working (no statement).
    BREAKS_VIEW = 30
    # Views come after every table (Stage.VIEWS).
    CREATE_VIEW = 31

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


class EarlyWhen:
    """The phase of a type whose actions run early in their table when `flag` is set. Read on the type
    (statements.waves knows a statement by its type only) it is the usual phase: both are in one stage."""

    def __init__(self, flag: str, early: Phase, usual: Phase) -> None:
        self.flag, self.early, self.usual = flag, early, usual

    def __get__(self, action: object, owner: type | None = None) -> Phase:
        return self.early if action is not None and getattr(action, self.flag) else self.usual
