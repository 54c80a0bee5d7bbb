"""Tables on S3 and S3-compatible object storage, through Hadoop's S3A: which environments use it, and what
their sessions need on top of Delta.

pyspark ships Hadoop's client without its object-store connectors, so an environment on S3 needs hadoop-aws and
the AWS SDK's S3 modules. They are fetched through Maven with Delta's jars (`delta_sync.spark.jars`, cached,
offline afterwards), only for the environments `uses_object_storage` finds: that test is the one trigger, for
the in-process session, the warm engine and spark-submit alike. It reads the environment's Spark settings only,
never the specs, so that every command of an environment (`sql` and `import` read no spec) starts the same
session, and the warm engine is not restarted from one command to the next.

Open-source Hadoop maps only `s3a://` to S3A; `s3://`, which most users write (and EMR, Glue and Athena
report), is mapped to it too, unless the environment maps `fs.s3.impl` itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from delta_sync.spark.jars import PACKAGES_KEY

# Hadoop's S3A connector at the version of the Hadoop client pyspark 4.2 ships (hadoop-client-api 3.5.0), and the
# AWS SDK modules it is built against (2.35.4), instead of the SDK's ~680 MB bundle, which hadoop-aws depends on
# (jars.REPLACED_DEPENDENCIES drops it). The smallest set that works, found by trying: without the transfer
# manager S3A fails at the first write (NoClassDefFoundError: .../transfer/s3/model/ObjectTransfer). hadoop-aws
# brings analyticsaccelerator-s3 (read at run time) and wildfly-openssl with it. ~15 MB in all.
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"
S3A_PACKAGES: tuple[str, ...] = (
    HADOOP_AWS,
    "software.amazon.awssdk:s3:2.35.4",
    "software.amazon.awssdk:s3-transfer-manager:2.35.4",
)
S3A_FILESYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# What maps `s3://` to S3A: the FileSystem for Spark and Delta, the AbstractFileSystem for FileContext users.
S3_SCHEME = {
    "spark.hadoop.fs.s3.impl": S3A_FILESYSTEM,
    "spark.hadoop.fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
}

# A location on S3 in a setting's value (the warehouse, a catalog's root), and a Hadoop setting of S3A or of
# the `s3://` scheme (`spark.hadoop.fs.s3a.endpoint`, `spark.hadoop.fs.s3a.bucket.lake.endpoint.region`).
_S3_LOCATION = re.compile(r"(?<![A-Za-z0-9+.-])s3[an]?://", re.IGNORECASE)
_S3_SETTING = re.compile(r"(^|\.)fs\.(s3[an]?\.|AbstractFileSystem\.s3[an]?\.)")


def uses_object_storage(conf: Mapping[str, str]) -> bool:
    """Whether an environment with these Spark settings keeps tables on S3: a setting names an `s3a://` or
    `s3://` location (the warehouse, most often), configures S3A (`spark.hadoop.fs.s3a.*`), or asks for
    hadoop-aws among its packages. An environment whose tables are on S3 only through the specs' `location:`
    (credentials from an instance role, the default region) says so with any S3A setting, e.g.
    `spark.hadoop.fs.s3a.endpoint.region`."""
    if any(artifact(p) == artifact(HADOOP_AWS) for p in _packages(conf)):
        return True
    return any(_S3_SETTING.search(key) or _S3_LOCATION.search(value) for key, value in conf.items())


def session_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """An environment's Spark settings with what S3 needs when it uses object storage (else unchanged): the S3A
    packages among its own (a package the environment names itself, at any version, is left as it is) and
    `s3://` mapped to S3A."""
    if not uses_object_storage(conf):
        return dict(conf)
    result = {**scheme_conf(conf), **conf}
    result[PACKAGES_KEY] = ",".join(packages(conf))
    return result


def packages(conf: Mapping[str, str]) -> list[str]:
    """The environment's packages, then the S3A ones it does not name itself (by groupId:artifactId) when it
    uses object storage."""
    own = _packages(conf)
    if not uses_object_storage(conf):
        return own
    named = {artifact(p) for p in own}
    return [*own, *(p for p in S3A_PACKAGES if artifact(p) not in named)]


def scheme_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """`s3://` mapped to S3A, for an environment on object storage that does not map it itself."""
    if not uses_object_storage(conf) or any(key in conf for key in S3_SCHEME):
        return {}
    return dict(S3_SCHEME)


def artifact(coordinate: str) -> str:
    """`g:a:v` -> `g:a`."""
    return coordinate.strip().rpartition(":")[0]


def _packages(conf: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(p.strip() for p in conf.get(PACKAGES_KEY, "").split(",") if p.strip()))


# Delta 4.4 commits to `s3a://`, `s3://` and `s3n://` through S3SingleDriverLogStore: a lock inside the JVM, then an
# existence check and a plain PUT (S3A's create(path, overwrite=false) sends no `If-None-Match`; only its createFile
# builder does, with `fs.option.create.conditional.overwrite`, which Delta does not use). Two drivers can both find
# version N free and both write it: the last PUT wins, the other commit is lost without an error. Delta's way across
# clusters is the DynamoDB log store (io.delta:delta-storage-s3-dynamodb), set per scheme.
SINGLE_DRIVER_LOG_STORE = "io.delta.storage.S3SingleDriverLogStore"
MULTI_CLUSTER_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
_S3_SCHEMES = ("s3a", "s3", "s3n")


def single_driver_schemes(conf: Mapping[str, str], locations: Iterable[str] = ()) -> list[str]:
    """The S3 schemes an environment keeps tables at (`locations`: the specs' own; its settings' are read too)
    whose commits Delta makes with its single-driver log store, given the environment's Spark settings; [] when
    it keeps no table on S3 or names a log store for each such scheme (`spark.delta.logStore.<scheme>.impl`, or
    the legacy `spark.delta.logStore.class` for all)."""
    schemes = {_s3_scheme(text) for text in (*conf.values(), *locations)} - {None}
    if not schemes and not uses_object_storage(conf):
        return []
    if conf.get("spark.delta.logStore.class", "").strip() not in ("", SINGLE_DRIVER_LOG_STORE):
        return []

    def single(scheme: str) -> bool:
        return conf.get(f"spark.delta.logStore.{scheme}.impl", "").strip() in ("", SINGLE_DRIVER_LOG_STORE)

    # An environment on S3 by its S3A settings alone keeps tables at s3a://, as Spark reports them.
    return [scheme for scheme in _S3_SCHEMES if scheme in (schemes or {"s3a"}) and single(scheme)]


def concurrency_note(conf: Mapping[str, str], locations: Iterable[str] = ()) -> str | None:
    """The one sentence `doctor` and `plan` say of an environment whose tables on S3 are safe to write from one
    Spark driver at a time only (`single_driver_schemes`), else None."""
    schemes = single_driver_schemes(conf, locations)
    if not schemes:
        return None
    shown = ", ".join(f"{scheme}://" for scheme in schemes)
    keys = " and ".join(f"spark.delta.logStore.{scheme}.impl" for scheme in schemes)
    return (
        f"Delta commits to tables on {shown} are safe from one Spark driver at a time only "
        f"(S3SingleDriverLogStore): a job on another cluster writing the same table while apply runs can overwrite "
        f"a commit, its rows or a statement lost without an error, unless every writer sets {keys} to "
        f"{MULTI_CLUSTER_LOG_STORE} (io.delta:delta-storage-s3-dynamodb)."
    )


def _s3_scheme(text: str) -> str | None:
    try:
        parts = urlsplit(text.strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    return scheme if scheme in _S3_SCHEMES and parts.netloc else None
