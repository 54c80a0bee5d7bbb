"""plan(current, desired) -> Plan: a pure diff of two catalog states into ordered actions.

Each table is diffed on its own. Column changes first decide which Delta features they need
(column mapping for rename/drop, type widening, column defaults) and which CHECKs depend on the
columns they touch; those checks are dropped first and re-added last. NOT NULL on a column that
already exists is enforced with a CHECK named by `not_null_check_name`, because open-source
Delta rejects `SET NOT NULL`; such a check counts as the column being NOT NULL.

This module holds `plan` and the tables' lifecycle (created, renamed, dropped by a tombstone or by strict
mode, unmanaged), and `diff_table`, which assembles a table's diff from column_diff, table_diff (layout),
constraint_diff, property_diff and rewrite_plan; views are planned in view_diff.
"""

from __future__ import annotations

from dataclasses import replace

from delta_sync.model.state import (
    Capabilities,
    CatalogState,
    Origin,
    Table,
    TableName,
    ignored_by,
    same_location,
)
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    CreateSchema,
    CreateTable,
    EnableFeature,
    Plan,
    RemoveTable,
    RenameTable,
    RewriteTable,
    Unsupported,
    sort_key,
)
from delta_sync.planning.diff.column_diff import diff_columns
from delta_sync.planning.diff.constraint_diff import checks_first, diff_checks, diff_keys, move_foreign_keys
from delta_sync.planning.diff.conventions import COLUMN_MAPPING, current_property, mapping_only_names
from delta_sync.planning.diff.property_diff import diff_comment, diff_properties
from delta_sync.planning.diff.rewrite_plan import after_rewrite, plan_rewrite
from delta_sync.planning.diff.table_diff import TableDiff, diff_clustering, diff_partitioning
from delta_sync.planning.diff.view_diff import plan_views


def _with_column_mapping(table: Table) -> Table:
    """A new table whose names Delta takes only with column mapping is created with it on."""
    has_mode = current_property(table.property_map, COLUMN_MAPPING[0]) is not None
    if has_mode or not mapping_only_names(table.columns):
        return table
    return replace(table, properties=(*table.properties, COLUMN_MAPPING))


def plan(current: CatalogState, desired: CatalogState) -> Plan:
    actions: list[Action] = []
    unordered: list[TableName] = []
    for schema in sorted({name.schema_name for name in desired.tables} - current.schemas):
        actions.append(CreateSchema(schema))
    for name, want in sorted(desired.tables.items()):
        have = current.table(name)
        capabilities = current.capabilities_of(name.catalog)
        previous = current.table(want.renamed_from) if want.renamed_from is not None else None
        if name in current.views:
            actions.append(
                Unsupported(
                    name,
                    "",
                    f"`{name}` is a view, and the spec declares a table",
                    "drop the view first (a tombstone spec: view: ..., drop: true, in an earlier apply), "
                    "or give the table another name",
                    want.origin,
                )
            )
            continue
        if previous is not None and have is not None:
            actions.append(_both_names(want))
        elif previous is not None:
            actions.append(RenameTable(name, previous.name, want.origin))
            have = replace(previous, name=name)
        if have is None:
            actions.append(CreateTable(_with_column_mapping(want)))
            actions.extend(AddCheck(name, check) for check in want.checks)
            actions.extend(diff_keys(Table(name, ()), want, capabilities.table_constraints))
        else:
            actions.extend(_diff_location(have, want))
            changes, differs = diff_ordered(have, want, capabilities, desired.column_order)
            actions.extend(changes)
            if differs:
                unordered.append(name)
    actions.extend(move_foreign_keys(current, desired, actions))
    dropped: dict[TableName, Origin | None] = {
        name: origin
        for name, origin in desired.dropped.items()
        if current.table(name) is not None or name in current.views or name in (current.listed or ())
    }
    unmanaged = unmanaged_names(current, desired)
    if desired.strict:
        actions.extend(_remove(current, name, desired.strict_origin, strict=True) for name in unmanaged)
        dropped.update(dict.fromkeys(unmanaged))
        unmanaged = ()
    for name, origin in dropped.items():
        if origin is None:
            continue  # dropped by strict mode, above
        is_view = name in current.views or name in current.listed_views
        if (name in desired.dropped_views) != is_view:
            said, found = ("view", "table") if name in desired.dropped_views else ("table", "view")
            reason = f"the tombstone names a {said}, but `{name}` is a {found}"
            remedy = f"write `{found}: {name}` in the tombstone if the {found} is what should go"
            actions.append(Unsupported(name, "", reason, remedy, origin))
            continue
        actions.append(_remove(current, name, origin))
    actions.extend(plan_views(current, desired))
    return Plan(
        actions=tuple(sorted(actions, key=sort_key)),
        tables=tuple(sorted({*desired.tables, *desired.views, *dropped})),
        unmanaged=unmanaged,
        unordered=tuple(unordered),
    )


def unmanaged_names(current: CatalogState, desired: CatalogState) -> tuple[TableName, ...]:
    """What the catalog lists in the specs' schemas that no spec (table, previous name or tombstone) names,
    less what the project's `ignore:` patterns leave to other tools."""
    if current.listed is None:
        return ()
    # By schema and name only: `shop.t` and `main.shop.t` may be one table (the session's default catalog),
    # and strict mode must never take a declared table for an unmanaged one.
    named = {(n.schema, n.name) for n in desired.names_to_read()}
    # A table another tool manages (`ignore:`) is neither unmanaged nor dropped by strict mode.
    return tuple(
        sorted(n for n in current.listed if (n.schema, n.name) not in named and ignored_by(n, desired.ignore) is None)
    )


def renamed_current(current: CatalogState, plan: Plan) -> CatalogState:
    """The current side as the checks after planning see it: a table the plan renames is found under its
    new name, but keeps its current name (`name`), which is what its rows are read through until apply."""
    moved = {a.name: current.table(a.before) for a in plan.actions if isinstance(a, RenameTable)}
    if not any(moved.values()):
        return current
    tables = dict(current.tables)
    tables.update({new: table for new, table in moved.items() if table is not None})
    return replace(current, tables=tables)


def _both_names(want: Table) -> Unsupported:
    return Unsupported(
        want.name,
        "",
        f"the spec renames `{want.renamed_from}` to `{want.name}`, but both exist",
        f"drop the table that should not exist (a tombstone spec: table: ..., drop: true), "
        f"or remove renamed_from: if `{want.name}` is already the table",
        want.origin,
    )


def _diff_location(have: Table, want: Table) -> list[Action]:
    if want.location is None or same_location(want.location, have.location):
        return []
    where = f"at {have.location}" if have.location else "managed (in the catalog's warehouse)"
    return [
        Unsupported(
            want.name,
            "location",
            f"the table is {where}; the spec places it at {want.location}",
            "a location is only set when the table is created: keep the spec's location as it is, or move the "
            "table by hand (CREATE TABLE ... LOCATION ... AS SELECT, then swap the names)",
            want.origin,
        )
    ]


def _remove(current: CatalogState, name: TableName, origin: Origin | None, strict: bool = False) -> RemoveTable:
    table = current.table(name)
    if table is None:  # listed but not read: a view, or a table of another format
        return RemoveTable(name, origin, view=name in current.listed_views or name in current.views, strict=strict)
    return RemoveTable(
        name, origin, num_files=table.num_files, size_bytes=table.size_bytes, location=table.location, strict=strict
    )


def diff_table(have: Table, want: Table, capabilities: Capabilities | None = None) -> list[Action]:
    return diff_ordered(have, want, capabilities)[0]


def diff_ordered(
    have: Table, want: Table, capabilities: Capabilities | None = None, manage_order: bool = True
) -> tuple[list[Action], bool]:
    """The table's actions, and whether its column order differs from the spec's while `manage_order` is
    off. A change Delta cannot make in place (a type it cannot widen, a new layout) makes a rewrite, the
    table's first action; the rest is planned against what the rewrite leaves."""
    capabilities = capabilities or Capabilities()
    rewrite = plan_rewrite(have, want, capabilities)
    if isinstance(rewrite, RewriteTable):
        after, unordered = _diff_in_place(after_rewrite(have, rewrite), want, capabilities, None, manage_order)
        return [rewrite, *after], unordered
    return _diff_in_place(have, want, capabilities, rewrite, manage_order)


def _diff_in_place(
    have: Table, want: Table, capabilities: Capabilities, no_rewrite: str | None, manage_order: bool
) -> tuple[list[Action], bool]:
    diff = TableDiff(have, want, capabilities=capabilities, no_rewrite=no_rewrite, manage_order=manage_order)
    renamed = diff_columns(diff)
    diff_partitioning(diff, renamed)
    diff_clustering(diff, renamed)
    diff_checks(diff)
    diff_properties(diff)
    diff_comment(diff)
    diff.actions.extend(diff_keys(have, want, diff.capabilities.table_constraints))
    diff.actions.extend(
        EnableFeature(want.name, key, value, reason, origin)
        for key, (value, reason, origin) in sorted(diff.features.items())
    )
    return checks_first(diff.actions), diff.unordered
