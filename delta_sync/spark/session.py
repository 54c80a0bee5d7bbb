"""One SparkSession per process, with Delta, Hive support and an embedded Derby metastore.

The JVM's stdout and stderr go to a log file from the moment it is spawned, so Spark, Ivy and
Derby never write to the user's terminal; failures are read back from that log and worded here.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from delta_sync.errors import CatalogError, SetupError
from delta_sync.spark.jars import DeltaJars, delta_jars

_DERBY_LOCKED = "Another instance of Derby may have already booted the database"


@dataclass(frozen=True, slots=True)
class LocalCatalog:
    """The embedded default: Spark local mode, Hive support, Derby metastore, all under `home`."""

    home: Path
    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)

    @property
    def metastore(self) -> Path:
        return self.home / "metastore_db"

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "spark.log"


_session: Any = None
_catalog: LocalCatalog | None = None
_lock_handle: IO[str] | None = None


def delta_conf(jars: DeltaJars) -> dict[str, str]:
    """What any session delta-sync runs on needs: Delta, and SQL text passed through unchanged."""
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # `${...}` in comments and literals must reach Delta unchanged, not be substituted.
        "spark.sql.variable.substitute": "false",
        **jars.spark_conf(),
    }


def embedded_catalog_conf(catalog: LocalCatalog) -> dict[str, str]:
    """The Hive catalog kept in a Derby database and a warehouse folder under `catalog.home`."""
    home = catalog.home
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": catalog.warehouse.as_uri(),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (f"jdbc:derby:;databaseName={catalog.metastore};create=true"),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={home} -Dderby.stream.error.file={home / 'logs' / 'derby.log'}"
        ),
    }


def spark_conf(catalog: LocalCatalog, jars: DeltaJars) -> dict[str, str]:
    conf = {
        "spark.master": catalog.master,
        "spark.app.name": "delta-sync",
        **delta_conf(jars),
        **embedded_catalog_conf(catalog),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        # Delta's default of 50 partitions for log replay costs seconds per table on one machine.
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }
    conf.update(catalog.conf)
    return conf


def _take_lock(catalog: LocalCatalog) -> None:
    """Derby admits one process per metastore; say so plainly instead of failing deep in Hive."""
    global _lock_handle
    handle = (catalog.home / ".lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise CatalogError(
            f"The local catalog in {catalog.home} is in use by another delta-sync process; "
            "wait for it to finish, then retry."
        ) from None
    _lock_handle = handle


def quiet_python_loggers() -> None:
    """Silence what pyspark would log to the terminal itself: its errors reach the user as messages."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.CRITICAL)


def log_tail(catalog: LocalCatalog, lines: int = 400) -> str:
    try:
        return "\n".join(catalog.log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def derby_locked(catalog: LocalCatalog, error: BaseException | None = None) -> bool:
    return _DERBY_LOCKED in str(error or "") or _DERBY_LOCKED in log_tail(catalog, 2000)


def locked_error(catalog: LocalCatalog) -> CatalogError:
    return CatalogError(
        f"The local catalog in {catalog.home} is in use by another Spark process (a notebook, a "
        "spark-shell or another delta-sync); stop it, then retry."
    )


def get_session(catalog: LocalCatalog, on_status: Callable[[str], None] = lambda _m: None) -> Any:
    """The process's SparkSession for `catalog`, started on first use."""
    global _session, _catalog
    if _session is not None:
        if _catalog != catalog:
            raise CatalogError(
                f"this process already uses the catalog in {_catalog and _catalog.home}; "
                "one process serves one local catalog"
            )
        return _session
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SetupError("Java is not installed: delta-sync runs Spark, which needs Java 17 or 21 (JAVA_HOME).")
    for path in (catalog.home / "logs", catalog.warehouse, catalog.home / "conf"):
        path.mkdir(parents=True, exist_ok=True)
    _take_lock(catalog)
    jars = delta_jars(on_status)
    on_status(f"Starting Spark (local catalog in {catalog.home})...")
    # A stray hive-site.xml or spark-defaults.conf must not redirect the embedded catalog.
    os.environ["SPARK_CONF_DIR"] = str(catalog.home / "conf")
    _session = _start(catalog, spark_conf(catalog, jars), jars)
    _catalog = catalog
    return _session


def _start(catalog: LocalCatalog, conf: Mapping[str, str], jars: DeltaJars) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    quiet_python_loggers()
    spark_conf_obj = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf_obj.set(key, value)
    with catalog.log_file.open("ab") as log:
        try:
            gateway = launch_gateway(  # type: ignore[no-untyped-call]
                spark_conf_obj, popen_kwargs={"stdout": log, "stderr": log}
            )
        except Exception as exc:
            raise _startup_error(catalog, jars, exc) from None
    context = SparkContext(conf=spark_conf_obj, gateway=gateway)
    context.setLogLevel("ERROR")
    session = SparkSession.builder.getOrCreate()
    atexit.register(_stop, session, gateway)
    return session


def _stop(session: Any, gateway: Any) -> None:
    """Wait for the JVM to exit before this process does: Derby's lock on the metastore is held by the
    JVM, and a delta-sync started right after ours must find it free."""
    # py4j reports a socket closed by the exiting JVM through the root logger, which would print a
    # traceback after a successful run; nothing logged at this point can change the outcome.
    logging.disable(logging.CRITICAL)
    with contextlib.suppress(Exception):  # the JVM may already be gone
        session.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()  # the JVM exits when its stdin closes
            process.wait(timeout=60)


def _startup_error(catalog: LocalCatalog, jars: DeltaJars, exc: Exception) -> SetupError:
    tail = log_tail(catalog, 60)
    if jars.packages and ("unresolved dependency" in tail or "download failed" in tail.lower()):
        return SetupError(
            "Could not get the Delta Lake jars: Maven (`mvn`) is not installed and Spark could not "
            f"download {jars.packages} itself. Install Maven (e.g. `apt-get install maven`) or give "
            f"access to Maven Central, then retry. Details: {catalog.log_file}"
        )
    last = next((line for line in reversed(tail.splitlines()) if line.strip()), str(exc))
    return SetupError(f"Spark did not start: {last.strip()[:300]}. Details: {catalog.log_file}")
