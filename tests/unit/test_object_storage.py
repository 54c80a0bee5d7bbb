"""Environments on S3: which ones use object storage (the one trigger for S3A's jars and the `s3://` mapping), what
their sessions and spark-submit get, and secrets kept off the JVM's command line (pure: no JVM, no Maven)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from delta_sync.processes.daemon import _masking
from delta_sync.spark import jars, object_storage, submit
from delta_sync.spark.jars import DeltaJars
from delta_sync.spark.object_storage import S3A_PACKAGES, packages, session_conf, uses_object_storage
from delta_sync.spark.session import launch_settings
from delta_sync.specs.settings import SubmitSettings

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
UC = "io.unitycatalog:unitycatalog-spark_4.2_2.13:0.6.0"
HOME = Path("/project/.delta-sync/prod")


@pytest.mark.parametrize(
    "conf",
    [
        {"spark.sql.warehouse.dir": "s3a://lake/warehouse"},
        {"spark.sql.warehouse.dir": "s3://lake/warehouse"},
        {"spark.sql.warehouse.dir": "S3N://lake/warehouse"},
        {"spark.sql.catalog.x.warehouse": "s3a://lake/x"},
        {"spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"},
        {"spark.hadoop.fs.s3a.bucket.lake.endpoint": "http://minio:9000"},
        {"spark.hadoop.fs.s3.impl": "com.example.S3FileSystem"},
        {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"},
    ],
)
def test_an_environment_on_s3_is_found_by_its_settings(conf: dict[str, str]) -> None:
    assert uses_object_storage(conf)


@pytest.mark.parametrize(
    "conf",
    [
        {},
        {"spark.sql.warehouse.dir": "/data/warehouse"},
        {"spark.sql.warehouse.dir": "abfss://c@acct.dfs.core.windows.net/w"},
        {"spark.sql.warehouse.dir": "gs://lake/w"},
        {"spark.hadoop.hive.metastore.uris": "thrift://s3host:9083"},
        {"spark.app.name": "jobs3://x"},
        {"spark.jars.packages": UC},
    ],
)
def test_other_environments_are_left_alone(conf: dict[str, str]) -> None:
    assert not uses_object_storage(conf)
    assert session_conf(conf) == conf


def test_the_session_gets_s3a_packages_and_s3_mapped_to_s3a() -> None:
    conf = {"spark.sql.warehouse.dir": "s3a://lake/warehouse", "spark.jars.packages": UC}
    got = session_conf(conf)
    assert got["spark.jars.packages"].split(",") == [UC, *S3A_PACKAGES]
    assert got["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert got["spark.hadoop.fs.AbstractFileSystem.s3.impl"] == "org.apache.hadoop.fs.s3a.S3A"
    assert got["spark.sql.warehouse.dir"] == "s3a://lake/warehouse"
    assert conf == {"spark.sql.warehouse.dir": "s3a://lake/warehouse", "spark.jars.packages": UC}  # not changed


def test_an_environment_that_maps_s3_itself_or_names_hadoop_aws_keeps_its_choice() -> None:
    conf = {
        "spark.sql.warehouse.dir": "s3://lake/w",
        "spark.hadoop.fs.s3.impl": "com.example.EmrFileSystem",
        "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1",
    }
    got = session_conf(conf)
    assert got["spark.hadoop.fs.s3.impl"] == "com.example.EmrFileSystem"
    assert "spark.hadoop.fs.AbstractFileSystem.s3.impl" not in got
    assert packages(conf) == ["org.apache.hadoop:hadoop-aws:3.4.1", *S3A_PACKAGES[1:]]


def test_hadoop_aws_comes_without_the_sdk_bundle() -> None:
    deps = ET.fromstring(jars._pom("4.4.0", [*S3A_PACKAGES, UC])).findall("m:dependencies/m:dependency", NS)

    def excluded(dep: ET.Element) -> set[str]:
        found = dep.findall("m:exclusions/m:exclusion", NS)
        return {f"{e.findtext('m:groupId', namespaces=NS)}:{e.findtext('m:artifactId', namespaces=NS)}" for e in found}

    by_artifact = {d.findtext("m:artifactId", namespaces=NS): d for d in deps}
    assert "software.amazon.awssdk:bundle" in excluded(by_artifact["hadoop-aws"])
    assert excluded(by_artifact["hadoop-aws"]) >= set(jars.SHIPPED_BY_PYSPARK)
    assert "software.amazon.awssdk:bundle" not in excluded(by_artifact["unitycatalog-spark_4.2_2.13"])
    # Spark's own resolution (no mvn) leaves the bundle out as well.
    ivy = DeltaJars((), packages=",".join(["io.delta:delta-spark_4.2_2.13:4.4.0", *S3A_PACKAGES])).spark_conf()
    assert "software.amazon.awssdk:bundle" in ivy["spark.jars.excludes"].split(",")


def test_secrets_stay_off_the_jvm_command_line() -> None:
    def redact(text: str) -> str:
        return text.replace("s3cr3t", "***")

    conf = {
        "spark.hadoop.fs.s3a.secret.key": "s3cr3t",
        "spark.hadoop.fs.s3a.access.key": "key",
        "spark.sql.catalog.uc.uri": "http://uc/?token=s3cr3t",
        "spark.jars": "/jars/a.jar",
        "spark.driver.extraJavaOptions": "-Dx=1",
        # Written out in delta-sync.yaml, not as ${env:...}: its key says it is a credential.
        "spark.hadoop.javax.jdo.option.ConnectionPassword": "plain",
        "spark.hadoop.fs.s3a.endpoint": "http://s3:9000",
    }
    assert launch_settings(conf, redact) == {
        "spark.jars": "/jars/a.jar",
        "spark.driver.extraJavaOptions": "-Dx=1",
        "spark.hadoop.fs.s3a.endpoint": "http://s3:9000",
    }


def test_the_engine_masks_what_its_start_file_shows_masked() -> None:
    conf = {"spark.hadoop.fs.s3a.secret.key": "s3cr3t", "spark.hadoop.fs.s3a.endpoint": "http://s3:9000"}
    shown = {"spark.hadoop.fs.s3a.secret.key": "***", "spark.hadoop.fs.s3a.endpoint": "http://s3:9000"}
    redact = _masking(conf, shown)
    assert redact("refused s3cr3t at http://s3:9000") == "refused *** at http://s3:9000"
    assert launch_settings(conf, redact) == {"spark.hadoop.fs.s3a.endpoint": "http://s3:9000"}


def test_spark_submit_gets_s3a_jars_from_maven_and_s3_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Sequence[str]] = []

    def fake_jars(_on_status: Callable[[str], None], packages: Sequence[str] = ()) -> DeltaJars:
        asked.append(packages)
        return DeltaJars((Path("/jars/delta-spark.jar"), Path("/jars/hadoop-aws.jar")), version="4.4.0")

    monkeypatch.setattr(submit, "delta_jars", fake_jars)
    on_s3 = SubmitSettings(
        master="local[2]",
        spark_submit="/opt/spark/bin/spark-submit",
        conf={"spark.sql.warehouse.dir": "s3a://lake/w", "spark.jars.packages": UC},
    )
    found = submit.submit_jars(on_s3, lambda _m: None)
    assert asked == [[UC, *S3A_PACKAGES]]
    conf = submit.submit_conf(on_s3, HOME, found)
    assert conf["spark.jars"] == "/jars/delta-spark.jar,/jars/hadoop-aws.jar"
    assert "spark.jars.packages" not in conf  # resolved here by Maven, not on the driver by Ivy
    assert conf["spark.hadoop.fs.s3.impl"] == object_storage.S3A_FILESYSTEM

    plain = SubmitSettings(master="local[2]", conf={"spark.jars.packages": UC})
    submit.submit_jars(plain, lambda _m: None)
    assert asked[-1] == ()
    assert submit.submit_conf(plain, HOME, found)["spark.jars.packages"] == UC
