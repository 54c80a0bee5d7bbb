"""plan(current, desired) -> Plan: a pure diff of two catalog states into ordered actions."""

from __future__ import annotations

from delta_sync import expressions
from delta_sync.actions import (
    Action,
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    DropCheck,
    Plan,
    PropertyChange,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Unsupported,
    sort_key,
)
from delta_sync.model import CatalogState, Column, Table


def plan(current: CatalogState, desired: CatalogState) -> Plan:
    actions: list[Action] = []
    for schema in sorted({name.schema_name for name in desired.tables} - current.schemas):
        actions.append(CreateSchema(schema))
    for name, want in sorted(desired.tables.items()):
        have = current.table(name)
        if have is None:
            actions.append(CreateTable(want))
            actions.extend(AddCheck(name, check) for check in want.checks)
        else:
            actions.extend(diff_table(have, want))
    return Plan(actions=tuple(sorted(actions, key=sort_key)), tables=tuple(sorted(desired.tables)))


def diff_table(have: Table, want: Table) -> list[Action]:
    return [
        *_diff_columns(have, want),
        *_diff_partitioning(have, want),
        *_diff_comment(have, want),
        *_diff_properties(have, want),
        *_diff_checks(have, want),
    ]


def _diff_columns(have: Table, want: Table) -> list[Action]:
    actions: list[Action] = []
    added: list[Column] = []
    for col in want.columns:
        existing = have.column(col.name)
        if existing is None:
            if not col.nullable:
                actions.append(
                    Unsupported(
                        want.name,
                        col.key,
                        f"new column `{col.name}` is NOT NULL, and Delta cannot add a NOT NULL column "
                        "to an existing table",
                        "add it as nullable (nullable: true), backfill it with `delta-sync sql`, then "
                        "declare it NOT NULL in a later change",
                        col.origin,
                    )
                )
            else:
                added.append(col)
            continue
        actions.extend(_diff_column(have, existing, col))
    if added:
        actions.append(AddColumns(want.name, tuple(added)))
    for col in have.columns:
        if want.column(col.name) is None:
            actions.append(
                Unsupported(
                    want.name,
                    col.key,
                    f"column `{col.name}` exists in the table but not in the spec; delta-sync does not "
                    "drop columns yet",
                    f"add `{col.name}` to the spec, or drop it by hand with `delta-sync sql`",
                    want.origin,
                )
            )
    return actions


def _diff_column(table: Table, have: Column, want: Column) -> list[Action]:
    actions: list[Action] = []
    if have.type != want.type:
        actions.append(
            Unsupported(
                table.name,
                want.key,
                f"column `{want.name}` changes type {have.type} -> {want.type}; type changes are not "
                "supported yet",
                f"keep `type: {have.type}` in the spec, or rewrite the table by hand",
                want.origin,
            )
        )
    if have.nullable != want.nullable:
        verb = "NOT NULL -> nullable" if want.nullable else "nullable -> NOT NULL"
        actions.append(
            Unsupported(
                table.name,
                want.key,
                f"column `{want.name}` changes {verb}; nullability changes are not supported yet",
                f"keep `nullable: {str(have.nullable).lower()}` in the spec for now",
                want.origin,
            )
        )
    if have.comment != want.comment:
        actions.append(SetColumnComment(table.name, have.name, have.comment, want.comment, want.origin))
    return actions


def _diff_partitioning(have: Table, want: Table) -> list[Action]:
    if [c.lower() for c in have.partitioned_by] == [c.lower() for c in want.partitioned_by]:
        return []
    shown_have = ", ".join(have.partitioned_by) or "none"
    shown_want = ", ".join(want.partitioned_by) or "none"
    return [
        Unsupported(
            want.name,
            "partitioned_by",
            f"partitioning changes ({shown_have}) -> ({shown_want}); "
            "Delta cannot repartition a table in place",
            "rewrite the table by hand (CREATE OR REPLACE TABLE ... PARTITIONED BY ... AS SELECT), "
            f"or keep partitioned_by: [{shown_have if have.partitioned_by else ''}]",
            want.origin,
        )
    ]


def _diff_comment(have: Table, want: Table) -> list[Action]:
    if have.comment == want.comment:
        return []
    return [SetTableComment(want.name, have.comment, want.comment, want.origin)]


def property_value_key(key: str, value: str) -> str:
    """Delta treats `delta.*` boolean values case-insensitively; compare them that way."""
    if key.lower().startswith("delta.") and value.lower() in ("true", "false"):
        return value.lower()
    return value


def _current_property(have: dict[str, str], key: str) -> str | None:
    if key in have:
        return have[key]
    if key.lower().startswith("delta."):
        # Delta rewrites the case of `delta.*` keys to their canonical spelling.
        return next((v for k, v in have.items() if k.lower() == key.lower()), None)
    return None


def _diff_properties(have: Table, want: Table) -> list[Action]:
    current = have.property_map
    changes = []
    for key, value in want.properties:
        before = _current_property(current, key)
        if before is None or property_value_key(key, before) != property_value_key(key, value):
            changes.append(PropertyChange(key, before, value))
    return [SetProperties(want.name, tuple(changes), want.origin)] if changes else []


def _same_expression(current: str, desired: str) -> bool:
    try:
        return expressions.normalize(current) == expressions.normalize(desired)
    except expressions.ExpressionError:
        # Added outside delta-sync in a form we do not parse: replace it with the declared one.
        return False


def _diff_checks(have: Table, want: Table) -> list[Action]:
    actions: list[Action] = []
    for check in want.checks:
        existing = have.check(check.name)
        if existing is None:
            actions.append(AddCheck(want.name, check))
        elif not _same_expression(existing.expression, check.expression):
            actions.append(DropCheck(want.name, existing))
            actions.append(AddCheck(want.name, check, replaces=existing))
    for check in have.checks:
        if want.check(check.name) is None:
            actions.append(DropCheck(want.name, check))
    return actions
