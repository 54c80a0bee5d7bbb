"""The catalog of a SparkSession the caller owns (`delta_sync.plan(..., spark=spark)`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from delta_sync.model.errors import DeltaSyncError
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.connect import ConnectCatalog


def session_catalog(spark: Any, on_status: Callable[[str], None] = lambda _m: None) -> SparkCatalog:
    """A classic or Spark Connect session, used as it is: never stopped, never reconfigured (apply's
    threads get sessions of their own, and a statement's userMetadata is set back as it was)."""
    module = type(spark).__module__
    if module.startswith("pyspark.sql.connect"):
        return ConnectCatalog(spark, "the given Spark Connect session", on_status)
    if not module.startswith("pyspark.sql") or not hasattr(spark, "newSession"):
        raise DeltaSyncError(f"spark= takes a pyspark SparkSession, not a {type(spark).__qualname__}")
    return SparkCatalog(None, on_status, session=spark)
