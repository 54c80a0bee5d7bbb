"""A table spec as a pyspark `StructType`: `delta_sync.spark_schema`'s Spark side. The schema itself is built
without Spark (`delta_sync.sql.schema_json`); this module only hands its JSON form to pyspark, which starts no
JVM for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import StructType


def struct_type(schema: Mapping[str, Any]) -> StructType:
    """The `StructType` of a schema in Spark's JSON form (`StructType.jsonValue()`'s)."""
    return StructType.fromJson(dict(schema))
