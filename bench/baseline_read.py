"""Baseline for `plan`: read each table's schema and DESCRIBE DETAIL, one table at a time.

python bench/baseline_read.py HOME TABLES_FILE   (one table name per line)
"""

from __future__ import annotations

import sys
from pathlib import Path

from baseline_session import hand_session


def main(home: Path, tables_file: Path) -> None:
    spark = hand_session(home)
    read = 0
    for name in tables_file.read_text().split():
        schema = spark.table(name).schema
        detail = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].asDict()
        read += bool(schema.fields) and bool(detail["location"])
    print(f"read {read} tables")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
