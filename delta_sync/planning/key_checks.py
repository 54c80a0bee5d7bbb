"""The SQL that checks declared keys against a table's rows. Pure.

No engine enforces a key (delta_sync.model.keys), so delta-sync counts what breaks one: per primary key the key
values that repeat plus the rows with a NULL key part, per foreign key the rows whose key is fully non-NULL
and has no row in the parent. All keys of a table are answered by one scan: the rows are grouped once per
distinct key column list (GROUPING SETS when there are several), each foreign key joins those groups, not
the rows, with its parent's distinct keys, and one aggregate over the groups counts and samples every key.
"""

from __future__ import annotations

from collections.abc import Sequence

from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, ForeignKey, PrimaryKey, Table, quote_ident
from delta_sync.planning.probe_queries import probe_relation

Key = PrimaryKey | ForeignKey
# A key to check, and for a foreign key the relation of its parent (SQL text) as the plan leaves it.
KeyCheck = tuple[Key, str | None]

# The column a sample's count shows under (how many rows hold that key value).
ROWS = "rows"
SAMPLES = 5
# Internal names, unlikely to be a user's column: the grouping set and the group's row count.
_SET = "__delta_sync_set"
_COUNT = "__delta_sync_rows"
_FOUND = "__delta_sync_found"


def _columns(names: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quote_ident(c) for c in names)


def _all_not_null(names: Sequence[str], alias: str) -> str:
    return " AND ".join(f"{alias}.{quote_ident(c)} IS NOT NULL" for c in names)


def _any_null(names: Sequence[str], alias: str) -> str:
    return " OR ".join(f"{alias}.{quote_ident(c)} IS NULL" for c in names)


def _parent_of(key: Key, parent: str | None) -> str:
    if parent is None:
        raise ValueError(f"foreign key {key.name} needs the relation of its parent")
    return parent


def _grouping(keys: Sequence[KeyCheck]) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every key column once (Spark's names are case-insensitive), and each distinct key column list once."""
    columns: dict[str, str] = {}
    sets: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, _parent in keys:
        for column in key.columns:
            columns.setdefault(column.lower(), column)
        sets.setdefault(tuple(c.lower() for c in key.columns), key.columns)
    return list(columns.values()), list(sets.values())


def _grouping_id(columns: Sequence[str], group: Sequence[str]) -> int:
    """Spark's grouping_id() of a grouping set: one bit per GROUP BY column, the first the highest, set
    when the column is not in the set."""
    inside = {c.lower() for c in group}
    return sum(1 << (len(columns) - 1 - i) for i, c in enumerate(columns) if c.lower() not in inside)


def scan_sql(relation: str, keys: Sequence[KeyCheck], samples: int = SAMPLES) -> str:
    """One row: per key in `keys` order, its violations (`k<i>`) and up to `samples` of the key values that
    break it (`s<i>`: an array of structs, the key's columns then the value's row count; NULL when none):
    most rows first, then the greater value. max_by keeps only those while it aggregates, so the samples
    need no second scan."""
    if not keys:
        raise ValueError("no keys to check")
    columns, sets = _grouping(keys)
    several = len(sets) > 1
    if several:
        grouping = "GROUPING SETS (" + ", ".join(f"({_columns(s)})" for s in sets) + ")"
        groups = f"SELECT {_columns(columns)}, grouping_id() AS {_SET}, count(*) AS {_COUNT} FROM {relation} "
        groups += f"GROUP BY {grouping}"
    else:
        groups = f"SELECT {_columns(columns)}, count(*) AS {_COUNT} FROM {relation} GROUP BY {_columns(columns)}"
    select, joins = [], []
    for index, (key, parent) in enumerate(keys):
        # Rows of the other grouping sets hold NULL in this key's columns, or values of another key.
        in_set = f"g.{_SET} = {_grouping_id(columns, key.columns)} AND " if several else ""
        if isinstance(key, PrimaryKey):
            nulls = f"({_any_null(key.columns, 'g')})"
            broken = f"{in_set}({nulls} OR g.{_COUNT} > 1)"
            count = f"CASE WHEN {in_set}{nulls} THEN g.{_COUNT} WHEN {in_set}g.{_COUNT} > 1 THEN 1 END"
        else:
            alias = f"p{index}"
            found = _columns(key.references)
            on = " AND ".join(
                f"g.{quote_ident(c)} = {alias}.{quote_ident(r)}"
                for c, r in zip(key.columns, key.references, strict=True)
            )
            joins.append(
                f" LEFT JOIN (SELECT {found}, true AS {_FOUND} FROM {_parent_of(key, parent)} GROUP BY {found})"
                f" AS {alias} ON {in_set}{on}"
            )
            broken = f"{in_set}{_all_not_null(key.columns, 'g')} AND {alias}.{_FOUND} IS NULL"
            count = f"CASE WHEN {broken} THEN g.{_COUNT} END"
        shown, rank = _columns(key.columns, "g") + f", g.{_COUNT}", f"g.{_COUNT}, " + _columns(key.columns, "g")
        select.append(f"coalesce(sum({count}), 0) AS k{index}")
        select.append(
            f"max_by(CASE WHEN {broken} THEN struct({shown}) END, "
            f"CASE WHEN {broken} THEN struct({rank}) END, {samples}) AS s{index}"
        )
    return f"SELECT {', '.join(select)} FROM ({groups}) AS g{''.join(joins)}"


def empty_relation(table: Table) -> str:
    """A relation with `table`'s columns and no rows: the parent a foreign key sees when the plan creates it."""
    columns = ", ".join(f"CAST(NULL AS {c.type}) AS {quote_ident(c.name)}" for c in table.columns)
    return f"(SELECT {columns} LIMIT 0)"


def parent_after_plan(key: ForeignKey, current: CatalogState, desired: CatalogState) -> str:
    """A foreign key's parent rows as the plan leaves them: a parent created by the plan is empty."""
    have, want = current.table(key.table), desired.table(key.table)
    if want is None:
        return key.table.sql()  # no spec: the table as it is
    if have is None:
        return empty_relation(want)
    return probe_relation(have, want)


def parent_now(key: ForeignKey, current: CatalogState, desired: CatalogState) -> str:
    """The rows a foreign key must find its parents in, now. A parent the specs declare but that does
    not exist yet has no rows: every non-NULL reference to it is an orphan."""
    if current.table(key.table) is not None:
        return key.table.sql()
    declared = desired.table(key.table)
    if declared is None:
        raise DeltaSyncError(f"foreign key {key.name} references {key.table}, which neither exists nor has a spec")
    return empty_relation(declared)
