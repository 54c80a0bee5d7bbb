"""Who made a commit, as `drift` can know it: what open-source Delta 4.4 records, read through
`SparkCatalog.history` (DESCRIBE HISTORY).

Found: open-source Delta writes no `userId` / `userName` in commitInfo (Databricks does), so DESCRIBE
HISTORY gives NULL there for every commit this process makes; it does write `engineInfo`
(`Apache-Spark/<version> Delta-Lake/<version>`) and the writer's `userMetadata`. A commit whose
commitInfo carries a userName (as Databricks writes it) is shown with that user."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from delta_sync.model.state import TableName
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

pytestmark = pytest.mark.spark


def log_dir(catalog: SparkCatalog, table: str) -> Path:
    (row,) = catalog.spark.sql(f"DESCRIBE DETAIL {table}").collect()
    return Path(urlparse(str(row["location"])).path) / "_delta_log"


def commit_infos(log: Path) -> list[dict[str, object]]:
    infos = []
    for path in sorted(log.glob("*.json")):
        infos += [
            entry["commitInfo"] for entry in map(json.loads, path.read_text().splitlines()) if "commitInfo" in entry
        ]
    return infos


def test_open_source_delta_records_no_user_but_its_engine(project: Project, schema: str) -> None:
    catalog = project.catalog
    catalog.execute(f"CREATE SCHEMA {schema}")
    catalog.execute(f"CREATE TABLE {schema}.t (id INT) USING DELTA", '{"delta-sync":{"plan":"p1"}}')
    catalog.execute(f"INSERT INTO {schema}.t VALUES (1)")
    catalog.execute(f"ALTER TABLE {schema}.t ADD CONSTRAINT pos CHECK (id > 0)", '{"delta-sync":{"plan":"p1"}}')

    history = catalog.history(TableName(None, schema, "t"))
    assert [c.operation for c in history] == ["ADD CONSTRAINT", "WRITE", "CREATE TABLE"]
    assert [c.user for c in history] == [None, None, None]
    assert all((c.engine or "").startswith("Apache-Spark/4.2") for c in history)
    infos = commit_infos(log_dir(catalog, f"{schema}.t"))
    assert len(infos) == 3
    assert not any({"userId", "userName"} & set(info) for info in infos)
    assert all(str(info["engineInfo"]).startswith("Apache-Spark/4.2") for info in infos)
    assert all("Delta-Lake/4.4" in str(info["engineInfo"]) for info in infos)


def test_a_user_recorded_in_the_commit_is_read(project: Project, schema: str) -> None:
    catalog = project.catalog
    catalog.execute(f"CREATE SCHEMA {schema}")
    catalog.execute(f"CREATE TABLE {schema}.t (id INT) USING DELTA")
    log = log_dir(catalog, f"{schema}.t")
    # The next commit as another engine writes it, with the user that engine records.
    info = {
        "timestamp": 1_790_000_000_000,
        "userId": "4242",
        "userName": "ana@example.com",
        "operation": "SET TBLPROPERTIES",
        "operationParameters": {"properties": '{"owner":"ana"}'},
        "readVersion": 0,
        "isBlindAppend": True,
        "engineInfo": "Databricks-Runtime/16.4",
    }
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": info}) + "\n")

    latest, first = catalog.history(TableName(None, schema, "t"))
    assert (latest.version, latest.operation, latest.user) == (1, "SET TBLPROPERTIES", "ana@example.com")
    assert latest.engine == "Databricks-Runtime/16.4"
    assert first.user is None
