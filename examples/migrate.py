"""A Spark job that brings the tables to the specs, with delta-sync as a library.

    spark-submit [--master ...] examples/migrate.py SPECS   # the session spark-submit configured (Delta on it)
    python examples/migrate.py SPECS                          # a session of its own, Delta added by with_delta

Exit codes are delta-sync's: 0 applied (or nothing to do), 3 blocked, 4 stale, 1 error.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

import delta_sync


def main(specs: str) -> int:
    builder = SparkSession.builder.appName("delta-sync migrate")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: this process starts the JVM
        builder = delta_sync.with_delta(builder)
    spark = builder.getOrCreate()
    try:
        plan = delta_sync.plan(specs, spark=spark)
        print(plan.render())
        result = delta_sync.apply(plan, spark=spark)
        print(f"applied {result.applied} statement(s) of plan {result.plan_id}")
        left = delta_sync.plan(specs, spark=spark)
        print("converged" if left.is_empty else f"not converged:\n{left.render()}")
        return 0 if left.is_empty else 1
    except delta_sync.DeltaSyncError as error:
        print(f"Error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "specs"))
