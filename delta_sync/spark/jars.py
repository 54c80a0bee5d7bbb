"""Delta Lake's JVM jars: fetched once through Maven into a per-user cache, then used offline.

The jars are not on PyPI, so the first run resolves them with ``mvn`` and keeps only those that
pyspark does not already ship (two versions of jackson or hadoop on one classpath break Spark).

An environment can ask for more Maven packages (a catalog's Spark connector, e.g. Unity Catalog's
``io.unitycatalog:unitycatalog-spark_4.2_2.13:0.6.0``) as ``spark.jars.packages`` in its Spark
settings (the project file's ``packages:`` lands there). Those are resolved together with Delta, by
one Maven run, into a cache folder of their own, and the session gets the whole set as ``spark.jars``
(`with_packages`), so Spark's own resolution (Ivy) never runs while ``mvn`` is there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from delta_sync.model.errors import SetupError

DELTA_GROUP = "io.delta"
DELTA_ARTIFACT = "delta-spark_4.2_2.13"

# Tried in order. 4.4.1 matches the delta-spark Python package we pin, but Maven Central only has
# 4.4.0 of the Spark 4.2 build; the Python package is pure Python and works with the 4.4.0 jars,
# so we fall back to the newest published 4.4 patch.
CANDIDATE_VERSIONS: tuple[str, ...] = ("4.4.1", "4.4.0")

# When mvn is missing, Spark resolves the jars itself and fails hard on a missing version, so it
# gets the one version known to be published rather than trying each candidate.
PACKAGES_FALLBACK_VERSION = CANDIDATE_VERSIONS[-1]

# A cold ~/.m2 on a slow link takes minutes; a proxy that swallows connections takes forever.
MVN_TIMEOUT_SECONDS = 15 * 60

MANIFEST_NAME = "manifest.json"

# RoaringBitmap 0.9.x's companion jar; pyspark ships RoaringBitmap 1.x, which no longer has it,
# so the artifactId comparison alone would let the old one onto the classpath.
ALWAYS_DROPPED = frozenset({"shims"})

# Delta's transitive dependencies that pyspark already ships (at other versions). Ivy must not
# resolve them: its version choice differs from Maven's, so it asks ~/.m2 for jars Maven never
# downloaded (only their POMs) and fails; and two copies on one classpath conflict anyway.
SHIPPED_BY_PYSPARK = (
    "com.fasterxml.jackson.core:jackson-annotations",
    "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind",
    "com.github.luben:zstd-jni",
    "com.google.code.findbugs:jsr305",
    "commons-pool:commons-pool",
    "io.airlift:aircompressor",
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.logging.log4j:log4j-api",
    "org.apache.logging.log4j:log4j-core",
    "org.apache.logging.log4j:log4j-slf4j2-impl",
    "org.apache.parquet:parquet-column",
    "org.apache.parquet:parquet-common",
    "org.apache.parquet:parquet-encoding",
    "org.apache.parquet:parquet-format-structures",
    "org.apache.parquet:parquet-hadoop",
    "org.apache.parquet:parquet-jackson",
    "org.locationtech.jts:jts-core",
    "org.roaringbitmap:RoaringBitmap",
    "org.roaringbitmap:shims",
    "org.slf4j:slf4j-api",
    "org.xerial.snappy:snappy-java",
)

# What a package depends on that delta-sync replaces with smaller jars, by the package's groupId:artifactId:
# hadoop-aws depends on the AWS SDK's bundle (~680 MB: every AWS service, shaded), of which S3A uses the S3
# modules only; those come as packages of their own (delta_sync.spark.object_storage.S3A_PACKAGES).
REPLACED_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "org.apache.hadoop:hadoop-aws": ("software.amazon.awssdk:bundle",),
}

FETCHING_MESSAGE = "Fetching Delta Lake jars through Maven (first run only)..."

# The Spark setting an environment names extra Maven packages with (comma-separated coordinates).
PACKAGES_KEY = "spark.jars.packages"
_COORDINATE = re.compile(r"[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.+-]+\Z")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Maven's boilerplate after every failure; it points at mvn flags the user never typed.
_MVN_NOISE = (
    "To see the full stack trace",
    "Re-run Maven using",
    "For more information about the errors",
    "[Help ",
)
_LEADING_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class DeltaJars:
    jars: tuple[Path, ...]
    packages: str | None = None
    ivy_dir: Path | None = None
    version: str = ""

    def spark_conf(self) -> dict[str, str]:
        if self.packages is not None:
            excludes = [*SHIPPED_BY_PYSPARK, *_replaced(self.packages.split(","))]
            conf = {"spark.jars.packages": self.packages, "spark.jars.excludes": ",".join(excludes)}
            if self.ivy_dir is not None:
                conf["spark.jars.ivy"] = str(self.ivy_dir)
            return conf
        return {"spark.jars": ",".join(str(jar) for jar in self.jars)}


def cache_dir() -> Path:
    if explicit := os.environ.get("DELTA_SYNC_CACHE"):
        return Path(explicit).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "delta-sync"
    return Path.home() / ".cache" / "delta-sync"


def artifact_id(jar_name: str) -> str:
    """``zstd-jni-1.5.7-3.jar`` -> ``zstd-jni``; ``log4j-1.2-api-2.25.4.jar`` -> ``log4j-1.2-api``."""
    return _split_jar_name(jar_name)[0]


def parse_packages(text: str) -> tuple[str, ...]:
    """``g:a:v,g:a:v`` -> its coordinates, each checked; raises ValueError naming a malformed one."""
    found = []
    for item in text.split(","):
        coordinate = item.strip()
        if not coordinate:
            continue
        check_coordinate(coordinate)
        found.append(coordinate)
    return tuple(dict.fromkeys(found))


def check_coordinate(coordinate: str) -> str:
    if not _COORDINATE.match(coordinate):
        raise ValueError(f"`{coordinate}` is not a Maven coordinate groupId:artifactId:version")
    return coordinate


def with_packages(conf: Mapping[str, str], on_status: Callable[[str], None] = lambda _msg: None) -> dict[str, str]:
    """An environment's Spark settings with its extra packages (``spark.jars.packages``) resolved:
    fetched through Maven with Delta, and the whole set given as ``spark.jars`` (the session's own
    Delta settings come first and are overridden by these). Unchanged without extra packages."""
    try:
        packages = parse_packages(conf.get(PACKAGES_KEY, ""))
    except ValueError as exc:
        raise SetupError(f"{PACKAGES_KEY}: {exc}") from None
    if not packages:
        return dict(conf)
    resolved = delta_jars(on_status, packages)
    result = {key: value for key, value in conf.items() if key != PACKAGES_KEY}
    for key, value in resolved.spark_conf().items():
        if key == "spark.jars" and result.get(key):
            value = f"{value},{result[key]}"
        result[key] = value
    return result


def delta_jars(on_status: Callable[[str], None] = lambda _msg: None, packages: Sequence[str] = ()) -> DeltaJars:
    """Delta's jars, plus those of `packages` (Maven coordinates) and what they need, resolved together.

    With DELTA_SYNC_JARS the folder it names is used as it is: it must hold the packages' jars too."""
    packages = tuple(dict.fromkeys(check_coordinate(p) for p in packages))
    if override := os.environ.get("DELTA_SYNC_JARS"):
        return _jars_from_folder(Path(override).expanduser())

    root = cache_dir()
    jars_root = root / "jars"
    if cached := _find_cached(jars_root, packages):
        return cached

    mvn = shutil.which("mvn")
    if mvn is None:
        on_status(
            "Maven (mvn) is not installed, so Spark will resolve the Delta Lake jars itself from Maven Central..."
        )
        return DeltaJars(
            jars=(),
            packages=",".join([f"{DELTA_GROUP}:{DELTA_ARTIFACT}:{PACKAGES_FALLBACK_VERSION}", *packages]),
            ivy_dir=root / "ivy",
            version=PACKAGES_FALLBACK_VERSION,
        )

    try:
        jars_root.mkdir(parents=True, exist_ok=True)
        (root / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SetupError(
            f"Cannot create the delta-sync cache folder {root}: {exc.strerror or exc}. "
            "Set DELTA_SYNC_CACHE to a writable folder."
        ) from exc

    with _exclusive_lock(jars_root / ".lock", on_status):
        # Another process may have finished the fetch while we waited for the lock.
        if cached := _find_cached(jars_root, packages):
            return cached
        _remove_stale_temp_dirs(jars_root)
        shipped = _pyspark_artifacts()
        on_status(FETCHING_MESSAGE if not packages else f"{FETCHING_MESSAGE[:-3]} with {', '.join(packages)}...")
        failure: _FetchFailure | None = None
        for version in CANDIDATE_VERSIONS:
            try:
                return _fetch(mvn, version, jars_root, root / "logs", shipped, packages)
            except _FetchFailure as exc:
                failure = exc
        assert failure is not None
        raise SetupError(_failure_message(failure, packages)) from None


# --- cache -------------------------------------------------------------------------------------


def _version_dir(jars_root: Path, version: str, packages: Sequence[str] = ()) -> Path:
    """``delta-spark_4.2_2.13-4.4.0``; with extra packages ``...-4.4.0+<digest of the packages>``."""
    suffix = ""
    if packages:
        suffix = "+" + hashlib.sha256("\n".join(sorted(packages)).encode()).hexdigest()[:12]
    return jars_root / f"{DELTA_ARTIFACT}-{version}{suffix}"


def _find_cached(jars_root: Path, packages: Sequence[str] = ()) -> DeltaJars | None:
    for version in CANDIDATE_VERSIONS:
        folder = _version_dir(jars_root, version, packages)
        names = _read_manifest(folder / MANIFEST_NAME, packages)
        if names is None:
            continue
        jars = tuple(folder / name for name in names)
        if all(jar.is_file() for jar in jars):
            return DeltaJars(jars=jars, version=version)
    return None


def _read_manifest(path: Path, packages: Sequence[str] = ()) -> list[str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = data.get("jars") if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        return None
    if not any(artifact_id(n) == DELTA_ARTIFACT for n in names):
        return None
    assert isinstance(data, dict)
    if sorted(data.get("packages") or []) != sorted(packages):
        return None  # a digest collision, or a folder written by hand
    return names


def _write_manifest(folder: Path, version: str, names: list[str], packages: Sequence[str] = ()) -> None:
    tmp = folder / f".{MANIFEST_NAME}.tmp"
    payload: dict[str, object] = {"group": DELTA_GROUP, "artifact": DELTA_ARTIFACT, "version": version}
    if packages:
        payload["packages"] = sorted(packages)
    payload["jars"] = names
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST_NAME)


def _remove_stale_temp_dirs(jars_root: Path) -> None:
    # Only called under the lock, so any temp dir here belongs to a run that died mid-fetch.
    for leftover in jars_root.glob(".tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def _exclusive_lock(path: Path, on_status: Callable[[str], None]) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_status("Waiting for another delta-sync process to finish fetching the Delta Lake jars...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# --- fetching ----------------------------------------------------------------------------------


class _FetchFailure(Exception):
    def __init__(self, version: str, reasons: list[str], log: Path) -> None:
        super().__init__(version)
        self.version = version
        self.reasons = reasons
        self.log = log


def fetch_command(mvn: str, pom: Path, download: Path) -> list[str]:
    """The Maven run that copies the POM's runtime dependencies, transitively, into `download`."""
    return [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={download}",
        "-DincludeScope=runtime",
    ]


def _fetch(
    mvn: str, version: str, jars_root: Path, logs_dir: Path, shipped: frozenset[str], packages: Sequence[str] = ()
) -> DeltaJars:
    target = _version_dir(jars_root, version, packages)
    log = logs_dir / f"mvn-{target.name}.log" if packages else logs_dir / f"mvn-{version}.log"
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=jars_root))
    try:
        pom = work / "pom.xml"
        pom.write_text(_pom(version, packages), encoding="utf-8")
        download = work / "download"
        _run_logged(fetch_command(mvn, pom, download), log, version)

        names = sorted(p.name for p in download.glob("*.jar")) if download.is_dir() else []
        if not any(artifact_id(n) == DELTA_ARTIFACT for n in names):
            raise _FetchFailure(version, [f"Maven finished but produced no {DELTA_ARTIFACT} jar."], log)

        keep = [n for n in names if artifact_id(n) not in shipped and artifact_id(n) not in ALWAYS_DROPPED]
        for name in names:
            if name not in keep:
                (download / name).unlink()

        if target.exists():
            shutil.rmtree(target)  # an incomplete earlier attempt: it has no manifest
        os.rename(download, target)
        # Written last: its presence is what marks the folder complete.
        _write_manifest(target, version, keep, packages)
        return DeltaJars(jars=tuple(target / n for n in keep), version=version)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_logged(command: list[str], log: Path, version: str) -> None:
    with log.open("wb") as out:
        try:
            # Own process group, so a timeout or Ctrl-C also stops the JVM that the mvn script starts.
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise _FetchFailure(version, [f"Could not run {command[0]}: {exc.strerror or exc}"], log) from exc
        try:
            returncode = proc.wait(timeout=MVN_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            reason = f"mvn did not finish within {_duration(MVN_TIMEOUT_SECONDS)} and was stopped."
            raise _FetchFailure(version, [*_error_lines(log), reason], log) from None
        except BaseException:
            _kill_group(proc)
            raise
    if returncode != 0:
        raise _FetchFailure(version, _error_lines(log) or [f"mvn exited with status {returncode}."], log)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"


def _pom(version: str, packages: Sequence[str] = ()) -> str:
    """Delta first; each extra package without what pyspark already ships, so Maven does not even
    download it (a connector may bring its own hadoop-client-runtime or jackson)."""
    extra = ""
    for coordinate in packages:
        group, artifact, version_ = coordinate.split(":")
        extra += _dependency(group, artifact, version_, exclude=(*SHIPPED_BY_PYSPARK, *_replaced([coordinate])))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>delta-sync</groupId>
  <artifactId>delta-sync-jars</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
{_dependency(DELTA_GROUP, DELTA_ARTIFACT, version)}{extra}  </dependencies>
</project>
"""


def _replaced(coordinates: Sequence[str]) -> list[str]:
    found = (REPLACED_DEPENDENCIES.get(c.strip().rpartition(":")[0], ()) for c in coordinates)
    return list(dict.fromkeys(e for excluded in found for e in excluded))


def _dependency(group: str, artifact: str, version: str, exclude: Sequence[str] = ()) -> str:
    exclusions = ""
    if exclude:
        items = "".join(
            f"        <exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>\n"
            for g, a in (e.split(":") for e in exclude)
        )
        exclusions = f"      <exclusions>\n{items}      </exclusions>\n"
    return (
        "    <dependency>\n"
        f"      <groupId>{group}</groupId>\n"
        f"      <artifactId>{artifact}</artifactId>\n"
        f"      <version>{version}</version>\n"
        f"{exclusions}"
        "    </dependency>\n"
    )


def _error_lines(log: Path, limit: int = 3) -> list[str]:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    lines = [_ANSI.sub("", line).strip() for line in text.splitlines()]
    errors = []
    for line in lines:
        if not line.startswith("[ERROR]"):
            continue
        message = line.removeprefix("[ERROR]").strip()
        message = re.sub(r"\s*->\s*\[Help \d+\]$", "", message)
        if message and not message.startswith(_MVN_NOISE):
            errors.append(message)
    if not errors:
        errors = [line for line in lines if line]
    return errors[-limit:]


def _failure_message(failure: _FetchFailure, packages: Sequence[str] = ()) -> str:
    tried = ", ".join(CANDIDATE_VERSIONS)
    details = "\n".join(f"  {reason}" for reason in failure.reasons)
    extra = f" with the environment's packages {', '.join(packages)}" if packages else ""
    return (
        f"Could not fetch the Delta Lake jars ({DELTA_GROUP}:{DELTA_ARTIFACT}, tried {tried}){extra} "
        f"through Maven. Maven reported for {failure.version}:\n"
        f"{details}\n"
        f"Full log: {failure.log} (logs for the other versions are in the same folder).\n"
        "Check network access to Maven Central and any proxy settings in ~/.m2/settings.xml, "
        "then run again; or set DELTA_SYNC_JARS to a folder containing the Delta Lake jars."
    )


# --- jar names ---------------------------------------------------------------------------------


def _split_jar_name(jar_name: str) -> tuple[str, str]:
    """Split ``<artifactId>-<version>[-<classifier>].jar``; names are ambiguous, so this is a heuristic.

    The version starts at the last hyphen-separated part that starts with a digit and contains a
    dot: that keeps ``zstd-jni-1.5.7-3`` and ``netty-all-4.2.13.Final`` whole and does not cut
    ``log4j-1.2-api`` or ``hive-shims-0.23`` short. Without such a part, the last part that starts
    with a digit is the version (``json-20231013``).
    """
    stem = jar_name.removesuffix(".jar")
    parts = stem.split("-")
    numeric = [i for i, part in enumerate(parts) if i > 0 and _LEADING_DIGIT.match(part)]
    dotted = [i for i in numeric if "." in parts[i]]
    start = dotted[-1] if dotted else (numeric[-1] if numeric else len(parts))
    return "-".join(parts[:start]), "-".join(parts[start:])


def _pyspark_jars_dir() -> Path:
    # find_spec locates the package without importing it; importing pyspark takes seconds.
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        jars = Path(location) / "jars"
        if jars.is_dir():
            return jars
    raise SetupError(
        "pyspark is not installed (or has no jars folder), so the Delta Lake jars cannot be matched "
        "against Spark's own. Reinstall delta-sync with its dependencies."
    )


def _pyspark_artifacts() -> frozenset[str]:
    return frozenset(artifact_id(jar.name) for jar in _pyspark_jars_dir().glob("*.jar"))


def _jars_from_folder(folder: Path) -> DeltaJars:
    if not folder.is_dir():
        raise SetupError(f"DELTA_SYNC_JARS points to {folder}, which is not a folder.")
    jars = tuple(sorted(folder.glob("*.jar")))
    delta = [jar for jar in jars if artifact_id(jar.name) == DELTA_ARTIFACT]
    if not delta:
        raise SetupError(
            f"DELTA_SYNC_JARS points to {folder}, which has no {DELTA_ARTIFACT}-<version>.jar. "
            "Put the Delta Lake jars there, or unset DELTA_SYNC_JARS to let delta-sync fetch them."
        )
    return DeltaJars(jars=jars, version=_split_jar_name(delta[0].name)[1])
