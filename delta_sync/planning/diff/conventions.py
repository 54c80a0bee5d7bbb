"""The conventions every part of the diff shares: the Delta feature switches it sets (column mapping, type
widening, column defaults, timestampNtz), the names Delta takes only with column mapping, the CHECK that
enforces NOT NULL on an existing column (`not_null_check_name`, prefixed NOT_NULL_PREFIX), how property values
and SQL expressions compare, and whether an expression reads a column (`references`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from delta_sync.model.state import (
    Check,
    Column,
    Table,
    quote_ident,
)
from delta_sync.sql import expressions
from delta_sync.sql import types as sqltypes

NOT_NULL_PREFIX = "ds_nn_"


COLUMN_MAPPING = ("delta.columnMapping.mode", "name")


TYPE_WIDENING = ("delta.enableTypeWidening", "true")


COLUMN_DEFAULTS = ("delta.feature.allowColumnDefaults", "supported")


TIMESTAMP_NTZ = ("delta.feature.timestampNtz", "supported")


# Characters Delta accepts in a column or field name only with column mapping on
# (DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES); `.`, `-`, `:` and quotes need nothing.
_MAPPING_ONLY = re.compile(r"[ ,;{}()=\n\t]")


def mapping_only_names(columns: Iterable[Column]) -> list[str]:
    """The names among `columns` (nested fields included, dotted) that Delta takes only with column mapping."""
    return [name for col in columns for name in _names(col.name, col.type) if _MAPPING_ONLY.search(name)]


def _names(path: str, type_: str) -> list[str]:
    """`path` and the dotted names of the struct fields inside its type, at any depth."""
    names = [path]
    fields = sqltypes.struct_fields(type_)
    if fields is not None:
        for f in fields:
            names += _names(f"{path}.{f.name}", f.type)
    element, entry = sqltypes.element_type(type_), sqltypes.map_types(type_)
    for inner in (element,) if element is not None else entry or ():
        names += _names(path, inner)[1:]
    return names


def has_ntz(type_: str) -> bool:
    return "timestamp_ntz" in type_


def not_null_check_name(column: str) -> str:
    """Deterministic CHECK name enforcing NOT NULL on `column` (a plain identifier, as Delta needs)."""
    plain = re.sub(r"[^a-z0-9_]", "_", column.lower())
    if plain != column.lower():
        plain += "_" + hashlib.sha1(column.lower().encode()).hexdigest()[:6]
    return NOT_NULL_PREFIX + plain


def not_null_check(column: Column) -> Check:
    return Check(not_null_check_name(column.name), f"{quote_ident(column.name)} IS NOT NULL", column.origin)


APPEND_ONLY = "delta.appendonly"


def append_only(table: Table) -> bool:
    return any(k.lower() == APPEND_ONLY and v.lower() == "true" for k, v in table.properties)


def property_value_key(key: str, value: str) -> str:
    """Compare values as Delta means them: `delta.*` booleans case-insensitively, and a feature
    `enabled` as `supported` (Delta accepts both and reports every feature as supported)."""
    lowered = key.lower()
    if lowered.startswith("delta.feature.") and value.lower() in ("supported", "enabled"):
        return "supported"
    if lowered.startswith("delta.") and value.lower() in ("true", "false"):
        return value.lower()
    return value


def current_property(have: dict[str, str], key: str) -> str | None:
    if key in have:
        return have[key]
    if key.lower().startswith("delta."):
        # Delta rewrites the case of `delta.*` keys to their canonical spelling.
        return next((v for k, v in have.items() if k.lower() == key.lower()), None)
    return None


def generated_from(table: Table, column: str) -> list[str]:
    """Generated columns of `table` whose expression uses `column`."""
    return [
        c.name for c in table.columns if c.generated and c.key != column.lower() and references(c.generated, column)
    ]


def references(expression: str, column: str) -> bool:
    """Whether `expression` may read `column`. A false positive only costs order (a CHECK goes last, or
    is dropped and re-added around a change), so when in doubt it says yes."""
    try:
        tokens = expressions.tokens(expression)
    except expressions.ExpressionError:
        return True
    target = column.lower()
    if target in tokens or quote_ident(target) in tokens:
        return True
    # The tokenizer splits a name that starts with a digit (`2nd_value` is `2nd`, `_value`): look for
    # the name as a whole word in the text too (inside a string literal is a harmless false positive).
    word = rf"(?<![a-z0-9_]){re.escape(target)}(?![a-z0-9_])"
    return re.search(word, expression.lower()) is not None


def same_sql(current: str | None, desired: str | None) -> bool:
    if current is None or desired is None:
        return current is desired
    try:
        return expressions.normalize(current) == expressions.normalize(desired)
    except expressions.ExpressionError:
        # Written outside delta-sync in a form we do not parse: replace it with the declared one.
        return False
