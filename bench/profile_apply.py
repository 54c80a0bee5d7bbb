"""Where the time of `apply` goes: each phase of pipeline.review + apply + verify, with the Spark jobs it runs,
and the statements' time by kind.

python bench/profile_apply.py HOME SPECS   (prints JSON; HOME is changed: run it on a copy of the estate)
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()


def main(home: Path, specs: Path) -> dict[str, Any]:
    from delta_sync.planning import probe_queries
    from delta_sync.planning.diff import planner
    from delta_sync.planning.statements import statements_of
    from delta_sync.review import execution, policy
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog
    from delta_sync.specs.spec_files import load_specs

    desired = load_specs(specs)
    seconds: dict[str, float] = {"python imports + specs": time.perf_counter() - STARTED}
    jobs: dict[str, int] = {}
    catalog = SparkCatalog(LocalCatalog(home))

    def phase(name: str, run: Any) -> Any:
        context = catalog.spark.sparkContext
        context.setJobGroup(name, name)
        started = time.perf_counter()
        result = run()
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        jobs[name] = len(context.statusTracker().getJobIdsForGroup(name))
        return result

    started = time.perf_counter()
    _ = catalog.spark
    seconds["JVM + SparkSession start"] = time.perf_counter() - started
    current = phase("read (incl. Hive/Derby start)", lambda: catalog.read(desired.tables))
    plan = phase("plan (pure)", lambda: planner.plan(current, desired))
    phase("CHECK analysis", lambda: catalog.check_problems(policy.new_rules(plan, desired)))
    # As apply does: rules whose ADD CONSTRAINT leads their table are left to it (checked_first).
    work, _left = policy.rules_to_scan(plan, current, applying=True)

    def probes() -> list[Any]:
        found = []
        for table, checks in work:
            have, want = current.table(table), desired.table(table)
            assert have is not None
            assert want is not None
            found.extend(catalog.probe(table, checks, probe_queries.probe_relation(have, want)))
        return found

    results = phase(f"probes ({len(work)} tables, sequential)", probes)
    by_kind: dict[str, list[float]] = defaultdict(list)
    kind_jobs: dict[str, int] = defaultdict(int)
    context = catalog.spark.sparkContext
    for statement in statements_of(plan):
        context.setJobGroup(statement.kind, statement.kind)
        began = time.perf_counter()
        catalog.execute(statement.sql, policy.commit_metadata("profile", statement))
        by_kind[statement.kind].append(time.perf_counter() - began)
        kind_jobs[statement.kind] = len(context.statusTracker().getJobIdsForGroup(statement.kind))
    for kind, times in by_kind.items():
        seconds[f"statements: {kind} x{len(times)}"] = sum(times)
        jobs[f"statements: {kind} x{len(times)}"] = kind_jobs[kind]
    phase("verify (re-read + plan)", lambda: execution.verify_converged(catalog, desired))
    return {
        "tables": len(desired.tables),
        "statements": sum(len(t) for t in by_kind.values()),
        "violations": sum(r.violations or 0 for r in results),
        "seconds": seconds,
        "spark_jobs": jobs,
        "median_statement_s": {k: sorted(v)[len(v) // 2] for k, v in by_kind.items()},
        "total_s": time.perf_counter() - STARTED,
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2])), indent=1))
