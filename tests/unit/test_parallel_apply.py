"""run_statements with several tables at once: schemas first, each table in order, a failure stops new starts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

import pytest

from delta_sync.model.catalog import Commit, ProbeResult, QueryResult, StatementFailed
from delta_sync.model.errors import ExecutionError, SpecProblem
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, ForeignKey, PrimaryKey, SchemaName, Table, TableName
from delta_sync.planning.statements import Kind, Statement
from delta_sync.review import execution, policy
from tests.unit.builders import WithoutViews


class SlowCatalog(WithoutViews):
    """Records what ran on which thread and how many statements overlapped; fails statements containing `fail`."""

    max_parallel = 8

    def __init__(self, fail: str | None = None, delay: float = 0.02) -> None:
        self.fail = fail
        self.delay = delay
        self.ran: list[str] = []
        self.metadata: dict[str, str | None] = {}
        self.threads: set[str] = set()
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def execute(self, statement: str, metadata: str | None = None) -> None:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.add(threading.current_thread().name)
        try:
            if self.fail is not None and self.fail in statement:  # at once, while the other lanes are mid-statement
                raise StatementFailed(EngineFailure("DELTA_NEW_CHECK_CONSTRAINT_VIOLATION", "3 rows violate"))
            time.sleep(self.delay)
            with self._lock:
                self.ran.append(statement)
                self.metadata[statement] = metadata
        finally:
            with self._lock:
                self.running -= 1

    # The rest of the Catalog protocol: not used by run_statements.
    def read(self, names: Iterable[TableName]) -> CatalogState:
        return CatalogState({})

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        return []

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        return []

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        return []

    def probe_keys(
        self, table: TableName, relation: str, keys: Sequence[tuple[PrimaryKey | ForeignKey, str | None]]
    ) -> list[ProbeResult]:
        return [ProbeResult(table, key.name, 0) for key, _parent in keys]

    def query(self, statement: str, limit: int) -> QueryResult:
        return QueryResult((), ())

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        return []

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return []


def statements(tables: int, per_table: int = 3) -> list[Statement]:
    found = [Statement("s", Kind.CREATE_SCHEMA, "CREATE SCHEMA s")]
    for t in range(tables):
        found += [Statement(f"s.t{t}", Kind.ADD_COLUMNS, f"t{t} step {k}") for k in range(per_table)]
    return found


def test_tables_run_at_once_schemas_first_and_each_table_in_order() -> None:
    catalog = SlowCatalog()
    work = statements(6)
    done: list[int] = []
    lock = threading.Lock()

    def on_done(index: int, _total: int, _s: Statement) -> None:
        with lock:
            done.append(index)

    assert execution.run_statements(catalog, work, "p1", on_done=on_done, parallel=3) == len(work)
    assert catalog.ran[0] == "CREATE SCHEMA s"
    assert sorted(catalog.ran) == sorted(s.sql for s in work)
    for t in range(6):
        mine = [s for s in catalog.ran if s.startswith(f"t{t} ")]
        assert mine == [f"t{t} step {k}" for k in range(3)]
    assert catalog.most == 3  # never more than asked for, and it did overlap
    assert sorted(done) == list(range(len(work)))
    assert all('"plan":"p1"' in (m or "") for m in catalog.metadata.values())


def test_one_at_a_time_when_asked_or_when_the_catalog_cannot() -> None:
    serial = SlowCatalog(delay=0.0)
    execution.run_statements(serial, statements(4), "p", parallel=1)
    assert serial.most == 1
    assert serial.ran == [s.sql for s in statements(4)]  # exactly the plan's order

    class OneLane(SlowCatalog):
        max_parallel = 1

    single = OneLane(delay=0.0)
    execution.run_statements(single, statements(4), "p", parallel=8)
    assert single.most == 1
    # One worker thread, never the main one: Ctrl-C lands in the main thread while it only waits.
    assert len(single.threads) == 1
    assert threading.main_thread().name not in single.threads


def test_a_failure_stops_new_statements_and_reports_what_was_applied() -> None:
    catalog = SlowCatalog(fail="t0 step 1", delay=0.05)
    work = statements(8)
    with pytest.raises(ExecutionError) as raised:
        execution.run_statements(catalog, work, "p", parallel=2)
    error = raised.value
    assert error.statement == "t0 step 1"
    assert error.index == 2
    assert set(error.applied) == set(catalog.ran)
    assert "t0 step 2" not in catalog.ran  # the failed table went no further
    # Two lanes: the other table's statement in flight finished; nothing new started after the failure.
    assert len(catalog.ran) <= 4, catalog.ran
    message = str(error)
    assert "apply stopped at statement 3 of 25 (s.t0)" in message
    assert f"already applied ({len(catalog.ran)})" in message
    assert f"not applied: {len(work) - len(catalog.ran)} statement(s), this one included" in message


def test_a_failed_schema_runs_no_table_statement() -> None:
    catalog = SlowCatalog(fail="CREATE SCHEMA", delay=0.0)
    with pytest.raises(ExecutionError) as raised:
        execution.run_statements(catalog, statements(3), "p", parallel=4)
    assert catalog.ran == []
    assert "nothing had been applied before it" in str(raised.value)


def test_an_error_that_is_not_the_statements_own_stops_the_other_tables_too() -> None:
    class LostCatalog(SlowCatalog):
        def execute(self, statement: str, metadata: str | None = None) -> None:
            if statement == "t1 step 0":
                raise RuntimeError("the catalog went away")
            super().execute(statement, metadata)

    catalog = LostCatalog(delay=0.05)
    with pytest.raises(RuntimeError, match="went away"):
        execution.run_statements(catalog, statements(8), "p", parallel=2)
    # t0's first statement was in flight and finished; the lanes started nothing after the error.
    assert len(catalog.ran) <= 3, catalog.ran


class FakeConf:
    def __init__(self, owner: FakeSession) -> None:
        self.owner = owner

    def set(self, key: str, value: str) -> None:
        self.owner.conf_values[key] = value

    def unset(self, key: str) -> None:
        self.owner.conf_values.pop(key, None)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.owner.conf_values.get(key, default)

    @property
    def getAll(self) -> dict[str, str]:
        return dict(self.owner.conf_values)

    def isModifiable(self, key: str) -> bool:
        return True


class FakeCatalogApi:
    def __init__(self) -> None:
        self.current = ("spark_catalog", "default")

    def currentCatalog(self) -> str:
        return self.current[0]

    def currentDatabase(self) -> str:
        return self.current[1]

    def setCurrentCatalog(self, name: str) -> None:
        self.current = (name, self.current[1])

    def setCurrentDatabase(self, name: str) -> None:
        self.current = (self.current[0], name)


class FakeSession:
    """Records, per session, the userMetadata each statement ran under."""

    def __init__(self) -> None:
        self.conf_values: dict[str, str] = {}
        self.conf = FakeConf(self)
        self.catalog = FakeCatalogApi()
        self.seen: list[tuple[str, str | None]] = []
        self.children: list[FakeSession] = []

    def newSession(self) -> FakeSession:
        child = FakeSession()
        self.children.append(child)
        return child

    def sql(self, statement: str) -> None:
        metadata = self.conf_values.get("spark.databricks.delta.commitInfo.userMetadata")
        time.sleep(0.01)  # long enough for another thread's set/unset to land in between, were it shared
        self.seen.append((statement, metadata))
        assert self.conf_values.get("spark.databricks.delta.commitInfo.userMetadata") == metadata


def test_each_apply_thread_commits_through_a_session_of_its_own() -> None:
    from delta_sync.spark.catalog import SparkCatalog

    main = FakeSession()
    catalog = SparkCatalog(None, session=main)
    work = statements(6)
    execution.run_statements(catalog, work, "p7", parallel=3)
    assert main.seen == []  # the main thread only waits: every statement runs on a worker's own session
    assert 1 < len(main.children) <= 1 + 3  # the schemas' lane, then at most 3 tables at once
    seen = [entry for child in main.children for entry in child.seen]
    assert sorted(s for s, _m in seen) == sorted(s.sql for s in work)
    for statement, metadata in seen:
        kind = next(s.kind for s in work if s.sql == statement)
        assert metadata == policy.commit_metadata("p7", Statement("", kind, statement)), statement
    assert all(not child.conf_values for child in main.children)  # every setting unset after its statement
