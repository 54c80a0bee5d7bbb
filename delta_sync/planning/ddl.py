"""Actions -> Spark SQL statements. Pure: identifiers are backquoted, literals escaped."""

from __future__ import annotations

from typing import assert_never

from delta_sync.model import keys
from delta_sync.model.state import Column, ForeignKey, PrimaryKey, TableName, View, is_simple_ident, quote_ident
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    BreaksView,
    ClusterBy,
    CreateSchema,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumns,
    DropFeature,
    DropForeignKey,
    DropNotNull,
    DropPrimaryKey,
    DropTable,
    EnableFeature,
    MoveColumn,
    Notice,
    Plan,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RestoreTable,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)
from delta_sync.planning.team_policy import PROTECTED_PROPERTY
from delta_sync.sql import expressions
from delta_sync.sql.types import string_literal as string_literal


def _path(parent: tuple[str, ...], column: str) -> str:
    return ".".join(quote_ident(part) for part in (*parent, column))


def column_definition(column: Column, parent: tuple[str, ...] = ()) -> str:
    parts = [_path(parent, column.name), column.type]
    if not column.nullable:
        parts.append("NOT NULL")
    if column.generated is not None:
        parts.append(f"GENERATED ALWAYS AS ({column.generated})")
    if column.identity is not None:
        kind = "ALWAYS" if column.identity.always else "BY DEFAULT"
        identity = column.identity
        parts.append(f"GENERATED {kind} AS IDENTITY (START WITH {identity.start} INCREMENT BY {identity.step})")
    if column.default is not None:
        parts.append(f"DEFAULT {column.default}")
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
        lines.append(f"PARTITIONED BY ({_idents(table.partitioned_by)})")
    if table.clustered_by:
        lines.append(f"CLUSTER BY ({_idents(table.clustered_by)})")
    if table.location is not None:
        lines.append(f"LOCATION {string_literal(table.location)}")
    if table.comment is not None:
        lines.append(f"COMMENT {string_literal(table.comment)}")
    properties = list(table.properties)
    if any(c.default is not None for c in table.columns) and not any(
        k.lower() == "delta.feature.allowcolumndefaults" for k, _v in properties
    ):
        # Delta accepts DEFAULT in CREATE only with this feature named in the same statement.
        properties.append(("delta.feature.allowColumnDefaults", "supported"))
    if properties:
        lines.append(f"TBLPROPERTIES ({_properties(properties)})")
    return "\n".join(lines)


def create_view(view: View, replace: bool = False) -> str:
    """`CREATE [OR REPLACE] VIEW v [(columns)] [COMMENT ...] AS <query>`; the query as the spec writes it,
    which Spark stores verbatim."""
    head = f"CREATE {'OR REPLACE ' if replace else ''}VIEW {view.name.sql()}"
    if view.columns is not None:
        listed = ", ".join(
            quote_ident(c.name) + (f" COMMENT {string_literal(c.comment)}" if c.comment is not None else "")
            for c in view.columns
        )
        head += f" ({listed})"
    if view.comment is not None:
        head += f"\nCOMMENT {string_literal(view.comment)}"
    if view.protected is not None:
        # CREATE OR REPLACE VIEW keeps none of the old view's properties: every statement restates the mark.
        head += f"\nTBLPROPERTIES ({_properties([(PROTECTED_PROPERTY, 'true')])})"
    return f"{head}\nAS {view.sql}"


def _idents(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(quote_ident(n) for n in names)


def _alter(name: TableName, rest: str) -> str:
    return f"ALTER TABLE {name.sql()} {rest}"


def _constraint_name(name: str) -> str:
    return name if is_simple_ident(name) else quote_ident(name)


def _key_property(key: PrimaryKey | ForeignKey) -> tuple[str, str]:
    if isinstance(key, PrimaryKey):
        return keys.PRIMARY_KEY_PROPERTY, keys.encode_primary_key(key)
    return keys.foreign_key_property(key), keys.encode_foreign_key(key)


def _key_constraint(key: PrimaryKey | ForeignKey) -> str:
    """Informational in every catalog that takes it (no ENFORCED: Spark refuses it for keys), and not
    RELY: the optimizer would trust a uniqueness that only delta-sync's checks vouch for."""
    if isinstance(key, PrimaryKey):
        return f"ADD CONSTRAINT {_constraint_name(key.name)} PRIMARY KEY ({_idents(key.columns)})"
    references = f"REFERENCES {key.table.sql()} ({_idents(key.references)})"
    return f"ADD CONSTRAINT {_constraint_name(key.name)} FOREIGN KEY ({_idents(key.columns)}) {references}"


def _add_key(action: AddPrimaryKey | AddForeignKey) -> tuple[str, ...]:
    """The key's property is written in both modes, so that keys read back the same from every catalog;
    after the constraint, so that a refused constraint leaves no key behind to read back."""
    keep = _alter(action.name, f"SET TBLPROPERTIES ({_properties([_key_property(action.key)])})")
    if not action.as_constraint:
        return (keep,)
    return (_alter(action.name, _key_constraint(action.key)), keep)


def _drop_key(action: DropPrimaryKey | DropForeignKey) -> tuple[str, ...]:
    """IF EXISTS both: a drop interrupted between its two statements is planned again and completes.
    RESTRICT: a primary key is dropped only once no foreign key references it (they are dropped first);
    it also makes the statement Spark's generic DROP CONSTRAINT rather than Delta's CHECK-only one."""
    forget = _alter(action.name, f"UNSET TBLPROPERTIES IF EXISTS ({string_literal(_key_property(action.key)[0])})")
    if not action.as_constraint:
        return (forget,)
    return (_alter(action.name, f"DROP CONSTRAINT IF EXISTS {_constraint_name(action.key.name)} RESTRICT"), forget)


def _rewrite(action: RewriteTable) -> str:
    """One REPLACE TABLE ... AS SELECT from the table's latest version (not the version the plan read:
    Delta's conflict check then refuses the commit if a writer appended meanwhile, instead of the
    rewrite dropping those rows). CHECKs are restated as `delta.constraints.*` properties, which Delta
    enforces on the rows it writes."""
    select = []
    for column in action.columns:
        conversion = action.conversion(column)
        if conversion is None:
            select.append(quote_ident(column))
        else:
            select.append(f"{expressions.for_delta(conversion.expression)} AS {quote_ident(column)}")
    lines = [f"REPLACE TABLE {action.name.sql()} USING DELTA"]
    if action.partitioned_by:
        lines.append(f"PARTITIONED BY ({_idents(action.partitioned_by)})")
    if action.clustered_by:
        lines.append(f"CLUSTER BY ({_idents(action.clustered_by)})")
    if action.comment is not None:
        lines.append(f"COMMENT {string_literal(action.comment)}")
    properties = list(action.properties) + [
        (f"delta.constraints.{check.name}", expressions.for_delta(check.expression)) for check in action.checks
    ]
    if properties:
        lines.append(f"TBLPROPERTIES ({_properties(properties)})")
    lines.append(f"AS SELECT {', '.join(select)}")
    lines.append(f"FROM {action.name.sql()}")
    return "\n".join(lines)


def to_sql(action: Action) -> tuple[str, ...]:
    """The statements for one action, in order. Unsupported actions have none."""
    match action:
        case CreateSchema():
            return (f"CREATE SCHEMA IF NOT EXISTS {action.schema.sql()}",)
        case CreateTable():
            return (_create_table(action),)
        case AddColumns():
            cols = ", ".join(
                column_definition(c, action.parent) + ("" if place is None else f" {place.sql()}")
                for c, place in ((c, action.place_of(i)) for i, c in enumerate(action.columns))
            )
            return (_alter(action.name, f"ADD COLUMNS ({cols})"),)
        case MoveColumn():
            return (_alter(action.name, f"ALTER COLUMN {_path(action.parent, action.column)} {action.place.sql()}"),)
        case SetColumnComment():
            # Spark has no way to remove a column comment; an empty one reads back as none.
            comment = string_literal(action.after or "")
            return (_alter(action.name, f"ALTER COLUMN {_path(action.parent, action.column)} COMMENT {comment}"),)
        case SetTableComment():
            value = "NULL" if action.after is None else string_literal(action.after)
            return (f"COMMENT ON TABLE {action.name.sql()} IS {value}",)
        case SetProperties():
            pairs = [(c.key, c.after) for c in action.changes]
            return (_alter(action.name, f"SET TBLPROPERTIES ({_properties(pairs)})"),)
        case AddCheck():
            # Constraint names are plain identifiers (checked in specs): Delta keeps backquotes verbatim.
            check = action.check
            expression = expressions.for_delta(check.expression)
            return (_alter(action.name, f"ADD CONSTRAINT {check.name} CHECK ({expression})"),)
        case DropCheck():
            return (_alter(action.name, f"DROP CONSTRAINT {action.check.name}"),)
        case EnableFeature():
            return (_alter(action.name, f"SET TBLPROPERTIES ({_properties([(action.key, action.value)])})"),)
        case RenameColumn():
            rename = f"RENAME COLUMN {quote_ident(action.before)} TO {quote_ident(action.after)}"
            return (_alter(action.name, rename),)
        case DropColumns():
            dropped = ", ".join(_path(action.parent, c.name) for c in action.columns)
            return (_alter(action.name, f"DROP COLUMNS ({dropped})"),)
        case AlterColumnType():
            return (_alter(action.name, f"ALTER COLUMN {_path(action.parent, action.column)} TYPE {action.after}"),)
        case DropNotNull():
            return (_alter(action.name, f"ALTER COLUMN {_path(action.parent, action.column)} DROP NOT NULL"),)
        case SetDefault():
            change = "DROP DEFAULT" if action.after is None else f"SET DEFAULT {action.after}"
            return (_alter(action.name, f"ALTER COLUMN {quote_ident(action.column)} {change}"),)
        case UnsetProperties():
            keys = ", ".join(string_literal(k) for k, _v in action.removed)
            return (_alter(action.name, f"UNSET TBLPROPERTIES ({keys})"),)
        case ClusterBy():
            target = f"({_idents(action.after)})" if action.after else "NONE"
            return (_alter(action.name, f"CLUSTER BY {target}"),)
        case AddPrimaryKey() | AddForeignKey():
            return _add_key(action)
        case DropPrimaryKey() | DropForeignKey():
            return _drop_key(action)
        case Backfill():
            column = quote_ident(action.column)
            fill = f"UPDATE {action.name.sql()} SET {column} = ({action.expression}) WHERE {column} IS NULL"
            return (fill,)
        case RewriteTable():
            return (_rewrite(action),)
        case RestoreTable():
            return (f"RESTORE TABLE {action.name.sql()} TO VERSION AS OF {int(action.version)}",)
        case DropTable():
            return (f"DROP TABLE {action.name.sql()}",)
        case RenameTable():
            return (f"ALTER TABLE {action.before.sql()} RENAME TO {action.name.sql()}",)
        case RemoveTable():
            return (f"DROP {'VIEW' if action.view else 'TABLE'} {action.name.sql()}",)
        case CreateView():
            return (create_view(action.view, action.replacing),)
        case BreaksView():
            return ()
        case DropFeature():
            return (_alter(action.name, f"DROP FEATURE {quote_ident(action.feature)}"),)
        case Unsupported() | Notice():
            return ()
        case _:
            assert_never(action)


def plan_statements(plan: Plan) -> tuple[tuple[Action, str], ...]:
    return tuple((action, sql) for action in plan.actions for sql in to_sql(action))
