"""The spark-submit command delta-sync builds for a `submit:` environment, and what an environment's
vars and catalog do to specs (pure: no JVM)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.state import TableName
from delta_sync.spark.jars import DeltaJars
from delta_sync.spark.submit import ENTRYPOINT, package_zip, submit_command, submit_conf
from delta_sync.specs.settings import SubmitSettings
from delta_sync.specs.spec_files import load_specs

JARS = DeltaJars((Path("/jars/delta-spark.jar"), Path("/jars/delta-storage.jar")), version="4.4.0")
HOME = Path("/project/.delta-sync/prod")


def confs(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, part in enumerate(command) if part == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_local_master_gets_delta_the_embedded_catalog_and_this_python() -> None:
    settings = SubmitSettings(master="local[2]", spark_submit="/opt/spark/bin/spark-submit")
    command = submit_command(settings, Path("/tmp/plan.json"), HOME, JARS, Path("/tmp/delta_sync.zip"))
    assert command[:5] == ["/opt/spark/bin/spark-submit", "--master", "local[2]", "--deploy-mode", "client"]
    conf = confs(command)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.jars"] == "/jars/delta-spark.jar,/jars/delta-storage.jar"
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith(
        f"jdbc:derby:;databaseName={HOME}/metastore_db"
    )
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.sql.variable.substitute"] == "false"
    assert command[command.index("--files") + 1] == "/tmp/plan.json"
    assert command[command.index("--py-files") + 1] == "/tmp/delta_sync.zip"
    assert command[-2:] == [str(ENTRYPOINT), "/tmp/plan.json"]


def test_cluster_mode_ships_the_plan_by_name_and_keeps_the_users_catalog_and_settings() -> None:
    settings = SubmitSettings(
        master="yarn",
        deploy_mode="cluster",
        conf={"spark.yarn.queue": "etl", "spark.hadoop.hive.metastore.uris": "thrift://meta:9083"},
        archives=["venv.tar.gz#environment"],
        files=["extra.conf"],
        py_files=["deps.zip"],
    )
    command = submit_command(settings, Path("/tmp/plan.json"), HOME, JARS, Path("/tmp/delta_sync.zip"))
    conf = confs(command)
    assert conf["spark.yarn.queue"] == "etl"
    assert "spark.sql.catalogImplementation" not in conf  # the cluster's metastore, not the embedded one
    assert "spark.pyspark.python" not in conf
    assert "spark.pyspark.driver.python" not in conf
    assert command[command.index("--files") + 1] == "/tmp/plan.json,extra.conf"
    assert command[command.index("--py-files") + 1] == "/tmp/delta_sync.zip,deps.zip"
    assert command[command.index("--archives") + 1] == "venv.tar.gz#environment"
    assert command[-1] == "plan.json"


def test_the_environments_statement_timeout_reaches_the_driver_as_written() -> None:
    settings = SubmitSettings(master="local[2]", spark_submit="/opt/spark/bin/spark-submit")
    plan = Path("/tmp/plan.json")
    command = submit_command(
        settings, plan, HOME, JARS, Path("/tmp/ds.zip"), allow=["breaking"], statement_timeout="90s"
    )
    assert command[-6:] == [str(ENTRYPOINT), "/tmp/plan.json", "--allow", "breaking", "--statement-timeout", "90s"]
    assert "--statement-timeout" not in submit_command(settings, plan, HOME, JARS, Path("/tmp/ds.zip"))


def test_user_conf_wins_over_the_defaults() -> None:
    settings = SubmitSettings(
        master="local[1]", conf={"spark.sql.shuffle.partitions": "64", "spark.ui.enabled": "true"}
    )
    conf = submit_conf(settings, HOME, JARS)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.sql.shuffle.partitions"] == "64"


def test_package_zip_holds_the_package_and_the_entrypoint(tmp_path: Path) -> None:
    with zipfile.ZipFile(package_zip(tmp_path)) as archive:
        names = set(archive.namelist())
    assert {"delta_sync/__init__.py", "delta_sync/review/pipeline.py", "delta_sync/processes/entrypoint.py"} <= names
    assert not any("__pycache__" in name for name in names)


def test_vars_and_catalog_of_an_environment_rename_tables(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "table: shop.orders${suffix}\ncomment: 'in ${suffix}, $${suffix}'\ncolumns:\n  - name: id\n    type: bigint\n"
    )
    with pytest.raises(SpecError, match=r"t\.yaml:1"):
        load_specs(tmp_path)  # without the environment's vars, `${suffix}` is no table name
    staged = load_specs(tmp_path, {"suffix": "_stg"}, "main")
    (name,) = staged.tables
    assert name == TableName("main", "shop", "orders_stg")
    table = staged.table(name)
    assert table is not None
    assert table.comment == "in _stg, ${suffix}"
    same = load_specs(tmp_path, {"suffix": "_dev"}, "spark_catalog")
    assert list(same.tables) == [TableName(None, "shop", "orders_dev")]
