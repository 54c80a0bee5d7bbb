"""The diff of a table's columns: added (NOT NULL ones backfilled and enforced by a CHECK), dropped, renamed,
retyped (into nested struct fields, array elements and map entries: `TypeChanges`), commented, defaulted, and
loosened to nullable; what Delta cannot change in place is blocked, saying what to do instead."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from delta_sync.model.state import (
    Column,
    Table,
    quote_ident,
)
from delta_sync.planning.actions import (
    Action,
    AddColumns,
    AlterColumnType,
    Backfill,
    DropColumns,
    DropNotNull,
    MoveColumn,
    Notice,
    Place,
    RenameColumn,
    SetColumnComment,
    SetDefault,
)
from delta_sync.planning.diff.conventions import (
    COLUMN_DEFAULTS,
    COLUMN_MAPPING,
    TIMESTAMP_NTZ,
    TYPE_WIDENING,
    append_only,
    generated_from,
    has_ntz,
    mapping_only_names,
    not_null_check,
    same_sql,
)
from delta_sync.planning.diff.table_diff import TableDiff
from delta_sync.sql import types as sqltypes


def diff_columns(diff: TableDiff) -> dict[str, str]:
    """Column actions; returns renames as {old lower-cased name: new name}."""
    have, want = diff.have, diff.want
    renamed: dict[str, str] = {}
    matched: set[str] = set()
    added: list[Column] = []
    for col in want.columns:
        existing = have.column(col.name)
        if col.renamed_from is not None:
            source = have.column(col.renamed_from)
            if existing is not None and source is not None:
                diff.block(
                    col.key,
                    f"`{col.renamed_from}` is to be renamed to `{col.name}`, but the table has both columns",
                    f"drop or rename one of them by hand, or remove `renamed_from: {col.renamed_from}`",
                    col,
                )
                matched |= {existing.key, source.key}
                continue
            if existing is None and source is not None:
                if generated_from(have, source.name):
                    diff.block(
                        col.key,
                        f"generated column(s) {', '.join(generated_from(have, source.name))} compute from "
                        f"`{source.name}`, so Delta cannot rename it",
                        f"keep the name `{source.name}`, or rebuild the table by hand",
                        col,
                    )
                    matched.add(source.key)
                    continue
                if not diff.capabilities.rename_column:
                    diff.block(
                        col.key,
                        f"{diff.refused_by_catalog('RENAME COLUMN')}, so `{source.name}` cannot become "
                        f"`{col.name}` in place",
                        f"keep the name `{source.name}` (remove `renamed_from: {source.name}`), or add "
                        f'`{col.name}` as a new column, fill it (delta-sync sql "UPDATE {want.name} SET '
                        f'{quote_ident(col.name)} = {quote_ident(source.name)}") and drop `{source.name}`',
                        col,
                    )
                    matched.add(source.key)
                    continue
                diff.need(COLUMN_MAPPING, f"renaming `{source.name}` needs column mapping", col.origin)
                diff.actions.append(RenameColumn(want.name, source.name, col.name, col.origin))
                diff.touched.add(source.key)
                renamed[source.key] = col.name
                matched.add(source.key)
                _diff_column(diff, replace(source, name=col.name), col)
                continue
        if existing is None:
            _add_column(diff, col, added)
            continue
        matched.add(existing.key)
        if existing.name != col.name:
            diff.actions.append(
                Notice(
                    want.name,
                    col.key,
                    f"column `{existing.name}` is spelled `{col.name}` in the spec; Spark names are "
                    "case-insensitive, so nothing changes (Delta cannot change only the case of a name: "
                    "keep the table's spelling, or rename through another name over two applies)",
                    col.origin,
                )
            )
        _diff_column(diff, existing, col)
    places, moves = _placement(diff, renamed, added)
    diff.actions.extend(moves)
    if added:
        diff.actions.append(AddColumns(want.name, tuple(added), places=places))
    _drop_columns(diff, [c for c in have.columns if c.key not in matched])
    return renamed


def _placement(
    diff: TableDiff, renamed: dict[str, str], added: list[Column]
) -> tuple[tuple[Place | None, ...], list[MoveColumn]]:
    """Where each added column goes and which kept columns move (`arrange`); with `column_order: ignore`
    nothing is placed, and the diff records whether the order differs (`unordered`)."""
    want = diff.want
    names = {c.key: c.name for c in want.columns}
    origins = {c.key: c.origin for c in want.columns}
    kept = [renamed.get(col.key, col.name).lower() for col in diff.have.columns]
    places, moves = arrange(kept, [c.key for c in want.columns], [c.key for c in added], names)
    if not diff.manage_order:
        diff.unordered = diff.unordered or bool(moves) or bool(places)
        return (), []
    return places, [MoveColumn(want.name, names[key], place, origins[key]) for key, place in moves]


def arrange(
    have: list[str], want: list[str], added: list[str], names: dict[str, str]
) -> tuple[tuple[Place | None, ...], list[tuple[str, Place]]]:
    """Sibling order made the spec's: the place of each of `added` (empty when all go at the end), and the
    moves of the kept siblings, as (key, place). Keys are lower-cased names; `names` gives their spelling.

    The longest run of kept siblings already in the spec's order stays; each other one moves right after the
    kept sibling the spec lists before it, in spec order, so it ends next to it: as few moves as there can
    be. Moves run before additions (Phase.MOVE_COLUMN), and then each addition goes right after the sibling
    the spec lists before it, which exists by then."""
    new = set(added)
    kept = [key for key in have if key in names and key not in new]
    target = [key for key in want if key in new or key in kept]
    if len(set(target)) != len(target) or len(set(kept)) != len(kept):
        return (), []  # two columns under one name: blocked elsewhere
    settled = [key for key in target if key in kept]
    rank = {key: i for i, key in enumerate(settled)}
    staying = set(_longest_increasing(kept, rank))
    moves = [(key, Place(names[settled[i - 1]] if i else None)) for i, key in enumerate(settled) if key not in staying]
    order = settled
    places: list[Place | None] = []
    for key in added:
        at = target.index(key)
        before = target[at - 1] if at else None
        index = order.index(before) + 1 if before is not None else 0
        places.append(None if index == len(order) else Place(names[before] if before is not None else None))
        order.insert(index, key)
    return (tuple(places) if any(p is not None for p in places) else ()), moves


def _longest_increasing(keys: list[str], rank: dict[str, int]) -> list[str]:
    """The longest subsequence of `keys` whose ranks increase (patience sorting, O(n log n))."""
    tails: list[int] = []  # tails[k]: index into keys of the smallest tail of a run of length k + 1
    previous: list[int | None] = [None] * len(keys)
    for i, key in enumerate(keys):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if rank[keys[tails[mid]]] < rank[key]:
                lo = mid + 1
            else:
                hi = mid
        previous[i] = tails[lo - 1] if lo else None
        if lo == len(tails):
            tails.append(i)
        else:
            tails[lo] = i
    run: list[str] = []
    at = tails[-1] if tails else None
    while at is not None:
        run.append(keys[at])
        at = previous[at]
    return run[::-1]


def _add_column(diff: TableDiff, col: Column, added: list[Column]) -> None:
    if col.generated is not None or col.identity is not None:
        kind = "generated" if col.generated is not None else "identity"
        diff.block(
            col.key,
            f"new column `{col.name}` is a {kind} column; Delta only creates those with the table",
            "declare it as a plain column, or rebuild the table by hand (CREATE OR REPLACE ... AS SELECT)",
            col,
        )
        return
    if not col.nullable:
        if diff.have.num_files != 0 and col.backfill is None:
            diff.block(
                col.key,
                f"new column `{col.name}` is NOT NULL, and the table already holds rows that would have "
                "no value for it",
                "give those rows a value with `backfill: <SQL expression>` on the column "
                "(e.g. backfill: \"'unknown'\"), or add it as nullable (nullable: true)",
                col,
            )
            return
        if diff.have.num_files != 0 and col.backfill is not None:
            if append_only(diff.have):
                diff.block(col.key, *_append_only_backfill(col), col)
                return
            diff.actions.append(Backfill(diff.want.name, col.name, col.backfill, col.type, col.origin))
        diff.enforced.append(not_null_check(col))
    if has_ntz(col.type):
        diff.need(TIMESTAMP_NTZ, f"`{col.name}` of type {col.type} needs the timestampNtz feature", col.origin)
    need_mapping_for_names(diff, [col])
    added.append(replace(col, nullable=True, default=None))
    if col.default is not None:
        diff.need(COLUMN_DEFAULTS, f"the default of `{col.name}` needs column defaults", col.origin)
        diff.actions.append(SetDefault(diff.want.name, col.name, None, col.default, col.origin))


def need_mapping_for_names(diff: TableDiff, columns: list[Column]) -> None:
    odd = mapping_only_names(columns)
    if odd:
        names = ", ".join(f"`{n}`" for n in odd)
        diff.need(
            COLUMN_MAPPING,
            f"the name(s) {names} need column mapping (Delta refuses spaces or any of ,;{{}}()= in names otherwise)",
            columns[0].origin,
        )


def _drop_columns(diff: TableDiff, gone: list[Column]) -> None:
    droppable = []
    for col in gone:
        if generated_from(diff.have, col.name) and col.generated is None:
            diff.block(
                col.key,
                f"generated column(s) {', '.join(generated_from(diff.have, col.name))} compute from "
                f"`{col.name}`, so Delta cannot drop it",
                f"keep `{col.name}` in the spec, or drop the generated column(s) first",
            )
        elif col.key in {c.lower() for c in diff.have.partitioned_by}:
            diff.block(
                col.key,
                f"`{col.name}` is a partition column, which Delta cannot drop",
                f"keep `{col.name}` in the spec, or rewrite the table by hand without it",
            )
        elif len(gone) == len(diff.have.columns) and not diff.want.columns:
            diff.block(col.key, "a table cannot lose all its columns", "declare at least one column")
        elif not diff.capabilities.drop_column:
            diff.block(
                col.key,
                f"`{col.name}` is gone from the spec, but {diff.refused_by_catalog('DROP COLUMN')}",
                f"keep `{col.name}` in the spec, or rebuild the table by hand without it",
            )
        else:
            droppable.append(col)
    if droppable:
        names = ", ".join(f"`{c.name}`" for c in droppable)
        diff.need(COLUMN_MAPPING, f"dropping {names} needs column mapping")
        diff.actions.append(DropColumns(diff.want.name, tuple(droppable), origin=diff.want.origin))
        diff.touched |= {c.key for c in droppable}


def _diff_column(diff: TableDiff, have: Column, want: Column) -> None:
    name = diff.want.name
    if (have.generated, have.identity) != (want.generated, want.identity) and not _same_generated(have, want):
        diff.block(
            want.key,
            f"column `{want.name}` changes its generation or identity ({_describe_generation(have)} -> "
            f"{_describe_generation(want)}); Delta fixes both at create time",
            "keep the spec as the table is, or rebuild the table by hand (CREATE OR REPLACE ... AS SELECT)",
            want,
        )
    if have.type != want.type and not same_shape(have.type, want.type):
        _diff_type(diff, have, want)
    elif have.type.lower() != want.type.lower() and not diff.manage_order:
        diff.unordered = True  # struct fields in another order only
    elif have.type.lower() != want.type.lower():
        # Struct fields in another order only: moves, which change no value and no type.
        changes = TypeChanges(diff.want, want, diff)
        changes.diff((), want.name, have.type, want.type)
        diff.actions.extend(changes.actions)
    if have.nullable and not want.nullable:
        diff.enforced.append(not_null_check(want))
        if want.backfill is not None and not have.not_null_by_check and diff.have.num_files != 0:
            if append_only(diff.have):
                diff.block(want.key, *_append_only_backfill(want), want)
            else:
                diff.actions.append(Backfill(name, want.name, want.backfill, want.type, want.origin))
    elif not have.nullable and want.nullable:
        if have.identity is not None:
            diff.block(
                want.key,
                f"`{want.name}` is an identity column; Delta keeps it NOT NULL",
                "keep `nullable: false` for it",
                want,
            )
        else:
            diff.actions.append(DropNotNull(name, want.name, want.origin))
    if have.comment != want.comment:
        diff.actions.append(SetColumnComment(name, want.name, have.comment, want.comment, want.origin))
    if not same_sql(have.default, want.default):
        diff.need(COLUMN_DEFAULTS, f"the default of `{want.name}` needs column defaults", want.origin)
        diff.actions.append(SetDefault(name, want.name, have.default, want.default, want.origin))


def _append_only_backfill(col: Column) -> tuple[str, str]:
    return (
        f"`{col.name}` is to be backfilled, but the table is append-only (delta.appendOnly): Delta refuses UPDATE",
        f"keep `{col.name}` nullable (remove nullable: false and backfill:), or turn delta.appendOnly off first",
    )


def _same_generated(have: Column, want: Column) -> bool:
    return have.identity == want.identity and same_sql(have.generated, want.generated)


def _describe_generation(col: Column) -> str:
    if col.generated is not None:
        return f"generated as {col.generated}"
    if col.identity is not None:
        kind = "always" if col.identity.always else "by default"
        return f"identity {kind} (start {col.identity.start}, step {col.identity.step})"
    return "plain"


def same_shape(before: str, after: str) -> bool:
    """Equal but for the order or case of struct fields, which Delta does not change in place."""
    old, new = sqltypes.struct_fields(before), sqltypes.struct_fields(after)
    if old is not None and new is not None:
        by_key = {f.key: f for f in old}
        return len(old) == len(new) and all(
            f.key in by_key
            and by_key[f.key].nullable == f.nullable
            and by_key[f.key].comment == f.comment
            and same_shape(by_key[f.key].type, f.type)
            for f in new
        )
    old_element, new_element = sqltypes.element_type(before), sqltypes.element_type(after)
    if old_element is not None and new_element is not None:
        return same_shape(old_element, new_element)
    old_map, new_map = sqltypes.map_types(before), sqltypes.map_types(after)
    if old_map is not None and new_map is not None:
        return same_shape(old_map[0], new_map[0]) and same_shape(old_map[1], new_map[1])
    return before == after


def _diff_type(diff: TableDiff, have: Column, want: Column) -> None:
    refused = (
        f"column `{want.name}` changes type {have.type} -> {want.type}, which Delta cannot do in place",
        diff.cannot_rewrite(f"keep `type: {have.type}`")
        if diff.no_rewrite
        else f"keep `type: {have.type}`, or say how values convert with `using:` (a rewrite)",
    )
    if have.identity is not None or have.generated is not None:
        diff.block(
            want.key,
            f"`{want.name}` is a generated or identity column; its type is fixed",
            f"keep `type: {have.type}`",
            want,
        )
        return
    dependents = generated_from(diff.have, have.name)
    if dependents:
        # Delta refuses the change in place (DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE) and creates
        # generated columns only with the table, so no drop and re-add around it exists, as there is for CHECKs.
        diff.block(
            want.key,
            f"generated column(s) {', '.join(dependents)} compute from `{want.name}`, so Delta refuses to change "
            f"its type (DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE) and cannot re-create them around it",
            f"keep `type: {have.type}`; or build the table anew by hand: a new table with `{want.name}` "
            f"{want.type} and the generated column(s), INSERT INTO it SELECT the other columns from this one, "
            "then drop this table and rename the new one to its name (renamed_from: in its spec)",
            want,
        )
        return
    changes = TypeChanges(diff.want, want, diff)
    if not changes.diff((), want.name, have.type, want.type):
        diff.block(want.key, changes.refusal or refused[0], refused[1], want)
        return
    for feature, reason in changes.features:
        diff.need(feature, reason, want.origin)
    diff.actions.extend(changes.actions)
    # Delta refuses to retype or drop inside a column that a CHECK references; comments and
    # added fields are fine, so only those two make the column's checks move out of the way.
    if any(isinstance(a, AlterColumnType | DropColumns) for a in changes.actions):
        diff.touched.add(have.key)


@dataclass
class TypeChanges:
    """The in-place statements turning one column type into another, walking into nested types.

    Struct fields can be added (nullable), dropped (column mapping), commented, loosened to nullable
    and retyped; array elements and map keys/values can be widened. Anything else is refused.
    """

    table: Table
    column: Column
    owner: TableDiff
    actions: list[Action] = field(default_factory=list)
    features: list[tuple[tuple[str, str], str]] = field(default_factory=list)
    refusal: str = ""

    def refuse(self, path: tuple[str, ...], reason: str) -> bool:
        self.refusal = f"`{'.'.join(path)}` {reason}"
        return False

    def diff(self, parent: tuple[str, ...], name: str, before: str, after: str) -> bool:
        if before == after:
            return True
        path = (*parent, name)
        old_fields, new_fields = sqltypes.struct_fields(before), sqltypes.struct_fields(after)
        if old_fields is not None and new_fields is not None:
            return self._struct(path, old_fields, new_fields)
        old_element, new_element = sqltypes.element_type(before), sqltypes.element_type(after)
        if old_element is not None and new_element is not None:
            return self.diff(path, "element", old_element, new_element)
        old_map, new_map = sqltypes.map_types(before), sqltypes.map_types(after)
        if old_map is not None and new_map is not None:
            return self.diff(path, "key", old_map[0], new_map[0]) and self.diff(path, "value", old_map[1], new_map[1])
        kind = sqltypes.change_kind(before, after)
        if kind is None:
            return self.refuse(path, f"changes type {before} -> {after}, which Delta cannot do in place")
        if kind == "widening":
            self.features.append((TYPE_WIDENING, f"widening `{'.'.join(path)}` to {after} needs type widening"))
        if has_ntz(after) and not has_ntz(before):
            self.features.append((TIMESTAMP_NTZ, f"`{'.'.join(path)}` of type {after} needs the timestampNtz feature"))
        name_ = self.table.name
        self.actions.append(AlterColumnType(name_, name, before, after, self.column.origin, parent))
        return True

    def _struct(self, path: tuple[str, ...], before: list[sqltypes.Field], after: list[sqltypes.Field]) -> bool:
        table, origin = self.table.name, self.column.origin
        old = {f.key: f for f in before}
        names = {f.key: f.name for f in after}
        added: list[Column] = []
        for new in after:
            current = old.pop(new.key, None)
            if current is None:
                if not new.nullable:
                    return self.refuse((*path, new.name), "is a new NOT NULL struct field, which Delta cannot add")
                if has_ntz(new.type):
                    self.features.append((TIMESTAMP_NTZ, f"`{new.name}` of type {new.type} needs timestampNtz"))
                added.append(Column(new.name, new.type, True, new.comment, origin=origin))
                need_mapping_for_names(self.owner, [Column(".".join((*path, new.name)), new.type, origin=origin)])
                continue
            if not self.diff(path, current.name, current.type, new.type):
                return False
            if not current.nullable and new.nullable:
                self.actions.append(DropNotNull(table, current.name, origin, path))
            elif current.nullable and not new.nullable:
                return self.refuse((*path, new.name), "cannot become NOT NULL: Delta only loosens nested fields")
            if current.comment != new.comment:
                self.actions.append(SetColumnComment(table, current.name, current.comment, new.comment, origin, path))
        places, moves = arrange([f.key for f in before], [f.key for f in after], [c.key for c in added], names)
        if not self.owner.manage_order:
            self.owner.unordered = self.owner.unordered or bool(moves) or bool(places)
            places, moves = (), []
        self.actions.extend(MoveColumn(table, names[key], place, origin, path) for key, place in moves)
        if added:
            self.actions.append(AddColumns(table, tuple(added), path, places))
        if old:
            if not self.owner.capabilities.drop_column:
                fields = ", ".join(f"`{f.name}`" for f in old.values())
                return self.refuse(path, f"loses {fields}, but {self.owner.refused_by_catalog('DROP COLUMN')}")
            gone = tuple(Column(f.name, f.type) for f in old.values())
            self.features.append((COLUMN_MAPPING, f"dropping fields of `{'.'.join(path)}` needs column mapping"))
            self.actions.append(DropColumns(table, gone, path, origin))
        return True
