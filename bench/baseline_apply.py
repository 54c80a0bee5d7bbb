"""Baseline for `apply`: the migration's statements, run by hand in one PySpark script.

python bench/baseline_apply.py HOME SQL_FILE   (one statement per line)
"""

from __future__ import annotations

import sys
from pathlib import Path

from baseline_session import hand_session


def main(home: Path, sql_file: Path) -> None:
    spark = hand_session(home)
    statements = sql_file.read_text().splitlines()
    for statement in statements:
        spark.sql(statement)
    print(f"ran {len(statements)} statements")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
