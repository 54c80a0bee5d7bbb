"""`delta-sync doctor`'s probes of this machine: Java, pyspark and delta-spark against Delta's jars, the jars
cache, Maven, the catalog's server (Hive metastore, Spark Connect, Unity Catalog, a standalone master), the
local catalog's holder, the class archive and the warm engine.

Each probe returns a `Check` and never raises: whatever goes wrong is the finding. Probes that touch the
network connect with a short timeout first, so that a server that is not there is one line within seconds.
None of them imports pyspark (they run before a JVM could start, and in a second or two).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delta_sync.model.errors import DeltaSyncError
from delta_sync.render.doctor import Check, failure, ok, warning
from delta_sync.spark import classcache, engine_control, jars, servers, session
from delta_sync.spark.engine_identity import engine_version

# What Spark 4.2 runs on.
JAVA_VERSIONS = (17, 21)
JAVA_TIMEOUT = 15.0
NETWORK_TIMEOUT = 3.0
HTTP_TIMEOUT = 5.0
MAVEN_CENTRAL = ("repo.maven.apache.org", 443)
# The Spark version Delta's jars are built for: delta-spark_4.2_2.13 -> 4.2.
SPARK_LINE = jars.DELTA_ARTIFACT.split("_")[1]
_JAVA_VERSION = re.compile(r'version "(?P<v>[^"]+)"')
_JVM_FOLDERS = ("/usr/lib/jvm", "/usr/lib64/jvm", "/Library/Java/JavaVirtualMachines", "/opt/java")
_JAVA_FIX = "point JAVA_HOME at a Java 17 or 21 installation{found}, or unset it to use the java on PATH"


# --- Java ------------------------------------------------------------------------------------------


def java_check(environ: Mapping[str, str] = os.environ, jvm_folders: Sequence[str] = _JVM_FOLDERS) -> Check:
    """The java Spark would start (JAVA_HOME's, else the one on PATH, as spark-class picks it) and its version."""
    title = "Java"
    found = _candidates(jvm_folders)
    hint = f" (found here: {', '.join(found)})" if found else ""
    home = environ.get("JAVA_HOME", "").strip()
    if home:
        java = Path(home).expanduser() / "bin" / "java"
        if not java.is_file() or not os.access(java, os.X_OK):
            return failure(
                "java",
                title,
                f"JAVA_HOME is {home}, which holds no bin/java, so Spark cannot start",
                _JAVA_FIX.format(found=hint),
            )
    else:
        which = shutil.which("java", path=environ.get("PATH"))
        if which is None:
            return failure(
                "java",
                title,
                "no java on PATH and JAVA_HOME is not set: Spark needs Java 17 or 21",
                f"install Java 17 or 21 (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME{hint}",
            )
        java = Path(which)
    try:
        done = subprocess.run(
            [str(java), "-version"],
            capture_output=True,
            text=True,
            timeout=JAVA_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env=dict(environ),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"did not answer within {JAVA_TIMEOUT:.0f} s" if isinstance(exc, subprocess.TimeoutExpired) else str(exc)
        return failure("java", title, f"{java} -version failed: {why}", _JAVA_FIX.format(found=hint))
    text = done.stderr + done.stdout
    version = _JAVA_VERSION.search(text)
    if done.returncode != 0 or version is None:
        first = next((line.strip() for line in text.splitlines() if line.strip()), f"exit {done.returncode}")
        return failure("java", title, f"{java} -version failed: {first}", _JAVA_FIX.format(found=hint))
    major = java_major(version.group("v"))
    if major not in JAVA_VERSIONS:
        return failure(
            "java",
            title,
            f"Java {version.group('v')} at {java}: Spark {SPARK_LINE} runs on Java 17 or 21",
            _JAVA_FIX.format(found=hint) if home else f"install Java 17 or 21 and set JAVA_HOME to it{hint}",
        )
    return ok("java", title, f"Java {version.group('v')} ({java})")


def java_major(version: str) -> int:
    """`17.0.15` -> 17, `1.8.0_392` -> 8, `21` -> 21, `21-ea` -> 21."""
    parts = re.split(r"[._+-]", version)
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        return 0


def _candidates(folders: Sequence[str]) -> list[str]:
    """Java 17 and 21 installations in the usual places, to name in a fix."""
    found = []
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in sorted(Path(folder).iterdir()):
                home = entry / "Contents" / "Home" if (entry / "Contents" / "Home").is_dir() else entry
                if (home / "bin" / "java").is_file() and re.search(r"(?<!\d)(17|21)(?!\d)", entry.name):
                    found.append(str(home))
    return found[:3]


# --- pyspark, delta-spark and the jars -------------------------------------------------------------


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def versions_check(jars_version: str | None, installed: Callable[[str], str | None] = _installed) -> Check:
    """pyspark must be the Spark line the Delta jars are built for; delta-spark (Python) the jars' Delta line."""
    title = "pyspark and delta-spark"
    pyspark, delta = installed("pyspark"), installed("delta-spark")
    delta_jars = jars_version or jars.CANDIDATE_VERSIONS[-1]
    if pyspark is None:
        return failure(
            "versions",
            title,
            "pyspark is not installed",
            "reinstall delta-sync with its dependencies (pip install -e .)",
        )
    if _line(pyspark) != SPARK_LINE:
        return failure(
            "versions",
            title,
            f"pyspark {pyspark}, but delta-sync's Delta jars ({jars.DELTA_ARTIFACT}) are built for Spark {SPARK_LINE}",
            f"pip install 'pyspark=={SPARK_LINE}.0'",
        )
    if delta is None:
        return warning(
            "versions",
            title,
            f"pyspark {pyspark}; the delta-spark Python package is not installed",
            "reinstall delta-sync with its dependencies (pip install -e .)",
        )
    if _line(delta) != _line(delta_jars):
        return warning(
            "versions",
            title,
            f"pyspark {pyspark}, delta-spark {delta}, but the Delta jars are {delta_jars}",
            f"pip install 'delta-spark=={delta_jars}' (or the newest {_line(delta_jars)} patch)",
        )
    return ok(
        "versions", title, f"pyspark {pyspark}, delta-spark {delta}, Delta jars {delta_jars} ({jars.DELTA_ARTIFACT})"
    )


@dataclass(frozen=True, slots=True)
class JarsFound:
    check: Check
    complete: bool
    version: str | None = None
    delta: jars.DeltaJars | None = None


def jars_check(packages: Sequence[str] = (), mvn: str | None = None) -> JarsFound:
    """The jars cache: complete (every jar its manifest names is there), else what the first run will do."""
    title = "Delta jars cache"
    if override := os.environ.get("DELTA_SYNC_JARS"):
        try:
            found = jars.delta_jars(packages=packages)
        except DeltaSyncError as exc:
            return JarsFound(failure("jars", title, str(exc), "fix DELTA_SYNC_JARS, or unset it"), False)
        return JarsFound(
            ok("jars", title, f"{len(found.jars)} jars in {override} (DELTA_SYNC_JARS), Delta {found.version}"),
            True,
            found.version,
            found,
        )
    root = jars.cache_dir() / "jars"
    cached = jars._find_cached(root, packages)
    if cached is not None:
        folder = cached.jars[0].parent if cached.jars else root
        return JarsFound(
            ok("jars", title, f"complete: {len(cached.jars)} jars, Delta {cached.version}, in {folder}"),
            True,
            cached.version,
            cached,
        )
    partial = [p.name for p in root.glob(f"{jars.DELTA_ARTIFACT}-*")] if root.is_dir() else []
    state = f"incomplete ({', '.join(sorted(partial))} lacks a jar or its manifest)" if partial else "not fetched yet"
    with_packages = f" with {', '.join(packages)}" if packages else ""
    if mvn is None:
        return JarsFound(
            warning(
                "jars",
                title,
                f"{state} in {root}{with_packages}, and Maven (mvn) is not installed: Spark resolves the jars itself "
                "on every start",
                "install Maven (e.g. apt-get install maven), or set DELTA_SYNC_JARS to a folder of the Delta jars",
            ),
            False,
        )
    return JarsFound(
        warning(
            "jars",
            title,
            f"{state} in {root}{with_packages}; the next command fetches it through Maven",
            "run any command that starts Spark (e.g. delta-sync plan) while Maven Central is reachable",
        ),
        False,
    )


def maven_check(jars_complete: bool, mvn: str | None, reach: Callable[[str, int], str | None] | None = None) -> Check:
    """Whether Maven Central (or the mirror or proxy ~/.m2/settings.xml names) takes a connection. Offline with a
    complete cache is a warning: nothing needs fetching until the Delta version or the packages change."""
    title = "Maven"
    reach = reach or (lambda host, port: servers.unreachable(host, port, NETWORK_TIMEOUT))
    host, port, via = maven_endpoint()
    problem = reach(host, port)
    where = f"{host}:{port}{via}"
    if problem is None:
        if mvn is None:
            return ok("maven", title, f"{where} reachable; mvn is not installed (Spark's own resolver is used)")
        return ok("maven", title, f"{where} reachable ({mvn})")
    if jars_complete:
        return warning(
            "maven",
            title,
            f"{where} not reachable ({problem}); offline is fine while the jars cache is complete",
            "none needed now; a new Delta version or an environment's packages: will need Maven Central again",
        )
    return failure(
        "maven",
        title,
        f"{where} not reachable ({problem}) and the jars cache is not complete, so Spark cannot start",
        "give this machine access to Maven Central (or a mirror in ~/.m2/settings.xml), "
        "or set DELTA_SYNC_JARS to a folder of the Delta jars",
    )


def maven_endpoint(settings: Path | None = None) -> tuple[str, int, str]:
    """Where Maven goes: an active proxy or a mirror of central in ~/.m2/settings.xml, else Maven Central."""
    path = settings or Path.home() / ".m2" / "settings.xml"
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return (*MAVEN_CENTRAL, "")
    strip = re.compile(r"\{[^}]*\}")
    for element in root.iter():
        element.tag = strip.sub("", str(element.tag))
    for proxy in root.iterfind("proxies/proxy"):
        if (proxy.findtext("active") or "true").strip() == "true" and proxy.findtext("host"):
            port = int((proxy.findtext("port") or "80").strip() or 80)
            return str(proxy.findtext("host")).strip(), port, " (proxy in ~/.m2/settings.xml)"
    for mirror in root.iterfind("mirrors/mirror"):
        of = {p.strip() for p in (mirror.findtext("mirrorOf") or "").split(",")}
        url = urllib.parse.urlsplit((mirror.findtext("url") or "").strip())
        if of & {"*", "central", "external:*"} and url.hostname:
            port = url.port or (443 if url.scheme == "https" else 80)
            return url.hostname, port, " (mirror in ~/.m2/settings.xml)"
    return (*MAVEN_CENTRAL, "")


def maven_command() -> str | None:
    return shutil.which("mvn")


# --- the catalog's server --------------------------------------------------------------------------


def metastore_check(key: str, uris: str, redact: Callable[[str], str] = lambda t: t) -> Check:
    """A Hive metastore: a TCP connect with a short timeout first, then a thrift call it must answer."""
    title = "Hive metastore"
    problem = servers.metastore_problem(key, uris, redact)
    if problem is not None:
        head, _, fix = problem.partition("; ")
        return failure("catalog", title, head[0].upper() + head[1:], fix)
    return ok("catalog", title, f"{servers.shown(uris, redact)} answers")


def master_check(master: str, redact: Callable[[str], str] = lambda t: t) -> Check | None:
    """A standalone master (spark://) takes a connection; None for local, yarn and k8s (nothing to reach)."""
    problem = servers.master_problem(master, redact)
    if problem is not None:
        head, _, fix = problem.partition("; ")
        return failure("master", "Spark master", head[0].upper() + head[1:], fix)
    if master.strip().startswith("spark://"):
        return ok("master", "Spark master", f"{servers.shown(master, redact)} takes connections")
    return None


def connect_check(url: str, redact: Callable[[str], str] = lambda t: t) -> Check:
    """Spark Connect: the port takes a connection, the client is installed, and the server answers a call."""
    from delta_sync.spark import connect

    title = "Spark Connect"
    shown = connect.shown_url(url, redact)
    parsed = urllib.parse.urlsplit(url.split(";", 1)[0].replace("sc://", "http://", 1))
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    problem = servers.unreachable(host, port, NETWORK_TIMEOUT)
    if problem is not None:
        return failure(
            "catalog",
            title,
            f"could not reach {shown} ({problem})",
            "check that the Spark Connect server runs there and that connect: names its host and port",
        )
    missing = connect.missing_modules()
    if missing:
        return failure(
            "catalog",
            title,
            f"{shown} takes connections, but the client lacks {', '.join(missing)}",
            connect.INSTALL_HINT,
        )
    try:
        spark = connect.connect_session(url, redact=redact)
        version = spark.version
    except DeltaSyncError as exc:
        return failure("catalog", title, str(exc), "check the server's log, the URL and the token")
    except Exception as exc:  # the client's own errors; the finding is the line, never a traceback
        return failure("catalog", title, f"{shown}: {type(exc).__name__}: {exc}".splitlines()[0], "check the server")
    return ok("catalog", title, f"{shown} answers (Spark {version})")


def unity_check(name: str, uri: str, token: str | None, redact: Callable[[str], str] = lambda t: t) -> Check:
    """Unity Catalog: its REST API answers over HTTP (the catalogs list), with the token when one is set."""
    title = f"Unity Catalog ({name})"
    base = uri.rstrip("/")
    url = f"{base}/api/2.1/unity-catalog/catalogs"
    shown = redact(base)
    parsed = urllib.parse.urlsplit(base)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return failure(
            "catalog",
            title,
            f"spark.sql.catalog.{name}.uri = `{shown}` is not an http(s) URL",
            "write the server's URL",
        )
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    problem = servers.unreachable(parsed.hostname, port, NETWORK_TIMEOUT)
    if problem is not None:
        return failure(
            "catalog",
            title,
            f"could not reach {shown} ({problem})",
            f"check that the Unity Catalog server runs there and that spark.sql.catalog.{name}.uri names it",
        )
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        return failure("catalog", title, f"{shown} did not answer over HTTP ({exc})", "check the server and the URL")
    if status in (401, 403):
        return failure(
            "catalog",
            title,
            f"{shown} refused the request (HTTP {status})",
            f"check spark.sql.catalog.{name}.token (or .auth.token)",
        )
    if status >= 400:
        return warning(
            "catalog",
            title,
            f"{shown} answered HTTP {status} to GET /api/2.1/unity-catalog/catalogs",
            "check that the URL is the server's root",
        )
    return ok("catalog", title, f"{shown} answers (HTTP {status})")


# --- the local catalog, the class archive and the engine --------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalHolder:
    """Who holds the embedded catalog in `home`: nobody, this process, the warm engine (and what it said of
    itself), or another process (as its lock file names it)."""

    kind: str  # "free", "self", "engine", "other"
    status: Mapping[str, Any] | None = None
    who: str = ""


def local_holder(home: Path) -> LocalHolder:
    """Without opening Derby: the engine is asked over its socket, the lock is tried and let go at once."""
    found = engine_control.engine_status(home)
    if found is not None:
        return LocalHolder("engine", found)
    lock = home / ".lock"
    if not lock.is_file():
        return LocalHolder("free")
    try:
        with lock.open("a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                written = handle.read().strip()
                if written.partition(" ")[0] == str(os.getpid()):
                    return LocalHolder("self")
                return LocalHolder("other", who=written)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError as exc:
        return LocalHolder("other", who=f"its lock file cannot be opened: {exc}")
    return LocalHolder("free")


def engine_line(found: Mapping[str, Any]) -> str:
    running = len(found.get("commands") or [])
    doing = f"{running} command(s) running" if running else f"idle {float(found.get('idle_for') or 0):.0f}s"
    return (
        f"pid {found.get('pid')}, version {found.get('version')}, {found.get('served', 0)} command(s) served, {doing}"
    )


def engine_check(home: Path, used: bool, why_not: str = "") -> Check:
    """The warm engine of the local catalog in `home`: running and answering, or not running; one left behind by
    a dead process, or of another delta-sync version, is a warning."""
    title = "Warm engine"
    if not used:
        return ok("engine", title, f"not used ({why_not})")
    state = engine_control.EngineState.read(home)
    found = engine_control.engine_status(home)
    hint = session.engine_hint(home)
    if found is not None:
        mine = engine_version()
        if found.get("version") not in (None, mine):
            return warning(
                "engine",
                title,
                f"runs delta-sync {found.get('version')}, this is {mine} (an engine of other code is replaced by the "
                "next command)",
                f"stop it: {hint}",
            )
        return ok("engine", title, f"running for {home}: {engine_line(found)}")
    if state is not None and engine_control.alive(state.pid):
        return warning(
            "engine", title, f"pid {state.pid} holds {home} but does not answer", f"{hint} (or kill {state.pid})"
        )
    return ok("engine", title, f"not running for {home} (the next command at a terminal starts it)")


def archive_check(delta: jars.DeltaJars | None, conf: Mapping[str, str]) -> Check:
    """The JVM class archive (classcache) for this Java, pyspark and these jars: there, or written later."""
    title = "Class archive"
    if delta is None:
        return ok("archive", title, "not checked: the Delta jars are not fetched yet")
    path = classcache.archive_path(delta, conf)
    if path is None:
        return warning("archive", title, "no java to key the archive by", "fix Java (above)")
    if path.is_file():
        size = path.stat().st_size / 2**20
        age = (time.time() - path.stat().st_mtime) / 86400
        return ok("archive", title, f"{path} ({size:.0f} MiB, {age:.0f} day(s) old)")
    folder = path.parent
    probe = folder if folder.is_dir() else jars.cache_dir()
    if probe.exists() and not os.access(probe, os.W_OK):
        return warning(
            "archive",
            title,
            f"{probe} is not writable, so no archive can be kept",
            "set DELTA_SYNC_CACHE to a writable folder",
        )
    return ok("archive", title, "none yet for this Java and these jars: the warm engine writes it when it stops")
