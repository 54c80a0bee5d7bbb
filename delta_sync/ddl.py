"""Actions -> Spark SQL statements. Pure: identifiers are backquoted, literals escaped."""

from __future__ import annotations

from typing import assert_never

from delta_sync.actions import (
    Action,
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    DropCheck,
    Plan,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Unsupported,
)
from delta_sync.model import Column, TableName, quote_ident


def string_literal(value: str) -> str:
    """A Spark SQL string literal. Spark unescapes backslash sequences, so escape them all."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return f"'{escaped}'"


def column_definition(column: Column) -> str:
    parts = [quote_ident(column.name), column.type]
    if not column.nullable:
        parts.append("NOT NULL")
    if column.comment is not None:
        parts.append(f"COMMENT {string_literal(column.comment)}")
    return " ".join(parts)


def _properties(pairs: list[tuple[str, str]]) -> str:
    return ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in pairs)


def _create_table(action: CreateTable) -> str:
    table = action.table
    columns = ",\n".join(f"  {column_definition(c)}" for c in table.columns)
    lines = [f"CREATE TABLE {table.name.sql()} (\n{columns}\n) USING DELTA"]
    if table.partitioned_by:
        lines.append(f"PARTITIONED BY ({', '.join(quote_ident(c) for c in table.partitioned_by)})")
    if table.comment is not None:
        lines.append(f"COMMENT {string_literal(table.comment)}")
    if table.properties:
        lines.append(f"TBLPROPERTIES ({_properties(list(table.properties))})")
    return "\n".join(lines)


def _alter(name: TableName, rest: str) -> str:
    return f"ALTER TABLE {name.sql()} {rest}"


def to_sql(action: Action) -> tuple[str, ...]:
    """The statements for one action, in order. Unsupported actions have none."""
    match action:
        case CreateSchema():
            return (f"CREATE SCHEMA IF NOT EXISTS {action.schema.sql()}",)
        case CreateTable():
            return (_create_table(action),)
        case AddColumns():
            cols = ", ".join(column_definition(c) for c in action.columns)
            return (_alter(action.name, f"ADD COLUMNS ({cols})"),)
        case SetColumnComment():
            # Spark has no way to remove a column comment; an empty one reads back as none.
            comment = string_literal(action.after or "")
            return (_alter(action.name, f"ALTER COLUMN {quote_ident(action.column)} COMMENT {comment}"),)
        case SetTableComment():
            value = "NULL" if action.after is None else string_literal(action.after)
            return (f"COMMENT ON TABLE {action.name.sql()} IS {value}",)
        case SetProperties():
            pairs = [(c.key, c.after) for c in action.changes]
            return (_alter(action.name, f"SET TBLPROPERTIES ({_properties(pairs)})"),)
        case AddCheck():
            # Constraint names are plain identifiers (checked in specs): Delta keeps backquotes verbatim.
            check = action.check
            return (_alter(action.name, f"ADD CONSTRAINT {check.name} CHECK ({check.expression})"),)
        case DropCheck():
            return (_alter(action.name, f"DROP CONSTRAINT {action.check.name}"),)
        case Unsupported():
            return ()
        case _:
            assert_never(action)


def plan_statements(plan: Plan) -> tuple[tuple[Action, str], ...]:
    return tuple((action, sql) for action in plan.actions for sql in to_sql(action))
