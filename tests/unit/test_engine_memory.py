"""The warm engine's JVM is started with its native memory bounded (BENCHMARKS.md, "Memory over 5,000 commands"):
two glibc malloc arenas and a periodic trim, unless the user set either."""

from __future__ import annotations

from pathlib import Path

from delta_sync.processes.daemon import JAVA_OPTIONS, MALLOC_ARENAS, TRIM_MS, bounded_native_memory
from delta_sync.spark.session import LocalCatalog, embedded_catalog_conf

TRIM = f"-XX:TrimNativeHeapInterval={TRIM_MS}"


def test_delta_syncs_own_options_are_kept_and_the_trim_added() -> None:
    defaults = embedded_catalog_conf(LocalCatalog(home=Path("/tmp/project/.delta-sync/local")))[JAVA_OPTIONS]
    environ: dict[str, str] = {}
    conf = bounded_native_memory({"spark.scheduler.mode": "FAIR"}, defaults, environ)
    assert conf[JAVA_OPTIONS] == f"{defaults} {TRIM}"
    assert "-Dderby.system.home=/tmp/project/.delta-sync/local" in conf[JAVA_OPTIONS]
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert environ == {"MALLOC_ARENA_MAX": MALLOC_ARENAS}


def test_the_projects_own_java_options_come_first() -> None:
    environ: dict[str, str] = {}
    conf = bounded_native_memory({JAVA_OPTIONS: "-Dmy.flag=1"}, "-Dderby.system.home=/x", environ)
    assert conf[JAVA_OPTIONS] == f"-Dmy.flag=1 {TRIM}"


def test_what_the_user_set_stays() -> None:
    environ = {"MALLOC_ARENA_MAX": "8"}
    mine = {JAVA_OPTIONS: "-XX:TrimNativeHeapInterval=0"}
    assert bounded_native_memory(mine, "-Dderby.system.home=/x", environ) == mine
    assert environ == {"MALLOC_ARENA_MAX": "8"}


def test_no_options_at_all() -> None:
    assert bounded_native_memory({}, "", {})[JAVA_OPTIONS] == TRIM
