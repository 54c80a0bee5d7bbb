"""Set-up and in-session measurements, each run in its own process (Derby admits one per metastore).

python bench/worker.py build HOME SPECS COUNT     create the estate with delta-sync's API, fill each table
python bench/worker.py create HOME COUNT [THREADS]  create the estate by hand: one CREATE TABLE per table, no rows
python bench/worker.py history HOME TABLES_FILE  Delta history of each table, as JSON
python bench/worker.py probe HOME ROWS REPS      time SparkCatalog.probe vs count(*) in one warm session
python bench/worker.py keys HOME ROWS REPS       time SparkCatalog.probe_keys vs the duplicate check by hand
python bench/worker.py serve-plan HOME SPECS      the library on one live session: a line on stdin -> one
                                                 `delta_sync.plan(SPECS, spark=session)`, timed (`TIME seconds`)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from estate import DOMAINS, create_sql, estate, fill_sql

from delta_sync.model.catalog import APPLY_PARALLEL
from delta_sync.model.state import Check, PrimaryKey, TableName
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning import probe_queries
from delta_sync.review import execution, pipeline
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.session import LocalCatalog
from delta_sync.specs.spec_files import load_specs

# Delta answers a bare count(*) from the log's per-file row counts; this turns that off for a real scan.
METADATA_COUNT = "spark.databricks.delta.optimizeMetadataQuery.enabled"
PROBE_TABLE = TableName(None, "bench", "events")
CHECKS = (
    Check("amount_non_negative", "amount >= 0"),
    Check("status_known", "status IN ('new', 'paid', 'shipped')"),
    Check("quantity_valid", "quantity BETWEEN 0 AND 10000"),
)
NOT_NULL = tuple(Check(f"ds_nn_{c}", f"`{c}` IS NOT NULL") for c in ("customer_id", "amount", "quantity"))
KEY_TABLE = TableName(None, "bench", "orders")
PRIMARY_KEY = PrimaryKey("pk_bench_orders__order_id", ("order_id",))
# Two CHECKs and one NOT NULL rule (`nullable: false` on an existing column): one scan for all three.
MIXED = (*CHECKS[:2], NOT_NULL[0])


def build(home: Path, specs: Path, count: int) -> dict[str, Any]:
    catalog = SparkCatalog(LocalCatalog(home))
    started = time.perf_counter()
    ran = execution.apply_plan(catalog, pipeline.make_plan(catalog, load_specs(specs)), parallel=APPLY_PARALLEL)
    created = time.perf_counter()
    for table in estate(count):
        catalog.spark.sql(fill_sql(table))
    return {"statements": ran, "create_s": created - started, "fill_s": time.perf_counter() - created}


def create(home: Path, count: int, threads: int) -> dict[str, Any]:
    """The estate's tables, empty, each made by one `CREATE TABLE` (one Delta commit, no rows), on
    `threads` threads of one session: minutes for 1,000 tables where `build` (apply, then rows) takes most
    of an hour. `plan` of their specs finds nothing to do (the harness checks that)."""
    from concurrent.futures import ThreadPoolExecutor

    spark = SparkCatalog(LocalCatalog(home)).spark
    started = time.perf_counter()
    for domain in DOMAINS:
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {domain}")
    with ThreadPoolExecutor(max(threads, 1)) as pool:
        list(pool.map(lambda table: spark.sql(create_sql(table)), estate(count)))
    return {"tables": count, "threads": threads, "create_s": time.perf_counter() - started}


def history(home: Path, tables_file: Path) -> dict[str, Any]:
    spark = SparkCatalog(LocalCatalog(home)).spark
    return {
        name: [[int(r["version"]), str(r["operation"])] for r in spark.sql(f"DESCRIBE HISTORY {name}").collect()]
        for name in tables_file.read_text().split()
    }


def probe(home: Path, rows: int, reps: int) -> dict[str, Any]:
    catalog = SparkCatalog(LocalCatalog(home))
    spark = catalog.spark
    spark.sql("CREATE SCHEMA IF NOT EXISTS bench")
    spark.range(rows).selectExpr(
        "id",
        "id % 97 AS customer_id",
        "CAST(id % 1000 AS DECIMAL(18,2)) AS amount",
        "CAST(id % 10 AS INT) AS quantity",
        "CASE id % 3 WHEN 0 THEN 'new' WHEN 1 THEN 'paid' ELSE 'shipped' END AS status",
        "concat('note ', id) AS note",
    ).write.format("delta").saveAsTable(PROBE_TABLE.sql())
    # As `plan` does: read the table (it learns its location), then probe the rows as the plan leaves them.
    table = catalog.read([PROBE_TABLE]).table(PROBE_TABLE)
    assert table is not None
    relation = probe_queries.probe_relation(table, table)
    count_sql = f"SELECT count(*) FROM {PROBE_TABLE.sql()}"

    def count_scan() -> object:
        spark.conf.set(METADATA_COUNT, "false")
        try:
            return spark.sql(count_sql).collect()
        finally:
            spark.conf.unset(METADATA_COUNT)

    cases: dict[str, Callable[[], object]] = {
        "probe_3_checks": lambda: [
            (r.check, r.violations, r.source) for r in catalog.probe(PROBE_TABLE, CHECKS, relation)
        ],
        "probe_2_checks_1_not_null": lambda: [
            (r.check, r.violations, r.source) for r in catalog.probe(PROBE_TABLE, MIXED, relation)
        ],
        # Only NOT NULL rules: Delta's per-file null counts answer them, no scan.
        "probe_3_not_null": lambda: [
            (r.check, r.violations, r.source) for r in catalog.probe(PROBE_TABLE, NOT_NULL, relation)
        ],
        "count_scan": count_scan,
        # One scan that reads the same three columns the rules read (count(*) decodes none of them).
        "count_same_columns": lambda: spark.sql(
            f"SELECT count(amount), count(status), count(quantity) FROM {PROBE_TABLE.sql()}"
        ).collect(),
        "count_default": lambda: spark.sql(count_sql).collect(),
        # The probe's own query run by hand: what delta-sync adds around it (statistics lookup, results).
        "probe_query_by_hand": lambda: spark.sql(probe_queries.probe_sql(relation, CHECKS)).collect(),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    results = {name: repr(run()) for name, run in cases.items()}  # warm-up, and a record of the answers
    for _rep in range(reps):
        for name, run in cases.items():
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return {"rows": rows, "timings": timings, "answers": results}


def keys(home: Path, rows: int, reps: int) -> dict[str, Any]:
    """A primary key over `rows` rows, 0.1% of them repeating another row's key and 0.01% with a NULL key."""
    catalog = SparkCatalog(LocalCatalog(home))
    spark = catalog.spark
    spark.sql("CREATE SCHEMA IF NOT EXISTS bench")
    spark.range(rows).selectExpr(
        "CASE WHEN id % 10000 = 0 THEN NULL WHEN id % 1000 = 1 THEN id - 1 ELSE id END AS order_id",
        "id % 97 AS customer_id",
        "CAST(id % 1000 AS DECIMAL(18,2)) AS amount",
        "concat('note ', id) AS note",
    ).write.format("delta").saveAsTable(KEY_TABLE.sql())
    # As `plan` does: read the table, then check the rows as the plan leaves them.
    table = catalog.read([KEY_TABLE]).table(KEY_TABLE)
    assert table is not None
    relation = probe_queries.probe_relation(table, table)

    def by_hand() -> object:
        frame = spark.table(KEY_TABLE.sql())
        repeated = frame.groupBy("order_id").count().filter("count > 1 AND order_id IS NOT NULL").count()
        return repeated + frame.filter("order_id IS NULL").count()

    cases: dict[str, Callable[[], object]] = {
        "probe_keys": lambda: [
            (r.check, r.violations, r.samples) for r in catalog.probe_keys(KEY_TABLE, relation, [(PRIMARY_KEY, None)])
        ],
        "by_hand": by_hand,
        # The by-hand duplicate count alone, without the NULL count.
        "group_by_count_only": lambda: (
            spark.table(KEY_TABLE.sql()).groupBy("order_id").count().filter("count > 1").count()
        ),
        # probe_keys' counting query alone (no samples).
        "scan_query_by_hand": lambda: spark.sql(keyprobe.scan_sql(relation, [(PRIMARY_KEY, None)])).collect(),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    results = {name: repr(run()) for name, run in cases.items()}  # warm-up, and a record of the answers
    for rep in range(reps):
        for name, run in cases.items() if rep % 2 == 0 else reversed(cases.items()):
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return {"rows": rows, "timings": timings, "answers": results}


def serve_plan(home: Path, specs: Path) -> None:
    """As a caller's notebook or job runs it: its own session (bench/baseline_session.py, the configuration
    delta-sync's CLI uses), `delta_sync.plan(specs, spark=session)` each time it is asked."""
    from baseline_session import hand_session

    import delta_sync

    spark = hand_session(home)
    print("READY", flush=True)
    for _line in sys.stdin:
        started = time.perf_counter()
        reviewed = delta_sync.plan(specs, spark=spark)
        elapsed = time.perf_counter() - started
        print(f"TIME {elapsed:.6f} actions={len(reviewed.actions)}", flush=True)


def main(argv: list[str]) -> None:
    command, home = argv[0], Path(argv[1])
    if command == "serve-plan":
        serve_plan(home, Path(argv[2]))
        return
    if command == "build":
        result = build(home, Path(argv[2]), int(argv[3]))
    elif command == "create":
        result = create(home, int(argv[2]), int(argv[3]) if len(argv) > 3 else 2)
    elif command == "history":
        result = history(home, Path(argv[2]))
    elif command == "probe":
        result = probe(home, int(argv[2]), int(argv[3]))
    elif command == "keys":
        result = keys(home, int(argv[2]), int(argv[3]))
    else:
        raise SystemExit(f"unknown command {command}")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
