"""statement_problems through Spark Connect: EXPLAIN parses without running, a statement that does
not parse is reported and one that parses but cannot be analysed (a missing table) is not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from delta_sync.spark.connect import ConnectCatalog, open_connect_catalog
from tests import servers
from tests.servers.connect import ConnectServer, connect_server


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with (
        connect_server(tmp_path_factory.mktemp("connect")) as started,
        servers.logs_kept_on_failure(request, started.servers),
    ):
        yield started


@pytest.fixture
def connect(server: ConnectServer) -> ConnectCatalog:
    return open_connect_catalog(f"{server.url}/;token={server.token}")


def test_statement_problems_over_connect(connect: ConnectCatalog, tmp_path: Path) -> None:
    good = "ALTER TABLE nowhere.missing ADD CONSTRAINT ok CHECK (amount >= CAST('0' AS DECIMAL(12,2)))"
    colons = "ALTER TABLE nowhere.missing ADD CONSTRAINT c CHECK (amount >= '0'::decimal(12, 2))"
    broken = "CREATE TABLE nowhere.t (\n  id INT,\n) USING DELTA"
    created = f"CREATE SCHEMA parse_only LOCATION '{tmp_path / 'parse_only'}'"
    problems = connect.statement_problems([good, colons, broken, created])
    assert len(problems) == 2
    assert problems[0].startswith(f"Spark's parser refuses `{colons}`: [PARSE_SYNTAX_ERROR]")
    assert problems[1].startswith("Spark's parser refuses `CREATE TABLE nowhere.t (`: [PARSE_SYNTAX_ERROR]")
    assert all("\n" not in p for p in problems)
    # Parsing only: nothing ran.
    assert "parse_only" not in [row[0] for row in connect.spark.sql("SHOW SCHEMAS").collect()]
