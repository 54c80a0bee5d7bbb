"""connect: environments without a server or a JVM: the token masked in every message, the missing
client named with the pip command, connection failures worded, Delta's schema read from its log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.errors import CatalogError, SetupError
from delta_sync.model.state import TableName
from delta_sync.review import environments
from delta_sync.spark import connect
from delta_sync.spark.connect import ConnectCatalog

TOKEN = "s3cr3t-t0ken-value"
URL = f"sc://spark.example.com:15002/;user_id=ci;token={TOKEN};use_ssl=true"


def test_the_url_is_shown_with_its_token_masked() -> None:
    assert connect.redact_url(URL) == "sc://spark.example.com:15002/;user_id=ci;token=***;use_ssl=true"
    assert connect.redact_url("sc://localhost:15002") == "sc://localhost:15002"
    assert connect.url_token(URL) == TOKEN
    assert connect.url_token("sc://h/;token=") is None
    assert connect.url_host(URL) == "spark.example.com"
    assert connect.url_host("sc://[::1]:15002") == "[::1]"


def test_the_token_may_come_from_the_environment_and_is_masked_too() -> None:
    environ = {connect.TOKEN_ENV: "from-the-env"}
    assert connect.client_token("sc://localhost:15002", environ) == "from-the-env"
    assert connect.client_token(URL, environ) == TOKEN  # the URL's wins, as in pyspark
    mask = connect.masker(URL, lambda text: text.replace("project-secret", "***"), environ)
    assert mask(f"a {TOKEN} b from-the-env c project-secret") == "a *** b *** c ***"
    assert connect.shown_url(URL) == connect.redact_url(URL)


def test_missing_client_modules_are_named_with_the_pip_command() -> None:
    def find(module: str) -> object | None:
        if module == "google.rpc":
            raise ModuleNotFoundError("No module named 'google'")
        return None if module in ("grpc", "zstandard") else object()

    missing = connect.missing_modules(find)
    assert missing == ["grpcio", "googleapis-common-protos", "zstandard"]
    message = str(connect.missing_dependencies_error(connect.redact_url(URL), missing))
    assert "pip install 'delta-sync[connect]'" in message
    assert "grpcio, googleapis-common-protos, zstandard missing" in message
    assert TOKEN not in message
    assert connect.missing_modules(lambda _m: object()) == []


def test_connection_failures_are_one_sentence_with_what_to_do() -> None:
    shown = "sc://localhost:15002/;token=***"
    refused = connect.connection_message(
        shown, "UNAUTHENTICATED", "Invalid authentication token", host="localhost", token=True
    )
    assert refused.startswith(f"Spark Connect at {shown} refused the token (Invalid authentication token)")
    assert connect.TOKEN_ENV in refused
    down = connect.connection_message(shown, "UNAVAILABLE", "Connection refused", host="localhost", token=True)
    assert down.startswith(f"Could not reach Spark Connect at {shown}: Connection refused; is the server running")
    tls = connect.connection_message(
        shown, "UNAVAILABLE", "Tls handshake failed (TSI_PROTOCOL_FAILURE)", host="127.0.0.1", token=True
    )
    assert "unless the host is literally `localhost`" in tls
    assert "\n" not in refused + down + tls


def test_grpc_failures_give_their_status_and_details() -> None:
    class Code:
        name = "UNAVAILABLE"

    class Failure(Exception):
        def getGrpcStatusCode(self) -> Code:
            return Code()

    failure = Failure('<_InactiveRpcError of RPC that terminated with:\n\tstatus = X\n\tdetails = "no route"\n>')
    assert connect.grpc_failure(failure) == ("UNAVAILABLE", "no route")
    assert connect.grpc_failure(ValueError("plain\nsecond")) == (None, "plain")


PROJECT = """\
default_env: remote
envs:
  remote:
    connect: sc://localhost:15002/;token=${env:DS_TEST_TOKEN}
"""


@pytest.fixture
def connect_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT)
    (tmp_path / "specs").mkdir()
    monkeypatch.setenv("DS_TEST_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_without_the_client_a_connect_env_says_what_to_install(
    connect_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "missing_modules", lambda: ["grpcio", "pyarrow"])
    with pytest.raises(SetupError) as raised:
        environments.open_catalog()
    message = str(raised.value)
    assert message == (
        "Spark Connect (sc://localhost:15002/;token=***) needs pyspark's Connect client, which is not installed "
        "(grpcio, pyarrow missing): run pip install 'delta-sync[connect]'"
    )
    result = CliRunner().invoke(cli.app, ["sql", "SELECT 1"])
    assert result.exit_code == 1
    assert "pip install 'delta-sync[connect]'" in result.stderr
    assert TOKEN not in result.output
    assert "Traceback" not in result.output


def test_a_connect_env_opens_a_client_session_and_never_a_local_one(
    connect_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[str, str]] = []
    session = object()

    def fake_session(url: str, on_status: Any, redact: Any) -> object:
        opened.append((url, redact(url)))
        return session

    def no_local_session(*_args: Any) -> None:
        raise AssertionError("a connect: environment started a local session")

    monkeypatch.setattr(connect, "connect_session", fake_session)
    monkeypatch.setattr("delta_sync.spark.session.get_session", no_local_session)
    catalog = environments.open_catalog()
    assert isinstance(catalog, ConnectCatalog)
    assert catalog.spark is session
    assert catalog.shown_url == "sc://localhost:15002/;token=***"
    assert opened == [(f"sc://localhost:15002/;token={TOKEN}", "sc://localhost:15002/;token=***")]


# --- Delta's schema from its log, with SQL only ----------------------------------------------------

LOG_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "d", "type": "date", "nullable": True, "metadata": {"delta.generationExpression": "CAST(ts AS DATE)"}},
    ],
}
STRIPPED = {"type": "struct", "fields": [{**field, "metadata": {}} for field in LOG_SCHEMA["fields"]]}
LOG = "file:/w/t/_delta_log"


class Frame:
    def __init__(self, rows: list[Mapping[str, Any]]) -> None:
        self.rows = rows

    def collect(self) -> list[Mapping[str, Any]]:
        return self.rows


class Schema:
    def jsonValue(self) -> dict[str, Any]:
        return STRIPPED


class FakeSpark:
    """Answers the statements ConnectCatalog sends: `answers` maps the start of a statement to rows
    (an exception is raised); anything else is a test failure."""

    def __init__(self, answers: Mapping[str, list[Mapping[str, Any]] | Exception]) -> None:
        self.answers = answers
        self.sent: list[str] = []

    def sql(self, statement: str) -> Frame:
        self.sent.append(statement)
        for start, answer in self.answers.items():
            if statement.startswith(start):
                if isinstance(answer, Exception):
                    raise answer
                return Frame(answer)
        raise AssertionError(f"unexpected statement: {statement}")

    def table(self, _name: str) -> Any:
        return type("Frame", (), {"schema": Schema()})()


def metadata_line(schema: Mapping[str, Any]) -> dict[str, str]:
    return {"value": json.dumps({"metaData": {"schemaString": json.dumps(schema)}})}


def history(version: int) -> list[Mapping[str, Any]]:
    return [{"version": version}]


@pytest.fixture
def name() -> TableName:
    return TableName(None, "s", "t")


def test_the_schema_comes_from_the_latest_commit_after_the_checkpoint(name: TableName) -> None:
    spark = FakeSpark(
        {
            "DESCRIBE HISTORY": history(12),
            "SELECT path FROM binaryFile": [
                {"path": f"{LOG}/00000000000000000010.checkpoint.parquet"},
                {"path": f"{LOG}/00000000000000000020.checkpoint.parquet"},  # newer than what was read
            ],
            "SELECT value FROM (": [metadata_line(LOG_SCHEMA)],
        }
    )
    schema, version = ConnectCatalog(spark, "sc://h")._delta_schema(name, "file:/w/t")
    assert (schema, version) == (LOG_SCHEMA, 12)
    assert spark.sent[1] == f"SELECT path FROM binaryFile.`{LOG}` WHERE path LIKE '%.checkpoint.%'"
    # File by file, never a glob (Spark logs a stack trace for each), the latest first.
    assert spark.sent[2] == (
        f"SELECT value FROM (SELECT 0 AS n, value FROM text.`{LOG}/00000000000000000011.json` UNION ALL "
        f"SELECT 1 AS n, value FROM text.`{LOG}/00000000000000000012.json`) "
        """WHERE startswith(value, '{"metaData"') ORDER BY n DESC LIMIT 1"""
    )


def test_without_a_metadata_commit_the_checkpoint_has_the_schema(name: TableName) -> None:
    parts = [f"{LOG}/00000000000000000010.checkpoint.000000000{i}.0000000002.parquet" for i in (1, 2)]
    spark = FakeSpark(
        {
            "DESCRIBE HISTORY": history(11),
            "SELECT path FROM binaryFile": [{"path": p} for p in reversed(parts)],
            "SELECT value FROM (": [],
            "SELECT s FROM (": [{"s": json.dumps(LOG_SCHEMA)}],
        }
    )
    assert ConnectCatalog(spark, "sc://h")._delta_schema(name, "file:/w/t") == (LOG_SCHEMA, 11)
    assert spark.sent[3] == (
        f"SELECT s FROM (SELECT metaData.schemaString AS s FROM parquet.`{parts[0]}` UNION ALL "
        f"SELECT metaData.schemaString AS s FROM parquet.`{parts[1]}`) WHERE s IS NOT NULL LIMIT 1"
    )


def test_an_unreadable_log_is_said_when_the_table_has_generated_columns(name: TableName) -> None:
    spark = FakeSpark(
        {
            "DESCRIBE HISTORY": history(3),
            "SELECT path FROM binaryFile": RuntimeError("[PATH_NOT_FOUND] no access to the log"),
            "DESCRIBE DETAIL": [{"tableFeatures": ["appendOnly", "generatedColumns"]}],
        }
    )
    with pytest.raises(CatalogError) as raised:
        ConnectCatalog(spark, "sc://h/;token=***")._delta_schema(name, "file:/w/t")
    message = str(raised.value)
    assert message.startswith("s.t has generatedColumns, whose definitions only Delta's log holds")
    assert "[PATH_NOT_FOUND] no access to the log" in message
    assert "use a spark: or submit: environment" in message


def test_an_unreadable_log_is_no_loss_without_generated_or_identity_columns(name: TableName) -> None:
    spark = FakeSpark(
        {
            "DESCRIBE HISTORY": history(3),
            "SELECT path FROM binaryFile": RuntimeError("denied"),
            "DESCRIBE DETAIL": [{"tableFeatures": ["appendOnly"]}],
        }
    )
    assert ConnectCatalog(spark, "sc://h")._delta_schema(name, "file:/w/t") == (STRIPPED, 3)


def test_a_log_far_longer_than_the_checkpoint_interval_is_not_read(name: TableName) -> None:
    spark = FakeSpark(
        {
            "DESCRIBE HISTORY": history(connect.MAX_COMMITS_READ),  # no checkpoint: commits 0..MAX
            "SELECT path FROM binaryFile": [],
            "DESCRIBE DETAIL": [{"tableFeatures": ["identityColumns"]}],
        }
    )
    with pytest.raises(
        CatalogError, match=r"identityColumns.*: 101 commits since the last checkpoint, more than the 100 read"
    ):
        ConnectCatalog(spark, "sc://h")._delta_schema(name, "file:/w/t")
