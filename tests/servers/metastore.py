"""A Hive metastore over thrift on 127.0.0.1, from the Hive 2.3 classes the installed pyspark ships.

The server keeps its catalog in a Derby database of its own under `folder` (schema created on first
start), so two delta-sync processes that point `hive.metastore.uris` at it share one catalog, as two
jobs sharing a production metastore do. The warehouse is a local folder both sides reach by path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers import LOCALHOST, ServerProcess, free_ports, port_open, running, spark_env, spark_home

# The metastore starts in ~10 s on an idle machine; creating the Derby schema adds a few more.
METASTORE_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"


@dataclass(frozen=True)
class HiveMetastore:
    server: ServerProcess
    port: int
    warehouse: Path

    @property
    def uri(self) -> str:
        return f"thrift://{LOCALHOST}:{self.port}"

    def spark_conf(self) -> dict[str, str]:
        """What a Spark client needs to use this metastore as its session catalog."""
        return {
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.hive.metastore.uris": self.uri,
            "spark.sql.warehouse.dir": self.warehouse.as_uri(),
        }


@contextlib.contextmanager
def hive_metastore(folder: Path) -> Iterator[HiveMetastore]:
    """A thrift metastore server with its Derby database and warehouse under `folder`; stopped on the way out."""
    (port,) = free_ports(1)
    warehouse = folder / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    database = folder / "metastore_db"
    hiveconf = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={database};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        # BoneCP, Hive 2.3's default pool, is not among pyspark's jars.
        "datanucleus.connectionPoolingType": "DBCP",
        "hive.metastore.warehouse.dir": warehouse.as_uri(),
        "hive.metastore.event.db.notification.api.auth": "false",
        # Hive would switch log4j to async loggers, whose disruptor jar pyspark does not ship.
        "hive.async.log.enabled": "false",
    }
    args = [arg for key, value in hiveconf.items() for arg in ("--hiveconf", f"{key}={value}")]
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else Path("java")
    # pyspark's jars hold the metastore's classes with Hadoop, Derby, DataNucleus and thrift.
    command = [
        str(java),
        *("-Xmx512m", f"-Dderby.system.home={folder}", f"-Dderby.stream.error.file={folder / 'derby.log'}"),
        *("-cp", str(spark_home() / "jars" / "*"), METASTORE_CLASS, "-p", str(port), *args),
    ]
    server = ServerProcess(
        "hive metastore", command, folder / "logs" / "metastore.log", spark_env(folder / "conf"), cwd=folder
    )
    with running(server):
        server.start()
        server.wait_until(lambda: port_open(port), f"thrift port {port} listening")
        yield HiveMetastore(server, port, warehouse)
