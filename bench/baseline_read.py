"""Baseline for `plan`: read each table's schema and DESCRIBE DETAIL, one table at a time.

python bench/baseline_read.py HOME TABLES_FILE [PASSES]   (one table name per line)

With PASSES > 1 the same reads run again in the same session, each pass timed on its own line
(`pass N SECONDS`): the first pass is what a fresh script pays after its session started, the later ones
what a live session (a notebook, a job that keeps its SparkSession) pays for the same reads.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from baseline_session import hand_session


def read_all(spark: object, names: list[str]) -> int:
    read = 0
    for name in names:
        schema = spark.table(name).schema  # type: ignore[attr-defined]
        detail = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].asDict()  # type: ignore[attr-defined]
        read += bool(schema.fields) and bool(detail["location"])
    return read


def main(home: Path, tables_file: Path, passes: int = 1) -> None:
    spark = hand_session(home)
    names = tables_file.read_text().split()
    for number in range(1, passes + 1):
        started = time.perf_counter()
        read = read_all(spark, names)
        print(f"pass {number} {time.perf_counter() - started:.6f}", flush=True)
    print(f"read {read} tables")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
