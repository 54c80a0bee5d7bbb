"""apply through spark-submit: the command that runs the entrypoint on a driver next to the data.

Building the command is pure (tested without a JVM); running it streams the entrypoint's progress
lines and keeps Spark's own log output in a file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delta_sync.model.catalog import APPLY_PARALLEL
from delta_sync.model.errors import SetupError
from delta_sync.spark import object_storage
from delta_sync.spark.jars import PACKAGES_KEY, DeltaJars, delta_jars
from delta_sync.spark.session import SECRET_KEY, LocalCatalog, delta_conf, embedded_catalog_conf
from delta_sync.specs.settings import SubmitSettings

ENTRYPOINT = Path(__file__).parents[1] / "processes" / "entrypoint.py"
RESULT_PREFIX = "DELTA_SYNC_RESULT "
# Set by delta-sync when the driver uses the environment's embedded catalog: that catalog's folder.
LOCAL_HOME = "spark.deltasync.localHome"
PACKAGE = Path(__file__).resolve().parents[1]
# Settings by which an environment brings its own catalog instead of the embedded one.
_OWN_CATALOG = ("spark.sql.catalogImplementation", "spark.hadoop.hive.metastore.uris", "spark.sql.catalog.")


def spark_submit_path(settings: SubmitSettings) -> str:
    if settings.spark_submit:
        return settings.spark_submit
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        raise SetupError("spark-submit not found: install pyspark, or set submit.spark_submit in delta-sync.yaml")
    return str(Path(found.origin).parent / "bin" / "spark-submit")


def package_zip(folder: Path) -> Path:
    """delta_sync as a zip for --py-files, so a driver on another machine can import it."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "delta_sync.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for source in sorted(PACKAGE.rglob("*")):
            if source.suffix in (".py", ".json") and "__pycache__" not in source.parts:
                archive.write(source, Path("delta_sync") / source.relative_to(PACKAGE))
    return target


def uses_embedded_catalog(settings: SubmitSettings) -> bool:
    """Whether the driver opens the environment's embedded catalog (Derby: one process at a time)."""
    return not any(key.startswith(_OWN_CATALOG) for key in settings.conf)


def submit_conf(settings: SubmitSettings, home: Path, jars: DeltaJars) -> dict[str, str]:
    conf = {"spark.app.name": "delta-sync apply", **delta_conf(jars)}
    if uses_embedded_catalog(settings):
        conf.update(embedded_catalog_conf(LocalCatalog(home)))
        conf[LOCAL_HOME] = str(home)
    if settings.master.startswith("local"):
        # As the in-process session: Delta's 50 log-replay partitions cost seconds per table on one machine.
        conf.update({"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1"})
        conf.update({"spark.databricks.delta.snapshotPartitions": "2", "spark.sql.shuffle.partitions": "4"})
        conf["spark.pyspark.python"] = sys.executable
    if settings.deploy_mode == "client":
        conf["spark.pyspark.driver.python"] = sys.executable
    own = dict(settings.conf)
    if object_storage.uses_object_storage(own):
        # Its packages, S3A's among them, are in `jars` (submit_jars): fetched by Maven here, not by Ivy on the driver.
        own.pop(PACKAGES_KEY, None)
        conf.update(object_storage.scheme_conf(own))
    conf.update(own)
    return conf


def submit_jars(settings: SubmitSettings, on_status: Callable[[str], None]) -> DeltaJars:
    """The jars the job gets as spark.jars: Delta's, with S3A's and the environment's own packages when it keeps
    tables on object storage (through Maven, cached: the driver and the executors fetch nothing)."""
    conf = settings.conf
    return delta_jars(on_status, object_storage.packages(conf) if object_storage.uses_object_storage(conf) else ())


def secret_conf(settings: SubmitSettings, redact: Callable[[str], str]) -> dict[str, str]:
    """The environment's settings that hold a credential: a value filled in from `${env:...}` (which `redact`
    masks) or a key Spark masks (S3A's `fs.s3a.secret.key`, a `password`, a `token`). They go to spark-submit
    through a private properties file (`run_submit`), never as `--conf` on its command line, which every user of
    the machine reads in /proc/<pid>/cmdline as long as the job runs."""
    return {
        key: value
        for key, value in settings.conf.items()
        if key != PACKAGES_KEY and (redact(value) != value or SECRET_KEY.search(key))
    }


def submit_command(
    settings: SubmitSettings,
    plan: Path,
    home: Path,
    jars: DeltaJars,
    py_zip: Path,
    parallel: int = APPLY_PARALLEL,
    allow: Sequence[str] = (),
    apart: Mapping[str, str] | None = None,
    statement_timeout: str | None = None,
) -> list[str]:
    """The spark-submit command; the settings in `apart` (`secret_conf`) are left off it, for `run_submit` to
    pass in a file. Without `apart` every setting is a `--conf` (`--print-command`, shown with secrets masked).
    `statement_timeout`: the environment's, as written (the driver reads no project file)."""
    command = [spark_submit_path(settings), "--master", settings.master, "--deploy-mode", settings.deploy_mode]
    for key, value in submit_conf(settings, home, jars).items():
        if apart is None or key not in apart:
            command += ["--conf", f"{key}={value}"]
    command += ["--files", ",".join([str(plan), *settings.files])]
    command += ["--py-files", ",".join([str(py_zip), *settings.py_files])]
    if settings.archives:
        command += ["--archives", ",".join(settings.archives)]
    # In cluster mode the driver runs elsewhere and finds the plan, shipped with --files, by its name.
    command += [str(ENTRYPOINT), plan.name if settings.deploy_mode == "cluster" else str(plan.resolve())]
    if parallel != APPLY_PARALLEL:
        command += ["--parallel", str(parallel)]
    # The driver re-derives the plan's hazards and checks them against what this apply allows.
    for hazard in allow:
        command += ["--allow", hazard]
    if statement_timeout:
        command += ["--statement-timeout", statement_timeout]
    return command


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    exit_code: int
    result: Mapping[str, Any] | None  # the entrypoint's DELTA_SYNC_RESULT, when it got that far
    log: Path


def run_submit(
    command: list[str],
    log: Path,
    on_line: Callable[[str], None],
    redact: Callable[[str], str] = lambda text: text,
    secrets: Mapping[str, str] | None = None,
) -> SubmitOutcome:
    """Run spark-submit; the entrypoint's progress lines go to `on_line`, everything to `log` (errors
    come back in the result). `secrets` (`secret_conf`, left off `command`) reach it in a properties file only
    this user reads, deleted when spark-submit ends; the variables they were read from are not in its
    environment."""
    log.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] | None = None
    # spark-submit and the driver it starts outlive nothing of this command, but their environment is theirs
    # for the whole job, as the warm engine's is (engine_borrow._spawn drops them the same way).
    environ = {k: v for k, v in os.environ.items() if redact(v) == v}
    with log.open("w") as spark_log, _properties_file(secrets or {}) as extra:
        process = subprocess.Popen(
            [command[0], *extra, *command[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=environ,
        )
        assert process.stdout is not None
        for line in process.stdout:
            spark_log.write(redact(line))  # Spark may echo its settings, secrets included
            if line.startswith(RESULT_PREFIX):
                result = json.loads(line[len(RESULT_PREFIX) :])
            elif line.startswith("✓ "):
                on_line(line.rstrip("\n"))
        code = process.wait()
    return SubmitOutcome(code, result, log)


@contextlib.contextmanager
def _properties_file(settings: Mapping[str, str]) -> Iterator[list[str]]:
    """spark-submit's arguments that hand it `settings` in a file (none when there are none): mode 0600 in a
    folder of mode 0700, removed on the way out. spark-submit reads it before the driver starts (in client mode
    the driver is its own JVM, in cluster mode the job's settings go to the cluster as Spark ships them), so
    nothing needs it afterwards. `--load-spark-defaults` keeps `spark-defaults.conf` read, as without the file."""
    if not settings:
        yield []
        return
    folder = Path(tempfile.mkdtemp(prefix="delta-sync-submit-"))
    path = folder / "secrets.properties"
    try:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="ascii") as out:
            out.writelines(f"{_escaped(key, True)}={_escaped(value, False)}\n" for key, value in settings.items())
        yield ["--properties-file", str(path), "--load-spark-defaults"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _escaped(text: str, key: bool) -> str:
    """`text` as java.util.Properties reads it back, in ASCII: backslashes, line breaks and a leading blank
    escaped, and in a key the separators too; anything beyond ASCII as \\uXXXX (UTF-16 units). Spark trims the
    values it reads from the file, as it does a `--conf`'s."""
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif (key and char in "=: #!") or (char in " #!" and i == 0):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            units = char.encode("utf-16-be")
            out += [f"\\u{int.from_bytes(units[j : j + 2], 'big'):04x}" for j in range(0, len(units), 2)]
        else:
            out.append(char)
    return "".join(out)


def give_catalog_to_driver(settings: SubmitSettings, home: Path, on_status: Callable[[str], None]) -> bool:
    """A driver on the embedded catalog needs Derby's one process: the environment's warm engine, if one runs,
    stops first (once the commands it serves end; the next command starts it again). Whether it was stopped."""
    from delta_sync.spark import engine_control

    if not uses_embedded_catalog(settings) or engine_control.held_by_engine(home) is None:
        return False
    on_status("Stopping the delta-sync engine: spark-submit's driver takes the local catalog...")
    engine_control.stop_engine(
        home, lambda running: on_status(f"Stopping the delta-sync engine once {running} command(s) end...")
    )
    return True


def catalog_refused(settings: SubmitSettings, home: Path, log: Path) -> str | None:
    """The one sentence when the driver found the embedded catalog held by another Spark (Derby's words are
    in its log, not in the error the driver reports), else None."""
    if not uses_embedded_catalog(settings):
        return None
    from delta_sync.spark.session import _DERBY_LOCKED, derby_busy_error

    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    return str(derby_busy_error(home)) if _DERBY_LOCKED in text else None
