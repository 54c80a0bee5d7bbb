"""Where the time of `plan` goes: its catalog reads phase by phase, with the Spark jobs each phase runs.

python bench/profile_plan.py HOME SPECS [--mode delta-sync|baseline|snapshot] [--threads K]   (prints JSON)

delta-sync: the calls SparkCatalog.read makes per table (tableExists, DESCRIBE DETAIL, DeltaLog snapshot)
baseline:   the hand-written script's (spark.table(t).schema, DESCRIBE DETAIL)
snapshot:   a prototype: the metastore's table entry + Delta's snapshot and its checksum (.crc), no DESCRIBE DETAIL
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()


class Phases:
    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.seconds: dict[str, float] = {}
        self.jobs: dict[str, int] = {}
        self._lock = threading.Lock()

    def time(self, phase: str, run: Callable[[], Any]) -> Any:
        self.spark.sparkContext.setJobGroup(phase, phase)
        started = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - started
        jobs = len(self.spark.sparkContext.statusTracker().getJobIdsForGroup(phase))
        with self._lock:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + elapsed
            self.jobs[phase] = jobs
        return result


def read_delta_sync(p: Phases, catalog: Any, name: str) -> None:
    from delta_sync.spark import table_reads

    spark = p.spark
    p.time("tableExists", lambda: spark.catalog.tableExists(name))
    detail = p.time("DESCRIBE DETAIL", lambda: spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].asDict())
    snapshot = p.time("DeltaLog snapshot", lambda: table_reads.latest_snapshot(catalog, str(detail["location"])))
    p.time("schema + version", lambda: (snapshot.schema().json(), snapshot.version()))


def read_baseline(p: Phases, _catalog: Any, name: str) -> None:
    p.time("spark.table(t).schema", lambda: p.spark.table(name).schema)
    p.time("DESCRIBE DETAIL", lambda: p.spark.sql(f"DESCRIBE DETAIL {name}").collect())


def read_snapshot(p: Phases, catalog: Any, name: str) -> None:
    from delta_sync.spark import table_reads

    jvm, session = p.spark._jvm, p.spark._jsparkSession
    schema, table = name.split(".")
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(table, jvm.scala.Some(schema))
    entry = p.time("metastore entry", lambda: session.sessionState().catalog().getTableMetadata(ident))
    snapshot = p.time("DeltaLog snapshot", lambda: table_reads.latest_snapshot(catalog, entry.location().toString()))

    def everything() -> tuple[Any, ...]:
        metadata, checksum = snapshot.metadata(), snapshot.checksumOpt()
        return (
            snapshot.schema().json(),
            snapshot.version(),
            metadata.description(),
            metadata.partitionColumns().mkString(","),
            metadata.configuration().toString(),
            snapshot.protocol().toString(),
            checksum.get().numFiles() if checksum.isDefined() else None,  # else: DESCRIBE DETAIL
        )

    p.time("schema, version, properties, features, numFiles", everything)


MODES = {"delta-sync": read_delta_sync, "baseline": read_baseline, "snapshot": read_snapshot}


def main(home: Path, specs: Path, mode: str, threads: int) -> dict[str, Any]:
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog
    from delta_sync.specs.spec_files import load_specs

    names = [str(n) for n in sorted(load_specs(specs).tables)]
    seconds: dict[str, float] = {"python imports + specs": time.perf_counter() - STARTED}
    catalog = SparkCatalog(LocalCatalog(home))
    started = time.perf_counter()
    phases = Phases(catalog.spark)
    seconds["JVM + SparkSession start"] = time.perf_counter() - started
    phases.time(
        "first catalog query (SHOW SCHEMAS: Hive + Derby start)", lambda: phases.spark.sql("SHOW SCHEMAS").collect()
    )
    read = MODES[mode]
    per_table: list[float] = []

    def one(name: str) -> None:
        began = time.perf_counter()
        read(phases, catalog, name)
        per_table.append(time.perf_counter() - began)

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, names))
    seconds["all table reads (wall)"] = time.perf_counter() - started
    return {
        "mode": mode,
        "threads": threads,
        "tables": len(names),
        "seconds": seconds | phases.seconds,
        "spark_jobs": phases.jobs,
        "first_table_s": per_table[0],
        "median_table_s": sorted(per_table)[len(per_table) // 2],
        "total_s": time.perf_counter() - STARTED,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("home", type=Path)
    parser.add_argument("specs", type=Path)
    parser.add_argument("--mode", choices=sorted(MODES), default="delta-sync")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(main(args.home, args.specs, args.mode, args.threads), indent=1))
