import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Every JVM the tests start through spark-submit or pyspark (the session of each test process, each CLI
# run of the Spark tier) lives seconds to minutes on tables of a few rows: C1-only JIT and the serial GC
# take ~45% less CPU to start and run it (measured: 25 s -> 14 s of CPU for one `plan`), which matters
# when two test processes share two cores. Semantics do not change; the product's defaults are untouched.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# The command line borrows a warm engine by default. A test's command takes the path its module states
# (tests/spark/cli.py: through the engine, as at a terminal, or in-process, as on CI); one that states none
# runs in-process, so that no engine outlives it.
os.environ.setdefault("DELTA_SYNC_NO_ENGINE", "1")

SPARK_DIR = Path(__file__).parent / "spark"

# Fixtures of servers every test may ask for by name: `s3`, one S3 API server per test process.
pytest_plugins = ("tests.servers.s3",)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before the Spark tier: the JVM's class archive (delta_sync.spark.classcache), written in the background
    once per machine, so that the hundreds of JVMs the tests start after it map their classes instead of
    loading them (measured: one CLI `plan` 17-20 s -> 12 s, 19-21 s -> 13 s of CPU)."""
    config = session.config
    if hasattr(config, "workerinput") or "not spark" in (config.getoption("markexpr") or ""):
        return
    if config.args and all("unit" in Path(arg).parts for arg in config.args):
        return
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return
    subprocess.Popen(
        [sys.executable, "-m", "delta_sync.processes.classbuild", tempfile.mkdtemp(prefix="delta-sync-classes-")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


# The modules that take longest (minutes each, measured with --durations on a clean clone), longest first.
# Test processes take whole modules (--dist=loadfile) in collection order (--no-loadscope-reorder), so
# these start first and the many short modules, the unit tier last, fill in around them: the two processes
# end together instead of one running a long module alone at the end.
LONGEST_FIRST = (
    "test_submit.py",
    "test_object_storage.py",
    "test_cli_e2e.py",
    "test_metastore.py",
    "test_policy.py",
    "test_standalone.py",
    "test_kill_resume.py",
    "test_catalog_reuse.py",
    "test_fast_reader_s3.py",
    "test_kill_rewrites.py",
    "test_sql_confirm.py",
    "test_rehearsal_cli.py",
    "test_user_path.py",
    "test_connect.py",
    "test_engine.py",
    "test_rollback_cli.py",
    "test_rollback.py",
    "test_compatibility.py",
    "test_view_defects.py",
    "test_rehearsal.py",
    "test_views.py",
    "test_lifecycle.py",
    "test_changes.py",
    "test_fast_reader.py",
    "test_adopt.py",
    "test_doctor.py",
    "test_rewrite_concurrency.py",
    "test_readme_examples.py",
    "test_column_order.py",
    "test_features.py",
    "test_library_job.py",
    "test_interrupt.py",
    "test_parallel_apply.py",
    "test_github_action_steps.py",
    "test_rewrites.py",
    "test_concurrency.py",
)


def _rank(item: pytest.Item) -> tuple[int, int]:
    path = Path(str(item.fspath))
    if path.name in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(path.name))
    return (1, 0) if SPARK_DIR in path.parents else (2, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything under tests/spark/ needs the JVM; mark it so `-m "not spark"` gives the fast loop.
    for item in items:
        if SPARK_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)
    items.sort(key=_rank)  # stable: each module keeps its own order
