"""plan(current, desired) -> Plan: a pure diff of two catalog states into ordered actions.

Each table is diffed on its own. Column changes first decide which Delta features they need
(column mapping for rename/drop, type widening, column defaults) and which CHECKs depend on the
columns they touch; those checks are dropped first and re-added last. NOT NULL on a column that
already exists is enforced with a CHECK named by `not_null_check_name`, because open-source
Delta rejects `SET NOT NULL`; such a check counts as the column being NOT NULL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import assert_never

from delta_sync.model import keys
from delta_sync.model.state import (
    DEFAULT_CATALOG,
    Capabilities,
    CatalogState,
    Check,
    Column,
    Origin,
    Table,
    TableName,
    View,
    quote_ident,
    same_location,
)
from delta_sync.planning import protocol
from delta_sync.planning.actions import (
    TABLE_COMMENT_KEY,
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    BreaksView,
    ClusterBy,
    Conversion,
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
    Notice,
    Plan,
    PropertyChange,
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
    sort_key,
)
from delta_sync.sql import expressions
from delta_sync.sql import queries as viewsql
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


def _with_column_mapping(table: Table) -> Table:
    """A new table whose names Delta takes only with column mapping is created with it on."""
    has_mode = _current_property(table.property_map, COLUMN_MAPPING[0]) is not None
    if has_mode or not mapping_only_names(table.columns):
        return table
    return replace(table, properties=(*table.properties, COLUMN_MAPPING))


def _has_ntz(type_: str) -> bool:
    return "timestamp_ntz" in type_


def not_null_check_name(column: str) -> str:
    """Deterministic CHECK name enforcing NOT NULL on `column` (a plain identifier, as Delta needs)."""
    plain = re.sub(r"[^a-z0-9_]", "_", column.lower())
    if plain != column.lower():
        plain += "_" + hashlib.sha1(column.lower().encode()).hexdigest()[:6]
    return NOT_NULL_PREFIX + plain


def not_null_check(column: Column) -> Check:
    return Check(not_null_check_name(column.name), f"{quote_ident(column.name)} IS NOT NULL", column.origin)


def plan(current: CatalogState, desired: CatalogState) -> Plan:
    actions: list[Action] = []
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
            actions.extend(_diff_keys(Table(name, ()), want, capabilities.table_constraints))
        else:
            actions.extend(_diff_location(have, want))
            actions.extend(diff_table(have, want, capabilities))
    actions.extend(_move_foreign_keys(current, desired, actions))
    dropped: dict[TableName, Origin | None] = {
        name: origin
        for name, origin in desired.dropped.items()
        if current.table(name) is not None or name in current.views or name in (current.listed or ())
    }
    unmanaged = unmanaged_names(current, desired)
    if desired.strict:
        dropped.update(dict.fromkeys(unmanaged))
        unmanaged = ()
    for name, origin in dropped.items():
        is_view = name in current.views or name in current.listed_views
        if origin is not None and (name in desired.dropped_views) != is_view:
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
    )


def view_depths(views: Mapping[TableName, View]) -> dict[TableName, int]:
    """How many views of `views` each one reads through (0: it reads tables only). The specs refuse cycles."""
    reads = {name: viewsql.read_tables(view.sql) & set(views) for name, view in views.items()}
    depths: dict[TableName, int] = {}

    def depth(name: TableName, seen: frozenset[TableName]) -> int:
        if name not in depths:
            inner = [depth(other, seen | {name}) for other in reads[name] if other not in seen]
            depths[name] = 1 + max(inner) if inner else 0
        return depths[name]

    for name in views:
        depth(name, frozenset())
    return depths


def plan_views(current: CatalogState, desired: CatalogState) -> list[Action]:
    """A view of the specs is created, or replaced when its query (normalised), comment or columns differ."""
    found: list[Action] = []
    depths = view_depths(desired.views)
    for name, want in sorted(desired.views.items()):
        have = current.views.get(name)
        if have is None and current.table(name) is not None:
            found.append(
                Unsupported(
                    name,
                    "",
                    f"`{name}` is a table, and the spec declares a view",
                    "drop the table first (a tombstone spec: table: ..., drop: true, in an earlier apply), "
                    "or give the view another name",
                    want.origin,
                )
            )
        elif have is None:
            found.append(CreateView(want, depths[name]))
        else:
            reasons = view_differences(have, want)
            if reasons:
                found.append(CreateView(want, depths[name], have, reasons))
    return found


def view_differences(have: View, want: View) -> tuple[str, ...]:
    """Why the view as it is differs from its spec, one line each; empty when it does not."""
    reasons = []
    if viewsql.normalize(have.sql) != viewsql.normalize(want.sql):
        reasons.append("query changed")
    if have.comment != want.comment:
        reasons.append(f"comment: {_quoted(have.comment)} -> {_quoted(want.comment)}")
    had = have.columns or ()
    if want.columns is None:
        pass  # names and comments come from the query (a column of a view over a view keeps its comment)
    elif [c.name.lower() for c in had] != [c.name.lower() for c in want.columns]:
        reasons.append(f"columns: ({', '.join(c.name for c in had)}) -> ({', '.join(c.name for c in want.columns)})")
    else:
        for old, new in zip(had, want.columns, strict=True):
            if old.comment != new.comment:
                reasons.append(f"column {new.name} comment: {_quoted(old.comment)} -> {_quoted(new.comment)}")
    return tuple(reasons)


def _quoted(text: str | None) -> str:
    return "(none)" if text is None else repr(text)


def unmanaged_names(current: CatalogState, desired: CatalogState) -> tuple[TableName, ...]:
    """What the catalog lists in the specs' schemas that no spec (table, previous name or tombstone) names."""
    if current.listed is None:
        return ()
    # By schema and name only: `shop.t` and `main.shop.t` may be one table (the session's default catalog),
    # and strict mode must never take a declared table for an unmanaged one.
    named = {(n.schema, n.name) for n in desired.names_to_read()}
    return tuple(sorted(n for n in current.listed if (n.schema, n.name) not in named))


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


def _remove(current: CatalogState, name: TableName, origin: Origin | None) -> RemoveTable:
    table = current.table(name)
    if table is None:  # listed but not read: a view, or a table of another format
        return RemoveTable(name, origin, view=name in current.listed_views or name in current.views)
    return RemoveTable(name, origin, num_files=table.num_files, size_bytes=table.size_bytes, location=table.location)


def _diff_keys(have: Table, want: Table, as_constraint: bool) -> list[Action]:
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


def _move_foreign_keys(current: CatalogState, desired: CatalogState, actions: list[Action]) -> list[Action]:
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


@dataclass
class _TableDiff:
    """Working state while one table is diffed; the result is `actions`."""

    have: Table
    want: Table
    actions: list[Action] = field(default_factory=list)
    features: dict[str, tuple[str, str, Origin | None]] = field(default_factory=dict)
    # Lower-cased column names whose CHECKs must be dropped and re-added around a change.
    touched: set[str] = field(default_factory=set)
    # Desired checks beyond the spec's: NOT NULL enforcement on existing columns.
    enforced: list[Check] = field(default_factory=list)
    # What the table's catalog accepts.
    capabilities: Capabilities = field(default_factory=Capabilities)
    # Why delta-sync cannot rewrite this table, when a change needs a rewrite (rewrite_refusal).
    no_rewrite: str | None = None

    def cannot_rewrite(self, remedy: str) -> str:
        return f"delta-sync cannot rewrite this table: {self.no_rewrite}; {remedy}" if self.no_rewrite else remedy

    def block(self, subject: str, reason: str, remedy: str, column: Column | None = None) -> None:
        origin = column.origin if column is not None else self.want.origin
        self.actions.append(Unsupported(self.want.name, subject, reason, remedy, origin))

    def refused_by_catalog(self, statement: str) -> str:
        """`statement` is refused by the table's catalog: the first half of a block's reason."""
        catalog = self.want.name.catalog or DEFAULT_CATALOG
        return f"catalog `{catalog}` ({self.capabilities.kind}) refuses {statement}"

    def need(self, feature: tuple[str, str], reason: str, origin: Origin | None = None) -> None:
        key, value = feature
        current = _current_property(self.have.property_map, key)
        if feature == COLUMN_MAPPING and current is not None and current.lower() in ("name", "id"):
            return  # both modes allow rename and drop; Delta refuses a switch from id to name
        if current is None or property_value_key(key, current) != property_value_key(key, value):
            self.features.setdefault(key, (value, reason, origin or self.want.origin))


def diff_table(have: Table, want: Table, capabilities: Capabilities | None = None) -> list[Action]:
    """The table's actions. A change Delta cannot make in place (a type it cannot widen, a new layout)
    makes a rewrite, the table's first action; the rest is planned against what the rewrite leaves."""
    capabilities = capabilities or Capabilities()
    rewrite = plan_rewrite(have, want, capabilities)
    if isinstance(rewrite, RewriteTable):
        return [rewrite, *_diff_in_place(after_rewrite(have, rewrite), want, capabilities)]
    return _diff_in_place(have, want, capabilities, rewrite)


def _diff_in_place(have: Table, want: Table, capabilities: Capabilities, no_rewrite: str | None = None) -> list[Action]:
    diff = _TableDiff(have, want, capabilities=capabilities, no_rewrite=no_rewrite)
    renamed = _diff_columns(diff)
    _diff_partitioning(diff, renamed)
    _diff_clustering(diff, renamed)
    _diff_checks(diff)
    _diff_properties(diff)
    _diff_comment(diff)
    diff.actions.extend(_diff_keys(have, want, diff.capabilities.table_constraints))
    diff.actions.extend(
        EnableFeature(want.name, key, value, reason, origin)
        for key, (value, reason, origin) in sorted(diff.features.items())
    )
    return _checks_first(diff.actions)


APPEND_ONLY = "delta.appendonly"


def _append_only(table: Table) -> bool:
    return any(k.lower() == APPEND_ONLY and v.lower() == "true" for k, v in table.properties)


# Configuration keys Delta maintains itself: a rewrite leaves them to Delta instead of carrying them.
_DELTA_MANAGED = ("delta.columnmapping.maxcolumnid", "delta.rowtracking.materialized")


def _source_column(have: Table, col: Column) -> Column | None:
    """The current column a declared one is (by name, or by `renamed_from` when the name is new)."""
    existing = have.column(col.name)
    if existing is None and col.renamed_from is not None:
        return have.column(col.renamed_from)
    return existing


def _current_layout(have: Table, want: Table, columns: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The declared layout columns under the table's current names, and those it does not have yet."""
    names, missing = [], []
    for name in columns:
        declared = want.column(name)
        source = _source_column(have, declared) if declared is not None else have.column(name)
        if source is None:
            missing.append(name)
        else:
            names.append(source.name)
    return names, missing


def rewrite_refusal(have: Table) -> str | None:
    """Why a REPLACE TABLE ... AS SELECT cannot keep this table as it is, if it cannot."""
    for col in have.columns:
        if col.identity is not None:
            return (
                f"`{col.name}` is an identity column, and REPLACE TABLE ... AS SELECT (Delta's one-commit rewrite) "
                "would make it a plain column and lose its high-water mark"
            )
        if col.generated is not None:
            return (
                f"`{col.name}` is a generated column, and REPLACE TABLE ... AS SELECT (Delta's one-commit rewrite) "
                "would make it a plain column (Spark takes no column definitions in REPLACE ... AS SELECT)"
            )
    properties = {k.lower(): v.lower() for k, v in have.properties}
    if properties.get(APPEND_ONLY) == "true":
        return (
            "it is append-only (delta.appendOnly), and Delta refuses to remove its files "
            "(REPLACE ... AS SELECT and UPDATE both do)"
        )
    if properties.get("delta.enablechangedatafeed") == "true" and properties.get(COLUMN_MAPPING[0].lower(), "none") in (
        "name",
        "id",
    ):
        return (
            "it has change data feed and column mapping on, and Delta refuses REPLACE TABLE ... AS SELECT on such "
            "a table (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION); turn change data feed off "
            '(delta.enableChangeDataFeed: "false") for the apply that rewrites it'
        )
    return None


def plan_rewrite(have: Table, want: Table, capabilities: Capabilities) -> RewriteTable | str | None:
    """The rewrite the spec needs: None when every change can be made in place; else the rewrite,
    or why the table cannot be rewritten (the changes that need it are then blocked, saying so)."""
    reasons: list[str] = []
    conversions: list[Conversion] = []
    probe = _TableDiff(have, want, capabilities=capabilities)
    for col in want.columns:
        source = _source_column(have, col)
        if source is None or source.type == col.type or _same_shape(source.type, col.type):
            continue
        if source.identity is not None or source.generated is not None or _generated_from(have, source.name):
            continue  # blocked in place: their types are fixed
        if _TypeChanges(want, col, probe).diff((), col.name, source.type, col.type):
            continue  # Delta changes it in place
        if col.using is None and (_is_nested(source.type) or _is_nested(col.type)):
            continue  # a CAST between nested types matches fields by position: only a `using` says how
        expression = col.using or f"CAST({quote_ident(source.name)} AS {col.type})"
        conversions.append(Conversion(source.name, source.type, col.type, expression, col.origin))
        how = "with `using`" if col.using else f"by CAST to {col.type}"
        reasons.append(f"`{source.name}` changes type {source.type} -> {col.type} ({how}): Delta cannot do it in place")
    partitioned, missing = _current_layout(have, want, want.partitioned_by)
    clustered, missing_clustered = _current_layout(have, want, want.clustered_by)
    before_parts, after_parts = [c.lower() for c in have.partitioned_by], [c.lower() for c in partitioned]
    relayout = before_parts != after_parts or bool(missing)
    # Clustering alone changes in place (CLUSTER BY); to or from partitioning it takes a rewrite.
    relayout = relayout or (bool(have.partitioned_by) and bool(want.clustered_by))
    if relayout:
        shown_have = _layout_text(have.partitioned_by, have.clustered_by)
        shown_want = _layout_text(want.partitioned_by, want.clustered_by)
        reasons.append(f"the layout changes {shown_have} -> {shown_want}: Delta cannot repartition a table in place")
    if not reasons:
        return None
    refusal = rewrite_refusal(have)
    if refusal is not None:
        return refusal
    clustered_once = have.clustered_by or any(k.lower() == "delta.feature.clustering" for k, _v in have.properties)
    if relayout and want.partitioned_by and clustered_once:
        return (
            "Delta refuses to replace a clustered table with a partitioned one "
            "(DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE), even after CLUSTER BY NONE; "
            "keep it clustered (clustered_by), or copy it into a new partitioned table by hand"
        )
    if relayout and (missing or missing_clustered):
        names = ", ".join(f"`{n}`" for n in missing + missing_clustered)
        return (
            f"the new layout uses {names}, which the table does not have yet: add the column(s) in one apply "
            "and change the layout in the next"
        )
    layout = (tuple(partitioned), tuple(clustered)) if relayout else (have.partitioned_by, have.clustered_by)
    return RewriteTable(
        name=want.name,
        columns=tuple(c.name for c in have.columns),
        conversions=tuple(conversions),
        partitioned_by=layout[0],
        clustered_by=layout[1],
        comment=have.comment,
        properties=_carried_properties(have),
        checks=_carried_checks(have, want),
        reasons=tuple(reasons),
        restore_version=have.version,
        num_files=have.num_files,
        size_bytes=have.size_bytes,
        origin=next((c.origin for c in conversions), None) or want.origin,
    )


def _is_nested(type_: str) -> bool:
    return any(f(type_) is not None for f in (sqltypes.struct_fields, sqltypes.element_type, sqltypes.map_types))


def _layout_text(partitioned_by: tuple[str, ...], clustered_by: tuple[str, ...]) -> str:
    if partitioned_by:
        return f"(partitioned by {', '.join(partitioned_by)})"
    if clustered_by:
        return f"(clustered by {', '.join(clustered_by)})"
    return "(none)"


def _carried_properties(have: Table) -> tuple[tuple[str, str], ...]:
    """The table's configuration as REPLACE must restate it: features stay in the protocol by themselves,
    keys live in delta-sync's properties, and what Delta maintains is left to Delta."""
    carried = {
        k: v
        for k, v in have.properties
        if not k.lower().startswith("delta.feature.") and not k.lower().startswith(_DELTA_MANAGED)
    }
    if have.primary_key is not None:
        carried[keys.PRIMARY_KEY_PROPERTY] = keys.encode_primary_key(have.primary_key)
    for key in have.foreign_keys:
        carried[keys.foreign_key_property(key)] = keys.encode_foreign_key(key)
    return tuple(sorted(carried.items()))


def _carried_checks(have: Table, want: Table) -> tuple[Check, ...]:
    """The CHECKs the rewrite restates: the table's NOT NULLs (REPLACE ... AS SELECT makes every column
    nullable, so NOT NULL becomes delta-sync's NOT NULL CHECK) and the CHECKs the spec keeps as they are.
    A CHECK the spec changes or drops is left out, and the rest of the plan adds its new version."""
    carried = {c.name: c for c in have.checks if c.name.startswith(NOT_NULL_PREFIX)}
    for col in have.columns:
        if not col.nullable:
            check = not_null_check(col)
            carried[check.name] = check
    for check in have.checks:
        declared = want.check(check.name)
        if declared is not None and _same_sql(check.expression, declared.expression):
            carried[check.name] = replace(check, origin=declared.origin)
    return tuple(sorted(carried.values(), key=lambda c: c.name))


def after_rewrite(have: Table, rewrite: RewriteTable) -> Table:
    """The table as the rewrite leaves it: converted columns lose their comment and default (a CAST
    carries no column metadata), every NOT NULL is a CHECK, the layout and rules are the rewrite's."""
    columns = []
    for col in have.columns:
        not_null = not col.nullable or col.not_null_by_check
        conversion = rewrite.conversion(col.name)
        if conversion is not None:
            columns.append(Column(col.name, conversion.after, True, not_null_by_check=not_null))
        else:
            columns.append(replace(col, nullable=True, not_null_by_check=not_null))
    return replace(
        have,
        columns=tuple(columns),
        checks=rewrite.checks,
        partitioned_by=rewrite.partitioned_by,
        clustered_by=rewrite.clustered_by,
    )


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
            ):
                names = ()
            case _:
                assert_never(action)
        changed |= {n.lower() for n in names}
    return changed


def _checks_first(actions: list[Action]) -> list[Action]:
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


def _diff_columns(diff: _TableDiff) -> dict[str, str]:
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
                if _generated_from(have, source.name):
                    diff.block(
                        col.key,
                        f"generated column(s) {', '.join(_generated_from(have, source.name))} compute from "
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
    if added:
        diff.actions.append(AddColumns(want.name, tuple(added)))
    _drop_columns(diff, [c for c in have.columns if c.key not in matched])
    return renamed


def _add_column(diff: _TableDiff, col: Column, added: list[Column]) -> None:
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
            if _append_only(diff.have):
                diff.block(col.key, *_append_only_backfill(col), col)
                return
            diff.actions.append(Backfill(diff.want.name, col.name, col.backfill, col.type, col.origin))
        diff.enforced.append(not_null_check(col))
    if _has_ntz(col.type):
        diff.need(TIMESTAMP_NTZ, f"`{col.name}` of type {col.type} needs the timestampNtz feature", col.origin)
    _need_mapping_for_names(diff, [col])
    added.append(replace(col, nullable=True, default=None))
    if col.default is not None:
        diff.need(COLUMN_DEFAULTS, f"the default of `{col.name}` needs column defaults", col.origin)
        diff.actions.append(SetDefault(diff.want.name, col.name, None, col.default, col.origin))


def _need_mapping_for_names(diff: _TableDiff, columns: list[Column]) -> None:
    odd = mapping_only_names(columns)
    if odd:
        names = ", ".join(f"`{n}`" for n in odd)
        diff.need(
            COLUMN_MAPPING,
            f"the name(s) {names} need column mapping (Delta refuses spaces or any of ,;{{}}()= in names otherwise)",
            columns[0].origin,
        )


def _drop_columns(diff: _TableDiff, gone: list[Column]) -> None:
    droppable = []
    for col in gone:
        if _generated_from(diff.have, col.name) and col.generated is None:
            diff.block(
                col.key,
                f"generated column(s) {', '.join(_generated_from(diff.have, col.name))} compute from "
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


def _diff_column(diff: _TableDiff, have: Column, want: Column) -> None:
    name = diff.want.name
    if (have.generated, have.identity) != (want.generated, want.identity) and not _same_generated(have, want):
        diff.block(
            want.key,
            f"column `{want.name}` changes its generation or identity ({_describe_generation(have)} -> "
            f"{_describe_generation(want)}); Delta fixes both at create time",
            "keep the spec as the table is, or rebuild the table by hand (CREATE OR REPLACE ... AS SELECT)",
            want,
        )
    if have.type != want.type and not _same_shape(have.type, want.type):
        _diff_type(diff, have, want)
    if have.nullable and not want.nullable:
        diff.enforced.append(not_null_check(want))
        if want.backfill is not None and not have.not_null_by_check and diff.have.num_files != 0:
            if _append_only(diff.have):
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
    if not _same_sql(have.default, want.default):
        diff.need(COLUMN_DEFAULTS, f"the default of `{want.name}` needs column defaults", want.origin)
        diff.actions.append(SetDefault(name, want.name, have.default, want.default, want.origin))


def _append_only_backfill(col: Column) -> tuple[str, str]:
    return (
        f"`{col.name}` is to be backfilled, but the table is append-only (delta.appendOnly): Delta refuses UPDATE",
        f"keep `{col.name}` nullable (remove nullable: false and backfill:), or turn delta.appendOnly off first",
    )


def _same_generated(have: Column, want: Column) -> bool:
    return have.identity == want.identity and _same_sql(have.generated, want.generated)


def _describe_generation(col: Column) -> str:
    if col.generated is not None:
        return f"generated as {col.generated}"
    if col.identity is not None:
        kind = "always" if col.identity.always else "by default"
        return f"identity {kind} (start {col.identity.start}, step {col.identity.step})"
    return "plain"


def _same_shape(before: str, after: str) -> bool:
    """Equal but for the order or case of struct fields, which Delta does not change in place."""
    old, new = sqltypes.struct_fields(before), sqltypes.struct_fields(after)
    if old is not None and new is not None:
        by_key = {f.key: f for f in old}
        return len(old) == len(new) and all(
            f.key in by_key
            and by_key[f.key].nullable == f.nullable
            and by_key[f.key].comment == f.comment
            and _same_shape(by_key[f.key].type, f.type)
            for f in new
        )
    old_element, new_element = sqltypes.element_type(before), sqltypes.element_type(after)
    if old_element is not None and new_element is not None:
        return _same_shape(old_element, new_element)
    old_map, new_map = sqltypes.map_types(before), sqltypes.map_types(after)
    if old_map is not None and new_map is not None:
        return _same_shape(old_map[0], new_map[0]) and _same_shape(old_map[1], new_map[1])
    return before == after


def _diff_type(diff: _TableDiff, have: Column, want: Column) -> None:
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
    dependents = _generated_from(diff.have, have.name)
    if dependents:
        diff.block(
            want.key,
            f"generated column(s) {', '.join(dependents)} compute from `{want.name}`, so its type is fixed",
            f"keep `type: {have.type}`",
            want,
        )
        return
    changes = _TypeChanges(diff.want, want, diff)
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
class _TypeChanges:
    """The in-place statements turning one column type into another, walking into nested types.

    Struct fields can be added (nullable), dropped (column mapping), commented, loosened to nullable
    and retyped; array elements and map keys/values can be widened. Anything else is refused.
    """

    table: Table
    column: Column
    owner: _TableDiff
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
        if _has_ntz(after) and not _has_ntz(before):
            self.features.append((TIMESTAMP_NTZ, f"`{'.'.join(path)}` of type {after} needs the timestampNtz feature"))
        name_ = self.table.name
        self.actions.append(AlterColumnType(name_, name, before, after, self.column.origin, parent))
        return True

    def _struct(self, path: tuple[str, ...], before: list[sqltypes.Field], after: list[sqltypes.Field]) -> bool:
        table, origin = self.table.name, self.column.origin
        old = {f.key: f for f in before}
        added: list[Column] = []
        for new in after:
            current = old.pop(new.key, None)
            if current is None:
                if not new.nullable:
                    return self.refuse((*path, new.name), "is a new NOT NULL struct field, which Delta cannot add")
                if _has_ntz(new.type):
                    self.features.append((TIMESTAMP_NTZ, f"`{new.name}` of type {new.type} needs timestampNtz"))
                added.append(Column(new.name, new.type, True, new.comment))
                _need_mapping_for_names(self.owner, [Column(".".join((*path, new.name)), new.type, origin=origin)])
                continue
            if not self.diff(path, current.name, current.type, new.type):
                return False
            if not current.nullable and new.nullable:
                self.actions.append(DropNotNull(table, current.name, origin, path))
            elif current.nullable and not new.nullable:
                return self.refuse((*path, new.name), "cannot become NOT NULL: Delta only loosens nested fields")
            if current.comment != new.comment:
                self.actions.append(SetColumnComment(table, current.name, current.comment, new.comment, origin, path))
        if added:
            self.actions.append(AddColumns(table, tuple(added), path))
        if old:
            if not self.owner.capabilities.drop_column:
                fields = ", ".join(f"`{f.name}`" for f in old.values())
                return self.refuse(path, f"loses {fields}, but {self.owner.refused_by_catalog('DROP COLUMN')}")
            gone = tuple(Column(f.name, f.type) for f in old.values())
            self.features.append((COLUMN_MAPPING, f"dropping fields of `{'.'.join(path)}` needs column mapping"))
            self.actions.append(DropColumns(table, gone, path, origin))
        return True


def _renamed(columns: tuple[str, ...], renamed: dict[str, str]) -> list[str]:
    """Current key columns under their new names: Delta carries a rename into partitioning and clustering."""
    return [renamed.get(c.lower(), c).lower() for c in columns]


def _diff_partitioning(diff: _TableDiff, renamed: dict[str, str]) -> None:
    have, want = diff.have, diff.want
    if _renamed(have.partitioned_by, renamed) == [c.lower() for c in want.partitioned_by]:
        return
    shown_have = ", ".join(have.partitioned_by) or "none"
    shown_want = ", ".join(want.partitioned_by) or "none"
    diff.block(
        "partitioned_by",
        f"partitioning changes ({shown_have}) -> ({shown_want}); Delta cannot repartition a table in place",
        diff.cannot_rewrite(f"keep partitioned_by: [{', '.join(have.partitioned_by)}]"),
    )


def _diff_clustering(diff: _TableDiff, renamed: dict[str, str]) -> None:
    have, want = diff.have, diff.want
    before = set(_renamed(have.clustered_by, renamed))
    after = {c.lower() for c in want.clustered_by}
    if before == after:
        return
    if have.partitioned_by:
        diff.block(
            "clustered_by",
            "a partitioned table cannot be clustered",
            diff.cannot_rewrite("remove clustered_by"),
        )
        return
    dropped = {c.key for a in diff.actions if isinstance(a, DropColumns) and not a.parent for c in a.columns}
    released = before & dropped
    if released and not after <= {c.key for c in have.columns}:
        # A clustering column can only be dropped once released, and new keys only exist after
        # ADD COLUMNS: release first (keeping what stays), then cluster by the new keys.
        keep = tuple(c for c in have.clustered_by if c.lower() not in released)
        diff.actions.append(ClusterBy(want.name, have.clustered_by, keep, True, want.origin))
        diff.actions.append(ClusterBy(want.name, keep, want.clustered_by, False, want.origin))
        return
    diff.actions.append(ClusterBy(want.name, have.clustered_by, want.clustered_by, bool(released), want.origin))


def _diff_comment(diff: _TableDiff) -> None:
    have, want = diff.have.comment, diff.want.comment
    if have == want:
        return
    update = next((i for i, a in enumerate(diff.actions) if isinstance(a, SetProperties)), None)
    if want is not None and update is not None:
        # Delta stores `'comment'` in SET TBLPROPERTIES as the table comment: one commit, not two.
        properties = diff.actions[update]
        assert isinstance(properties, SetProperties)
        changes = (*properties.changes, PropertyChange(TABLE_COMMENT_KEY, have, want))
        diff.actions[update] = replace(properties, changes=changes)
        return
    diff.actions.append(SetTableComment(diff.want.name, have, want, diff.want.origin))


def property_value_key(key: str, value: str) -> str:
    """Compare values as Delta means them: `delta.*` booleans case-insensitively, and a feature
    `enabled` as `supported` (Delta accepts both and reports every feature as supported)."""
    lowered = key.lower()
    if lowered.startswith("delta.feature.") and value.lower() in ("supported", "enabled"):
        return "supported"
    if lowered.startswith("delta.") and value.lower() in ("true", "false"):
        return value.lower()
    return value


def _current_property(have: dict[str, str], key: str) -> str | None:
    if key in have:
        return have[key]
    if key.lower().startswith("delta."):
        # Delta rewrites the case of `delta.*` keys to their canonical spelling.
        return next((v for k, v in have.items() if k.lower() == key.lower()), None)
    return None


def _is_key_property(key: str) -> bool:
    """Keys are delta-sync's own properties: planned as keys (_diff_keys), never as properties."""
    lowered = key.lower()
    return lowered == keys.PRIMARY_KEY_PROPERTY or lowered.startswith(keys.FOREIGN_KEY_PREFIX)


def _diff_properties(diff: _TableDiff) -> None:
    current = diff.have.property_map
    enabled = {key.lower() for key in diff.features}
    changes = []
    for key, value in diff.want.properties:
        if _is_key_property(key):
            continue
        before = _current_property(current, key)
        if key.lower() in enabled and property_value_key(key, diff.features[_key(diff, key)][0]) == (
            property_value_key(key, value)
        ):
            continue
        if before is None and _off_and_absent(diff, key, value):
            continue
        if before is None or property_value_key(key, before) != property_value_key(key, value):
            changes.append(PropertyChange(key, before, value))
    if changes:
        diff.actions.append(SetProperties(diff.want.name, tuple(changes), diff.want.origin))
    for key, value in diff.want.properties:
        feature = protocol.feature_of_property(key, value)
        if feature is not None and feature in protocol.REMOVABLE_FEATURES:
            # Turning the property off only stops new use: the feature stays until it is dropped.
            _drop_feature(diff, feature, f"`{key}` is {value}")
    removed = []
    for key in diff.want.removed_properties:
        if _is_key_property(key):
            continue
        before = _current_property(current, key)
        if before is not None and key.lower().startswith(protocol.FEATURE_PREFIX):
            feature = protocol.canonical(key.split(".", 2)[2])
            if feature in protocol.REMOVABLE_FEATURES:
                _drop_feature(diff, feature, f"`{key}` is null")
                continue
            # UNSET leaves a feature in the protocol: it would be planned again on every run.
            diff.block(
                key,
                f"`{key}` cannot be removed: open-source Delta cannot drop the {feature} feature from a table",
                "remove the null entry from the spec (the table keeps the feature)",
            )
        elif before is not None:
            removed.append((key, before))
    if removed:
        diff.actions.append(UnsetProperties(diff.want.name, tuple(removed), diff.want.origin))


def _features_present(diff: _TableDiff) -> set[str]:
    """The table's features once this plan's feature steps ran."""
    return protocol.named_features(diff.have) | {
        f for k, (v, _why, _at) in diff.features.items() for f in protocol.features_of_properties([(k, v)])
    }


def _off_and_absent(diff: _TableDiff, key: str, value: str) -> bool:
    """A feature's switch declared off on a table without the feature: not set means off, and DROP
    FEATURE removes some switches (`delta.enableTypeWidening`) with the feature."""
    feature = protocol.feature_of_property(key, value)
    return feature is not None and feature not in _features_present(diff)


def _drop_feature(diff: _TableDiff, feature: str, why: str) -> None:
    """`ALTER TABLE ... DROP FEATURE` of a feature the table has (or gets from this plan) and the spec turns
    off; refused with the way out where Delta would refuse it."""
    feature = protocol.canonical(feature)
    present = _features_present(diff)
    if feature not in present or any(isinstance(a, DropFeature) and a.feature == feature for a in diff.actions):
        return
    subject = f"{protocol.FEATURE_PREFIX}{feature}"
    named = {
        protocol.canonical(k[len(protocol.FEATURE_PREFIX) :])
        for k, v in diff.want.properties
        if k.lower().startswith(protocol.FEATURE_PREFIX) and v.lower() in ("supported", "enabled")
    }
    if feature in named:
        return  # the switch is off, and the spec keeps the feature itself
    if feature == "checkConstraints":
        if diff.want.checks or diff.enforced:
            columns = ", ".join(f"`{c.name}`" for c in diff.enforced)
            remedy = "remove the spec's checks" + (f" and `nullable: false` of {columns}" if columns else "")
            diff.block(
                subject,
                "the checkConstraints feature cannot be dropped while the table keeps CHECK constraints",
                f"{remedy} first, or keep the feature",
            )
            return
    elif feature in protocol.features_of_table(diff.want):
        diff.block(subject, f"the spec both turns the {feature} feature on and drops it", "keep one of the two")
        return
    dependents = sorted(f for f, needs in protocol.REQUIRES.items() if feature in needs and f in present)
    if dependents:
        diff.block(
            subject,
            f"the {feature} feature cannot be dropped while the table has {', '.join(dependents)}, which needs it",
            f"drop {', '.join(dependents)} first (apply), then {feature}; or keep it",
        )
        return
    odd = mapping_only_names(diff.want.columns)
    if feature == "columnMapping" and odd:
        names = ", ".join(f"`{n}`" for n in odd)
        diff.block(
            subject,
            f"column mapping cannot be dropped while column names need it ({names})",
            "rename those columns first, or keep the feature",
        )
        return
    reason = f"{why}: {protocol.drop_reason(feature)}"
    diff.actions.append(DropFeature(diff.want.name, feature, reason))


def _key(diff: _TableDiff, key: str) -> str:
    return next(k for k in diff.features if k.lower() == key.lower())


def _generated_from(table: Table, column: str) -> list[str]:
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


def _same_sql(current: str | None, desired: str | None) -> bool:
    if current is None or desired is None:
        return current is desired
    try:
        return expressions.normalize(current) == expressions.normalize(desired)
    except expressions.ExpressionError:
        # Written outside delta-sync in a form we do not parse: replace it with the declared one.
        return False


def _diff_checks(diff: _TableDiff) -> None:
    have, want = diff.have, diff.want
    desired = {c.name: c for c in (*want.checks, *diff.enforced)}
    for check in sorted(desired.values(), key=lambda c: c.name):
        existing = have.check(check.name)
        if existing is None:
            diff.actions.append(AddCheck(want.name, check))
            continue
        read = sorted(c for c in diff.touched if references(existing.expression, c))
        if read or not _same_sql(existing.expression, check.expression):
            moved_for = _moved_for(read) if _same_sql(existing.expression, check.expression) else None
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
