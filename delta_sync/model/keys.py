"""Primary and foreign keys: their default names, how they compare, and how they are kept in a table's
properties where the catalog refuses key constraints (open-source Delta). Pure.

No engine enforces a key (Unity Catalog's are informational; open-source Delta refuses them), so
delta-sync keeps the key as declared and checks it against the data itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from delta_sync.model.state import ForeignKey, PrimaryKey, TableName

# Where the keys live on a catalog without key constraints: user properties (Delta refuses unknown
# `delta.*` keys, and keeps any other), read back on every plan, written by `import`.
# One property per key, so that adding or dropping one key is one property change.
PRIMARY_KEY_PROPERTY = "delta_sync.primary_key"
FOREIGN_KEY_PREFIX = "delta_sync.foreign_key."


def foreign_key_property(key: ForeignKey) -> str:
    return FOREIGN_KEY_PREFIX + key.name


# Constraint names stay under the smallest identifier limit of the catalogs delta-sync writes to
# (Hive metastore: 128), with a short hash of the full name when cut.
MAX_NAME = 128
_UNSAFE = re.compile(r"[^a-z0-9_]+")


def _name(parts: Sequence[str]) -> str:
    full = "__".join(_UNSAFE.sub("_", p.lower()).strip("_") or "_" for p in parts)
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - 9].rstrip('_')}_{digest}"


def _table_part(table: TableName) -> str:
    return "_".join(p for p in (table.catalog, table.schema, table.name) if p)


def primary_key_name(table: TableName, columns: Sequence[str]) -> str:
    """`pk_<schema>_<table>__<col>_<col>` (the seed's convention), deterministic and length-bounded."""
    return _name([f"pk_{_table_part(table)}", "_".join(columns)])


def foreign_key_name(table: TableName, columns: Sequence[str], parent: TableName) -> str:
    return _name([f"fk_{_table_part(table)}", "_".join(columns), _table_part(parent)])


def same_columns(a: Sequence[str], b: Sequence[str]) -> bool:
    """Key columns compare case-insensitively (Spark's names are) and in order (a composite key's
    order is part of it: it pairs a foreign key's columns with the parent's)."""
    return [c.lower() for c in a] == [c.lower() for c in b]


def same_primary_key(a: PrimaryKey | None, b: PrimaryKey | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.name == b.name and same_columns(a.columns, b.columns)


def same_foreign_key(a: ForeignKey, b: ForeignKey) -> bool:
    return (
        a.name == b.name
        and a.table == b.table
        and same_columns(a.columns, b.columns)
        and same_columns(a.references, b.references)
    )


def encode_primary_key(key: PrimaryKey) -> str:
    return json.dumps({"name": key.name, "columns": list(key.columns)}, separators=(",", ":"))


def encode_foreign_key(key: ForeignKey) -> str:
    return json.dumps(
        {"columns": list(key.columns), "references": str(key.table), "parent_columns": list(key.references)},
        separators=(",", ":"),
    )


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


def decode_primary_key(text: str) -> PrimaryKey | None:
    """None when the property is not a key delta-sync wrote (edited by hand into something else)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    columns = _strings(data.get("columns"))
    return PrimaryKey(data["name"], columns) if columns else None


def decode_foreign_key(name: str, text: str) -> ForeignKey | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    columns, parent_columns = _strings(data.get("columns")), _strings(data.get("parent_columns"))
    try:
        parent = TableName.parse(str(data.get("references")))
    except ValueError:
        return None
    if not name or columns is None or parent_columns is None:
        return None
    return ForeignKey(name, columns, parent, parent_columns)


def from_properties(
    properties: Mapping[str, str],
) -> tuple[PrimaryKey | None, tuple[ForeignKey, ...], dict[str, str]]:
    """The keys kept in `properties`, and the properties without them. A key property that does not
    decode stays a plain property (a later apply overwrites it with the declared key)."""
    rest = dict(properties)
    primary = None
    foreign: tuple[ForeignKey, ...] = ()
    if PRIMARY_KEY_PROPERTY in rest and (pk := decode_primary_key(rest[PRIMARY_KEY_PROPERTY])) is not None:
        primary = pk
        del rest[PRIMARY_KEY_PROPERTY]
    for key, value in sorted(properties.items()):
        if key.startswith(FOREIGN_KEY_PREFIX) and (fk := decode_foreign_key(key[len(FOREIGN_KEY_PREFIX) :], value)):
            foreign += (fk,)
            del rest[key]
    return primary, foreign, rest
