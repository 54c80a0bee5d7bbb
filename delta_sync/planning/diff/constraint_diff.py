"""The diff of a table's rules: CHECKs (dropped and re-added around a change of a column they read, new
ones first when they read only columns the plan leaves alone: `checks_first`), primary and foreign keys
(`diff_keys`), and the unchanged foreign keys that move around their parent's changed primary key."""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from delta_sync.model import keys
from delta_sync.model.state import (
    CatalogState,
    Check,
    Table,
)
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
from delta_sync.planning.diff.conventions import references, same_sql
from delta_sync.planning.diff.table_diff import TableDiff


def diff_keys(have: Table, want: Table, as_constraint: bool) -> list[Action]:
    """A changed key is dropped and added again (the key only: nothing else of the table changes)."""
    name = want.name
    actions: list[Action] = []
    if not keys.same_primary_key(have.primary_key, want.primary_key):
        if have.primary_key is not None:
            actions.append(DropPrimaryKey(name, have.primary_key, as_constraint))
        if want.primary_key is not None:
            actions.append(AddPrimaryKey(name, want.primary_key, as_constraint))
    wanted = {key.name: key for key in want.foreign_keys}
    for key in have.foreign_keys:
        if key.name not in wanted or not keys.same_foreign_key(key, wanted[key.name]):
            actions.append(DropForeignKey(name, key, as_constraint))
    existing = {key.name: key for key in have.foreign_keys}
    for key in want.foreign_keys:
        if key.name not in existing or not keys.same_foreign_key(existing[key.name], key):
            actions.append(AddForeignKey(name, key, as_constraint))
    return actions


def move_foreign_keys(current: CatalogState, desired: CatalogState, actions: list[Action]) -> list[Action]:
    """Unchanged foreign key constraints whose parent's primary key is dropped (or changed) by the plan:
    a catalog with key constraints refuses to drop a referenced key, so they are dropped before it and,
    as the spec still declares them, added after the new one. A key kept in a table property depends on
    nothing, and stays."""
    dropped = {a.name for a in actions if isinstance(a, DropPrimaryKey) and a.as_constraint}
    moving = {(a.name, a.key.name) for a in actions if isinstance(a, DropForeignKey | AddForeignKey)}
    moved: list[Action] = []
    for name, want in sorted(desired.tables.items()):
        have = current.table(name)
        if have is None or not current.capabilities_of(name.catalog).table_constraints:
            continue
        declared = {key.name: key for key in want.foreign_keys}
        for key in have.foreign_keys:
            if key.table in dropped and (name, key.name) not in moving:
                moved += [DropForeignKey(name, key, True), AddForeignKey(name, declared[key.name], True)]
    return moved


def _changed_columns(actions: list[Action]) -> set[str]:
    """Lower-cased top-level names of the columns `actions` add, drop, rename or alter."""
    changed: set[str] = set()
    for action in actions:
        match action:
            case AddColumns() | DropColumns():
                names = action.parent[:1] or tuple(c.name for c in action.columns)
            case RenameColumn():
                names = (action.before, action.after)
            case AlterColumnType() | DropNotNull() | SetColumnComment():
                names = action.parent[:1] or (action.column,)
            case SetDefault() | Backfill():
                names = (action.column,)
            case (
                CreateSchema()
                | CreateTable()
                | EnableFeature()
                | UnsetProperties()
                | ClusterBy()
                | Notice()
                | SetTableComment()
                | SetProperties()
                | AddCheck()
                | DropCheck()
                | Unsupported()
                | AddPrimaryKey()
                | DropPrimaryKey()
                | AddForeignKey()
                | DropForeignKey()
                | RewriteTable()
                | RestoreTable()
                | DropTable()
                | DropFeature()
                | RenameTable()
                | RemoveTable()
                | CreateView()
                | BreaksView()
                | MoveColumn()
            ):
                names = ()
            case _:
                assert_never(action)
        changed |= {n.lower() for n in names}
    return changed


def checks_first(actions: list[Action]) -> list[Action]:
    """New rules that read only columns the plan leaves alone go first. ADD CONSTRAINT then checks the
    rows as they are, and commits nothing when one violates, so it is the table's own probe: a
    violation stops the table before anything of it changed. A rule that replaces another stays last
    (its old version is dropped first), as does one over a column the plan changes."""
    changed = _changed_columns(actions)

    def reads_changed(check: Check) -> bool:
        return any(references(check.expression, column) for column in changed)

    return [
        replace(a, first=True) if isinstance(a, AddCheck) and a.replaces is None and not reads_changed(a.check) else a
        for a in actions
    ]


def diff_checks(diff: TableDiff) -> None:
    have, want = diff.have, diff.want
    desired = {c.name: c for c in (*want.checks, *diff.enforced)}
    for check in sorted(desired.values(), key=lambda c: c.name):
        existing = have.check(check.name)
        if existing is None:
            diff.actions.append(AddCheck(want.name, check))
            continue
        read = sorted(c for c in diff.touched if references(existing.expression, c))
        if read or not same_sql(existing.expression, check.expression):
            moved_for = _moved_for(read) if same_sql(existing.expression, check.expression) else None
            diff.actions.append(DropCheck(want.name, existing))
            diff.actions.append(AddCheck(want.name, check, replaces=existing, moved_for=moved_for))
    for check in have.checks:
        if check.name not in desired:
            diff.actions.append(DropCheck(want.name, check))


def _moved_for(columns: list[str]) -> str:
    names = ", ".join(f"`{c}`" for c in columns)
    return (
        f"dropped and re-added unchanged around the change of {names}: Delta refuses to retype or drop "
        "a column that a CHECK reads"
    )
