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
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from delta_sync.model.errors import CatalogError, SetupError
from delta_sync.spark import classcache
from delta_sync.spark.jars import DeltaJars, delta_jars
from delta_sync.spark.quiet import quiet_python_loggers
from delta_sync.spark.servers import master_problem, metastore_problem, metastore_uris, shown

_DERBY_LOCKED = "Another instance of Derby may have already booted the database"
_JVM_ERROR = re.compile(r"(?:Exception in thread \"\w+\" )?[\w.$]+(?:Exception|Error): (?P<message>.+)")


def _as_is(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class LocalCatalog:
    """The embedded default: Spark local mode, Hive support, Derby metastore, all under `home`."""

    home: Path
    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)
    # Masks the project's secrets (Project.redact) in what messages show of the master and metastore.
    redact: Callable[[str], str] = field(default=_as_is, compare=False, repr=False)

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
_writing: Path | None = None
# The warm engine writes the JVM's class archive when it stops (classcache); a command never waits for that.
WRITE_CLASS_ARCHIVE = False


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
        # Hive's direct SQL is a faster path for partition listings and column statistics, which Delta tables
        # never ask the metastore for; setting it up costs every JVM a JDO query of each of the metastore's
        # model classes (MetaStoreDirectSql.ensureDbInit), a sixth of the Java work of a cold `plan`. Without it the
        # same calls go through DataNucleus, which creates Derby's schema on first use all the same.
        "spark.hadoop.hive.metastore.try.direct.sql": "false",
        # Hive's session makes a folder for ADD JAR/FILE downloads, `<tmp>/<session id>_resources`, at every start
        # and never removes it: one empty folder in /tmp per command. One folder of the catalog's instead.
        "spark.hadoop.hive.downloaded.resources.dir": str(home / "tmp" / "hive-resources"),
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
        **local_authentication(catalog.master),
    }
    conf.update(catalog.conf)
    return conf


# SparkMasterRegex's local masters: the ones for which Spark's SecurityManager makes the secret itself.
_SECRET_MADE_BY_SPARK = re.compile(r"local|local\[([0-9]+|\*)\]|local\[([0-9]+|\*)\s*,\s*([0-9]+)\]")


def local_authentication(master: str) -> dict[str, str]:
    """The driver's RPC and block-manager ports on 127.0.0.1 answer only a client holding the application's secret,
    which Spark generates for a local master and keeps in the JVM (never on a command line or in a file): without
    it, any user of the machine could talk to them. Another master needs a secret given to every executor, which
    stays the cluster's own setting."""
    return {"spark.authenticate": "true"} if _SECRET_MADE_BY_SPARK.fullmatch(master) else {}


# Who takes the catalog's lock in this process, as the others are told (the engine and spark-submit's driver say
# what they are; a command, its command line).
holder = ""


def _holder_text() -> str:
    import sys

    from delta_sync.spark import engine_control

    if holder:
        return holder
    if engine_control.command_line():
        return "`" + " ".join(["delta-sync", *sys.argv[1:]])[:200] + "`"
    return "Python `" + " ".join(sys.argv)[:200] + "`"


def engine_hint(home: Path) -> str:
    """The command that stops the engine of the catalog in `home`."""
    env = f" --env {home.name}" if home.parent.name == ".delta-sync" else ""
    return f"delta-sync engine stop{env}"


def _take_lock(catalog: LocalCatalog) -> None:
    """Derby admits one process per metastore; say so plainly instead of failing deep in Hive."""
    global _lock_handle
    _lock_handle = hold(catalog.home)


def hold(home: Path) -> IO[str]:
    """Take the local catalog in `home` for this process (kept while the handle is open), or say who has it.
    Every process of delta-sync that opens the embedded catalog takes it first: the engine, a command run
    in-process, the library and spark-submit's driver."""
    home.mkdir(parents=True, exist_ok=True)
    handle = (home / ".lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        written = handle.read().strip()
        handle.close()
        raise busy_error(home, written) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} {_holder_text()}\n")
    handle.flush()
    return handle


def busy_error(home: Path, written: str = "") -> CatalogError:
    """The one sentence for a catalog another process of delta-sync holds: who, and what to do."""
    from delta_sync.spark import engine_control

    engine = engine_control.held_by_engine(home)
    if engine is not None:
        instead = (
            "run without --no-engine to use it, or stop it first" if engine_control.command_line() else "stop it first"
        )
        return CatalogError(
            f"The local catalog in {home} is held by the delta-sync engine (pid {engine.pid}); "
            f"{instead}: {engine_hint(home)}"
        )
    pid, _, who = written.partition(" ")
    named = f" ({who}, pid {pid})" if pid.isdigit() and who else ""
    return CatalogError(
        f"The local catalog in {home} is in use by another delta-sync process{named}; wait for it to finish, "
        "then retry."
    )


def log_tail(catalog: LocalCatalog, lines: int = 400) -> str:
    try:
        return "\n".join(catalog.log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def derby_locked(catalog: LocalCatalog, error: BaseException | None = None) -> bool:
    return _DERBY_LOCKED in str(error or "") or _DERBY_LOCKED in log_tail(catalog, 2000)


def locked_error(catalog: LocalCatalog) -> CatalogError:
    return derby_busy_error(catalog.home)


def derby_busy_error(home: Path) -> CatalogError:
    """Derby refused the metastore: a process of delta-sync that holds the lock is named, else any Spark."""
    probe = (home / ".lock").open("a+") if home.is_dir() else None
    if probe is not None:
        with probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                probe.seek(0)
                written = probe.read().strip()
                # This very process holds it (a driver, a command): Derby's refusal came from someone else.
                if written.partition(" ")[0] != str(os.getpid()):
                    return busy_error(home, written)
            else:
                fcntl.flock(probe, fcntl.LOCK_UN)
    return CatalogError(
        f"The local catalog in {home} is in use by another Spark process (a notebook, a "
        "spark-shell or another delta-sync); stop it, then retry."
    )


def refused_by_derby(error: BaseException, setting: Callable[[str], str | None]) -> CatalogError | None:
    """For a session delta-sync did not start (a notebook's, a driver's) on an embedded catalog's folder: the
    one sentence when Hive could not open the metastore because Derby is booted elsewhere."""
    text = str(error)
    if "SessionHiveMetaStoreClient" not in text and _DERBY_LOCKED not in text:
        return None
    try:
        home = derby_home(setting)
    except Exception:
        return None
    return derby_busy_error(home) if home is not None else None


def derby_home(setting: Callable[[str], str | None]) -> Path | None:
    """The folder of the embedded catalog a session's settings point at (its Derby database's parent)."""
    for key in ("spark.hadoop.javax.jdo.option.ConnectionURL", "javax.jdo.option.ConnectionURL"):
        url = setting(key) or ""
        found = re.search(r"jdbc:derby:;databaseName=([^;]+)", url)
        if found:
            return Path(found.group(1)).parent
    return None


def _check_servers(catalog: LocalCatalog, conf: Mapping[str, str], on_status: Callable[[str], None]) -> None:
    """The master and the metastore the session would use, reachable before the JVM starts."""
    master = conf.get("spark.master", catalog.master)
    problem = master_problem(master, catalog.redact)
    setting = metastore_uris(conf)
    if problem is None and setting is not None:
        on_status(f"Checking the Hive metastore at {shown(setting[1], catalog.redact)}...")
        problem = metastore_problem(*setting, redact=catalog.redact)
    if problem is not None:
        with catalog.log_file.open("a") as log:
            log.write(f"delta-sync: Spark not started: {problem}\n")
        raise CatalogError(f"{problem[0].upper()}{problem[1:]}. Details: {catalog.log_file}")


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
    for path in (catalog.home / "logs", catalog.warehouse):
        path.mkdir(parents=True, exist_ok=True)
    from delta_sync.spark import engine_borrow, engine_control

    if engine_control.wanted(catalog.master):
        jars = delta_jars(on_status)
        conf = spark_conf(catalog, jars)
        _check_servers(catalog, conf, on_status)
        _session = engine_borrow.borrow(catalog.home, catalog.master, catalog.conf, conf, on_status, catalog.redact)
        _catalog = catalog
        return _session
    _take_lock(catalog)
    engine_control.take_report(catalog.home)
    jars = delta_jars(on_status)
    conf = spark_conf(catalog, jars)
    _check_servers(catalog, conf, on_status)
    on_status(f"Starting Spark (local catalog in {catalog.home})...")
    # A stray hive-site.xml or spark-defaults.conf must not redirect the embedded catalog.
    # One empty folder for every catalog: it heads the JVM's class path, which the class archive must match.
    os.environ["SPARK_CONF_DIR"] = str(classcache.empty_conf_dir())
    _session = _start(catalog, conf, jars)
    _catalog = catalog
    return _session


def _start(catalog: LocalCatalog, conf: Mapping[str, str], jars: DeltaJars) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    global _writing
    quiet_python_loggers()
    conf, writing = classcache.with_archive(conf, jars, write=WRITE_CLASS_ARCHIVE)
    _writing = writing
    spark_conf_obj = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf_obj.set(key, value)
    launch_conf = SparkConf(loadDefaults=False)
    for key, value in launch_settings(conf, catalog.redact).items():
        launch_conf.set(key, value)
    with catalog.log_file.open("ab") as log, _launch_environment(conf):
        try:
            gateway = launch_gateway(  # type: ignore[no-untyped-call]
                launch_conf, popen_kwargs={"stdout": log, "stderr": log}
            )
        except Exception as exc:
            raise _startup_error(catalog, jars, exc) from None
    try:
        context = SparkContext(conf=spark_conf_obj, gateway=gateway)
    except Exception as exc:
        raise _startup_error(catalog, jars, exc) from None
    if context._jsc.sc().isStopped():
        # A standalone master that never registered the application (all masters unresponsive).
        raise SetupError(
            f"Spark stopped while starting: the master at {shown(str(context.master), catalog.redact)} did not accept "
            f"the application; is that port a Spark master of this Spark version? Details: {catalog.log_file}"
        )
    context.setLogLevel("ERROR")
    session = SparkSession.builder.getOrCreate()
    from delta_sync.spark import engine_control, interrupts

    if engine_control.command_line():  # a library caller keeps pyspark's handler (or its own)
        interrupts.install(context.cancelAllJobs)
    atexit.register(_stop, session, gateway, writing)
    return session


# spark-class's own JVM (org.apache.spark.launcher.Main) only builds the command line: the cheapest JIT and GC.
_LAUNCHER_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@contextlib.contextmanager
def _launch_environment(conf: Mapping[str, str]) -> Iterator[None]:
    """The environment spark-submit is launched with, restored afterwards; what the user set is kept.

    SPARK_HOME: pip's pyspark otherwise finds it again in a Python process of its own (bin/find-spark-home).
    SPARK_LOCAL_IP: with a local master everything binds 127.0.0.1 already (spark.driver.bindAddress); without it
    Spark resolves the host's name and walks the network interfaces for an address it does not use (the log's
    "resolves to a loopback address" warning), which can wait on DNS."""
    from pyspark.find_spark_home import _find_spark_home

    wanted = {"SPARK_HOME": _find_spark_home(), "SPARK_LAUNCHER_OPTS": _LAUNCHER_OPTS}
    if _SECRET_MADE_BY_SPARK.fullmatch(conf.get("spark.master", "").strip()):
        wanted["SPARK_LOCAL_IP"] = "127.0.0.1"
    added = [key for key in wanted if key not in os.environ]
    os.environ.update({key: wanted[key] for key in added})
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


# Read by spark-submit before the JVM's SparkContext exists: they must be on its command line, secret or not.
_LAUNCH_ONLY = ("spark.driver.", "spark.jars", "spark.submit.", "spark.files", "spark.archives")


# Keys of settings that hold a credential whatever their value's spelling (Spark's own `spark.redaction.regex`
# default): S3A's `fs.s3a.secret.key` and `access.key`, a metastore's password, a token.
SECRET_KEY = re.compile(r"secret|password|token|access[.]?key", re.IGNORECASE)


def launch_settings(conf: Mapping[str, str], redact: Callable[[str], str]) -> dict[str, str]:
    """The settings the JVM is launched with: all but those holding a secret (`${env:...}` in conf, or a key that
    names a credential, e.g. S3A's secret key written out in delta-sync.yaml), which pyspark would put on
    spark-submit's command line, where any process of the machine reads them (/proc/<pid>/cmdline). SparkContext
    gets them afterwards, through py4j, with the others."""
    return {
        key: value
        for key, value in conf.items()
        if key.startswith(_LAUNCH_ONLY) or (redact(value) == value and not SECRET_KEY.search(key))
    }


def release() -> None:
    """Stop this process's session now, as at exit (the engine, when it stops)."""
    if _session is not None:
        _stop(_session, _session.sparkContext._gateway, _writing)


def _stop(session: Any, gateway: Any, writing: Path | None = None) -> None:
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
            process.wait(timeout=300 if writing is not None else 60)
    classcache.keep(writing)


def _startup_error(catalog: LocalCatalog, jars: DeltaJars, exc: Exception) -> SetupError:
    tail = log_tail(catalog, 60)
    if jars.packages and ("unresolved dependency" in tail or "download failed" in tail.lower()):
        return SetupError(
            "Could not get the Delta Lake jars: Maven (`mvn`) is not installed and Spark could not "
            f"download {jars.packages} itself. Install Maven (e.g. `apt-get install maven`) or give "
            f"access to Maven Central, then retry. Details: {catalog.log_file}"
        )
    return SetupError(catalog.redact(f"Spark did not start: {_jvm_error(tail, exc)}. Details: {catalog.log_file}"))


def _jvm_error(tail: str, exc: Exception) -> str:
    """The message of the last exception the JVM logged (not its stack), else the first line of `exc`."""
    found = [m.group("message") for line in tail.splitlines() if (m := _JVM_ERROR.match(line.strip()))]
    if found:
        return found[-1].strip().rstrip(".")[:300]
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def driver_session() -> Any:
    """The session spark-submit gave the driver (delta_sync.processes.entrypoint): configured by the submit."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def import_pyspark() -> None:
    """pyspark's SQL side imported, as a forked command would (delta_sync.processes.prefork preloads it)."""
    import pyspark.sql  # noqa: F401
