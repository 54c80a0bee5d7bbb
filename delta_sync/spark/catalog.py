"""SparkCatalog: reads table state and runs statements through a SparkSession.

The class holds the session (started on first use) and turns engine errors into delta-sync's; what it does with
the session is in `table_reads` (the state model, history, a table at a version), `probes` (the data against
rules and keys) and `session_statements` (running, parsing and analysing statements).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from delta_sync.model.catalog import Commit, ProbeResult, QueryResult
from delta_sync.model.errors import CatalogError, DeltaSyncError, SpecProblem
from delta_sync.model.state import CatalogState, Check, PrimaryKey, SchemaName, Table, TableName, View
from delta_sync.planning.key_checks import KeyCheck
from delta_sync.spark import bulk_reads, interrupts, object_storage, probes, session_statements, table_reads
from delta_sync.spark.exceptions import engine_failure
from delta_sync.spark.jars import with_packages
from delta_sync.spark.session import LocalCatalog, derby_locked, get_session, locked_error, refused_by_derby


class SparkCatalog:
    # Statements may run on several threads at once (api.run_statements): each thread gets a
    # session of its own (sharing the driver, its metastore client and Delta's log cache), because
    # the commit's userMetadata is a session setting.
    max_parallel = 8

    def __init__(
        self, local: LocalCatalog | None, on_status: Callable[[str], None] = lambda _m: None, session: Any = None
    ) -> None:
        """On the embedded catalog `local` (the session starts on first use), or on a running `session`
        (the driver spark-submit started, configured by its command line)."""
        self.local = local
        self._on_status = on_status
        self._spark: Any = session
        self._locations: dict[TableName, str] = {}
        self._threads = threading.local()
        self._starting = threading.Lock()

    def cancel_running(self) -> None:
        """Cancel this command's Spark jobs now (its tags on the warm engine, its own jobs in-process)."""
        interrupts.cancel_again()

    @property
    def spark(self) -> Any:
        with self._starting:  # statements may run on several threads: one session start only
            return self._start()

    def _start(self) -> Any:
        if self._spark is None:
            assert self.local is not None  # else a session was given
            # An environment's extra packages (a catalog's connector, S3A on object storage) join Delta's jars first.
            conf = with_packages(object_storage.session_conf(self.local.conf), self._on_status)
            if conf != dict(self.local.conf):
                self.local = dataclasses.replace(self.local, conf=conf)
            self._spark = get_session(self.local, self._on_status)
        return self._spark

    def _setting(self, key: str) -> str | None:
        value = self.spark.conf.get(key, None)
        return None if value is None else str(value)

    def _engine_error(self, exc: Exception, doing: str) -> CatalogError:
        if self.local is not None and derby_locked(self.local, exc):
            return locked_error(self.local)
        refused = refused_by_derby(exc, self._setting) if self.local is None else None
        if refused is not None:
            return refused
        failure = engine_failure(exc)
        first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
        return CatalogError(f"{doing}: {first}")

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return bulk_reads.read(self, names)

    def _read_described(self, name: TableName) -> Table | View | None:
        return table_reads.read_described(self, name)

    def _delta_schema(self, name: TableName, location: str) -> tuple[dict[str, Any], int | None]:
        return table_reads.delta_schema(self, name, location)

    def read_at(self, name: TableName, version: int) -> Table:
        return table_reads.read_at(self, name, version)

    def _read_logged_at(self, name: TableName, location: str, version: int) -> Table:
        raise CatalogError(f"Could not read {name} as it was at version {version}: no access to Delta's log")

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        from delta_sync.spark.check_analysis import check_problems

        try:
            return check_problems(self.spark, work)
        except DeltaSyncError:
            raise
        except Exception as exc:
            raise self._engine_error(exc, "Could not analyse the CHECK expressions") from None

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        return session_statements.statement_problems(self, statements)

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        return probes.probe(self, table, checks, relation, primary_key)

    def probe_keys(self, table: TableName, relation: str, keys: Sequence[KeyCheck]) -> list[ProbeResult]:
        return probes.probe_keys(self, table, relation, keys)

    def execute(self, statement: str, metadata: str | None = None) -> None:
        session_statements.execute(self, statement, metadata)

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        return table_reads.history(self, name, limit)

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return table_reads.list_tables(self, schema)

    def analyse_queries(
        self,
        stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]],
        queries: Sequence[tuple[str, str]],
    ) -> list[str | None]:
        return session_statements.analyse_queries(self, stand_ins, queries)

    def list_views(self, schema: SchemaName) -> list[TableName]:
        return table_reads.list_views(self, schema)

    def statement_danger(self, statement: str) -> str | None:
        from delta_sync.spark import statement_kind

        return statement_kind.danger(self.spark, statement)

    def query(self, statement: str, limit: int) -> QueryResult:
        return session_statements.run_query(self, statement, limit)
