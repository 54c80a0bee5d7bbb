"""A Unity Catalog OSS server for tests, run from its Maven Central jars (no tarball, no Docker).

The server's classpath is fetched once with ``mvn`` (a tiny POM depending on
``io.unitycatalog:unitycatalog-server``) into ``<delta-sync cache>/unitycatalog-server-<version>/``
and reused by later runs. Each server runs in a scratch folder of its own: the server reads
``etc/conf/server.properties`` relative to its working directory, where ``server.env=test`` keeps
its database in memory, and managed tables live under the folder's ``storage/``. Once
``GET /api/2.1/unity-catalog/catalogs`` answers, a catalog and a schema are created over REST.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delta_sync.spark.jars import cache_dir, fetch_command
from tests.servers import LOCALHOST, ServerError, ServerProcess, free_ports, http_json, running

UC_VERSION = "0.6.0"
SERVER_GROUP = "io.unitycatalog"
SERVER_ARTIFACT = "unitycatalog-server"
MAIN_CLASS = "io.unitycatalog.server.UnityCatalogServer"
# The Spark connector an environment names in `packages:` to reach the server.
CONNECTOR = f"io.unitycatalog:unitycatalog-spark_4.2_2.13:{UC_VERSION}"
CONNECTOR_CLASS = "io.unitycatalog.spark.UCSingleCatalog"
API = "/api/2.1/unity-catalog"
FETCH_TIMEOUT = 20 * 60.0  # a cold ~/.m2: a few hundred MB of dependencies

_MISSING = re.compile(r"Could not find artifact [^\s]+|[^\s]+ was not found in [^\s]+")


class Unavailable(ServerError):
    """The server's jars cannot be had from the Maven repositories this machine reaches."""


def _pom() -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>delta-sync-tests</groupId>
  <artifactId>unitycatalog-server-classpath</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{SERVER_GROUP}</groupId>
      <artifactId>{SERVER_ARTIFACT}</artifactId>
      <version>{UC_VERSION}</version>
    </dependency>
  </dependencies>
</project>
"""


def server_classpath(version_dir: Path | None = None) -> Path:
    """The folder of the server's jars, fetched with mvn on first use (one fetch at a time)."""
    folder = version_dir or cache_dir() / f"{SERVER_ARTIFACT}-{UC_VERSION}"
    jars, done = folder / "jars", folder / "complete"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file() and any(jars.glob(f"{SERVER_ARTIFACT}-*.jar")):
            return jars
        mvn = shutil.which("mvn")
        if mvn is None:
            raise Unavailable("Maven (mvn) is not installed, so the Unity Catalog server's jars cannot be fetched")
        shutil.rmtree(jars, ignore_errors=True)
        pom, log = folder / "pom.xml", folder / "mvn.log"
        pom.write_text(_pom(), encoding="utf-8")
        # -U: a "not found" that Maven cached from an earlier run is asked again.
        command = [*fetch_command(mvn, pom, jars), "-U"]
        with log.open("wb") as out:
            try:
                code = subprocess.run(
                    command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=FETCH_TIMEOUT
                ).returncode
            except subprocess.TimeoutExpired:
                message = f"mvn did not fetch the Unity Catalog server within {FETCH_TIMEOUT:.0f}s; see {log}"
                raise ServerError(message) from None
        text = log.read_text(errors="replace")
        if code != 0:
            missing = _MISSING.search(text)
            if missing:
                raise Unavailable(
                    f"{SERVER_GROUP}:{SERVER_ARTIFACT}:{UC_VERSION} cannot be fetched from the Maven repositories "
                    f"this machine reaches (mvn: {missing.group(0)}); see {log}"
                )
            tail = "\n".join(text.splitlines()[-20:])
            raise ServerError(f"mvn could not fetch the Unity Catalog server ({code}); {log}:\n{tail}")
        done.write_text(UC_VERSION, encoding="utf-8")
        return jars


def request_json(url: str, body: dict[str, Any] | None = None, method: str = "GET", timeout: float = 10.0) -> Any:
    """`url`'s JSON answer to GET, or to `method` with `body`; an HTTP error is raised with its body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read().decode()
    except urllib.error.HTTPError as exc:
        raise ServerError(f"{method} {url} -> {exc.code}: {exc.read().decode(errors='replace')}") from None
    return json.loads(raw) if raw.strip() else None


@dataclass(frozen=True)
class UnityCatalog:
    """A running Unity Catalog server with one catalog and one schema in it."""

    process: ServerProcess
    port: int
    folder: Path
    catalog: str
    schema: str

    @property
    def url(self) -> str:
        return f"http://{LOCALHOST}:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.url}{API}"

    @property
    def storage(self) -> Path:
        return self.folder / "storage"

    def table(self, full_name: str) -> Any:
        """The server's own record of a table (GET /tables/{full_name})."""
        return request_json(f"{self.api}/tables/{full_name}")

    def spark_conf(self) -> dict[str, str]:
        """What a Spark session needs to use this server as catalog `self.catalog` (the connector's
        jars come from the environment's `packages:`)."""
        prefix = f"spark.sql.catalog.{self.catalog}"
        return {
            prefix: CONNECTOR_CLASS,
            f"{prefix}.uri": self.url,
            f"{prefix}.token": "",
        }


def _properties(folder: Path) -> str:
    return "\n".join(
        [
            "server.env=test",  # an in-memory database, gone with the process
            "server.authorization=disable",
            "server.managed-table.enabled=true",
            f"storage-root.tables={(folder / 'storage').as_uri()}",
            "",
        ]
    )


_LOG4J = """\
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5level %c{1} - %msg%n
"""


@contextlib.contextmanager
def unity_catalog(folder: Path, catalog: str = "unity", schema: str = "shop") -> Iterator[UnityCatalog]:
    """A Unity Catalog server on a free port of 127.0.0.1, with `catalog`.`schema` created; its
    scratch folder (config, managed tables, log) is `folder`; stopped on the way out."""
    jars = server_classpath()
    conf = folder / "etc" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (folder / "storage").mkdir(exist_ok=True)
    (conf / "server.properties").write_text(_properties(folder), encoding="utf-8")
    (conf / "server.log4j2.properties").write_text(_LOG4J, encoding="utf-8")
    (port,) = free_ports(1)
    java = shutil.which("java") or "java"
    process = ServerProcess(
        "unity catalog",
        [java, "-cp", f"{jars}/*", MAIN_CLASS, "-p", str(port)],
        folder / "logs" / "unitycatalog.log",
        cwd=folder,
    )
    server = UnityCatalog(process, port, folder, catalog, schema)
    with running(process):
        process.start()
        process.wait_until(lambda: isinstance(http_json(f"{server.api}/catalogs"), dict), "its REST API answering")
        request_json(
            f"{server.api}/catalogs",
            {"name": catalog, "comment": "delta-sync tests", "storage_root": server.storage.as_uri()},
            "POST",
        )
        request_json(f"{server.api}/schemas", {"name": schema, "catalog_name": catalog}, "POST")
        yield server
