"""What a cold start is trimmed by (delta_sync.spark.session), and to whom each trim applies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_sync.spark import session
from delta_sync.spark.jars import DeltaJars
from delta_sync.spark.session import LocalCatalog, spark_conf

DERBY_OPTIONS = "-Dderby.system.home=/x"


@pytest.mark.parametrize(("master", "local_ip"), [("local[*]", "127.0.0.1"), ("spark://h:7077", None)])
def test_spark_submit_is_launched_with_its_home_and_a_local_ip_for_local_masters_only(
    master: str, local_ip: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("SPARK_HOME", "SPARK_LOCAL_IP", "SPARK_LAUNCHER_OPTS"):
        monkeypatch.delenv(key, raising=False)
    with session._launch_environment({"spark.master": master}):
        assert os.environ.get("SPARK_LOCAL_IP") == local_ip
        assert (Path(os.environ["SPARK_HOME"]) / "bin" / "spark-submit").exists()
        assert "TieredStopAtLevel" in os.environ["SPARK_LAUNCHER_OPTS"]
    assert not {"SPARK_HOME", "SPARK_LOCAL_IP", "SPARK_LAUNCHER_OPTS"} & set(os.environ)


def test_what_the_user_set_for_the_launch_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.5")
    monkeypatch.setenv("SPARK_LAUNCHER_OPTS", "-Xmx64m")
    with session._launch_environment({"spark.master": "local[2]"}):
        assert os.environ["SPARK_LOCAL_IP"] == "10.0.0.5"
        assert os.environ["SPARK_LAUNCHER_OPTS"] == "-Xmx64m"
    assert os.environ["SPARK_LOCAL_IP"] == "10.0.0.5"


def test_the_embedded_catalog_skips_hives_direct_sql_a_project_may_turn_it_back_on() -> None:
    assert spark_conf(LocalCatalog(Path("/x")), DeltaJars(()))["spark.hadoop.hive.metastore.try.direct.sql"] == "false"
    # Hive's per-session download folder in the catalog's folder, not one more in /tmp per command.
    assert spark_conf(LocalCatalog(Path("/x")), DeltaJars(()))["spark.hadoop.hive.downloaded.resources.dir"] == (
        "/x/tmp/hive-resources"
    )
    own = LocalCatalog(Path("/x"), conf={"spark.hadoop.hive.metastore.try.direct.sql": "true"})
    assert spark_conf(own, DeltaJars(()))["spark.hadoop.hive.metastore.try.direct.sql"] == "true"
