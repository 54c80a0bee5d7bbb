"""Terse constructors for model values, so tests read like the specs they stand for.

table("s.t", col("id", "bigint", nullable=False), checks={"pos": "id > 0"}, properties={...})
state(t1, t2)                 # schemas of t1 and t2 exist
state(t1, schemas=())         # no schema exists
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from delta_sync.model.state import CatalogState, Check, Column, Identity, Origin, SchemaName, Table, TableName


def name(text: str) -> TableName:
    return TableName.parse(text)


def schema(text: str) -> SchemaName:
    parts = text.split(".")
    return SchemaName(None, parts[0]) if len(parts) == 1 else SchemaName(parts[0], parts[1])


def col(
    column: str,
    type_: str = "string",
    *,
    nullable: bool = True,
    comment: str | None = None,
    origin: Origin | None = None,
) -> Column:
    return Column(column, type_, nullable=nullable, comment=comment, origin=origin)


def check(check_name: str, expression: str) -> Check:
    return Check(check_name, expression)


def table(
    table_name: str | TableName,
    *columns: Column,
    comment: str | None = None,
    checks: Mapping[str, str] | None = None,
    partitioned_by: Iterable[str] = (),
    properties: Mapping[str, str] | None = None,
    origin: Origin | None = None,
) -> Table:
    """Checks keep the order given; properties are sorted, as the model promises."""
    return Table(
        name=table_name if isinstance(table_name, TableName) else TableName.parse(table_name),
        columns=tuple(columns),
        comment=comment,
        checks=tuple(Check(k, v) for k, v in (checks or {}).items()),
        partitioned_by=tuple(partitioned_by),
        properties=tuple(sorted((properties or {}).items())),
        origin=origin,
    )


def state(*tables: Table, schemas: Iterable[str] | None = None) -> CatalogState:
    """Tables keyed by name; `schemas` defaults to the schemas of the tables given."""
    known = frozenset(t.name.schema_name for t in tables) if schemas is None else frozenset(schema(s) for s in schemas)
    return CatalogState(tables={t.name: t for t in tables}, schemas=known)


def column(
    column_name: str,
    type_: str = "string",
    *,
    nullable: bool = True,
    comment: str | None = None,
    default: str | None = None,
    generated: str | None = None,
    identity: Identity | None = None,
    renamed_from: str | None = None,
    not_null_by_check: bool = False,
    backfill: str | None = None,
    using: str | None = None,
    origin: Origin | None = None,
) -> Column:
    """Like `col`, with every option a column can carry (spec side and current side)."""
    return Column(
        column_name,
        type_,
        nullable=nullable,
        comment=comment,
        default=default,
        generated=generated,
        identity=identity,
        origin=origin,
        renamed_from=renamed_from,
        not_null_by_check=not_null_by_check,
        backfill=backfill,
        using=using,
    )


def live(
    base: Table,
    *,
    num_files: int | None = 1,
    clustered_by: Iterable[str] | None = None,
    version: int | None = None,
    size_bytes: int | None = None,
    protocol: tuple[int, int] | None = None,
) -> Table:
    """`base` as read from Delta: with a file count (rows present by default) and its clustering,
    the version read, the size of its data files and its protocol versions."""
    return Table(
        name=base.name,
        columns=base.columns,
        comment=base.comment,
        checks=base.checks,
        partitioned_by=base.partitioned_by,
        clustered_by=base.clustered_by if clustered_by is None else tuple(clustered_by),
        properties=base.properties,
        removed_properties=base.removed_properties,
        origin=base.origin,
        num_files=num_files,
        version=version,
        size_bytes=size_bytes,
        protocol=protocol,
    )


class WithoutViews:
    """For fake catalogs: a catalog that holds no view and whose analyser resolves every view query."""

    def list_views(self, schema: SchemaName) -> list[TableName]:
        return []

    def statement_danger(self, statement: str) -> str | None:
        # The decision from a parse is tested on Spark's parser (tests/spark/test_sql_confirm.py); a fake has
        # none, so it names the one kind the command-line tests give it.
        return "DROP TABLE removes the table and its data" if statement.upper().startswith("DROP ") else None

    def analyse_queries(
        self,
        stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]],
        queries: Sequence[tuple[str, str]],
    ) -> list[str | None]:
        return [None for _ in queries]
