"""The warm engine's memory over a long life (BENCHMARKS.md, "Memory over 5,000 commands"):
- its JVM runs with its native memory bounded: two glibc malloc arenas (MALLOC_ARENA_MAX in its environment) and
  the free malloc memory given back every 10 s (-XX:TrimNativeHeapInterval), beside delta-sync's own JVM options
  (Derby's home), which stay;
- a result server no command will connect to (the command died between its query and reading the rows) is ended,
  where Spark 4's would wait for ever."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from delta_sync.processes.daemon import TRIM_MS
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.engine_orphans import OrphanServers, old_serving_threads


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    drop = ("DELTA_SYNC_NO_ENGINE", "CI", "DELTA_SYNC_HOME", "MALLOC_ARENA_MAX")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"DELTA_SYNC_ENGINE_IDLE": "120"}
    return subprocess.run(
        [sys.executable, "-m", "delta_sync", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_engines_jvm_has_its_native_memory_bounded(tmp_path: Path) -> None:
    (tmp_path / ".delta-sync").mkdir()
    state_file = tmp_path / ".delta-sync" / "local" / "engine" / "engine.json"
    try:
        done = run(["sql", "SELECT 1 AS one", "--format", "json"], tmp_path)
        assert done.returncode == 0, done.stderr
        jvm = int(json.loads(state_file.read_text())["jvm_pid"])
        environ = Path(f"/proc/{jvm}/environ").read_bytes().split(b"\0")
        assert b"MALLOC_ARENA_MAX=2" in environ
        argv = Path(f"/proc/{jvm}/cmdline").read_bytes().decode().split("\0")
        assert f"-XX:TrimNativeHeapInterval={TRIM_MS}" in argv
        home = tmp_path / ".delta-sync" / "local"
        assert f"-Dderby.system.home={home}" in argv
        assert run(["engine", "stop"], tmp_path).returncode == 0
        deadline = time.monotonic() + 120
        while Path(f"/proc/{jvm}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{jvm}").exists()
    finally:
        with contextlib.suppress(OSError, ValueError, KeyError):
            found = json.loads(state_file.read_text())
            for pid in (found["pid"], found["jvm_pid"]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def test_a_result_server_nobody_connects_to_is_ended(catalog: SparkCatalog) -> None:
    spark = catalog.spark
    pid = spark.sparkContext._gateway.proc.pid
    sweeper = OrphanServers(spark, pid, older_than=0.5)
    assert sweeper.waiting() == {}
    # What pyspark's collect() does first; a command killed now never connects to the port.
    port = int(spark.range(5)._jdf.collectToPython()[0])
    waiting = sweeper.waiting()
    assert len(waiting) == 1
    time.sleep(1.0)
    assert old_serving_threads(pid, 0.5) == 1
    assert sweeper.sweep() == 0  # first seen waiting: a command may be about to connect
    assert sweeper.sweep() == 1  # still waiting at the next look: ended
    deadline = time.monotonic() + 30
    while sweeper.waiting() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sweeper.waiting() == {}
    assert old_serving_threads(pid, 0.0) == 0
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    # A command that reads its rows is not touched.
    assert [r.id for r in spark.range(3).collect()] == [0, 1, 2]
    assert sweeper.sweep() == 0
