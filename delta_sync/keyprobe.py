"""The SQL that checks declared keys against a table's rows. Pure.

No engine enforces a key (delta_sync.keys), so delta-sync counts what breaks one: per primary key the key
values that repeat plus the rows with a NULL key part, per foreign key the rows whose key is fully non-NULL
and has no row in the parent. All keys of a table are answered by one scan: the rows are grouped once per
distinct key column list (GROUPING SETS when there are several), and each foreign key joins those groups,
not the rows, with its parent's distinct keys.
"""

from __future__ import annotations

from collections.abc import Sequence

from delta_sync.model import ForeignKey, PrimaryKey, Table, quote_ident

Key = PrimaryKey | ForeignKey
# A key to check, and for a foreign key the relation of its parent (SQL text) as the plan leaves it.
KeyCheck = tuple[Key, str | None]

# The column a sample row's count shows under (how many rows hold that key value).
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


def scan_sql(relation: str, keys: Sequence[KeyCheck]) -> str:
    """One row, one column per key in `keys` order: how many violations each has in `relation`."""
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
    counts, joins = [], []
    for index, (key, parent) in enumerate(keys):
        # Rows of the other grouping sets hold NULL in this key's columns, or values of another key.
        in_set = f"g.{_SET} = {_grouping_id(columns, key.columns)} AND " if several else ""
        if isinstance(key, PrimaryKey):
            counts.append(
                f"coalesce(sum(CASE WHEN {in_set}({_any_null(key.columns, 'g')}) THEN g.{_COUNT} "
                f"WHEN {in_set}g.{_COUNT} > 1 THEN 1 END), 0)"
            )
            continue
        alias = f"p{index}"
        found = _columns(key.references)
        joins.append(
            f" LEFT JOIN (SELECT {found}, true AS {_FOUND} FROM {_parent_of(key, parent)} GROUP BY {found}) AS {alias}"
            f" ON {in_set}"
            + " AND ".join(
                f"g.{quote_ident(c)} = {alias}.{quote_ident(r)}"
                for c, r in zip(key.columns, key.references, strict=True)
            )
        )
        counts.append(
            f"coalesce(sum(CASE WHEN {in_set}{_all_not_null(key.columns, 'g')} AND {alias}.{_FOUND} IS NULL "
            f"THEN g.{_COUNT} END), 0)"
        )
    select = ", ".join(f"{count} AS k{i}" for i, count in enumerate(counts))
    return f"SELECT {select} FROM ({groups}) AS g{''.join(joins)}"


def primary_key_samples_sql(relation: str, key: PrimaryKey, limit: int = SAMPLES) -> str:
    """Up to `limit` repeated key values and the NULL-part ones, each with its row count, most rows first."""
    columns = _columns(key.columns)
    return (
        f"SELECT {columns}, count(*) AS {_COUNT} FROM {relation} GROUP BY {columns} "
        f"HAVING count(*) > 1 OR {' OR '.join(f'{quote_ident(c)} IS NULL' for c in key.columns)} "
        f"ORDER BY {_COUNT} DESC, {columns} LIMIT {limit}"
    )


def foreign_key_samples_sql(relation: str, key: ForeignKey, parent: str, limit: int = SAMPLES) -> str:
    """Up to `limit` fully non-NULL key values with no parent row, each with its row count, most rows first."""
    columns = _columns(key.columns, "c")
    on = " AND ".join(
        f"c.{quote_ident(c)} = p.{quote_ident(r)}" for c, r in zip(key.columns, key.references, strict=True)
    )
    return (
        f"SELECT {columns}, count(*) AS {_COUNT} FROM {relation} AS c LEFT ANTI JOIN {parent} AS p ON {on} "
        f"WHERE {_all_not_null(key.columns, 'c')} GROUP BY {columns} ORDER BY {_COUNT} DESC, {columns} LIMIT {limit}"
    )


def samples_sql(relation: str, key: Key, parent: str | None, limit: int = SAMPLES) -> str:
    if isinstance(key, PrimaryKey):
        return primary_key_samples_sql(relation, key, limit)
    return foreign_key_samples_sql(relation, key, _parent_of(key, parent), limit)


def empty_relation(table: Table) -> str:
    """A relation with `table`'s columns and no rows: the parent a foreign key sees when the plan creates it."""
    columns = ", ".join(f"CAST(NULL AS {c.type}) AS {quote_ident(c.name)}" for c in table.columns)
    return f"(SELECT {columns} LIMIT 0)"
