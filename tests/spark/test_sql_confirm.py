"""`delta-sync sql` confirms a statement that can delete or overwrite rows or objects, judged from Spark's parse of
it: first through the real parser of the test process's session (parsing only, nothing runs), then on the command
line. Through the warm engine (one project, one engine start), every destructive kind is refused without a
terminal, changing nothing, asked about at one, and runs with --yes; in-process, as on CI (a JVM per command), the
MERGE of issue 40 is refused, then run with --yes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from delta_sync.spark import statement_kind
from delta_sync.spark.catalog import SparkCatalog
from tests.spark.cli import ENGINE, IN_PROCESS, Cli, environ

# Each statement, and the node of its parsed plan that makes it destructive. The tables need not exist.
CONFIRMED = [
    ("MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN NOT MATCHED BY SOURCE THEN DELETE", "MergeIntoTable"),
    (
        "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'x'",
        "MergeIntoTable",
    ),
    ("MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN MATCHED AND m.src.v = 'd' THEN DELETE", "MergeIntoTable"),
    (
        "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND m.t.v IS NULL THEN DELETE",
        "MergeIntoTable",
    ),
    ("DELETE FROM m.t", "DeleteFromTable"),
    ("DELETE FROM m.t WHERE true", "DeleteFromTable"),
    ("UPDATE m.t SET v = 'x'", "UpdateTable"),
    ("INSERT OVERWRITE m.t SELECT * FROM m.src", "InsertIntoStatement"),
    ("INSERT OVERWRITE TABLE m.t PARTITION (p = 1) SELECT id, v FROM m.src", "InsertIntoStatement"),
    ("INSERT INTO m.t REPLACE WHERE id > 1 SELECT * FROM m.src", "OverwriteByExpression"),
    ("INSERT INTO m.t REPLACE USING (id) SELECT * FROM m.src", "InsertIntoStatement"),
    ("WITH s AS (SELECT 1 AS id, 'a' AS v) INSERT OVERWRITE m.t SELECT * FROM s", "InsertIntoStatement"),
    ("FROM m.src INSERT INTO m.t SELECT * INSERT OVERWRITE TABLE m.u SELECT *", "InsertIntoStatement"),
    ("INSERT OVERWRITE DIRECTORY '/tmp/nowhere' USING parquet SELECT 1", "InsertIntoDir"),
    ("TRUNCATE TABLE m.t", "TruncateTable"),
    ("TRUNCATE TABLE m.t PARTITION (p = 1)", "TruncatePartition"),
    ("DROP TABLE IF EXISTS m.t", "DropTable"),
    ("DROP VIEW m.v", "DropView"),
    ("DROP SCHEMA m CASCADE", "DropNamespace"),
    ("DROP FUNCTION m.f", "DropFunction"),
    ("RESTORE TABLE m.t TO VERSION AS OF 1", "RestoreTableStatement"),
    ("RESTORE m.t TIMESTAMP AS OF '2024-01-01'", "RestoreTableStatement"),
    ("VACUUM m.t", "VacuumTableCommand"),
    ("VACUUM m.t RETAIN 0 HOURS", "VacuumTableCommand"),
    ("ALTER TABLE m.t DROP COLUMN v", "DropColumns"),
    ("ALTER TABLE m.t DROP COLUMNS (v, w)", "DropColumns"),
    ("ALTER TABLE m.t DROP CONSTRAINT positive", "AlterTableDropConstraint"),
    ("ALTER TABLE m.t DROP PARTITION (p = 1)", "DropPartitions"),
    ("ALTER TABLE m.t DROP FEATURE deletionVectors", "AlterTableDropFeature"),
    ("ALTER TABLE m.t REPLACE COLUMNS (id INT)", "ReplaceColumns"),
    ("CREATE OR REPLACE TABLE m.t (id INT) USING DELTA", "ReplaceTable"),
    ("REPLACE TABLE m.t USING DELTA AS SELECT 1 AS id", "ReplaceTableAsSelect"),
    ("CREATE OR REPLACE TABLE m.t SHALLOW CLONE m.src", "CloneTableStatement"),
    ("CREATE OR REPLACE VIEW m.v AS\n  SELECT id\n  FROM m.t", "CreateView"),
    ("CREATE OR REPLACE FUNCTION m.f(x INT) RETURNS INT RETURN x + 1", "CreateUserDefinedFunction"),
    ("LOAD DATA LOCAL INPATH '/tmp/nowhere' OVERWRITE INTO TABLE m.t", "LoadData"),
]

NOT_CONFIRMED = [
    "SELECT * FROM m.t",
    "DELETE FROM m.t WHERE id = 1",
    "DELETE FROM m.t WHERE id IN (SELECT id FROM m.src)",
    "UPDATE m.t SET v = 'x' WHERE id = 1",
    "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN MATCHED THEN UPDATE SET v = m.src.v",
    "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN NOT MATCHED THEN INSERT *",
    "INSERT INTO m.t SELECT * FROM m.src",
    "INSERT INTO m.t VALUES (1, 'a')",
    "OPTIMIZE m.t ZORDER BY (id)",
    "VACUUM m.t DRY RUN",
    "CREATE TABLE m.n (id INT, v STRING) USING DELTA",
    "CREATE TABLE m.c SHALLOW CLONE m.src",
    "CREATE VIEW m.v AS SELECT id FROM m.t",
    "ALTER TABLE m.t ADD COLUMNS (w INT)",
    "ALTER TABLE m.t ALTER COLUMN v DROP NOT NULL",
    "DESCRIBE HISTORY m.t",
    "EXPLAIN DELETE FROM m.t",
]


class ThroughExplain:
    """A session as a Spark Connect client has it: no parser of its own (no `_jsparkSession`), only SQL, of which
    only EXPLAIN is sent. The test process's session answers it as a Connect server with Delta does: its parser is
    the server's, and EXPLAIN hands the statement to Spark's grammar alike."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def sql(self, query: str) -> Any:
        assert query.startswith(statement_kind.EXPLAIN), query
        return self._spark.sql(query)


@pytest.fixture(params=["in-process", "connect"])
def session(request: pytest.FixtureRequest, catalog: SparkCatalog) -> Any:
    return catalog.spark if request.param == "in-process" else ThroughExplain(catalog.spark)


# Spark's grammar, which EXPLAIN parses with, names the node otherwise than Delta's.
THROUGH_EXPLAIN = {"AlterTableDropConstraint": "DropConstraint"}


@pytest.mark.parametrize(("statement", "kind"), CONFIRMED)
def test_confirmed_from_the_parse(session: Any, statement: str, kind: str) -> None:
    if isinstance(session, ThroughExplain):
        kind = THROUGH_EXPLAIN.get(kind, kind)
    assert kind in {n.kind for n in statement_kind.parsed_nodes(session, statement)}
    assert statement_kind.danger(session, statement) is not None


@pytest.mark.parametrize("statement", NOT_CONFIRMED)
def test_not_confirmed(session: Any, statement: str) -> None:
    # EXPLAIN cannot parse Delta's own commands (OPTIMIZE, CLONE): through it they have no nodes, and no danger.
    if not isinstance(session, ThroughExplain):
        assert statement_kind.parsed_nodes(session, statement), "it should parse, else it proves nothing"
    assert statement_kind.danger(session, statement) is None


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        # A script runs its statements, its exception handlers' too.
        ("BEGIN SELECT 1; IF 1 = 1 THEN TRUNCATE TABLE m.t; END IF; END", "TRUNCATE"),
        ("BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN DELETE FROM m.t; END; SELECT 1; END", "DELETE"),
        ("BEGIN WHILE false DO DROP TABLE m.t; END WHILE; END", "DROP TABLE"),
        ("BEGIN SELECT 1; INSERT INTO m.t VALUES (1, 'a'); END", None),
        ("EXECUTE IMMEDIATE 'DELETE FROM m.t'", "DELETE"),
        ("EXECUTE IMMEDIATE 'SELECT 1'", None),
        ("BEGIN DECLARE s STRING DEFAULT 'SELECT 1'; EXECUTE IMMEDIATE s; END", "EXECUTE IMMEDIATE"),
    ],
)
def test_what_runs_inside_is_judged(catalog: SparkCatalog, statement: str, says: str | None) -> None:
    reason = statement_kind.danger(catalog.spark, statement)
    assert (reason is None) if says is None else (reason is not None and says in reason), reason


@pytest.mark.parametrize(
    "statement",
    [
        "BEGIN SELECT 1; END",
        "BEGIN INSERT INTO m.t VALUES (1, 'a'); END",
        "EXECUTE IMMEDIATE 'SELECT 1'",
        # Where its UPDATE stands cannot be read from the plan, and a WHEN NOT MATCHED clause appended cannot parse.
        "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN MATCHED THEN UPDATE SET v = 'x';  -- last",
    ],
)
def test_through_explain_what_cannot_be_told_is_confirmed(catalog: SparkCatalog, statement: str) -> None:
    assert statement_kind.danger(catalog.spark, statement) is None
    assert statement_kind.danger(ThroughExplain(catalog.spark), statement) is not None


def test_a_statement_spark_cannot_parse_is_left_to_the_run(session: Any, catalog: SparkCatalog) -> None:
    assert statement_kind.parsed_nodes(session, "DELET FROM m.t") == []
    assert statement_kind.danger(session, "DELET FROM m.t") is None
    assert catalog.statement_danger("DELET FROM m.t") is None


# End to end: a table of three rows, with column mapping so that a column can be dropped, and an empty source.
SETUP = (
    "BEGIN "
    "CREATE SCHEMA m; "
    "CREATE TABLE m.t (id INT, v STRING, p INT) USING DELTA TBLPROPERTIES ('delta.columnMapping.mode' = 'name'); "
    "CREATE TABLE m.src (id INT, v STRING) USING DELTA; "
    "INSERT INTO m.t VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2); "
    "END"
)
THREE_ROWS = [{"id": 1, "v": "a", "p": 1}, {"id": 2, "v": "b", "p": 1}, {"id": 3, "v": "c", "p": 2}]
BY_SOURCE = "MERGE INTO m.t USING m.src ON m.t.id = m.src.id WHEN NOT MATCHED BY SOURCE THEN DELETE"

# Each destructive kind, as the end-to-end test runs it, and what the refusal names.
MERGE_BY_SOURCE = (BY_SOURCE, "WHEN NOT MATCHED BY SOURCE")
RESTORE = ("RESTORE TABLE m.t TO VERSION AS OF 1", "RESTORE")
MERGE_DELETE = ("MERGE INTO m.t USING (SELECT 1 AS id) AS s ON m.t.id = s.id WHEN MATCHED THEN DELETE", "THEN DELETE")
OVERWRITE = ("INSERT OVERWRITE m.t VALUES (10, 'x', 1), (11, 'y', 1), (12, 'z', 2)", "INSERT OVERWRITE")
REPLACE_WHERE = ("INSERT INTO m.t REPLACE WHERE p = 1 SELECT 20, 'r', 1", "REPLACE WHERE")
DROP_COLUMN = ("ALTER TABLE m.t DROP COLUMN v", "DROP COLUMN")
DELETE = ("DELETE FROM m.t", "DELETE without WHERE")
TRUNCATE = ("TRUNCATE TABLE m.t", "TRUNCATE")
# LITE: VACUUM from the log; listing the folder takes a minute of Spark jobs on a small machine.
VACUUM = ("VACUUM m.t LITE", "VACUUM")
DROP_TABLE = ("DROP TABLE m.t", "DROP TABLE")
SCRIPT = ("BEGIN SELECT 1; DELETE FROM m.t; END", "DELETE without WHERE")
EVERY_KIND = [
    MERGE_BY_SOURCE,
    RESTORE,
    MERGE_DELETE,
    OVERWRITE,
    REPLACE_WHERE,
    DROP_COLUMN,
    DELETE,
    TRUNCATE,
    VACUUM,
    DROP_TABLE,
    SCRIPT,
]


def explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def ran(cli: Cli, statement: str, *options: str) -> list[dict[str, Any]]:
    """Run a statement (with --format json), expecting exit 0; its rows."""
    done = cli.run(["sql", statement, "--format", "json", *options])
    assert done.returncode == 0, explain(done)
    found: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return found


def refused(cli: Cli, statement: str, says: str) -> None:
    """Without a terminal (stdin is /dev/null) and without --yes: exit 1, one line saying why, nothing run."""
    done = cli.run(["sql", statement])
    assert done.returncode == 1, explain(done)
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, explain(done)
    assert errors[0].startswith("Error: not run: "), explain(done)
    assert errors[0].endswith("; pass --yes to run it without a terminal to confirm at"), explain(done)
    assert says in errors[0], explain(done)
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@contextlib.contextmanager
def engine(root: Path) -> Iterator[Cli]:
    cli = Cli(root, ENGINE)
    try:
        yield cli
    finally:
        cli.close()


def at_terminal(cli: Cli, statement: str, answer: str) -> subprocess.CompletedProcess[str]:
    """The command with a terminal for stdin, `answer` typed ahead."""
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "delta_sync", "sql", statement, "--format", "json"],
            cwd=cli.root,
            env=environ(cli.path),
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        os.write(controller, answer.encode() + b"\n")
        try:
            out, err = process.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    finally:
        os.close(terminal)
        os.close(controller)
    return subprocess.CompletedProcess(statement, process.returncode, out, err)


def test_every_destructive_kind_is_confirmed_through_the_engine(tmp_path: Path) -> None:
    with engine(tmp_path) as cli:
        ran(cli, SETUP)  # a script that destroys nothing runs without --yes

        for statement, says in EVERY_KIND:
            refused(cli, statement, says)
        # At a terminal the command asks; no runs nothing.
        cancelled = at_terminal(cli, BY_SOURCE, "n")
        assert cancelled.returncode == 1, explain(cancelled)
        assert "WHEN NOT MATCHED BY SOURCE" in cancelled.stderr
        assert "Run it?" in cancelled.stderr
        assert "Cancelled; nothing was run." in cancelled.stderr
        # Nothing changed: the rows, the columns, the table's history (RESTORE and VACUUM would add to it).
        assert ran(cli, "SELECT * FROM m.t ORDER BY id") == THREE_ROWS
        assert [row["version"] for row in ran(cli, "DESCRIBE HISTORY m.t")] == [1, 0]

        # Issue 40: the empty source names no row, so every row goes.
        assert ran(cli, BY_SOURCE, "--yes")[0]["num_deleted_rows"] == 3
        assert ran(cli, RESTORE[0], "--yes")[0]["num_restored_files"] >= 1
        # At a terminal, yes runs it.
        confirmed = at_terminal(cli, MERGE_DELETE[0], "y")
        assert confirmed.returncode == 0, explain(confirmed)
        assert json.loads(confirmed.stdout)["rows"][0]["num_deleted_rows"] == 1
        ran(cli, OVERWRITE[0], "--yes")
        ran(cli, REPLACE_WHERE[0], "--yes")
        ran(cli, DROP_COLUMN[0], "--yes")
        assert ran(cli, "SELECT * FROM m.t ORDER BY id") == [{"id": 12, "p": 2}, {"id": 20, "p": 1}]
        assert ran(cli, DELETE[0], "--yes")[0]["num_affected_rows"] == 2
        ran(cli, "INSERT INTO m.t VALUES (30, 3)")  # destroys nothing: no --yes
        ran(cli, TRUNCATE[0], "--yes")
        assert ran(cli, "SELECT count(*) AS n FROM m.t") == [{"n": 0}]
        ran(cli, VACUUM[0], "--yes")
        ran(cli, DROP_TABLE[0], "--yes")
        assert [row["tableName"] for row in ran(cli, "SHOW TABLES IN m")] == ["src"]


def test_in_process_the_merge_is_refused_then_run_with_yes(tmp_path: Path) -> None:
    cli = Cli(tmp_path, IN_PROCESS)
    ran(cli, SETUP)
    refused(cli, *MERGE_BY_SOURCE)
    # The three rows were still there for the run to delete.
    assert ran(cli, BY_SOURCE, "--yes")[0]["num_deleted_rows"] == 3
