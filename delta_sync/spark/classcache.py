"""A class-data-sharing archive of the JVM's classes (Java's AppCDS), so that Spark starts without loading
and verifying ~20,000 classes from jars each time.

The warm engine writes it when it stops (`-XX:ArchiveClassesAtExit`: the classes it loaded over its life, from
plan to apply), into the cache next to the jars; every JVM delta-sync starts later maps it
(`-XX:SharedArchiveFile`). Measured on the README's example: a cold `plan` spends 5.1 -> 2.7 s starting the
JVM, 3.3 -> 1.3 s in the SparkContext and 13.3 -> 7.0 s in the first catalog access (BENCHMARKS.md).

An archive names the Java build, pyspark's version and the jars it was made with; one that does not fit is
ignored by the JVM (a warning in the Spark log) and replaced when the engine next stops.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from delta_sync.spark.jars import DeltaJars, cache_dir

OPTIONS = "spark.driver.extraJavaOptions"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.exists():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found is not None else None


def archive_path(jars: DeltaJars, conf: Mapping[str, str]) -> Path | None:
    """Where the archive for this Java, pyspark, these jars and class path lives; None without a java to key
    it by. The JVM refuses an archive made with another class path."""
    java = _java()
    if java is None:
        return None
    try:
        import pyspark

        info = java.stat()
        key = (
            f"{java}:{info.st_size}:{info.st_mtime_ns}:{pyspark.__version__}:{sorted(str(j) for j in jars.jars)}:"
            f"{conf.get('spark.driver.extraClassPath', '')}"
        )
    except (OSError, ImportError):
        return None
    return cache_dir() / "jvm" / f"classes-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def with_archive(conf: Mapping[str, str], jars: DeltaJars, write: bool) -> tuple[dict[str, str], Path | None]:
    """`conf` with the JVM option that uses the archive, or (`write`, none yet) writes it at exit; and the
    file being written, to be moved in place once the JVM has exited."""
    result = dict(conf)
    final = archive_path(jars, conf)
    if final is None:
        return result, None
    writing: Path | None = None
    if final.exists():
        option = f"-XX:SharedArchiveFile={final}"
    elif write:
        final.parent.mkdir(parents=True, exist_ok=True)
        for stale in final.parent.glob("*.partial"):  # a JVM killed while it wrote one (they are large)
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > 3600:
                    stale.unlink()
        writing = final.with_name(f"{final.name}.{os.getpid()}.partial")
        option = f"-XX:ArchiveClassesAtExit={writing}"
    else:
        return result, None
    result[OPTIONS] = f"{result.get(OPTIONS, '')} {option}".strip()
    return result, writing


def keep(writing: Path | None) -> None:
    """After the JVM exited: the archive it wrote becomes the one to use (the first one written wins)."""
    if writing is None:
        return
    final = writing.with_name(writing.name.rsplit(".", 2)[0])
    try:
        if writing.stat().st_size > 0 and not final.exists():
            os.replace(writing, final)
    except OSError:
        pass
    writing.unlink(missing_ok=True)


def empty_conf_dir() -> Path:
    """SPARK_CONF_DIR for every JVM delta-sync starts: empty, so that no stray hive-site.xml or
    spark-defaults.conf redirects the embedded catalog, and the same for every project, so that the class
    path (which it heads) matches the archive's."""
    folder = cache_dir() / "spark-conf"
    folder.mkdir(parents=True, exist_ok=True)
    for stray in folder.iterdir():
        if stray.is_file():
            stray.unlink()
    return folder
