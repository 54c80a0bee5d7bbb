"""What Spark reports about a table -> the state model. Pure, so it is tested without a JVM.

The Spark side (delta_sync.spark.reader) only fetches raw values: the schema as JSON and the row
of DESCRIBE DETAIL. Everything that interprets them lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from delta_sync import sqltypes
from delta_sync.model import Check, Column, Table, TableName

CONSTRAINT_PREFIX = "delta.constraints."


def _comment(value: Any) -> str | None:
    # Spark cannot remove a comment, only blank it: an empty comment means none.
    return value if isinstance(value, str) and value != "" else None


def table_from_catalog(
    name: TableName,
    schema_json: Mapping[str, Any],
    description: str | None,
    partition_columns: Sequence[str],
    properties: Mapping[str, str],
    table_features: Sequence[str],
) -> Table:
    columns = tuple(
        Column(
            name=f["name"],
            type=sqltypes.from_spark_json(f["type"], f.get("metadata")),
            nullable=bool(f["nullable"]),
            comment=_comment((f.get("metadata") or {}).get("comment")),
        )
        for f in schema_json["fields"]
    )
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
    plain = {k: v for k, v in properties.items() if not k.lower().startswith(CONSTRAINT_PREFIX)}
    # Features live in the protocol, not the configuration; expose them under the key users set.
    plain.update({f"delta.feature.{feature}": "supported" for feature in table_features})
    return Table(
        name=name,
        columns=columns,
        comment=_comment(description),
        checks=checks,
        partitioned_by=tuple(partition_columns),
        properties=tuple(sorted(plain.items())),
    )
