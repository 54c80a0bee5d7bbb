"""A Hive metastore over thrift on 127.0.0.1, from the Hive 2.3 classes the installed pyspark ships.

The server keeps its catalog in a Derby database of its own under `folder` (schema created on first
start), so two delta-sync processes that point `hive.metastore.uris` at it share one catalog, as two
jobs sharing a production metastore do. The warehouse is a local folder both sides reach by path.

Given an S3 server (tests/servers/s3.py), the metastore reaches it too, as a metastore in front of an S3
warehouse must: creating a database or a table, Hive's server checks (and makes) its folder with a Hadoop
FileSystem of its own, so `s3a://` locations need S3A's jars on its classpath, the endpoint in its settings and
credentials in its environment; without them a client's CREATE SCHEMA at an `s3a://` location fails in the
metastore (`ClassNotFoundException: org.apache.hadoop.fs.s3a.S3AFileSystem`), whatever the client has.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers import (
    LOCALHOST,
    ServerError,
    ServerProcess,
    free_ports,
    port_open,
    running,
    spark_env,
    spark_home,
)
from tests.servers.s3 import S3

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


def s3a_jars() -> list[Path]:
    """S3A's jars (hadoop-aws and the AWS SDK modules it needs), as delta-sync resolves them for an environment
    on object storage: from its cache, fetched through Maven once. Delta's own jars are left out: a metastore
    reads no Delta log."""
    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.object_storage import S3A_PACKAGES

    delta = {jar.name for jar in delta_jars().jars}
    found = [jar for jar in delta_jars(packages=S3A_PACKAGES).jars if jar.name not in delta]
    if not any(jar.name.startswith("hadoop-aws-") for jar in found):
        raise ServerError(f"S3A's jars were not resolved into files (is mvn installed?): {found}")
    return found


def s3_settings(s3: S3) -> tuple[dict[str, str], dict[str, str]]:
    """What the metastore needs to reach `s3`: Hadoop settings (its hiveconf) and environment variables.

    The credentials go in the environment, where S3A's default provider chain finds them, not on the command
    line, as a production metastore would keep them (or in its core-site.xml, or an instance role)."""
    conf = {key.removeprefix("spark.hadoop."): value for key, value in s3.spark_conf().items()}
    env = {"AWS_ACCESS_KEY_ID": conf.pop("fs.s3a.access.key"), "AWS_SECRET_ACCESS_KEY": conf.pop("fs.s3a.secret.key")}
    return conf, env


@contextlib.contextmanager
def hive_metastore(folder: Path, s3: S3 | None = None) -> Iterator[HiveMetastore]:
    """A thrift metastore server with its Derby database and warehouse under `folder`, reaching `s3` when given;
    stopped on the way out."""
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
    classpath = [str(spark_home() / "jars" / "*")]
    env: dict[str, str] = {}
    if s3 is not None:
        s3_conf, env = s3_settings(s3)
        hiveconf.update(s3_conf)
        classpath += [str(jar) for jar in s3a_jars()]
    args = [arg for key, value in hiveconf.items() for arg in ("--hiveconf", f"{key}={value}")]
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else Path("java")
    # pyspark's jars hold the metastore's classes with Hadoop, Derby, DataNucleus and thrift.
    command = [
        str(java),
        *("-Xmx512m", f"-Dderby.system.home={folder}", f"-Dderby.stream.error.file={folder / 'derby.log'}"),
        *("-cp", os.pathsep.join(classpath), METASTORE_CLASS, "-p", str(port), *args),
    ]
    server = ServerProcess(
        "hive metastore", command, folder / "logs" / "metastore.log", spark_env(folder / "conf", env), cwd=folder
    )
    with running(server):
        server.start()
        server.wait_until(lambda: port_open(port), f"thrift port {port} listening")
        yield HiveMetastore(server, port, warehouse)
