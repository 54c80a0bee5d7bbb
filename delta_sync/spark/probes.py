"""Checking a table's data against rules and keys before a statement needs them to hold: one scan for all rules
of a table (none when Delta's per-file null counts answer every NOT NULL rule), one Spark job for all its keys,
and the rows that break them as SQL literals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.errors import CatalogError, DeltaSyncError
from delta_sync.model.state import Check, ForeignKey, PrimaryKey, TableName, quote_ident
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.key_checks import KeyCheck
from delta_sync.planning.probe_queries import (
    CAST_RULE_PREFIX,
    FILL_RULE_PREFIX,
    before_column,
    is_helper_column,
    not_null_column,
    probe_sql,
    sample_sql,
    unfilled_of,
)
from delta_sync.spark import table_reads
from delta_sync.spark.exceptions import engine_failure
from delta_sync.spark.table_reads import SessionCatalog
from delta_sync.sql.literals import sql_literal


def _shown_name(column: str) -> str:
    prefix = before_column("")
    return f"{column[len(prefix) :]} (before)" if column.lower().startswith(prefix) else column


def _key_samples(key: PrimaryKey | ForeignKey, found: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The key values that break `key`, each with its number of rows, as SQL literals."""
    names = (*key.columns, keyprobe.ROWS)
    return tuple(tuple((n, sql_literal(v)) for n, v in zip(names, sample, strict=True)) for sample in found or ())


def probe(
    spark_catalog: SessionCatalog,
    table: TableName,
    checks: Sequence[Check],
    relation: str,
    primary_key: PrimaryKey | None = None,
) -> list[ProbeResult]:
    """At most one scan for all rules of `table`.

    When every rule is a NOT NULL rule, Delta's per-file null counts answer them (if every file
    has them and no deletion vector makes them stale) and no scan runs. Otherwise all rules
    share one aggregate query: the statistics would be a Spark job of their own on top of a scan
    that runs anyway (BENCHMARKS.md, the probe's mixed case). Sample rows are fetched only for
    rules that some rows violate.
    """
    try:
        # NOT NULL rules and a backfill's count of NULLs are both per-file null counts of a column, except
        # a NOT NULL rule on a column a backfill fills (it holds for the filled rows, not the table's).
        filled = {column.lower() for c in checks if (column := unfilled_of(c)) is not None}
        only_nulls = all(
            ((column := not_null_column(c)) is not None and column.lower() not in filled) or unfilled_of(c) is not None
            for c in checks
        )
        known = null_counts(spark_catalog, table, checks) if only_nulls else {}
        rest = [c for c in checks if c.name not in known]
        counts = dict(known)
        if rest:
            row = spark_catalog.spark.sql(probe_sql(relation, rest)).collect()[0]
            counts.update({check.name: int(row[i]) for i, check in enumerate(rest)})
        results = []
        for check in checks:
            samples: tuple[tuple[tuple[str, str], ...], ...] = ()
            if counts[check.name] and not check.name.startswith(FILL_RULE_PREFIX):
                samples = violating_rows(spark_catalog, relation, check, primary_key)
            source = "statistics" if check.name in known else "scan"
            results.append(ProbeResult(table, check.name, counts[check.name], samples, source=source))
        return results
    except DeltaSyncError:
        raise
    except Exception as exc:
        failure = engine_failure(exc)
        first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
        where = ", ".join(f"`{c.name}` ({c.origin})" if c.origin else f"`{c.name}`" for c in checks)
        raise CatalogError(f"Could not check the data of {table} against {where}: {first}") from None


def violating_rows(
    spark_catalog: SessionCatalog, relation: str, check: Check, primary_key: PrimaryKey | None = None
) -> tuple[tuple[tuple[str, str], ...], ...]:
    """Rows violating `check`, their values as SQL literals (the schema alone is read for the columns)."""
    schema = spark_catalog.spark.sql(f"SELECT * FROM {relation}").schema
    # A converted column's value before the conversion is shown as `column (before)`.
    fields = [(f.name, bool(f.nullable)) for f in schema.fields if not is_helper_column(f.name)]
    if check.name.startswith(CAST_RULE_PREFIX):
        fields += [(f.name, True) for f in schema.fields if is_helper_column(f.name)]
    key = primary_key.columns if primary_key is not None else ()
    rows = spark_catalog.spark.sql(sample_sql(relation, check, fields, primary_key=key)).collect()
    return tuple(tuple((_shown_name(k), sql_literal(v)) for k, v in r.asDict(recursive=False).items()) for r in rows)


def probe_keys(
    spark_catalog: SessionCatalog, table: TableName, relation: str, keys: Sequence[KeyCheck]
) -> list[ProbeResult]:
    """One Spark job for all keys of `table`, their samples included (keyprobe.scan_sql)."""
    if not keys:
        return []
    try:
        row = spark_catalog.spark.sql(keyprobe.scan_sql(relation, keys)).collect()[0]
        return [
            ProbeResult(table, key.name, int(row[f"k{i}"]), _key_samples(key, row[f"s{i}"]))
            for i, (key, _parent) in enumerate(keys)
        ]
    except DeltaSyncError:
        raise
    except Exception as exc:
        failure = engine_failure(exc)
        first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
        where = ", ".join(f"`{k.name}` ({k.origin})" if k.origin else f"`{k.name}`" for k, _p in keys)
        raise CatalogError(f"Could not check the data of {table} against the key(s) {where}: {first}") from None


def null_counts(spark_catalog: SessionCatalog, table: TableName, checks: Sequence[Check]) -> dict[str, int]:
    columns = {c.name: col for c in checks if (col := not_null_column(c) or unfilled_of(c)) is not None}
    jvm = getattr(spark_catalog.spark, "_jvm", None)
    location = spark_catalog._locations.get(table)
    if not columns or jvm is None or location is None:
        return {}
    from pyspark.sql import DataFrame

    try:
        snapshot = table_reads.table_snapshot(spark_catalog, table, location)
    except Exception:
        return {}  # no snapshot to read statistics from: scan instead
    if snapshot is None:
        return {}
    # Statistics are keyed by physical name, which column mapping makes differ from the logical one.
    physical = {
        f["name"].lower(): (f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"])
        for f in json.loads(snapshot.schema().json())["fields"]
    }
    wanted = {check: physical[col.lower()] for check, col in columns.items() if col.lower() in physical}
    if not wanted:
        return {}
    files = DataFrame(snapshot.withStats(), spark_catalog.spark)
    aggregates = ["count_if(deletionVector IS NOT NULL) AS dvs"]
    for index, name in enumerate(wanted.values()):
        field = f"stats.nullCount.{quote_ident(name)}"
        aggregates += [f"sum({field}) AS n{index}", f"count_if({field} IS NULL) AS missing{index}"]
    try:
        row = files.selectExpr(*aggregates).collect()[0]
    except Exception:
        return {}  # no statistics for these columns: scan instead
    if row["dvs"]:
        return {}
    return {check: int(row[f"n{i}"] or 0) for i, check in enumerate(wanted) if row[f"missing{i}"] == 0}
