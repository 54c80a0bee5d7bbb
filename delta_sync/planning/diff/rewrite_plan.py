"""The rewrite of a table: when a change cannot be made in place (a type Delta cannot change, a new layout),
one REPLACE TABLE ... AS SELECT that converts and carries the table (`plan_rewrite`), why a table cannot be
rewritten (`rewrite_refusal`), and the table as the rewrite leaves it (`after_rewrite`)."""

from __future__ import annotations

from dataclasses import replace

from delta_sync.model import keys
from delta_sync.model.state import (
    Capabilities,
    Check,
    Column,
    Table,
    quote_ident,
)
from delta_sync.planning.actions import Conversion, RewriteTable
from delta_sync.planning.diff.column_diff import TypeChanges, same_shape
from delta_sync.planning.diff.conventions import (
    APPEND_ONLY,
    COLUMN_MAPPING,
    NOT_NULL_PREFIX,
    generated_from,
    not_null_check,
    same_sql,
)
from delta_sync.planning.diff.table_diff import TableDiff
from delta_sync.sql import types as sqltypes

# Configuration keys Delta maintains itself: a rewrite leaves them to Delta instead of carrying them.
_DELTA_MANAGED = ("delta.columnmapping.maxcolumnid", "delta.rowtracking.materialized")


def source_column(have: Table, col: Column) -> Column | None:
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
        source = source_column(have, declared) if declared is not None else have.column(name)
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
    probe = TableDiff(have, want, capabilities=capabilities)
    for col in want.columns:
        source = source_column(have, col)
        if source is None or source.type == col.type or same_shape(source.type, col.type):
            continue
        if source.identity is not None or source.generated is not None or generated_from(have, source.name):
            continue  # blocked in place: their types are fixed
        if TypeChanges(want, col, probe).diff((), col.name, source.type, col.type):
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
        if declared is not None and same_sql(check.expression, declared.expression):
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
