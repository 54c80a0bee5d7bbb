"""A real Spark Connect server, started from the installed pyspark as a process of its own.

`spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer` (a "special class" that
needs no application jar) on local[2], its gRPC port bound to 127.0.0.1 and guarded by a static token,
with Delta (the jars from delta-sync's own cache) and a Hive catalog in a Derby metastore and a
warehouse of its own under the given folder. The settings, the token among them, go in a properties
file rather than on the command line, so that neither `ps` nor the server's log shows the token.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from delta_sync.spark.jars import delta_jars
from delta_sync.spark.session import LocalCatalog, spark_conf
from tests.servers import LOCALHOST, ServerProcess, free_ports, port_open, running, spark_env, spark_home

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

# Spark's own output, quietened to warnings and errors, goes to the server's log file.
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.derby.name = org.apache.hadoop.hive.metastore
logger.derby.level = error
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = error
"""


@dataclass(frozen=True)
class ConnectServer:
    """A running Spark Connect server and what a client needs to reach it."""

    process: ServerProcess
    port: int
    token: str
    home: Path

    @property
    def url(self) -> str:
        """The URL without the token (a client takes it from `;token=` or SPARK_CONNECT_AUTHENTICATE_TOKEN).

        With a token the client uses TLS unless the host is literally `localhost`, hence not 127.0.0.1."""
        return f"sc://localhost:{self.port}"

    @property
    def servers(self) -> tuple[ServerProcess]:
        return (self.process,)

    def report(self) -> str:
        return self.process.report()


def server_conf(home: Path, port: int, token: str) -> dict[str, str]:
    """The server's settings: the in-process session's (Delta, the embedded Hive catalog under `home`,
    Delta's small-machine tuning), plus the Connect endpoint on 127.0.0.1 with its token."""
    conf = spark_conf(LocalCatalog(home, master="local[2]"), delta_jars())
    conf.update(
        {
            "spark.app.name": "delta-sync test Spark Connect server",
            "spark.connect.grpc.binding.address": LOCALHOST,
            "spark.connect.grpc.binding.port": str(port),
            "spark.connect.authenticate.token": token,
        }
    )
    # A test server lives for a minute: the JIT's quick tier only, which halves its warm-up on a busy machine.
    conf["spark.driver.extraJavaOptions"] += " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    return conf


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[ConnectServer]:
    """A Spark Connect server on 127.0.0.1 with a fresh random token, its metastore, warehouse, settings
    and log under `folder`; ready (its gRPC port accepting) when yielded, stopped on the way out.

    The port opens only once the server's SparkSession is up, so an open port means it serves."""
    (port,) = free_ports(1)
    token = secrets.token_hex(16)
    home = folder / "catalog"
    for path in (home / "logs", home / "warehouse"):
        path.mkdir(parents=True, exist_ok=True)
    conf_dir = folder / "conf"
    env = spark_env(conf_dir)
    (conf_dir / "log4j2.properties").write_text(LOG4J2)
    properties = conf_dir / "connect-server.properties"
    properties.write_text("".join(f"{key} {value}\n" for key, value in server_conf(home, port, token).items()))
    properties.chmod(0o600)
    process = ServerProcess(
        "spark connect server",
        [
            str(spark_home() / "bin" / "spark-submit"),
            *("--class", CONNECT_SERVER_CLASS),
            *("--name", "Spark Connect server"),
            *("--properties-file", str(properties)),
        ],
        folder / "logs" / "connect-server.log",
        env,
        cwd=folder,
    )
    with running(process):
        process.start()
        process.wait_until(lambda: port_open(port), f"the Connect port {port} accepting")
        yield ConnectServer(process, port, token, home)
