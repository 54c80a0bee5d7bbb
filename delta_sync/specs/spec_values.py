"""What each single value of a spec file must be: the validators the spec models run on names, types,
expressions, identity bounds, properties and key references. Each raises Invalid, whose hint pydantic keeps
in the error, so the problem reported at the value's line says what to write instead; `parse_references`
reads a foreign key's `references:` for the loader and the importer alike. Nothing here imports pydantic.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Sequence
from typing import Any

from delta_sync.model import keys
from delta_sync.model.state import TableName, is_simple_ident, quote_ident
from delta_sync.planning.team_policy import ALLOW_KINDS, PROTECTED_PROPERTY
from delta_sync.specs.yamldoc import kind_of
from delta_sync.sql import expressions
from delta_sync.sql import queries as viewsql
from delta_sync.sql import types as sqltypes

MAX_CLUSTERING_COLUMNS = 4  # Delta's limit
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


_TYPE_HINT = (
    "valid types look like bigint, int, string, boolean, date, timestamp, decimal(18,2), "
    "varchar(20), array<string>, map<string,int>, struct<a:int,b:string>"
)
_RESERVED_PROPERTIES = {
    "comment": "use the top-level comment:",
    "location": "remove it: Spark sets it, not a table property",
    "provider": "remove it: Spark sets it, not a table property",
    "owner": "remove it: Spark sets it, not a table property",
    "external": "remove it: Spark sets it, not a table property",
    "delta.columnmapping.maxcolumnid": "remove it: managed by Delta",
    "delta.minreaderversion": "remove it: managed by Delta",
    "delta.minwriterversion": "remove it: managed by Delta",
    keys.PRIMARY_KEY_PROPERTY: "declare the key under primary_key:",
    PROTECTED_PROPERTY: "write protect: true at the spec's top level",
}


class Invalid(ValueError):
    """A validator's verdict; pydantic keeps it in the error's ctx, so the hint survives."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


# Types repeat across columns and files (bigint, string, ...), and validation and conversion
# both need them.
@functools.lru_cache(maxsize=1024)
def _canonical_type(text: str) -> str:
    return sqltypes.parse_type(text)


def _table_name(text: str) -> str:
    try:
        TableName.parse(text)
    except ValueError as exc:
        raise Invalid(str(exc), "e.g. table: sales.orders") from None
    return text


_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")


def _location(text: str) -> str:
    if not (text.startswith("/") or _URI.match(text)) or any(c in text for c in "\n\r"):
        raise Invalid(
            f"location {text!r} must be an absolute path or a URI",
            "e.g. location: s3://bucket/tables/orders, or location: /data/tables/orders",
        )
    return text


def _previous_name(text: str) -> str:
    try:
        TableName.parse(text)
    except ValueError as exc:
        raise Invalid(str(exc), "e.g. renamed_from: sales.orders_v1") from None
    return text


def _column_name(text: str) -> str:
    if not text.strip():
        raise Invalid("name is empty", "give every column a name")
    if "\n" in text or "\r" in text:
        raise Invalid("name contains a line break", "write the column name on one line")
    return text


def _renamed_from(text: str) -> str:
    if not text.strip():
        raise Invalid("`renamed_from` is empty", "give the column's previous name, or remove renamed_from:")
    return text


def _column_type(text: str) -> str:
    try:
        _canonical_type(text)
    except sqltypes.CollatedString as exc:
        path = sqltypes.field_path(exc.path)
        where = "" if not path else f" (at {path} in the type)" if "`" in path else f" (at `{path}` in the type)"
        raise Invalid(
            f"type `{text}`: a string with collation {exc.collation}{where} cannot be stored: Delta 4.4 on "
            "open-source Spark refuses collated strings (DELTA_UNSUPPORTED_DATA_TYPES)",
            "declare it as plain string, and compare with the collation in queries or views, e.g. "
            f"WHERE <column> COLLATE {exc.collation} = 'x', or WHERE lower(<column>) = lower('x')",
        ) from None
    except sqltypes.TypeSyntaxError as exc:
        raise Invalid(f"bad type `{text}`: {exc}", _TYPE_HINT) from None
    return text


def _check_name(text: str) -> str:
    if not is_simple_ident(text):
        raise Invalid(
            "name must be letters, digits and underscores, not starting with a digit",
            "rename the check, e.g. amount_non_negative",
        )
    return text


def _check_expression(text: str) -> str:
    try:
        expressions.tokens(text)
    except expressions.ExpressionError as exc:
        raise Invalid(f"bad expression: {exc}", "write one boolean SQL expression, e.g. amount >= 0") from None
    return text


def _expression_error(exc: expressions.ExpressionError) -> str:
    # expressions words its errors for CHECKs; these expressions are not CHECKs.
    return str(exc).replace(" in a CHECK expression", "").replace("a CHECK holds", "write")


def _default_value(value: Any) -> Any:
    # YAML reads `default: 0` / `default: true` as a number / boolean: both are the obvious SQL.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise Invalid(
            f"`default` is read as the YAML number {value}",
            f"quote it to keep its spelling, e.g. default: '{value}'",
        )
    return value


def _default_expression(text: str) -> str:
    try:
        expressions.tokens(text)
    except expressions.ExpressionError as exc:
        raise Invalid(
            f"bad default: {_expression_error(exc)}",
            "write one SQL expression; quote a string literal inside it, e.g. default: \"'new'\"",
        ) from None
    return text


def _generated_expression(text: str) -> str:
    try:
        expressions.tokens(text)
    except expressions.ExpressionError as exc:
        raise Invalid(
            f"bad generated expression: {_expression_error(exc)}",
            "write one SQL expression over other columns, e.g. CAST(created_at AS DATE)",
        ) from None
    return text


def _backfill_expression(text: str) -> str:
    try:
        expressions.tokens(text)
    except expressions.ExpressionError as exc:
        raise Invalid(
            f"bad backfill: {_expression_error(exc)}",
            "write one SQL expression over the table's columns, e.g. backfill: \"'unknown'\" or backfill: amount * 100",
        ) from None
    return text


def _using_expression(text: str) -> str:
    try:
        expressions.tokens(text)
    except expressions.ExpressionError as exc:
        raise Invalid(
            f"bad using: {_expression_error(exc)}",
            "write one SQL expression over the table's current columns, e.g. using: CAST(amount * 100 AS int)",
        ) from None
    return text


def _identity_bound(value: int) -> int:
    if not _BIGINT_MIN <= value <= _BIGINT_MAX:
        raise Invalid(f"identity value {value} does not fit in a bigint", "use a smaller number")
    return value


def _identity_step(value: int) -> int:
    if value == 0:
        raise Invalid("identity step must not be 0", "use 1 to count up, or -1 to count down")
    return value


def _property_key(key: str) -> str:
    lower = key.lower()
    if lower.startswith("delta.constraints."):
        raise Invalid("reserved for CHECK constraints", "declare it under checks:")
    if lower in _RESERVED_PROPERTIES:
        raise Invalid("reserved property", _RESERVED_PROPERTIES[lower])
    if lower.startswith(keys.FOREIGN_KEY_PREFIX):
        raise Invalid("reserved for foreign keys", "declare the key under foreign_keys:")
    return key


def _property_value(value: Any) -> Any:
    # Spark keeps properties as text; YAML's `true` / `8` are accepted as the obvious strings.
    # null asks for the property's removal.
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return value
    raise Invalid(
        f"value must be a string, boolean, number or null, got {kind_of(value)}",
        'quote the value, e.g. key: "value"; null removes the property',
    )


def _key_name(text: str) -> str:
    if not is_simple_ident(text):
        raise Invalid(
            "key name must be letters, digits and underscores, not starting with a digit",
            "rename the key, e.g. pk_orders, or leave name: out for the default",
        )
    return text


# A referenced table and its columns: `shop.customers(customer_id)`; a column name that is not letters,
# digits and underscores is written in backquotes, as in SQL.
_REFERENCES = re.compile(r"\s*([^()\s]+)\s*\((.*)\)\s*", re.S)
_REF_COLUMN = r"(?:`(?:[^`]|``)+`|[^,`()\s](?:[^,`()]*[^,`()\s])?)"
_REF_COLUMNS = re.compile(rf"\s*{_REF_COLUMN}(?:\s*,\s*{_REF_COLUMN})*\s*")
_REFERENCES_HINT = 'write the referenced table and its key columns, e.g. references: "shop.customers(customer_id)"'


def parse_references(text: str) -> tuple[TableName, tuple[str, ...]]:
    """`schema.table(col, ...)` (or catalog.schema.table) -> the table and its columns; ValueError if not."""
    match = _REFERENCES.fullmatch(text)
    if match is None:
        raise ValueError(f"`references` must be schema.table(column, ...), got {text!r}")
    try:
        table = TableName.parse(match.group(1))
    except ValueError as exc:
        raise ValueError(f"`references`: {exc}") from None
    if _REF_COLUMNS.fullmatch(match.group(2)) is None:
        raise ValueError(f"`references` lists no usable column names in ({match.group(2)})")
    return table, tuple(
        c[1:-1].replace("``", "`") if c.startswith("`") else c for c in re.findall(_REF_COLUMN, match.group(2))
    )


def references_text(table: TableName, columns: Sequence[str]) -> str:
    """What parse_references reads back as `table` and `columns`."""
    return f"{table}({', '.join(c if is_simple_ident(c) else quote_ident(c) for c in columns)})"


def _references(text: str) -> str:
    try:
        parse_references(text)
    except ValueError as exc:
        raise Invalid(str(exc), _REFERENCES_HINT) from None
    return text


def _short_primary_key(value: Any) -> Any:
    # `primary_key: [id]` is the common case: the same as {columns: [id]} with the default name.
    if isinstance(value, list):
        return {"columns": value}
    if isinstance(value, dict):
        return value
    raise Invalid(
        f"`primary_key` must be a list of columns or a mapping, got {kind_of(value)}",
        "write primary_key: [order_id], or primary_key: {name: pk_orders, columns: [order_id]}",
    )


def _view_query(text: str) -> str:
    found = viewsql.problem(text)
    if found is not None:
        raise Invalid(f"sql: {found}", "write one query, e.g. sql: SELECT id, amount FROM shop.orders WHERE open")
    return text


# The rules of `delta-sync lint` (delta_sync.specs.lint_rules), by the names delta-sync.yaml's `lint:` and a
# spec's `lint: {disable: [...]}` give them; a test holds the two lists together.
LINT_RULES = (
    "table-comment",
    "column-comment",
    "primary-key",
    "schema-name",
    "table-name",
    "column-name",
    "required-properties",
    "forbidden-types",
)


def _lint_rule(text: str) -> str:
    if text not in LINT_RULES:
        close = difflib.get_close_matches(text, LINT_RULES, n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + "rules: " + ", ".join(LINT_RULES)
        raise Invalid(f"`{text}` is not a lint rule", hint)
    return text


def _allow_entry(value: Any) -> Any:
    """One `allow:` entry: `{kind: what}`, naming one change of the table (delta_sync.planning.team_policy)."""
    kinds = ", ".join(ALLOW_KINDS)
    example = "e.g. allow: [{drop_column: legacy_code}]"
    if isinstance(value, str) and value in ALLOW_KINDS:
        raise Invalid(f"`{value}` names a kind of change, not the change", f"name what it changes: {{{value}: ...}}")
    if not isinstance(value, dict) or len(value) != 1:
        got = kind_of(value) + (f" {value!r}" if isinstance(value, str) else "")
        raise Invalid(f"an allow names one change as {{kind: what}}, got {got}", f"{example}; kinds: {kinds}")
    ((kind, target),) = value.items()
    if kind not in ALLOW_KINDS:
        close = difflib.get_close_matches(str(kind), list(ALLOW_KINDS), n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + f"kinds: {kinds}"
        if isinstance(kind, str) and kind.replace("_", "-") in _HAZARD_CLASSES:
            hint = f"an allow names one change, not a class of them ({example}); kinds: {kinds}"
        raise Invalid(f"`{kind}` is not a kind of change an allow can name", hint)
    if not isinstance(target, str) or not target.strip():
        raise Invalid(f"`{kind}` must name what it allows, got {kind_of(target)}", f"{ALLOW_KINDS[kind]}; {example}")
    return value


# Written as an allow's kind, a hazard class is the mistake of allowing a class where one change is meant.
_HAZARD_CLASSES = ("destructive", "irreversible", "breaking", "rewrite", "compatibility", "data-dependent")


def rule_reference(text: str) -> str:
    """A Python rule as `package.module:function` (delta_sync.specs.custom_rules)."""
    module, sep, function = text.strip().partition(":")
    parts = module.split(".") if module else []
    if not sep or not parts or not all(is_simple_ident(p) for p in [*parts, function]):
        raise Invalid(
            f"`{text}` is not a rule reference",
            "write package.module:function, a function importable from the project's root, e.g. ci.rules:no_big_drops",
        )
    return text.strip()
