"""`validate` as a user runs it (a real process, no Spark): environment variables are needed only by the
environment in use, an undeclared `${name}` is named as such, and paths read the same with or without SPECS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = """\
default_env: local
envs:
  local: {}
  ci:
    vars: {suffix: _ci}
    spark:
      conf:
        spark.hadoop.hive.metastore.uris: ${env:DS_TEST_METASTORE_URI}
"""
ORDERS = """\
table: shop.orders${suffix}
columns:
  - name: id
    type: bigint
"""
ORDERS_FILE = os.path.join("specs", "shop", "orders.yaml")


def validate(project: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DS_TEST_")}
    environment.update(variables, COLUMNS="300", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "delta_sync", "validate", *args],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "specs" / "shop").mkdir(parents=True)
    (tmp_path / "specs" / "shop" / "orders.yaml").write_text(ORDERS)
    (tmp_path / "delta-sync.yaml").write_text(PROJECT)
    return tmp_path


def test_an_environment_needs_only_its_own_variables(project: Path) -> None:
    (project / "specs" / "shop" / "orders.yaml").write_text(ORDERS.replace("${suffix}", ""))

    local = validate(project, "--env", "local")
    ci = validate(project, "--env", "ci")
    ci_set = validate(project, "--env", "ci", DS_TEST_METASTORE_URI="thrift://h:9083")

    assert (local.returncode, local.stderr.strip()) == (0, "1 table spec valid."), local.stderr
    assert ci.returncode == 1
    assert "delta-sync.yaml:8: environment variable DS_TEST_METASTORE_URI is not set" in ci.stderr
    assert "Traceback" not in ci.stderr
    assert ci_set.returncode == 0, ci_set.stderr


def test_an_undeclared_variable_is_named_at_its_line_not_taken_for_a_bad_table_name(project: Path) -> None:
    local = validate(project)
    ci = validate(project, "--env", "ci", DS_TEST_METASTORE_URI="thrift://h:9083")

    assert local.returncode == 1
    assert f"{ORDERS_FILE}:1: undeclared variable `suffix` (declare it in " in local.stderr
    assert "table" not in local.stderr.split("undeclared variable")[1]
    assert ci.returncode == 0, ci.stderr


def test_paths_read_the_same_with_or_without_specs_and_from_a_sub_folder(project: Path) -> None:
    without = validate(project)
    given = validate(project, "specs/")
    absolute = validate(project, str(project / "specs"))
    below = validate(project / "specs", ".")

    assert ORDERS_FILE + ":1:" in without.stderr
    assert without.stderr == given.stderr == absolute.stderr
    assert os.path.join("shop", "orders.yaml") + ":1:" in below.stderr
    assert str(project) not in below.stderr
