"""`delta-sync doctor` on this machine: all ok on the embedded catalog; a wrong JAVA_HOME and an unreachable Hive
metastore each one failure line naming the fix (exit 1, no traceback); `--write` on the embedded catalog, every
capability ok (keys kept as table properties) and the scratch schema gone afterwards.

In-process (CliRunner) on the test process's session, except the wrong JAVA_HOME, which needs a process of its own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli.main import app
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog

pytestmark = pytest.mark.spark

runner = CliRunner()


@pytest.fixture(autouse=True)
def project(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog, tmp_path: Path) -> Path:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.delenv("DELTA_SYNC_HOME", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    return tmp_path


def _checks(result: Result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_on_the_embedded_catalog_is_all_ok() -> None:
    result = runner.invoke(app, ["doctor", "--format", "json"])
    assert result.exit_code == 0, result.output
    checks = _checks(result)
    assert {n for n, c in checks.items() if c["status"] == "failure"} == set()
    for name in ("project", "java", "versions", "jars", "catalog", "archive", "engine"):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["catalog"]["message"].endswith("schema(s)")
    text = runner.invoke(app, ["doctor"])
    assert text.exit_code == 0
    assert "ok      Java: Java " in text.stdout


def test_a_wrong_java_home_is_a_failure_naming_the_fix(tmp_path: Path) -> None:
    empty = tmp_path / "no-java"
    empty.mkdir()
    env = {**os.environ, "JAVA_HOME": str(empty), "CI": "true", "COLUMNS": "250"}
    done = subprocess.run(
        [sys.executable, "-m", "delta_sync", "doctor"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    java = next(line for line in done.stdout.splitlines() if line.startswith("failure Java:"))
    assert f"JAVA_HOME is {empty}, which holds no bin/java" in java
    assert "Fix: point JAVA_HOME at a Java 17 or 21 installation" in java
    assert "warning Local catalog:" in done.stdout  # not opened: Spark could not start


def test_an_unreachable_metastore_is_one_failure_line_within_ten_seconds(project: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (project / "delta-sync.yaml").write_text(
        "default_env: shared\nenvs:\n  shared:\n    spark:\n      master: local[1]\n      conf:\n"
        f"        spark.hadoop.hive.metastore.uris: thrift://127.0.0.1:{port}\n"
    )
    started = time.monotonic()
    result = runner.invoke(app, ["doctor"])
    assert time.monotonic() - started < 10
    assert result.exit_code == 1, result.output
    failures = [line for line in result.stdout.splitlines() if line.startswith("failure")]
    assert len(failures) == 1, result.stdout
    assert failures[0].startswith(
        f"failure Hive metastore: Could not reach the Hive metastore at thrift://127.0.0.1:{port}"
    )
    assert "Fix: check that the metastore runs there" in failures[0]
    assert "Traceback" not in result.output


def test_write_checks_every_capability_and_drops_the_scratch_schema(catalog: SparkCatalog) -> None:
    result = runner.invoke(app, ["doctor", "--write", "--format", "json"])
    assert result.exit_code == 0, result.output
    checks = _checks(result)
    for name in ("check", "column_mapping", "type_widening", "column_defaults", "shallow_clone", "key_constraints"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "kept" in checks["key_constraints"]["message"] or "keeps" in checks["key_constraints"]["message"]
    assert checks["scratch"]["status"] == "ok"
    assert "Checking SHALLOW CLONE" in result.stderr  # progress on stderr
    left = catalog.spark.sql("SHOW SCHEMAS LIKE 'delta_sync_doctor_*'").collect()
    assert left == []
