"""Spark Connect: `connect: sc://host:port/;token=...` environments, through a client session.

No JVM runs in this process: pyspark's Connect client (the `connect` extra: gRPC, Arrow, pandas)
sends each statement to the server, which holds the catalog and Delta. The statements and the
SQL-only read path are those of every other environment (SparkCatalog); what needs the JVM there
(Delta's own schema, which keeps generation and identity) is read here from the Delta log with SQL.

The token, from the URL's `;token=` or from SPARK_CONNECT_AUTHENTICATE_TOKEN, never leaves this
module: every message that names the server shows the URL with the token masked.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from delta_sync.model.errors import CatalogError, SetupError
from delta_sync.model.state import Table, TableName
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.exceptions import unparsable
from delta_sync.spark.introspect import table_from_catalog
from delta_sync.spark.quiet import quiet_python_loggers
from delta_sync.specs.settings import REDACTED
from delta_sync.sql import expressions

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
INSTALL_HINT = "pip install 'delta-sync[connect]'"
# What pyspark's Connect client imports (pyspark[connect]), as module -> distribution.
CLIENT_MODULES: tuple[tuple[str, str], ...] = (
    ("grpc", "grpcio"),
    ("grpc_status", "grpcio-status"),
    ("google.rpc", "googleapis-common-protos"),
    ("pyarrow", "pyarrow"),
    ("pandas", "pandas"),
    ("zstandard", "zstandard"),
)
# Retries of UNAVAILABLE (DefaultPolicy's arguments; times in ms). Out of the box the client keeps
# trying for 10 minutes; a server that is down should be reported in seconds (about 3 s), and a
# blip during a run still ridden out (about 15 s per call).
FIRST_CONTACT_RETRIES: Mapping[str, int] = {"max_retries": 4, "max_backoff": 2000}
RUN_RETRIES: Mapping[str, int] = {"max_retries": 6, "max_backoff": 5000}

_TOKEN_PARAM = re.compile(r"(;\s*token\s*=)([^;]*)", re.IGNORECASE)
_URL = re.compile(r"sc://(?P<host>\[[^\]]*\]|[^:/;]*)")
_GRPC_DETAILS = re.compile(r'details = "(.*)"')
_CHECKPOINT = re.compile(r"/(\d{20})\.checkpoint\.[^/]*$")


def url_token(url: str) -> str | None:
    """The token given in the URL (`;token=...`), if any."""
    found = _TOKEN_PARAM.search(url)
    return found.group(2).strip() if found and found.group(2).strip() else None


def client_token(url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The token the client sends: the URL's, else SPARK_CONNECT_AUTHENTICATE_TOKEN (as pyspark does)."""
    return url_token(url) or environ.get(TOKEN_ENV) or None


def url_host(url: str) -> str:
    found = _URL.match(url)
    return found.group("host") if found else ""


def redact_url(url: str) -> str:
    """The URL as it may be shown: the value of `;token=` masked."""
    return _TOKEN_PARAM.sub(lambda m: m.group(1) + REDACTED, url)


def shown_url(url: str, redact: Callable[[str], str] = lambda text: text) -> str:
    """The URL as messages show it: the token masked, and whatever else `redact` masks."""
    return masker(url, redact)(redact_url(url))


def masker(
    url: str, redact: Callable[[str], str] = lambda text: text, environ: Mapping[str, str] = os.environ
) -> Callable[[str], str]:
    """A function that masks, in any text, the tokens this URL may send and whatever `redact` masks."""
    secrets = sorted({t for t in (url_token(url), environ.get(TOKEN_ENV)) if t}, key=len, reverse=True)

    def mask(text: str) -> str:
        text = redact(text)
        for secret in secrets:
            text = text.replace(secret, REDACTED)
        return text

    return mask


def missing_modules(find: Callable[[str], Any] = importlib.util.find_spec) -> list[str]:
    """The distributions of the Connect client that are not installed."""
    missing = []
    for module, distribution in CLIENT_MODULES:
        try:
            found = find(module) is not None
        except (ImportError, ValueError):  # `google` itself missing, for `google.rpc`
            found = False
        if not found:
            missing.append(distribution)
    return missing


def missing_dependencies_error(shown_url: str, missing: Sequence[str], detail: str = "") -> SetupError:
    what = f" ({', '.join(missing)} missing)" if missing else (f" ({detail})" if detail else "")
    return SetupError(
        f"Spark Connect ({shown_url}) needs pyspark's Connect client, which is not installed{what}: run {INSTALL_HINT}"
    )


def grpc_failure(exc: BaseException) -> tuple[str | None, str]:
    """The gRPC status code name (e.g. UNAVAILABLE) and the details of a failed call, when it is one."""
    code: Any = None
    getter = getattr(exc, "getGrpcStatusCode", None)
    with contextlib.suppress(Exception):
        code = getter() if getter is not None else None
    if code is None:
        with contextlib.suppress(Exception):
            code = exc.code()  # type: ignore[attr-defined]  # a bare grpc.RpcError
    name = getattr(code, "name", None) or (str(code) if code is not None else None)
    text = _safe_str(exc)
    found = _GRPC_DETAILS.search(text)
    if found:
        return name, found.group(1)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return name, lines[0] if lines else type(exc).__name__


def connection_message(shown_url: str, code: str | None, details: str, *, host: str, token: bool) -> str:
    """One sentence on why the first call to the server failed, with what to do about it."""
    where = f"Spark Connect at {shown_url}"
    if code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return f"{where} refused the token ({details}); check the token given in connect: (;token=) or in {TOKEN_ENV}"
    if code == "UNAVAILABLE" and ("handshake" in details.lower() or "ssl" in details.lower()):
        hint = "the server does not speak TLS"
        if token and host != "localhost":
            hint = (
                "with a token the client uses TLS unless the host is literally `localhost`; for a server on "
                "this machine write sc://localhost:PORT, otherwise put the server behind TLS"
            )
        return f"Could not reach {where}: the TLS handshake failed ({hint})"
    if code == "UNAVAILABLE":
        return f"Could not reach {where}: {details}; is the server running, and is this its host and port?"
    return f"Could not use {where}: {details}"


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in _safe_str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


# --- the session ---------------------------------------------------------------------------------

_sessions: dict[str, Any] = {}
# The client's own warnings (e.g. "[RETRIES_EXCEEDED]" before the error that says it all).
_CLIENT_MODULE = r"pyspark\.sql\.connect\."


@contextlib.contextmanager
def _quiet_client() -> Iterator[None]:
    """pyspark's client warns about pandas 3 on import; those warnings are not the user's business."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", module=_CLIENT_MODULE)
        yield


def _import_client(shown_url: str) -> tuple[Any, Any, ModuleType]:
    missing = missing_modules()
    if missing:
        raise missing_dependencies_error(shown_url, missing)
    # gRPC's C core logs TLS handshake failures and the like straight to stderr; our message says it all.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        with _quiet_client():
            from pyspark.sql import SparkSession
            from pyspark.sql.connect import logging as connect_logging
            from pyspark.sql.connect.client.retries import DefaultPolicy
    except ImportError as exc:  # a version pyspark refuses (PySparkImportError is an ImportError)
        raise missing_dependencies_error(shown_url, [], _first_line(exc)) from None
    return SparkSession, DefaultPolicy, connect_logging


def connect_session(
    url: str, on_status: Callable[[str], None] = lambda _m: None, redact: Callable[[str], str] = lambda t: t
) -> Any:
    """The process's Spark Connect session on `url`, opened on first use and checked with one call
    (a server that is down or a token it refuses fail here, in one sentence, not at the first statement)."""
    if url in _sessions:
        return _sessions[url]
    mask = masker(url, redact)
    shown = shown_url(url, redact)
    session_class, policy, connect_logging = _import_client(shown)
    on_status(f"Connecting to Spark Connect at {shown}...")
    try:
        with _quiet_client():
            session = session_class.builder.remote(url).getOrCreate()
    except Exception as exc:
        _, details = grpc_failure(exc)
        raise CatalogError(f"Could not open a Spark Connect session at {shown}: {mask(details)}") from None
    # The client logs every failed call with its traceback when SPARK_CONNECT_LOG_LEVEL is set, and
    # warns before raising; the errors raised say it all, in the words of delta-sync's messages.
    connect_logging.logger.disabled = True
    warnings.filterwarnings("ignore", module=_CLIENT_MODULE)
    quiet_python_loggers()
    session.client.set_retry_policies([policy(**FIRST_CONTACT_RETRIES)])
    try:
        with _quiet_client():
            version = session.version
    except Exception as exc:
        code, details = grpc_failure(exc)
        _stop(session, policy)
        message = connection_message(shown, code, details, host=url_host(url), token=client_token(url) is not None)
        raise CatalogError(mask(message)) from None
    session.client.set_retry_policies([policy(**RUN_RETRIES)])
    atexit.register(_stop, session, policy)
    _sessions[url] = session
    on_status(f"Connected to Spark {version} at {shown}...")
    return session


def _stop(session: Any, policy: Any) -> None:
    """Release the server's session; without retries, so a server already gone never delays the exit."""
    with contextlib.suppress(Exception):
        session.client.set_retry_policies([policy(max_retries=0)])
    with contextlib.suppress(Exception):
        session.stop()


# --- the catalog ---------------------------------------------------------------------------------

# Delta adds these features to a table that has generated or identity columns; their definitions
# live only in the schema in Delta's log, which Spark's view of the table leaves out.
LOG_ONLY_FEATURES = frozenset({"generatedColumns", "identityColumns"})
# Commits after the last checkpoint are read file by file (Spark logs a warning with a stack trace
# for every glob it is given); a log this much longer than Delta's checkpoint interval (10) is not
# read, and the catalog's schema is used instead (see ConnectCatalog._delta_schema).
MAX_COMMITS_READ = 100
_METADATA_LINE = """startswith(value, '{"metaData"')"""


def _quote_path(path: str) -> str:
    return "`" + path.replace("`", "``") + "`"


# Delta's own statements, which EXPLAIN does not take; a rollback makes them from a version number and a
# feature name, nothing a spec wrote, so they are not parsed ahead.
_DELTA_ONLY = re.compile(r"RESTORE TABLE |ALTER TABLE .+ DROP FEATURE ")
_ADD_CHECK = re.compile(r"ALTER TABLE .* ADD CONSTRAINT \S+ CHECK \((.*)\)\s*$", re.DOTALL)


def _log_dir(location: str) -> str:
    return location.rstrip("/") + "/_delta_log"


class ConnectCatalog(SparkCatalog):
    """SparkCatalog on a Spark Connect session: the same statements and reads, SQL only."""

    # One statement at a time: the commit's userMetadata is a setting of the one client session.
    max_parallel = 1

    def __init__(self, session: Any, shown_url: str, on_status: Callable[[str], None] = lambda _m: None) -> None:
        super().__init__(None, on_status, session=session)
        self.shown_url = shown_url

    def _delta_schema(self, name: TableName, location: str) -> tuple[dict[str, Any], int | None]:
        """Delta's own schema, as the in-process session reads it from the snapshot: here from the
        latest metaData action in the Delta log, read with SQL (the commits after the latest
        checkpoint, else the checkpoint). If the log cannot be read, the catalog's schema is used,
        unless the table has generated or identity columns, which only the log shows: then the read
        fails and says so."""
        rows = self.spark.sql(f"DESCRIBE HISTORY {name.sql()} LIMIT 1").collect()
        version = int(rows[0]["version"])
        try:
            schema = self._schema_from_log(_log_dir(location), version)
            reason = "it holds no metaData action to read"
        except Exception as exc:
            schema, reason = None, _first_line(exc)
        if schema is not None:
            return schema, version
        features = self.spark.sql(f"DESCRIBE DETAIL {name.sql()}").collect()[0]["tableFeatures"] or []
        hidden = sorted(LOG_ONLY_FEATURES & {str(f) for f in features})
        if hidden:
            raise CatalogError(
                f"{name} has {' and '.join(hidden)}, whose definitions only Delta's log holds, and the log at "
                f"{_log_dir(location)} could not be read through Spark Connect ({self.shown_url}): {reason}. "
                "delta-sync will not guess them; use a spark: or submit: environment for this table."
            )
        return dict(self.spark.table(name.sql()).schema.jsonValue()), version

    def _schema_from_log(self, log: str, version: int) -> dict[str, Any] | None:
        checkpoint, parts = self._latest_checkpoint(log, version)
        commits = range(checkpoint + 1, version + 1)
        if len(commits) > MAX_COMMITS_READ:
            raise CatalogError(
                f"{len(commits)} commits since the last checkpoint, more than the {MAX_COMMITS_READ} read"
            )
        if commits:
            found = self._metadata_line([f"{log}/{v:020d}.json" for v in commits])
            if found is not None:
                return found
        # A classic, multi-part or V2 checkpoint: parquet, or a V2 checkpoint's top-level JSON.
        parquet = [p for p in parts if p.endswith(".parquet")]
        if parquet:
            union = " UNION ALL ".join(
                f"SELECT metaData.schemaString AS s FROM parquet.{_quote_path(p)}" for p in parquet
            )
            rows = self.spark.sql(f"SELECT s FROM ({union}) WHERE s IS NOT NULL LIMIT 1").collect()
            if rows:
                return dict(json.loads(rows[0]["s"]))
        json_parts = [p for p in parts if p.endswith(".json")]
        return self._metadata_line(json_parts) if json_parts else None

    def _latest_checkpoint(self, log: str, version: int) -> tuple[int, list[str]]:
        """The version and files of the latest checkpoint at or before `version`; (-1, []) if none.

        Listed with the binaryFile source on the log folder, which reads no file for `path` alone
        (`_last_checkpoint` is out of reach: Spark hides every file whose name starts with `_`)."""
        rows = self.spark.sql(
            f"SELECT path FROM binaryFile.{_quote_path(log)} WHERE path LIKE '%.checkpoint.%'"
        ).collect()
        by_version: dict[int, list[str]] = {}
        for row in rows:
            found = _CHECKPOINT.search(str(row["path"]))
            if found and int(found.group(1)) <= version:
                by_version.setdefault(int(found.group(1)), []).append(str(row["path"]))
        if not by_version:
            return -1, []
        latest = max(by_version)
        return latest, sorted(by_version[latest])

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        """As SparkCatalog's, through EXPLAIN, the one way a Connect client parses without running:
        a statement that does not parse raises, one that does but cannot be analysed only reports it
        in EXPLAIN's output. EXPLAIN stops short of Delta's second parse of an ADD CONSTRAINT's
        expression, so that expression is explained as a SELECT, spaced as Delta's tokens are."""
        problems = []
        for statement in statements:
            if _DELTA_ONLY.match(statement):
                continue
            try:
                self.spark.sql(f"EXPLAIN {statement}").collect()
                check = _ADD_CHECK.match(statement)
                if check:
                    self.spark.sql(f"EXPLAIN SELECT {expressions.as_delta_reparses(check.group(1))}").collect()
            except Exception as exc:
                problems.append(unparsable(statement, exc))
        return problems

    def _read_logged_at(self, name: TableName, location: str, version: int) -> Table:
        """The table at `version` from the latest metaData and protocol actions of its log at that version,
        read with SQL (the commits after the checkpoint before it, else that checkpoint). Clustering
        columns are not read from the log here: a rollback leaves them as they are."""
        log = _log_dir(location)
        checkpoint, parts = self._latest_checkpoint(log, version)
        commits = [f"{log}/{v:020d}.json" for v in range(checkpoint + 1, version + 1)]
        if len(commits) > MAX_COMMITS_READ:
            raise CatalogError(
                f"{len(commits)} commits since the last checkpoint, more than the {MAX_COMMITS_READ} read"
            )
        found: dict[str, dict[str, Any]] = {}
        for action in ("metaData", "protocol"):
            if commits:
                value = self._latest_action(commits, action)
                if value is not None:
                    found[action] = value
            parquet = [p for p in parts if p.endswith(".parquet")]
            if action not in found and parquet:
                union = " UNION ALL ".join(
                    f"SELECT to_json({action}) AS a FROM parquet.{_quote_path(p)} WHERE {action} IS NOT NULL"
                    for p in parquet
                )
                rows = self.spark.sql(f"SELECT a FROM ({union}) LIMIT 1").collect()
                if rows:
                    found[action] = dict(json.loads(rows[0]["a"]))
        if "metaData" not in found or "protocol" not in found:
            raise CatalogError(f"the log at {log} holds no table metadata for version {version}")
        metadata, protocol = found["metaData"], found["protocol"]
        return table_from_catalog(
            name,
            json.loads(metadata["schemaString"]),
            metadata.get("description"),
            list(metadata.get("partitionColumns") or []),
            dict(metadata.get("configuration") or {}),
            protocol_features(protocol),
            version=version,
            protocol=(int(protocol.get("minReaderVersion") or 1), int(protocol.get("minWriterVersion") or 2)),
        )

    def _latest_action(self, files: Sequence[str], action: str) -> dict[str, Any] | None:
        union = " UNION ALL ".join(
            f"SELECT {index} AS n, value FROM text.{_quote_path(path)}" for index, path in enumerate(files)
        )
        start = "'{\"" + action + "\"'"
        rows = self.spark.sql(
            f"SELECT value FROM ({union}) WHERE startswith(value, {start}) ORDER BY n DESC LIMIT 1"
        ).collect()
        return dict(json.loads(rows[0]["value"])[action]) if rows else None

    def _metadata_line(self, files: Sequence[str]) -> dict[str, Any] | None:
        """The schema in the latest metaData action of these log files (JSON lines), the last file first."""
        union = " UNION ALL ".join(
            f"SELECT {index} AS n, value FROM text.{_quote_path(path)}" for index, path in enumerate(files)
        )
        rows = self.spark.sql(f"SELECT value FROM ({union}) WHERE {_METADATA_LINE} ORDER BY n DESC LIMIT 1").collect()
        if not rows:
            return None
        return dict(json.loads(json.loads(rows[0]["value"])["metaData"]["schemaString"]))


# The features a legacy protocol (no feature lists) has, by writer and reader version.
_LEGACY_WRITER = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}


def protocol_features(protocol: Mapping[str, Any]) -> list[str]:
    """A protocol action's features: its lists, or those its legacy versions imply."""
    named = [*(protocol.get("readerFeatures") or []), *(protocol.get("writerFeatures") or [])]
    writer = int(protocol.get("minWriterVersion") or 0)
    implied = [f for v, features in _LEGACY_WRITER.items() if v <= writer < 7 for f in features]
    if int(protocol.get("minReaderVersion") or 0) == 2:
        implied.append("columnMapping")
    return sorted({str(f) for f in [*named, *implied]})


def open_connect_catalog(
    url: str, on_status: Callable[[str], None] = lambda _m: None, redact: Callable[[str], str] = lambda t: t
) -> ConnectCatalog:
    session = connect_session(url, on_status, redact)
    return ConnectCatalog(session, shown_url(url, redact), on_status)
