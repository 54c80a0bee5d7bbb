"""statement_problems through Spark Connect: EXPLAIN parses without running, a statement that does
not parse is reported and one that parses but cannot be analysed (a missing table) is not."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import servers
from tests.servers.connect import ConnectServer, connect_server


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with (
        connect_server(tmp_path_factory.mktemp("connect")) as started,
        servers.logs_kept_on_failure(request, started.servers),
    ):
        yield started


# A Spark Connect client cannot start in a process that holds a classic session (SESSION_ALREADY_EXIST), and
# the Spark tier's own session lives in this one: the client runs in a child process.
PROBE = """
import json, sys
from delta_sync.spark.connect import open_connect_catalog
catalog = open_connect_catalog(sys.argv[1])
statements = json.loads(sys.argv[2])
problems = catalog.statement_problems(statements)
schemas = [row[0] for row in catalog.spark.sql("SHOW SCHEMAS").collect()]
print(json.dumps({"problems": problems, "schemas": schemas}))
"""


def statement_problems(server: ConnectServer, statements: list[str]) -> tuple[list[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, f"{server.url}/;token={server.token}", json.dumps(statements)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["problems"], found["schemas"]


def test_statement_problems_over_connect(server: ConnectServer, tmp_path: Path) -> None:
    good = "ALTER TABLE nowhere.missing ADD CONSTRAINT ok CHECK (amount >= CAST('0' AS DECIMAL(12,2)))"
    colons = "ALTER TABLE nowhere.missing ADD CONSTRAINT c CHECK (amount >= '0'::decimal(12, 2))"
    broken = "CREATE TABLE nowhere.t (\n  id INT,\n) USING DELTA"
    created = f"CREATE SCHEMA parse_only LOCATION '{tmp_path / 'parse_only'}'"
    problems, schemas = statement_problems(server, [good, colons, broken, created])
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"Spark's parser refuses `{colons}`: [PARSE_SYNTAX_ERROR]")
    assert problems[1].startswith("Spark's parser refuses `CREATE TABLE nowhere.t (`: [PARSE_SYNTAX_ERROR]")
    assert all("\n" not in p for p in problems)
    # Parsing only: nothing ran.
    assert "parse_only" not in schemas
