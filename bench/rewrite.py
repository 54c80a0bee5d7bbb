"""A rewrite and a backfill by delta-sync vs the same work written by hand in PySpark, side by side in one warm
session, on twin tables of ROWS rows (each rep restores both twins to their first version, not timed).

python bench/rewrite.py [--rows 2000000] [--reps 3] [--out bench/results_rewrite.json]

- rewrite: `amount` string -> int and the table repartitioned by `region` instead of `day`. delta-sync: what
  `apply --allow rewrite,breaking` runs (read, plan, the probe scan of the conversion and the CHECK it restates,
  the REPLACE TABLE ... AS SELECT, the re-read that confirms convergence). By hand: `df.withColumn(cast)
  .write.mode("overwrite").option("overwriteSchema", "true").partitionBy("region").saveAsTable(t)`, the usual
  PySpark recipe (it keeps the table's properties and CHECKs, which delta-sync restates).
- backfill: `note` nullable -> NOT NULL with `backfill: 'n/a'` on 10% NULL rows. delta-sync: as above (Delta's
  per-file null counts say how many rows it updates; a constant cannot leave a NULL), then UPDATE and ADD
  CONSTRAINT. By hand: the same UPDATE and ADD CONSTRAINT.
- backfill_expression: the same with `backfill: concat('n', id)`: delta-sync scans first for rows it would leave
  NULL (one scan of `id` and `note`), so that a failing backfill stops before the UPDATE commits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from delta_sync.model.state import CatalogState, Check, Column, Table, TableName
from delta_sync.planning.hazards import Hazard
from delta_sync.review import execution, pipeline
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.session import LocalCatalog

OURS, THEIRS = TableName(None, "bench", "ours"), TableName(None, "bench", "theirs")
ALLOW = (Hazard.REWRITE, Hazard.BREAKING)
# A literal backfill (the common case: no row can be left NULL, so no scan before the UPDATE) and an
# expression over the row (the probe scans for rows it would leave NULL).
CONSTANT, EXPRESSION = "'n/a'", "concat('n', id)"


def build(catalog: SparkCatalog, rows: int) -> None:
    spark = catalog.spark
    spark.sql("CREATE SCHEMA IF NOT EXISTS bench")
    for name in (OURS, THEIRS):
        spark.sql(f"DROP TABLE IF EXISTS {name.sql()}")
        spark.range(rows).selectExpr(
            "id",
            "CAST(id % 100000 AS STRING) AS amount",
            "CASE WHEN id % 10 = 0 THEN NULL ELSE concat('note ', id) END AS note",
            "element_at(array('eu', 'us', 'apac'), CAST(id % 3 AS INT) + 1) AS region",
            "date_add(DATE'2026-01-01', CAST(id % 30 AS INT)) AS day",
        ).write.format("delta").partitionBy("day").saveAsTable(name.sql())
        spark.sql(f"ALTER TABLE {name.sql()} ADD CONSTRAINT id_ok CHECK (id >= 0)")


def desired(name: TableName, *, rewrite: bool, fill: str = "") -> CatalogState:
    columns = (
        Column("id", "bigint"),
        Column("amount", "int" if rewrite else "string"),
        Column("note", "string", nullable=rewrite, backfill=None if rewrite else fill),
        Column("region", "string"),
        Column("day", "date"),
    )
    layout = ("region",) if rewrite else ("day",)
    table = Table(name, columns, checks=(Check("id_ok", "id >= 0"),), partitioned_by=layout)
    return CatalogState({name: table})


def delta_sync_apply(catalog: SparkCatalog, state: CatalogState) -> int:
    review = pipeline.review(catalog, state, ALLOW, applying=True)
    assert not review.blocked, review.assessment.blocks
    ran = execution.apply_converging(catalog, state, review.plan)
    assert execution.verify_converged(catalog, state).is_empty
    return ran


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", default="rewrite,backfill,backfill_expression")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="ds-bench-rewrite-"))
    catalog = SparkCatalog(LocalCatalog(home))
    spark = catalog.spark
    build(catalog, args.rows)
    first = {n: int(spark.sql(f"DESCRIBE HISTORY {n.sql()} LIMIT 1").collect()[0]["version"]) for n in (OURS, THEIRS)}

    def restore(name: TableName) -> None:
        spark.sql(f"RESTORE TABLE {name.sql()} TO VERSION AS OF {first[name]}")

    def rewrite_by_hand() -> None:
        from pyspark.sql import functions

        frame = spark.table(THEIRS.sql()).withColumn("amount", functions.col("amount").cast("int"))
        frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").partitionBy(
            "region"
        ).saveAsTable(THEIRS.sql())

    def backfill_by_hand(fill: str) -> None:
        spark.sql(f"UPDATE {THEIRS.sql()} SET note = ({fill}) WHERE note IS NULL")
        spark.sql(f"ALTER TABLE {THEIRS.sql()} ADD CONSTRAINT ds_nn_note CHECK (`note` IS NOT NULL)")

    cases: dict[str, dict[str, Callable[[], object]]] = {
        "rewrite": {
            "delta_sync": lambda: delta_sync_apply(catalog, desired(OURS, rewrite=True)),
            "by_hand": rewrite_by_hand,
        },
        "backfill": {
            "delta_sync": lambda: delta_sync_apply(catalog, desired(OURS, rewrite=False, fill=CONSTANT)),
            "by_hand": lambda: backfill_by_hand(CONSTANT),
        },
        "backfill_expression": {
            "delta_sync": lambda: delta_sync_apply(catalog, desired(OURS, rewrite=False, fill=EXPRESSION)),
            "by_hand": lambda: backfill_by_hand(EXPRESSION),
        },
    }
    cases = {kind: sides for kind, sides in cases.items() if kind in args.only.split(",")}
    results: dict[str, object] = {"rows": args.rows, "reps": args.reps}
    for kind, sides in cases.items():
        timings: dict[str, list[float]] = {side: [] for side in sides}
        for rep in range(args.reps + 1):  # the first round warms up, untimed
            order = list(sides.items()) if rep % 2 == 0 else list(reversed(sides.items()))
            for side, run in order:
                restore(OURS if side == "delta_sync" else THEIRS)
                started = time.perf_counter()
                run()
                if rep:
                    timings[side].append(time.perf_counter() - started)
        totals = "SELECT count(*), count(note), sum(CAST(amount AS BIGINT)) FROM {}"
        ours = spark.sql(totals.format(OURS.sql())).collect()
        theirs = spark.sql(totals.format(THEIRS.sql())).collect()
        assert ours == theirs, (ours, theirs)
        medians = {side: statistics.median(values) for side, values in timings.items()}
        results[kind] = {
            "timings_s": timings,
            "median_s": medians,
            "ratio": medians["delta_sync"] / medians["by_hand"],
            "same_result": [tuple(r) for r in ours],
        }
        print(
            f"{kind}: delta-sync {medians['delta_sync']:.2f} s, by hand {medians['by_hand']:.2f} s, "
            f"ratio {medians['delta_sync'] / medians['by_hand']:.2f}x  raw {timings}",
            flush=True,
        )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    json.dump(results, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
