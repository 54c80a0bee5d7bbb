"""Spec files (YAML, one table each) -> the desired CatalogState.

Every problem of every file is collected and raised as one SpecError, each pointing at the line of
the YAML node it is about. yamldoc reads each file into plain data and the node tree it came from
(which gives the lines); this module says what the data means: the pydantic models below validate
it, and the checks across entries, files and tables follow.
"""

from __future__ import annotations

import difflib
import functools
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import ErrorDetails

from delta_sync.model import keys
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import (
    CatalogState,
    Check,
    Column,
    ForeignKey,
    Identity,
    Origin,
    PrimaryKey,
    Table,
    TableName,
    View,
    ViewColumn,
    is_simple_ident,
    quote_ident,
)
from delta_sync.specs.yamldoc import MAX_DEPTH as MAX_DEPTH
from delta_sync.specs.yamldoc import MAX_FILE_BYTES as MAX_FILE_BYTES
from delta_sync.specs.yamldoc import Doc, Hints, kind_of, read
from delta_sync.specs.yamldoc import shown_path as shown_path
from delta_sync.sql import expressions
from delta_sync.sql import queries as viewsql
from delta_sync.sql import types as sqltypes

_PROJECT_FILE = "delta-sync.yaml"  # project.PROJECT_FILE; that module imports this one
MAX_CLUSTERING_COLUMNS = 4  # Delta's limit
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1

_HINTS = Hints(
    empty="a spec needs at least table: and columns:",
    too_large="declare one table per file",
    layout="start with `table: schema.table` and `columns:`; `delta-sync schema` shows the format",
)
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


class _Spec(BaseModel):
    # strict: YAML already yields typed values, so a quoted "false" must not pass as a boolean.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


_IdentityNumber = Annotated[int, AfterValidator(_identity_bound)]


class IdentitySpec(_Spec):
    """An identity column: Delta fills in start, start + step, ... Only applied when the table is created."""

    start: _IdentityNumber = Field(1, description="The first value (default 1).")
    step: Annotated[_IdentityNumber, AfterValidator(_identity_step)] = Field(
        1, description="The increment, not 0; negative counts down (default 1)."
    )
    always: bool = Field(
        True,
        description="true: GENERATED ALWAYS, values cannot be written; "
        "false: GENERATED BY DEFAULT, written values are kept (default true).",
    )


class ColumnSpec(_Spec):
    """One column of the table."""

    name: Annotated[str, AfterValidator(_column_name)] = Field(description="Column name; compared case-insensitively.")
    type: Annotated[str, AfterValidator(_column_type)] = Field(
        description="Spark SQL type: bigint, int, string, decimal(18,2), array<string>, "
        "map<string,int>, struct<a:int,b:string>, ..."
    )
    nullable: bool = Field(True, description="Whether the column accepts NULL (default true).")
    comment: str | None = Field(None, description="Column comment.")
    default: (
        Annotated[
            str,
            BeforeValidator(_default_value),
            AfterValidator(_default_expression),
            WithJsonSchema({"type": ["string", "integer", "boolean"]}),
        ]
        | None
    ) = Field(
        None,
        description="DEFAULT value: a SQL expression, so a string literal is quoted inside it: default: \"'new'\".",
    )
    generated: Annotated[str, AfterValidator(_generated_expression)] | None = Field(
        None,
        description="GENERATED ALWAYS AS: a SQL expression over other columns, "
        "e.g. CAST(created_at AS DATE). Only applied when the table is created.",
    )
    identity: IdentitySpec | None = Field(
        None,
        description="Make this bigint column an identity column: {start: 1, step: 1, always: true}. "
        "Only applied when the table is created.",
    )
    renamed_from: Annotated[str, AfterValidator(_renamed_from)] | None = Field(
        None,
        description="The column's previous name, to rename it rather than drop and add it; "
        "inert once the rename has been applied.",
    )
    backfill: Annotated[str, AfterValidator(_backfill_expression)] | None = Field(
        None,
        description="With nullable: false, the value for existing rows where the column is NULL: a SQL "
        "expression over the table's columns, run as UPDATE ... SET c = <backfill> WHERE c IS NULL before "
        "NOT NULL is enforced. Inert once applied.",
    )
    using: Annotated[str, AfterValidator(_using_expression)] | None = Field(
        None,
        description="When the type changes in a way Delta cannot widen: how existing values become the new "
        "type, a SQL expression over the table's current columns (default CAST(column AS new type)). "
        "The table is rewritten. Inert once applied.",
    )


_CheckName = Annotated[
    str,
    AfterValidator(_check_name),
    WithJsonSchema({"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}),
]
_PropertyKey = Annotated[str, AfterValidator(_property_key)]
_PropertyValue = Annotated[
    str | None,
    BeforeValidator(_property_value),
    WithJsonSchema({"type": ["string", "boolean", "number", "null"]}),
]


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


_KeyColumns = list[str]
_KeyName = Annotated[
    str,
    AfterValidator(_key_name),
    WithJsonSchema({"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}),
]


class PrimaryKeySpec(_Spec):
    """The table's primary key, with a name of its own."""

    name: _KeyName | None = Field(None, description="Key name; default pk_<schema>_<table>__<columns>.")
    columns: _KeyColumns = Field(min_length=1, description="Key columns, in key order; each nullable: false.")


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


_PrimaryKey = Annotated[
    PrimaryKeySpec,
    BeforeValidator(_short_primary_key),
    WithJsonSchema(
        {
            "oneOf": [
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                PrimaryKeySpec.model_json_schema(),
            ]
        }
    ),
]


class ForeignKeySpec(_Spec):
    """Columns of this table whose values must be a key of another (or this) table."""

    columns: _KeyColumns = Field(min_length=1, description="Columns of this table, in the referenced key's order.")
    references: Annotated[str, AfterValidator(_references)] = Field(
        description="The referenced table and its primary-key columns: schema.table(col, ...) "
        "or catalog.schema.table(col, ...)."
    )
    name: _KeyName | None = Field(None, description="Key name; default fk_<schema>_<table>__<columns>__<parent>.")


_EXAMPLE: dict[str, Any] = {
    "table": "sales.orders",
    "comment": "Orders placed in the web shop",
    "columns": [
        {"name": "order_id", "type": "bigint", "nullable": False, "comment": "Surrogate key"},
        {"name": "customer_id", "type": "bigint"},
        {"name": "amount", "type": "decimal(18,2)"},
        {"name": "order_date", "type": "date"},
    ],
    "checks": {"amount_non_negative": "amount >= 0"},
    "primary_key": ["order_id"],
    "foreign_keys": [{"columns": ["customer_id"], "references": "sales.customers(customer_id)"}],
    "partitioned_by": ["order_date"],
    "properties": {"delta.enableChangeDataFeed": "true"},
}


class TableSpec(_Spec):
    """One Delta table, as declared in one spec file."""

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE]})

    table: Annotated[str, AfterValidator(_table_name)] = Field(
        description="Table name: schema.table or catalog.schema.table."
    )
    comment: str | None = Field(None, description="Table comment.")
    columns: list[ColumnSpec] = Field(min_length=1, description="The columns, in table order.")
    checks: dict[_CheckName, Annotated[str, AfterValidator(_check_expression)]] = Field(
        default_factory=dict,
        description="CHECK constraints: name -> boolean SQL expression.",
        json_schema_extra={"additionalProperties": False},
    )
    partitioned_by: list[str] = Field(
        default_factory=list, description="Partition columns; only applied when the table is created."
    )
    clustered_by: list[str] = Field(
        default_factory=list,
        description=f"Liquid clustering columns, at most {MAX_CLUSTERING_COLUMNS}; "
        "a table is either partitioned or clustered.",
        # Not max_length: the limit is checked with the other column lists, in one message.
        json_schema_extra={"maxItems": MAX_CLUSTERING_COLUMNS},
    )
    properties: dict[_PropertyKey, _PropertyValue] = Field(
        default_factory=dict,
        description="Table properties (TBLPROPERTIES); values are stored as text; "
        "null removes the property if present.",
    )
    primary_key: _PrimaryKey | None = Field(
        None,
        description="Primary key: [col, ...], or {name: ..., columns: [...]}. No engine enforces it: "
        "delta-sync checks it against the data.",
    )
    foreign_keys: list[ForeignKeySpec] = Field(
        default_factory=list,
        description="Foreign keys: {columns: [...], references: schema.table(col, ...), name: optional}.",
    )
    location: Annotated[str, AfterValidator(_location)] | None = Field(
        None,
        description="Make it an external table with its files there (CREATE TABLE ... LOCATION); "
        "only applied when the table is created.",
    )
    renamed_from: Annotated[str, AfterValidator(_previous_name)] | None = Field(
        None,
        description="The table's previous name, to rename it (ALTER TABLE ... RENAME TO) rather than create "
        "a new one; inert once the rename has been applied.",
    )


class TombstoneSpec(_Spec):
    """A table that must not exist: dropped if it does (destructive), inert once gone."""

    table: Annotated[str, AfterValidator(_table_name)] = Field(
        description="Table name: schema.table or catalog.schema.table."
    )
    drop: Literal[True] = Field(description="true: drop the table (DROP TABLE) if it exists.")


def _view_query(text: str) -> str:
    found = viewsql.problem(text)
    if found is not None:
        raise Invalid(f"sql: {found}", "write one query, e.g. sql: SELECT id, amount FROM shop.orders WHERE open")
    return text


class ViewColumnSpec(_Spec):
    """A column of the view: its name (as the query gives it, or a new one) and comment."""

    name: Annotated[str, AfterValidator(_column_name)] = Field(description="Column name.")
    comment: str | None = Field(None, description="Column comment.")


class ViewSpec(_Spec):
    """One view, as declared in one spec file."""

    view: Annotated[str, AfterValidator(_table_name)] = Field(
        description="View name: schema.view or catalog.schema.view."
    )
    comment: str | None = Field(None, description="View comment.")
    sql: Annotated[str, AfterValidator(_view_query)] = Field(
        description="The view's query (one SELECT); name the tables it reads as schema.table."
    )
    columns: list[ViewColumnSpec] | None = Field(
        None,
        min_length=1,
        description="Optional: every column of the query, in order, with its name and comment (no types: "
        "they come from the query).",
    )


class ViewTombstoneSpec(_Spec):
    """A view that must not exist: dropped if it does, inert once gone."""

    view: Annotated[str, AfterValidator(_table_name)] = Field(description="View name: schema.view.")
    drop: Literal[True] = Field(description="true: drop the view (DROP VIEW) if it exists.")


_ROOTS: tuple[type[BaseModel], ...] = (TableSpec, TombstoneSpec, ViewSpec, ViewTombstoneSpec)


def spec_json_schema() -> dict[str, Any]:
    """JSON Schema of one spec file, for editors."""
    forms = [model.model_json_schema() for model in _ROOTS]
    definitions = {key: value for form in forms for key, value in form.pop("$defs", {}).items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "delta-sync spec",
        "description": "One spec file: a table, a view, or a tombstone (drop: true) of either.",
        "oneOf": forms,
        "$defs": definitions,
    }


# `${name}` of an environment's var; `$${name}` is the escape for a literal `${name}`.
_VAR_REF = re.compile(r"(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def spec_paths(path: Path) -> list[Path]:
    """The spec files under `path` (a folder, or one file), in a stable order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        hint = "pass the folder that holds the table specs"
        raise SpecError([SpecProblem(shown_path(path), 0, f"{path} does not exist", hint)])
    files = sorted(p for p in {*path.rglob("*.yaml"), *path.rglob("*.yml")} if p.is_file())
    if not files:
        hint = "add one spec file per table there, or point at the folder that has them"
        raise SpecError([SpecProblem(shown_path(path), 0, f"no *.yaml or *.yml files under {path}/", hint)])
    return files


def load_specs(
    path: Path, vars: Mapping[str, str] | None = None, catalog: str | None = None, env: str | None = None
) -> CatalogState:
    """The desired state declared by the spec files under `path` (a folder, or one file).

    `vars` fill `${name}` in every string (the vars of the environment `env`); `catalog` is the
    catalog of two-part table names (its catalog)."""
    return load_spec_files(spec_paths(path), vars, catalog, env)


def load_spec_files(
    paths: Sequence[Path],
    vars: Mapping[str, str] | None = None,
    catalog: str | None = None,
    env: str | None = None,
) -> CatalogState:
    """The desired state declared by these spec files; raises SpecError listing every problem.

    A `${name}` that `vars` do not declare is a problem at its line, naming where to declare it
    (in environment `env`); the value holding it is not judged any further."""
    problems: list[SpecProblem] = []
    tables: dict[TableName, Table] = {}
    views: dict[TableName, View] = {}
    dropped: dict[TableName, Origin] = {}
    dropped_views: set[TableName] = set()
    declared: dict[TableName, Origin] = {}
    for path in paths:
        file_problems: list[SpecProblem] = []
        undeclared: list[SpecProblem] = []
        doc = read(path, file_problems, _HINTS)
        if doc is not None:
            doc = _for_environment(doc, vars or {}, catalog, env, undeclared)
        if doc is not None:
            duplicate = False
            key = "view" if "view" in doc.data and "table" not in doc.data else "table"
            name = _declared_name(doc, key)
            if name is not None:
                origin = Origin(doc.file, doc.line(key))
                first = declared.setdefault(name, origin)
                duplicate = first is not origin
                if duplicate:
                    message = f"{key} `{name}` is already declared at {first}"
                    file_problems.append(doc.problem((key,), message, "keep one spec file per table or view"))
            if "drop" in doc.data:
                tombstone = _tombstone(doc, file_problems, key)
                if tombstone is not None and not duplicate:
                    dropped[tombstone] = Origin(doc.file, doc.line(key))
                    if key == "view":
                        dropped_views.add(tombstone)
            elif key == "view":
                view = _view(doc, file_problems)
                if view is not None and not duplicate:
                    views[view.name] = view
            else:
                table = _table(doc, file_problems)
                if table is not None and not duplicate:
                    tables[table.name] = table
        file_problems = undeclared + _not_explained_by(undeclared, file_problems)
        problems.extend(sorted(file_problems, key=lambda p: p.line))
    problems.extend(_check_references(tables))
    problems.extend(_check_table_renames(tables, dropped))
    problems.extend(_check_view_cycles(views))
    if problems:
        raise SpecError(problems)
    return CatalogState(tables=tables, dropped=dropped, views=views, dropped_views=frozenset(dropped_views))


def _tombstone(doc: Doc, problems: list[SpecProblem], kind: str = "table") -> TableName | None:
    """`table: x` (or `view: x`) + `drop: true` and nothing else: a tombstone names what it drops, no more."""
    found = len(problems)
    for key in doc.data:
        if key not in (kind, "drop"):
            hint = f"a tombstone (drop: true) holds only {kind}: and drop: true; remove the rest"
            problems.append(doc.problem((key,), f"unknown key `{key}` in a tombstone", hint))
    if doc.data.get("drop") is not True:
        hint = f"write drop: true to drop the {kind}, or remove drop: to declare it"
        problems.append(doc.problem(("drop",), f"`drop` must be true, got {kind_of(doc.data.get('drop'))}", hint))
    text = doc.data.get(kind)
    if not isinstance(text, str):
        hint = f"write `{kind}: schema.name`, the {kind} to drop"
        if kind in doc.data:
            problems.append(doc.problem((kind,), f"`{kind}` must be text, got {kind_of(text)}", hint))
        else:
            problems.append(doc.problem((), f"missing required key `{kind}`", hint))
        return None
    try:
        name = TableName.parse(text)
    except ValueError as exc:
        problems.append(doc.problem((kind,), str(exc), f"e.g. {kind}: sales.orders_tmp"))
        return None
    return name if len(problems) == found else None


def _view(doc: Doc, problems: list[SpecProblem]) -> View | None:
    try:
        spec = ViewSpec.model_validate(doc.data)
    except ValidationError as exc:
        problems.extend(pydantic_problem(doc, error, ViewSpec) for error in exc.errors())
        return None
    columns = None
    if spec.columns is not None:
        seen: dict[str, int] = {}
        for index, column in enumerate(spec.columns):
            first = seen.setdefault(column.name.lower(), index)
            if first != index:
                message = f"column `{column.name}` is listed twice"
                problems.append(doc.problem(("columns", index, "name"), message, "give each column its own name"))
                return None
        columns = tuple(ViewColumn(c.name, c.comment or None) for c in spec.columns)
    return View(
        TableName.parse(spec.view),
        spec.sql.strip(),
        spec.comment or None,
        columns,
        Origin(doc.file, doc.line("view")),
    )


def _check_view_cycles(views: Mapping[TableName, View]) -> list[SpecProblem]:
    """A view may read other views of the specs, never itself through them."""
    problems: list[SpecProblem] = []
    reads = {name: viewsql.read_tables(view.sql) & set(views) for name, view in views.items()}
    for name in sorted(views):
        seen: set[TableName] = set()
        stack = list(reads[name])
        while stack:
            other = stack.pop()
            if other == name:
                origin = views[name].origin
                where = (origin.file, origin.line) if origin else ("", 0)
                hint = "a view cannot read itself, directly or through other views"
                problems.append(SpecProblem(*where, f"view `{name}` reads itself through the views it reads", hint))
                break
            if other not in seen:
                seen.add(other)
                stack.extend(reads.get(other, ()))
    return problems


def _check_table_renames(tables: Mapping[TableName, Table], dropped: Mapping[TableName, Origin]) -> list[SpecProblem]:
    """A previous name is a table that no other spec declares, and that only one table was renamed from."""
    problems: list[SpecProblem] = []
    sources: dict[TableName, Table] = {}
    for table in sorted(tables.values(), key=lambda t: t.name):
        old = table.renamed_from
        if old is None or table.origin is None:
            continue
        where = (table.origin.file, table.origin.line)
        if old == table.name:
            problems.append(SpecProblem(*where, f"table `{table.name}` is renamed from itself", "remove renamed_from:"))
        elif old.schema_name != table.name.schema_name:
            # Spark's session catalog refuses it (RENAME TABLE source and destination databases do not match).
            hint = f"rename within `{old.schema_name}` here, and move the table to another schema by hand"
            problems.append(SpecProblem(*where, f"renamed_from `{old}` is in another schema", hint))
        elif old in tables or old in dropped:
            other = tables[old].origin if old in tables else dropped[old]
            hint = "a table renamed from it cannot also be declared: remove renamed_from: or that spec"
            problems.append(SpecProblem(*where, f"renamed_from `{old}` is declared at {other}", hint))
        elif old in sources:
            hint = "only one table can be renamed from it; keep renamed_from: in one spec"
            problems.append(SpecProblem(*where, f"`{old}` is also renamed to `{sources[old].name}`", hint))
        else:
            sources[old] = table
    return problems


def substitute_vars(value: Any, vars: Mapping[str, str]) -> Any:
    """`value` (a parsed spec document) with `${name}` replaced in every string, for the declared `vars`.

    `${name}` of an undeclared name is left as written here (loading a spec reports it). `$${name}`
    writes a literal `${name}`. Keys are not changed, and a replacement is not searched again, so a
    value containing `${...}` is taken as it is.
    """
    return _VarFiller(vars).fill(value, ())


def escape_vars(value: Any) -> Any:
    """`value` with every `${name}` in its strings written as `$${name}`, which a spec reads back as
    the same text: for writing live text (a comment, an expression) into a spec file."""
    if isinstance(value, str):
        return _VAR_REF.sub(lambda match: "$" + match.group(0), value)
    if isinstance(value, dict):
        return {key: escape_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [escape_vars(item) for item in value]
    return value


@dataclass
class _VarFiller:
    """Fills `${name}` in every string value, noting where an undeclared name was used."""

    vars: Mapping[str, str]
    undeclared: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)

    def fill(self, value: Any, loc: tuple[Any, ...]) -> Any:
        if isinstance(value, str):
            return _VAR_REF.sub(lambda match: self._value(match, loc), value) if "${" in value else value
        if isinstance(value, dict):
            return {key: self.fill(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [self.fill(item, (*loc, i)) for i, item in enumerate(value)]
        return value

    def _value(self, match: re.Match[str], loc: tuple[Any, ...]) -> str:
        escaped, name = match.groups()
        if escaped:
            return match.group(0)[1:]
        if name not in self.vars:
            self.undeclared.append((loc, name))
            return match.group(0)
        return self.vars[name]


def _for_environment(
    doc: Doc, vars: Mapping[str, str], catalog: str | None, env: str | None, problems: list[SpecProblem]
) -> Doc:
    filler = _VarFiller(vars)
    data = filler.fill(doc.data, ())
    where = f"envs.{env}.vars" if env else f"the vars: of the environment in {_PROJECT_FILE}"
    for loc, name in filler.undeclared:
        line = doc.line(*loc)
        problems.append(SpecProblem(doc.file, line, f"undeclared variable `{name}`", f"declare it in {where}"))
    if catalog:
        data = _in_catalog(data, catalog)
    return Doc(doc.file, doc.root, data)


def _in_catalog(data: dict[Any, Any], catalog: str) -> dict[Any, Any]:
    """Two-part names (the table's, and those its foreign keys reference) put in the environment's catalog."""
    for key in ("table", "view", "renamed_from"):
        name = data.get(key)
        if isinstance(name, str) and name.count(".") == 1:
            data = {**data, key: f"{catalog}.{name}"}
    query = data.get("sql")
    if isinstance(query, str) and viewsql.problem(query) is None:
        data = {**data, "sql": viewsql.qualify(query, catalog)}
    foreign_keys = data.get("foreign_keys")
    if isinstance(foreign_keys, list):
        data = {**data, "foreign_keys": [_references_in_catalog(fk, catalog) for fk in foreign_keys]}
    return data


def _references_in_catalog(fk: Any, catalog: str) -> Any:
    text = fk.get("references") if isinstance(fk, dict) else None
    if not isinstance(text, str) or "(" not in text:
        return fk  # reported as it is written
    table, paren, rest = text.partition("(")
    if table.strip().count(".") != 1:
        return fk
    return {**fk, "references": f"{catalog}.{table.strip()}{paren}{rest}"}


def _not_explained_by(undeclared: list[SpecProblem], problems: list[SpecProblem]) -> list[SpecProblem]:
    """`problems` without those on the line of an undeclared variable, which it explains:
    `shop.orders${suffix}` is not a bad table name, it is a missing declaration."""
    lines = {p.line for p in undeclared}
    return [p for p in problems if p.line not in lines]


def _declared_name(doc: Doc, key: str = "table") -> TableName | None:
    """The table (or view) name, even when the rest of the file is broken (for duplicate detection)."""
    text = doc.data.get(key)
    try:
        return TableName.parse(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _table(doc: Doc, problems: list[SpecProblem]) -> Table | None:
    found = len(problems)
    spec: TableSpec | None = None
    try:
        spec = TableSpec.model_validate(doc.data)
    except ValidationError as exc:
        # Non-text keys are already reported, with their YAML spelling, by _construct.
        problems.extend(
            pydantic_problem(doc, error)
            for error in exc.errors()
            if error["type"] != "invalid_key" and not (error["type"] == "string_type" and error["loc"][-1] == "[key]")
        )
    # The checks across entries read the raw data, so they report even when the shape is wrong.
    column_lines = doc.child_lines("columns")
    columns = _check_columns(doc, column_lines, problems)
    _check_checks(doc, problems)
    _check_keys(doc, columns, problems)
    if spec is None or len(problems) > found:
        return None
    name = TableName.parse(spec.table)
    primary_key = _primary_key(doc, spec, name, columns)
    foreign_keys = _foreign_keys(doc, spec, name, columns)
    _check_key_names(doc, spec, primary_key, foreign_keys, problems)
    if len(problems) > found:
        return None
    check_lines = doc.child_lines("checks")
    return Table(
        name=name,
        columns=tuple(
            Column(
                name=c.name,
                type=_canonical_type(c.type),
                nullable=c.nullable,
                comment=c.comment or None,
                default=c.default,
                generated=c.generated,
                identity=(
                    Identity(start=c.identity.start, step=c.identity.step, always=c.identity.always)
                    if c.identity is not None
                    else None
                ),
                origin=Origin(doc.file, column_lines[i]),
                renamed_from=c.renamed_from,
                backfill=c.backfill,
                using=c.using,
            )
            for i, c in enumerate(spec.columns)
        ),
        comment=spec.comment or None,
        checks=tuple(
            sorted(
                (
                    Check(name=name.lower(), expression=text, origin=Origin(doc.file, check_lines[name]))
                    for name, text in spec.checks.items()
                ),
                key=lambda check: check.name,
            )
        ),
        partitioned_by=tuple(columns[p.lower()] for p in spec.partitioned_by),
        clustered_by=tuple(columns[c.lower()] for c in spec.clustered_by),
        properties=tuple(sorted((k, v) for k, v in spec.properties.items() if v is not None)),
        removed_properties=tuple(sorted(k for k, v in spec.properties.items() if v is None)),
        origin=Origin(doc.file, doc.line("table")),
        primary_key=primary_key,
        foreign_keys=foreign_keys,
        location=spec.location or None,
        renamed_from=TableName.parse(spec.renamed_from) if spec.renamed_from else None,
    )


def _primary_key(doc: Doc, spec: TableSpec, table: TableName, columns: dict[str, str]) -> PrimaryKey | None:
    if spec.primary_key is None:
        return None
    key_columns = tuple(columns[c.lower()] for c in spec.primary_key.columns)
    name = spec.primary_key.name or keys.primary_key_name(table, key_columns)
    return PrimaryKey(name.lower(), key_columns, Origin(doc.file, doc.line("primary_key")))


def _foreign_keys(doc: Doc, spec: TableSpec, table: TableName, columns: dict[str, str]) -> tuple[ForeignKey, ...]:
    found = []
    for i, fk in enumerate(spec.foreign_keys):
        parent, references = parse_references(fk.references)
        key_columns = tuple(columns[c.lower()] for c in fk.columns)
        name = fk.name or keys.foreign_key_name(table, key_columns, parent)
        found.append(
            ForeignKey(name.lower(), key_columns, parent, references, Origin(doc.file, doc.line("foreign_keys", i)))
        )
    # In name order, as they are read back from the catalog.
    return tuple(sorted(found, key=lambda fk: fk.name))


def _check_key_names(
    doc: Doc,
    spec: TableSpec,
    primary_key: PrimaryKey | None,
    foreign_keys: tuple[ForeignKey, ...],
    problems: list[SpecProblem],
) -> None:
    """Key names are one namespace with the CHECKs' (a catalog with key constraints keeps them together)."""
    taken = {name.lower(): f"check `{name}` (line {doc.line('checks', name)})" for name in spec.checks}
    declared: list[PrimaryKey | ForeignKey] = [primary_key] if primary_key is not None else []
    for key in (*declared, *sorted(foreign_keys, key=lambda fk: _line_of(fk.origin))):
        line = _line_of(key.origin)
        if key.name in taken:
            message = f"key name `{key.name}` is already used by {taken[key.name]}"
            hint = "give the key another name: name: ..."
            problems.append(SpecProblem(doc.file, line, message, hint))
        else:
            kind = "primary key" if isinstance(key, PrimaryKey) else "foreign key"
            taken[key.name] = f"the {kind} at line {line}"


def _line_of(origin: Origin | None) -> int:
    return origin.line if origin is not None else 0


def _check_references(tables: Mapping[TableName, Table]) -> list[SpecProblem]:
    """Foreign keys against the tables they reference, where those are declared in the specs too."""
    problems: list[SpecProblem] = []
    for table in tables.values():
        for fk in table.foreign_keys:
            parent = tables.get(fk.table)
            if parent is not None and fk.origin is not None:
                problems.extend(
                    SpecProblem(fk.origin.file, fk.origin.line, message, hint)
                    for message, hint in _reference_problems(table, fk, parent)
                )
    return sorted(problems, key=lambda p: (p.file, p.line))


def _reference_problems(table: Table, fk: ForeignKey, parent: Table) -> list[tuple[str, str]]:
    where = f" ({parent.origin})" if parent.origin is not None and parent.origin.file != _file_of(fk) else ""
    label = f"foreign key `{fk.name}`"
    if parent.primary_key is None:
        hint = f"declare primary_key: [{', '.join(fk.references)}] in the spec of `{parent.name}`{where}"
        return [(f"{label}: `{parent.name}` declares no primary key", hint)]
    pk = parent.primary_key
    if not keys.same_columns(fk.references, pk.columns):
        wanted, written = ", ".join(pk.columns), ", ".join(fk.references)
        message = f"{label} references ({written}) of `{parent.name}`, not its primary key ({wanted})"
        hint = f'reference the primary key in its order: references: "{references_text(parent.name, pk.columns)}"'
        return [(message, hint)]
    found = []
    for mine, theirs in zip(fk.columns, pk.columns, strict=True):
        have, want = table.column(mine), parent.column(theirs)
        if have is not None and want is not None and have.type != want.type:
            message = f"{label}: column `{mine}` is {have.type}, but `{parent.name}.{want.name}` is {want.type}"
            hint = f"declare `{mine}` as {want.type}: a key matches only values of the same type"
            found.append((message, hint))
    return found


def _file_of(fk: ForeignKey) -> str | None:
    return fk.origin.file if fk.origin is not None else None


def _check_columns(doc: Doc, lines: dict[Any, int], problems: list[SpecProblem]) -> dict[str, str]:
    """Checks across columns and the column lists; returns lower-cased name -> declared name."""
    items = _list(doc.data.get("columns"))
    columns: dict[str, str] = {}
    first_line: dict[str, int] = {}
    all_named = bool(items)
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip():
            all_named = False  # reported by pydantic
            continue
        key = name.lower()
        if key in columns:
            message = f"column `{name}` is declared twice (first at line {first_line[key]})"
            hint = "column names are case-insensitive; rename or remove one"
            problems.append(SpecProblem(doc.file, lines[i], message, hint))
        else:
            columns[key] = name
            first_line[key] = lines[i]
    partitions = _column_list(doc, "partitioned_by", "partition column", columns, all_named, problems)
    if all_named and partitions and partitions.keys() == columns.keys():
        message = "every column is a partition column"
        hint = "Delta needs at least one column that is not a partition column"
        problems.append(doc.problem(("partitioned_by",), message, hint))
    _column_list(doc, "clustered_by", "clustering column", columns, all_named, problems)
    clustered_by = _list(doc.data.get("clustered_by"))
    if len(clustered_by) > MAX_CLUSTERING_COLUMNS:
        message = f"`clustered_by` lists {len(clustered_by)} columns; Delta allows at most {MAX_CLUSTERING_COLUMNS}"
        hint = "keep the columns queries filter on most"
        problems.append(doc.problem(("clustered_by",), message, hint))
    if clustered_by and _list(doc.data.get("partitioned_by")):
        message = "`clustered_by` and `partitioned_by` cannot both be set"
        hint = "a table is either partitioned or clustered; remove one"
        problems.append(doc.problem(("clustered_by",), message, hint))
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            _check_column_options(doc, i, item, partitions, problems)
    _check_renames(doc, items, columns, first_line, problems)
    return columns


def _column_list(
    doc: Doc, key: str, what: str, columns: dict[str, str], all_named: bool, problems: list[SpecProblem]
) -> dict[str, int]:
    """Unknown and repeated entries of a list of columns; returns lower-cased name -> index."""
    return _named_columns(doc, (key,), _list(doc.data.get(key)), what, columns, all_named, problems)


def _named_columns(
    doc: Doc,
    loc: tuple[Any, ...],
    names: list[Any],
    what: str,
    columns: dict[str, str],
    all_named: bool,
    problems: list[SpecProblem],
) -> dict[str, int]:
    """Unknown and repeated entries of the list of columns at `loc`; returns lower-cased name -> index."""
    found: dict[str, int] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue  # reported by pydantic
        lower = name.lower()
        if lower in found:
            problems.append(doc.problem((*loc, i), f"{what} `{name}` is listed twice", "list it once"))
        elif lower in columns:
            found[lower] = i
        elif all_named:
            close = difflib.get_close_matches(name, list(columns.values()), n=1)
            hint = f"did you mean `{close[0]}`?" if close else "list columns declared under columns:"
            problems.append(doc.problem((*loc, i), f"{what} `{name}` is not a declared column", hint))
    return found


def _check_keys(doc: Doc, columns: dict[str, str], problems: list[SpecProblem]) -> None:
    """Key columns against the declared columns; read from the raw data, as the column lists are."""
    items = _list(doc.data.get("columns"))
    all_named = bool(items) and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in items)
    nullable = {
        item["name"].lower(): i
        for i, item in enumerate(items)
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("nullable") is not False
    }
    loc, names = _primary_key_columns(doc.data.get("primary_key"))
    for lower, i in _named_columns(doc, loc, names, "primary-key column", columns, all_named, problems).items():
        if lower in nullable:
            line = doc.line("columns", nullable[lower])
            message = f"primary-key column `{columns[lower]}` is nullable"
            hint = f"declare it nullable: false (line {line}); delta-sync does not make a column NOT NULL on its own"
            problems.append(doc.problem((*loc, i), message, hint))
    for i, fk in enumerate(_list(doc.data.get("foreign_keys"))):
        if not isinstance(fk, dict):
            continue  # reported by pydantic
        names = _list(fk.get("columns"))
        _named_columns(doc, ("foreign_keys", i, "columns"), names, "foreign-key column", columns, all_named, problems)
        try:
            _, references = parse_references(fk["references"])
        except (KeyError, TypeError, ValueError):
            continue  # reported by pydantic
        if names and len(names) != len(references):
            message = (
                f"foreign key lists {_count(len(names), 'column')} but references {_count(len(references), 'column')}"
            )
            hint = "pair each column with one referenced column, in the same order"
            problems.append(doc.problem(("foreign_keys", i, "references"), message, hint))


def _primary_key_columns(value: Any) -> tuple[tuple[Any, ...], list[Any]]:
    """Where the primary key's column list is written, and the list."""
    if isinstance(value, dict):
        return ("primary_key", "columns"), _list(value.get("columns"))
    return ("primary_key",), _list(value)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_EXCLUSIVE = (
    ("identity", "default", "an identity column makes its own values; remove default:"),
    ("identity", "generated", "a column is either an identity or generated; remove one"),
    ("generated", "default", "a generated column is always computed; remove default:"),
)


def _check_column_options(
    doc: Doc, i: int, item: dict[Any, Any], partitions: dict[str, int], problems: list[SpecProblem]
) -> None:
    """default / generated / identity of one column, against each other and the rest of the spec."""
    name: str = item["name"]
    label = _column_label(name, i)
    present = {key for key in ("default", "generated", "identity") if item.get(key) is not None}
    for first, second, hint in _EXCLUSIVE:
        if first in present and second in present:
            later = max(first, second, key=lambda k: doc.line("columns", i, k))
            message = f"{label}: `{first}` and `{second}` cannot be combined"
            problems.append(doc.problem(("columns", i, later), message, hint))
            break
    if "identity" in present:
        written = item.get("type")
        try:
            canonical = _canonical_type(written) if isinstance(written, str) else "bigint"
        except sqltypes.TypeSyntaxError:
            canonical = "bigint"  # reported by pydantic
        if canonical != "bigint":
            message = f"{label}: an identity column must be bigint, not {canonical}"
            problems.append(doc.problem(("columns", i, "identity"), message, "declare it as type: bigint"))
        if name.lower() in partitions:
            message = f"partition column `{name}` is an identity column"
            hint = "Delta cannot partition by an identity column; partition by another column"
            problems.append(doc.problem(("partitioned_by", partitions[name.lower()]), message, hint))
    for key in ("backfill", "using"):
        fixed = next((k for k in ("generated", "identity") if k in present), None)
        if item.get(key) is not None and fixed is not None:
            message = f"{label}: {'an' if fixed == 'identity' else 'a'} {fixed} column cannot have `{key}`"
            hint = f"Delta computes its values; remove {key}:"
            problems.append(doc.problem(("columns", i, key), message, hint))
    if item.get("backfill") is not None and item.get("nullable", True) is not False:
        message = f"{label}: `backfill` fills a column that becomes NOT NULL, but this one is nullable"
        hint = "set nullable: false, or remove backfill:"
        problems.append(doc.problem(("columns", i, "backfill"), message, hint))
    generated = item.get("generated")
    if isinstance(generated, str) and _refers_to(generated, name):
        message = f"{label}: the generated expression refers to the column itself"
        hint = "a generated column is computed from other columns"
        problems.append(doc.problem(("columns", i, "generated"), message, hint))


def _refers_to(expression: str, name: str) -> bool:
    """Whether `expression` names the column `name` (not a struct field or function of that name)."""
    try:
        tokens = expressions.tokens(expression)
    except expressions.ExpressionError:
        return False  # reported by pydantic
    spellings = {name.lower(), quote_ident(name).lower()}
    return any(
        token in spellings and (j == 0 or tokens[j - 1] != ".") and (j + 1 == len(tokens) or tokens[j + 1] != "(")
        for j, token in enumerate(tokens)
    )


def _check_renames(
    doc: Doc,
    items: list[Any],
    columns: dict[str, str],
    first_line: dict[str, int],
    problems: list[SpecProblem],
) -> None:
    renamed: dict[str, tuple[str, int]] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name, old = item.get("name"), item.get("renamed_from")
        if not isinstance(name, str) or not isinstance(old, str) or not old.strip():
            continue  # reported by pydantic
        loc = ("columns", i, "renamed_from")
        key, label = old.lower(), _column_label(name, i)
        if key == name.lower():
            message = f"{label}: `renamed_from` is the column's own name"
            hint = "names are case-insensitive, so this renames nothing; remove renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        elif key in renamed:
            other, line = renamed[key]
            message = f"{label}: `{old}` is already renamed to `{other}` at line {line}"
            hint = "a column can be renamed to one name only; remove one renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        elif key in columns:
            declared = columns[key]
            message = f"{label}: `{declared}` is still declared; a rename needs the old name gone from columns:"
            hint = f"remove `{declared}` (line {first_line[key]}) from columns:, or remove renamed_from:"
            problems.append(doc.problem(loc, message, hint))
        else:
            renamed[key] = (name, doc.line(*loc))


def _check_checks(doc: Doc, problems: list[SpecProblem]) -> None:
    checks = doc.data.get("checks")
    first: dict[str, str] = {}
    for name in checks if isinstance(checks, dict) else ():
        if not isinstance(name, str):
            continue
        other = first.setdefault(name.lower(), name)
        if other != name:
            message = f"check `{name}` is declared twice (as `{other}` at line {doc.line('checks', other)})"
            hint = "check names are case-insensitive, as Delta stores them lower-cased; rename one"
            problems.append(doc.problem(("checks", name), message, hint))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


_EXPECTED = {
    "string_type": ("a string", "quote the value"),
    "bool_type": ("true or false", "write true or false, without quotes"),
    "list_type": ("a list", "write one `- item` per line, or [a, b]"),
    "dict_type": ("a mapping", "write `key: value` lines"),
    "int_type": ("a whole number", "write e.g. 1, without quotes"),
    "model_type": ("a mapping", "write `key: value` lines, e.g. `- name: id` and `type: bigint`"),
}


def pydantic_problem(doc: Doc, error: ErrorDetails, root: type[BaseModel] | None = None) -> SpecProblem:
    """One pydantic error as a problem at its line, worded for the spec's models and keys (`root`: the
    model of the whole file, the table spec's by default)."""
    root = root or TableSpec
    loc, kind = _written_loc(tuple(error["loc"]), doc.data), error["type"]
    label, rest = _label(loc, doc.data)
    prefix = f"{label}: " if label else ""
    if kind == "missing":
        key = loc[-1]
        field = (_model_at(loc[:-1], root) or root).model_fields.get(str(key))
        hint = f"add `{key}:`" + (f" - {field.description}" if field and field.description else "")
        return doc.problem(loc[:-1], f"{prefix}missing required key `{key}`", hint)
    if kind == "extra_forbidden":
        allowed = list((_model_at(loc[:-1], root) or root).model_fields)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + "allowed keys: " + ", ".join(allowed)
        return doc.problem(loc, f"{prefix}unknown key `{loc[-1]}`", hint)
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, Invalid):
        return doc.problem(loc, f"{prefix}{cause}", cause.hint)
    path = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in rest).lstrip(".")
    subject = f"{prefix}`{path}`" if path else label
    if kind == "too_short":
        return doc.problem(loc, f"{subject} must not be empty", "list at least one entry")
    if kind in _EXPECTED:
        expected, hint = _EXPECTED[kind]
        if kind == "model_type" and loc[-1] == "identity":
            hint = "write e.g. identity: {start: 1, step: 1, always: true}"
        value = error["input"]
        got = kind_of(value) + (f" {value!r}" if isinstance(value, str) else "")
        return doc.problem(loc, f"{subject} must be {expected}, got {got}", hint)
    return doc.problem(loc, f"{subject}: {error['msg']}")


def _written_loc(loc: tuple[Any, ...], data: dict[Any, Any]) -> tuple[Any, ...]:
    """pydantic's location as the file writes it: `primary_key: [a]` is validated as {columns: [a]}."""
    if loc[:2] == ("primary_key", "columns") and isinstance(data.get("primary_key"), list):
        return ("primary_key", *loc[2:])
    return loc


def _label(loc: tuple[Any, ...], data: dict[Any, Any]) -> tuple[str, tuple[Any, ...]]:
    """A readable name for what `loc` points into (`column amount`), and the rest of `loc`."""
    if len(loc) >= 2 and loc[0] == "columns" and isinstance(loc[1], int):
        columns = data.get("columns")
        column = columns[loc[1]] if isinstance(columns, list) and loc[1] < len(columns) else None
        name = column.get("name") if isinstance(column, dict) else None
        return _column_label(name, loc[1]), loc[2:]
    if len(loc) >= 2 and loc[0] in ("checks", "properties"):
        rest = tuple(step for step in loc[2:] if step != "[key]")
        return f"{'check' if loc[0] == 'checks' else 'property'} `{loc[1]}`", rest
    return "", loc


def _column_label(name: Any, index: int) -> str:
    """`column amount`, or `column #3` for a column without a usable name."""
    usable = isinstance(name, str) and name.strip() and "\n" not in name and "\r" not in name
    return f"column `{name}`" if usable else f"column #{index + 1}"


def _model_at(loc: tuple[Any, ...], root: type[BaseModel] | None = None) -> type[BaseModel] | None:
    """The spec model that the mapping at `loc` is validated against."""
    model: type[BaseModel] = root or TableSpec
    for step in loc:
        if isinstance(step, int):
            continue
        field = model.model_fields.get(str(step))
        inner = _nested_model(field.annotation) if field else None
        if inner is None:
            return None
        model = inner
    return model


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(_nested_model, typing.get_args(annotation))), None)
