"""Baseline for `plan --rehearse`: what a careful person does by hand before a migration, in one PySpark
script: read each table (as the plan baseline does), then per table a shallow clone at the version read,
the migration's statements on the clone, and a DROP of the clone.

python bench/baseline_rehearse.py HOME TABLES_FILE SQL_FILE   (names one per line; statements one per line)
Prints `rehearsal_s`: the time of the clone + statements + drop part alone.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from baseline_session import hand_session


def main(home: Path, tables_file: Path, sql_file: Path) -> None:
    spark = hand_session(home)
    names = tables_file.read_text().split()
    versions = {}
    for name in names:
        assert spark.table(name).schema.fields
        spark.sql(f"DESCRIBE DETAIL {name}").collect()
        versions[name] = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").collect()[0]["version"]
    statements = sql_file.read_text().splitlines()
    started = time.perf_counter()
    for schema in sorted({n.split(".")[0] for n in names}):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}__scratch")
    for name in names:
        schema, table = name.split(".")
        clone = f"{schema}__scratch.{table}"
        spark.sql(f"CREATE TABLE {clone} SHALLOW CLONE {name} VERSION AS OF {versions[name]}")
        for statement in statements:
            if statement.startswith(f"ALTER TABLE {name} "):
                spark.sql(statement.replace(f"ALTER TABLE {name} ", f"ALTER TABLE {clone} ", 1))
        spark.sql(f"DROP TABLE {clone}")
    print(f"rehearsal_s {time.perf_counter() - started:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
