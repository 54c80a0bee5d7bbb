"""The program spark-submit runs: apply a saved plan on the driver, next to the data.

    spark-submit [options] .../delta_sync/spark/entrypoint.py PLAN.json [--parallel N]

It re-reads every table of the plan through the session spark-submit configured, refuses a stale
plan, runs the saved statements (each table's in order, several tables at once; each Delta commit
stamped with the plan id), prints one
progress line per statement on stderr and, last on stdout, one machine-readable line:

    DELTA_SYNC_RESULT {"status": "applied", "plan_id": ..., "applied": N, "statements": M, "error": null}

Exit codes are the CLI's: 0 applied, 1 error, 3 blocked, 4 stale.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

RESULT_PREFIX = "DELTA_SYNC_RESULT "


def main(argv: list[str]) -> int:
    # Imported here: when spark-submit runs this file as a script, its folder (delta_sync/spark/) is
    # first on sys.path; the package itself comes from the environment or from --py-files.
    from delta_sync import api, planfile
    from delta_sync.errors import DeltaSyncError

    parallel = api.APPLY_PARALLEL
    if len(argv) == 3 and argv[1] == "--parallel" and argv[2].isascii() and argv[2].isdigit() and int(argv[2]) > 0:
        argv, parallel = argv[:1], int(argv[2])
    if len(argv) != 1:
        print("usage: spark-submit ... entrypoint.py PLAN.json [--parallel N]", file=sys.stderr)
        return 1
    result: dict[str, Any] = {"status": "error", "plan_id": None, "applied": 0, "statements": 0, "error": None}
    code = 1
    try:
        saved = planfile.load(Path(argv[0]))
        result.update(plan_id=saved.plan_id, statements=len(saved.statements))
        catalog = _catalog()

        progress = threading.Lock()  # tables run on several threads: one whole line at a time

        def on_done(index: int, total: int, statement: api.Statement) -> None:
            with progress:
                result["applied"] += 1
                sys.stderr.write(f"✓ [{index + 1}/{total}] {statement.table}: {statement.sql.splitlines()[0]}\n")
                sys.stderr.flush()

        api.apply_saved(catalog, saved, on_done=on_done, parallel=parallel)
        result["status"], code = "applied", 0
    except DeltaSyncError as error:
        result["error"] = str(error)
        code = error.exit_code
        result["status"] = {3: "blocked", 4: "stale"}.get(code, "error")
        print(f"Error: {error}", file=sys.stderr)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return code


def _catalog() -> Any:
    from pyspark.sql import SparkSession

    from delta_sync.spark.catalog import SparkCatalog

    session = SparkSession.builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return SparkCatalog(None, session=session)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
