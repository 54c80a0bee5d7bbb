"""`delta-sync doctor`: its lines and JSON, its exit code, each probe on fakes (no Spark), and the capability
checks on a fake catalog (the scratch schema dropped whatever happens)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_sync.cli.main import app
from delta_sync.model.catalog import QueryResult, StatementFailed
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import UNITY_CATALOG, CatalogState, SchemaName, TableName
from delta_sync.render import doctor as render
from delta_sync.render.doctor import Status
from delta_sync.review import doctor
from delta_sync.spark import doctor_probes as probes
from delta_sync.spark import jars

runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- rendering and exit codes ------------------------------------------------------------------------


def test_a_line_per_check_with_the_fix_for_what_is_not_ok() -> None:
    assert render.ok("java", "Java", "Java 17").line == "ok      Java: Java 17"
    assert render.warning("maven", "Maven", "offline", "none").line == "warning Maven: offline Fix: none"
    line = render.failure("java", "Java", "JAVA_HOME is /x,\nwhich has no java", "point JAVA_HOME at 17").line
    assert line == "failure Java: JAVA_HOME is /x, which has no java Fix: point JAVA_HOME at 17"
    assert "Fix" not in render.Check("a", "A", Status.OK, "fine", "unused").line


def test_exit_code_and_json_follow_the_failures() -> None:
    fine = render.report("local", [render.ok("a", "A", "x"), render.warning("b", "B", "y", "do z")])
    assert fine.exit_code == 0
    assert fine.summary() == "Environment local: 1 ok, 1 warning, 0 failures."
    broken = render.report("local", [*fine.checks, render.failure("c", "C", "no", "fix it")])
    assert broken.exit_code == 1
    data = broken.data()
    assert data["ok"] is False
    assert data["counts"] == {"ok": 1, "warning": 1, "failure": 1}
    assert data["checks"][2] == {"name": "c", "title": "C", "status": "failure", "message": "no", "fix": "fix it"}
    assert "fix" not in data["checks"][0]


@pytest.mark.parametrize("failed", [False, True])
def test_the_command_prints_each_check_and_exits_0_or_1(monkeypatch: pytest.MonkeyPatch, failed: bool) -> None:
    checks = [render.ok("java", "Java", "Java 17")]
    if failed:
        checks.append(render.failure("catalog", "Hive metastore", "could not reach it", "start it"))
    monkeypatch.setattr(doctor, "diagnose", lambda env, write, progress: render.report("local", checks))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == (1 if failed else 0)
    assert "ok      Java: Java 17" in result.stdout
    if failed:
        assert "failure Hive metastore: could not reach it Fix: start it" in result.stdout
    as_json = runner.invoke(app, ["doctor", "--format", "json"])
    assert as_json.exit_code == (1 if failed else 0)
    assert [c["name"] for c in json.loads(as_json.stdout)["checks"]] == [c.name for c in checks]


# --- Java ---------------------------------------------------------------------------------------------


def test_java_home_on_an_empty_folder_is_a_failure_naming_the_fix(tmp_path: Path) -> None:
    check = probes.java_check({"JAVA_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, jvm_folders=())
    assert check.status == Status.FAILURE
    assert f"JAVA_HOME is {tmp_path}, which holds no bin/java" in check.message
    assert "JAVA_HOME" in check.fix
    assert "17 or 21" in check.fix


def _fake_java(home: Path, version: str) -> Path:
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-04-15' >&2\n")
    java.chmod(0o755)
    return home


@pytest.mark.parametrize(
    ("version", "status"), [("17.0.15", Status.OK), ("21.0.2", Status.OK), ("11.0.2", Status.FAILURE)]
)
def test_java_version_must_be_17_or_21(tmp_path: Path, version: str, status: Status) -> None:
    home = _fake_java(tmp_path / "jdk", version)
    check = probes.java_check({"JAVA_HOME": str(home), "PATH": "/usr/bin:/bin"}, jvm_folders=())
    assert check.status == status, check
    assert version in check.message


def test_the_fix_names_the_java_installations_found(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jvm" / "java-17-openjdk-amd64", "17.0.1")
    check = probes.java_check({"JAVA_HOME": str(tmp_path / "none")}, jvm_folders=(str(tmp_path / "jvm"),))
    assert str(tmp_path / "jvm" / "java-17-openjdk-amd64") in check.fix


def test_java_major_versions() -> None:
    assert [probes.java_major(v) for v in ("17.0.15", "1.8.0_392", "21", "21-ea", "x")] == [17, 8, 21, 21, 0]


# --- versions, jars, Maven ----------------------------------------------------------------------------


def test_pyspark_of_another_spark_line_fails() -> None:
    versions = {"pyspark": "4.3.0", "delta-spark": "4.4.1"}
    check = probes.versions_check("4.4.0", versions.get)
    assert check.status == Status.FAILURE
    assert "pip install 'pyspark==4.2.0'" in check.fix
    assert probes.versions_check("4.4.0", {"pyspark": "4.2.0", "delta-spark": "4.4.1"}.get).status == Status.OK
    other = probes.versions_check("4.4.0", {"pyspark": "4.2.0", "delta-spark": "4.3.0"}.get)
    assert other.status == Status.WARNING


def test_jars_cache_complete_or_what_the_next_run_does(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DELTA_SYNC_CACHE", str(tmp_path))
    monkeypatch.delenv("DELTA_SYNC_JARS", raising=False)
    missing = probes.jars_check((), "/usr/bin/mvn")
    assert missing.check.status == Status.WARNING
    assert not missing.complete
    assert "not fetched yet" in missing.check.message
    folder = tmp_path / "jars" / f"{jars.DELTA_ARTIFACT}-4.4.0"
    folder.mkdir(parents=True)
    names = [f"{jars.DELTA_ARTIFACT}-4.4.0.jar", "delta-storage-4.4.0.jar"]
    (folder / "manifest.json").write_text(json.dumps({"jars": names}))
    (folder / names[0]).write_text("")
    assert "incomplete" in probes.jars_check((), "/usr/bin/mvn").check.message
    (folder / names[1]).write_text("")
    found = probes.jars_check((), None)
    assert found.complete
    assert found.version == "4.4.0"
    assert found.check.status == Status.OK


def test_maven_offline_is_a_warning_with_a_complete_cache_and_a_failure_without() -> None:
    def refused(host: str, port: int) -> str | None:
        return "connection refused"

    assert probes.maven_check(True, "/usr/bin/mvn", lambda h, p: None).status == Status.OK
    assert probes.maven_check(True, "/usr/bin/mvn", refused).status == Status.WARNING
    offline = probes.maven_check(False, "/usr/bin/mvn", refused)
    assert offline.status == Status.FAILURE
    assert "DELTA_SYNC_JARS" in offline.fix


def test_maven_goes_through_the_mirror_of_settings_xml(tmp_path: Path) -> None:
    settings = tmp_path / "settings.xml"
    settings.write_text(
        '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0"><mirrors><mirror><id>m</id>'
        "<mirrorOf>central</mirrorOf><url>https://nexus.example.com/repo</url></mirror></mirrors></settings>"
    )
    assert probes.maven_endpoint(settings)[:2] == ("nexus.example.com", 443)
    assert probes.maven_endpoint(tmp_path / "none.xml")[:2] == probes.MAVEN_CENTRAL


# --- servers ------------------------------------------------------------------------------------------


def test_an_unreachable_metastore_is_one_failure_within_seconds() -> None:
    started = time.monotonic()
    check = probes.metastore_check("spark.hadoop.hive.metastore.uris", f"thrift://127.0.0.1:{_free_port()}")
    assert time.monotonic() - started < 10
    assert check.status == Status.FAILURE
    assert check.message.startswith("Could not reach the Hive metastore")
    assert "\n" not in check.line
    assert "thrift" in check.fix


def test_an_unreachable_unity_catalog_and_connect_server_fail() -> None:
    port = _free_port()
    unity = probes.unity_check("unity", f"http://127.0.0.1:{port}", None)
    assert unity.status == Status.FAILURE
    assert "could not reach" in unity.message
    assert probes.unity_check("unity", "not a url", None).status == Status.FAILURE
    connect = probes.connect_check(f"sc://127.0.0.1:{port}/;token=secret")
    assert connect.status == Status.FAILURE
    assert "secret" not in connect.line


def test_unity_catalogs_are_found_in_the_settings() -> None:
    conf = {
        "spark.sql.catalog.unity": doctor.UNITY_PLUGIN,
        "spark.sql.catalog.unity.uri": "http://localhost:8080",
        "spark.sql.catalog.unity.token": "t",
    }
    assert doctor.unity_catalogs(conf) == [("unity", "http://localhost:8080", "t")]


def test_no_engine_for_a_catalog_is_ok(tmp_path: Path) -> None:
    assert probes.engine_check(tmp_path, True).status == Status.OK
    assert probes.local_holder(tmp_path).kind == "free"


# --- capabilities on a fake catalog ---------------------------------------------------------------------


class FakeCatalog:
    def __init__(self, refuse: Iterable[str] = (), interrupt: str | None = None, unity: bool = False) -> None:
        self.statements: list[str] = []
        self.refuse = tuple(refuse)
        self.interrupt = interrupt
        self.unity = unity

    def execute(self, statement: str, metadata: str | None = None) -> None:
        self.statements.append(statement)
        if self.interrupt and self.interrupt in statement:
            raise KeyboardInterrupt
        if any(word in statement for word in self.refuse):
            raise StatementFailed(EngineFailure("UNSUPPORTED_FEATURE.TABLE_OPERATION", "refused\nstack"))

    def read(self, names: Iterable[TableName]) -> CatalogState:
        capabilities: dict[str | None, Any] = {None: UNITY_CATALOG} if self.unity else {}
        return CatalogState(tables={}, capabilities=capabilities)

    def query(self, statement: str, limit: int) -> QueryResult:
        return QueryResult(("namespace",), (("default",),))


SCRATCH = SchemaName(None, "delta_sync_doctor_test")


def test_every_capability_is_a_line_and_keys_refused_are_expected_on_open_source_delta() -> None:
    catalog = FakeCatalog(refuse=["PRIMARY KEY"])
    checks = doctor.capability_checks(catalog, SCRATCH)  # type: ignore[arg-type]
    assert [c.name for c in checks] == [*(c.name for c in doctor.CAPABILITIES), "scratch"]
    assert all(c.status == Status.OK for c in checks), checks
    keys = next(c for c in checks if c.name == "key_constraints")
    assert "table properties" in keys.message
    assert catalog.statements[0] == "CREATE SCHEMA `delta_sync_doctor_test`"
    assert catalog.statements[-1] == "DROP SCHEMA IF EXISTS `delta_sync_doctor_test` CASCADE"


def test_a_refused_capability_fails_and_the_scratch_schema_is_still_dropped() -> None:
    catalog = FakeCatalog(refuse=["SHALLOW CLONE", "PRIMARY KEY"])
    checks = {c.name: c for c in doctor.capability_checks(catalog, SCRATCH)}  # type: ignore[arg-type]
    assert checks["shallow_clone"].status == Status.FAILURE
    assert checks["shallow_clone"].message == "refused: refused"
    assert checks["scratch"].status == Status.OK
    assert "DROP SCHEMA" in catalog.statements[-1]


def test_rename_refused_on_unity_catalog_is_expected() -> None:
    catalog = FakeCatalog(refuse=["RENAME COLUMN"], unity=True)
    checks = {c.name: c for c in doctor.capability_checks(catalog, SCRATCH)}  # type: ignore[arg-type]
    assert checks["column_mapping"].status == Status.OK
    assert "blocks renames" in checks["column_mapping"].message
    assert checks["key_constraints"].message.startswith("accepted")


def test_ctrl_c_still_drops_the_scratch_schema() -> None:
    catalog = FakeCatalog(interrupt="ALTER COLUMN qty")
    with pytest.raises(KeyboardInterrupt):
        doctor.capability_checks(catalog, SCRATCH)  # type: ignore[arg-type]
    assert catalog.statements[-1] == "DROP SCHEMA IF EXISTS `delta_sync_doctor_test` CASCADE"


def test_a_failed_create_is_one_failure_and_nothing_else_runs() -> None:
    catalog = FakeCatalog(refuse=["CREATE TABLE"])
    checks = doctor.capability_checks(catalog, SCRATCH)  # type: ignore[arg-type]
    assert [(c.name, c.status) for c in checks] == [("delta_table", Status.FAILURE), ("scratch", Status.OK)]
