"""The SparkSession a hand-written script would build: the same conf and jars as delta-sync's, nothing else."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from delta_sync.spark.jars import delta_jars
from delta_sync.spark.session import LocalCatalog, spark_conf


def hand_session(home: Path) -> Any:
    from pyspark.sql import SparkSession

    for folder in (home / "logs", home / "conf", home / "warehouse"):
        folder.mkdir(parents=True, exist_ok=True)
    os.environ["SPARK_CONF_DIR"] = str(home / "conf")
    builder = SparkSession.builder
    for key, value in spark_conf(LocalCatalog(home), delta_jars()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
