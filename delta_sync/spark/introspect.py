"""What Spark reports about a table -> the state model. Pure (it imports no pyspark), so it is tested without a
JVM.

The readers (table_reads, delta_log, connect) only fetch raw values: the schema as JSON and the row of
DESCRIBE DETAIL, or the same from the Delta log. Everything that interprets them lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from delta_sync.model import keys
from delta_sync.model.state import Check, Column, Identity, Table, TableName
from delta_sync.planning.diff.conventions import not_null_check_name
from delta_sync.sql import types as sqltypes

CONSTRAINT_PREFIX = "delta.constraints."


def _comment(value: Any) -> str | None:
    # Spark cannot remove a comment, only blank it: an empty comment means none.
    return value if isinstance(value, str) and value != "" else None


def _identity(metadata: Mapping[str, Any]) -> Identity | None:
    if "delta.identity.start" not in metadata:
        return None
    return Identity(
        start=int(metadata["delta.identity.start"]),
        step=int(metadata.get("delta.identity.step", 1)),
        always=not bool(metadata.get("delta.identity.allowExplicitInsert", False)),
    )


def column_from_field(field: Mapping[str, Any]) -> Column:
    """A top-level field of Delta's own schema (the log's, which keeps generation and identity)."""
    metadata = field.get("metadata") or {}
    return Column(
        name=field["name"],
        type=sqltypes.from_spark_json(field["type"], metadata),
        nullable=bool(field["nullable"]),
        comment=_comment(metadata.get("comment")),
        default=metadata.get("CURRENT_DEFAULT"),
        generated=metadata.get("delta.generationExpression"),
        identity=_identity(metadata),
    )


def table_from_catalog(
    name: TableName,
    schema_json: Mapping[str, Any],
    description: str | None,
    partition_columns: Sequence[str],
    properties: Mapping[str, str],
    table_features: Sequence[str],
    clustering_columns: Sequence[str] = (),
    num_files: int | None = None,
    version: int | None = None,
    size_bytes: int | None = None,
    protocol: tuple[int, int] | None = None,
    location: str | None = None,
) -> Table:
    columns = tuple(column_from_field(f) for f in schema_json["fields"])
    checks = tuple(
        sorted(
            (
                Check(key[len(CONSTRAINT_PREFIX) :].lower(), value)
                for key, value in properties.items()
                if key.lower().startswith(CONSTRAINT_PREFIX)
            ),
            key=lambda c: c.name,
        )
    )
    enforced = {c.name for c in checks}
    columns = tuple(
        dataclasses.replace(c, not_null_by_check=True) if c.nullable and not_null_check_name(c.name) in enforced else c
        for c in columns
    )
    plain = {k: v for k, v in properties.items() if not k.lower().startswith(CONSTRAINT_PREFIX)}
    # Where the catalog refuses key constraints delta-sync keeps keys as properties: they are keys here,
    # never property differences.
    primary_key, foreign_keys, plain = keys.from_properties(plain)
    # Features live in the protocol, not the configuration; expose them under the key users set.
    plain.update({f"delta.feature.{feature}": "supported" for feature in table_features})
    return Table(
        name=name,
        columns=columns,
        comment=_comment(description),
        checks=checks,
        partitioned_by=tuple(partition_columns),
        clustered_by=tuple(clustering_columns),
        properties=tuple(sorted(plain.items())),
        num_files=num_files,
        version=version,
        size_bytes=size_bytes,
        primary_key=primary_key,
        foreign_keys=foreign_keys,
        protocol=protocol,
        location=location or None,
    )
