"""The program spark-submit runs: apply a saved plan on the driver, next to the data.

    spark-submit [options] .../delta_sync/processes/entrypoint.py PLAN.json [--parallel N] [--allow CLASS ...]
        [--statement-timeout DURATION]

It rebuilds the plan from its typed actions, re-reads every table of the plan through the session
spark-submit configured, refuses a stale plan (and one whose hazards are not allowed), runs the
statements (each table's in order, several tables at once; each Delta commit stamped with the plan
id), re-reads the tables to confirm them, prints one progress line per statement on stderr and,
last on stdout, one machine-readable line:

    DELTA_SYNC_RESULT {"status": "applied", "plan_id": ..., "applied": N, "statements": M, "error": null}

Exit codes are the CLI's: 0 applied, 1 error, 3 blocked, 4 stale, 130 interrupted (a statement ran longer than
--statement-timeout, the submitting environment's statement_timeout: its jobs are cancelled, as on Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    # Imported here: when spark-submit runs this file as a script, its folder (delta_sync/spark/) is
    # first on sys.path; the package itself comes from the environment or from --py-files.
    from delta_sync.model.catalog import APPLY_PARALLEL
    from delta_sync.model.errors import DeltaSyncError
    from delta_sync.planfile import document as planfile
    from delta_sync.planning.hazards import ALLOWABLE
    from delta_sync.review import library
    from delta_sync.review.results import Progress
    from delta_sync.spark.submit import RESULT_PREFIX

    parser = argparse.ArgumentParser(prog="entrypoint.py", add_help=False)
    parser.add_argument("plan")
    parser.add_argument("--parallel", type=int, default=APPLY_PARALLEL)
    parser.add_argument("--allow", action="append", default=[], choices=sorted(h.value for h in ALLOWABLE))
    parser.add_argument("--statement-timeout")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        print(
            "usage: spark-submit ... entrypoint.py PLAN.json [--parallel N] [--allow CLASS ...] "
            "[--statement-timeout DURATION]",
            file=sys.stderr,
        )
        return 1
    result: dict[str, Any] = {"status": "error", "plan_id": None, "applied": 0, "statements": 0, "error": None}
    code = 1
    progress = threading.Lock()  # tables run on several threads: one whole line at a time

    def on_progress(event: Progress) -> None:
        if event.step is None or not event.done:
            return
        with progress:
            result["applied"] += 1
            first = (event.sql or "").splitlines()[0] if event.sql else ""
            sys.stderr.write(f"✓ [{event.step}/{event.total}] {event.table}: {first}\n")
            sys.stderr.flush()

    try:
        saved = planfile.load(Path(args.plan))
        result.update(plan_id=saved.plan_id, statements=len(saved.statements))
        spark = _session()
        held = _hold_embedded_catalog(spark)
        try:
            library.apply_on_driver(
                Path(args.plan), spark, max(1, args.parallel), args.allow, on_progress, args.statement_timeout
            )
        finally:
            if held is not None:
                held.close()
        result["status"], code = "applied", 0
    except DeltaSyncError as error:
        result["error"] = str(error)
        code = error.exit_code
        result["status"] = {3: "blocked", 4: "stale", 130: "interrupted"}.get(code, "error")
        print(f"Error: {error}", file=sys.stderr)
    except KeyboardInterrupt:  # outside apply's statements (a data check before them, the re-read after)
        from delta_sync.review import deadline

        said = f"{deadline.expired}, so it was cancelled" if deadline.expired else "interrupted"
        result["error"] = (
            f"{said[:1].upper()}{said[1:]}. Run apply again to continue: it re-reads the tables and runs only "
            "what is left."
        )
        result["status"], code = "interrupted", 130
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return code


def _hold_embedded_catalog(spark: Any) -> Any:
    """On delta-sync's embedded catalog, the driver takes its lock as every delta-sync process does: a
    process holding it (the engine, a command) is named in one sentence before Derby would refuse in Hive's
    words, and a command started while the driver runs is told the same of the driver."""
    from delta_sync.spark import session
    from delta_sync.spark.submit import LOCAL_HOME

    home = spark.conf.get(LOCAL_HOME, None)
    if not home:
        return None
    session.holder = "spark-submit's driver of `delta-sync apply`"
    return session.hold(Path(home))


def _session() -> Any:
    from delta_sync.spark import interrupts
    from delta_sync.spark.session import driver_session

    spark = driver_session()
    # The driver's JVM runs this job alone: a statement over statement_timeout (SIGINT from its timer, as Ctrl-C)
    # cancels every job of it, from a thread of its own (pyspark's handler would call py4j re-entrantly).
    interrupts.install(spark.sparkContext.cancelAllJobs)
    return spark


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
