"""apply_converging with a catalog that loses commit races: re-read, re-plan, never re-run what landed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from delta_sync.model.catalog import Commit, ProbeResult, QueryResult, StatementFailed
from delta_sync.model.errors import ExecutionError, SpecProblem
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, Column, ForeignKey, PrimaryKey, SchemaName, Table, TableName
from delta_sync.planning.diff import planner
from delta_sync.review import execution
from tests.unit.builders import WithoutViews

T = TableName(None, "s", "t")
CONFLICT = EngineFailure("DELTA_METADATA_CHANGED", "[DELTA_METADATA_CHANGED] MetadataChangedException")
# The rule reads the column the plan adds, so its ADD CONSTRAINT runs after ADD COLUMNS: a statement
# has landed before the race (a rule over unchanged columns would run first).
RULE = Check("pos", "b IS NULL OR a > 0")


class RacingCatalog(WithoutViews):
    """Applies statements to an in-memory table; the first `conflicts` ADD CONSTRAINTs lose a race."""

    def __init__(self, table: Table, conflicts: int, failure: EngineFailure = CONFLICT) -> None:
        self.table = table
        self.conflicts = conflicts
        self.failure = failure
        self.executed: list[str] = []

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return CatalogState({T: self.table}, frozenset({SchemaName(None, "s")}))

    def execute(self, statement: str, metadata: str | None = None) -> None:
        if "ADD CONSTRAINT" in statement and self.conflicts:
            self.conflicts -= 1
            raise StatementFailed(self.failure)
        self.executed.append(statement)
        if "ADD COLUMNS" in statement:
            self.table = Table(T, (*self.table.columns, Column("b", "string")), checks=self.table.checks)
        if "ADD CONSTRAINT" in statement:
            self.table = Table(T, self.table.columns, checks=(RULE,))

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        return []

    def probe_keys(
        self, table: TableName, relation: str, keys: Sequence[tuple[PrimaryKey | ForeignKey, str | None]]
    ) -> list[ProbeResult]:
        return [ProbeResult(table, key.name, 0) for key, _parent in keys]

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        return []

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        return []

    def query(self, statement: str, limit: int) -> QueryResult:
        return QueryResult((), ())

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        return []

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return [T]


def desired() -> CatalogState:
    return CatalogState({T: Table(T, (Column("a", "int"), Column("b", "string")), checks=(RULE,))})


def start() -> Table:
    return Table(T, (Column("a", "int"),), num_files=0)


def test_conflicts_are_retried_after_a_re_read_without_repeating_landed_statements() -> None:
    catalog = RacingCatalog(start(), conflicts=2)
    plan = planner.plan(catalog.read([T]), desired())
    sleeps: list[float] = []
    ran = execution.apply_converging(catalog, desired(), plan, sleep=sleeps.append)
    assert catalog.executed == [
        "ALTER TABLE `s`.`t` ADD COLUMNS (`b` string)",
        "ALTER TABLE `s`.`t` ADD CONSTRAINT pos CHECK (b IS NULL OR a > 0)",
    ]
    assert ran == 2
    assert sleeps == [0.5, 1.0]
    assert planner.plan(catalog.read([T]), desired()).is_empty


def test_conflicts_that_outlast_the_retries_say_what_ran() -> None:
    catalog = RacingCatalog(start(), conflicts=99)
    plan = planner.plan(catalog.read([T]), desired())
    with pytest.raises(ExecutionError) as failure:
        execution.apply_converging(catalog, desired(), plan, sleep=lambda _s: None)
    assert f"Gave up after {execution.CONFLICT_RETRIES} conflicts" in str(failure.value)
    assert "1 statement(s) were applied in all" in str(failure.value)
    assert catalog.executed == ["ALTER TABLE `s`.`t` ADD COLUMNS (`b` string)"]


def test_other_failures_are_not_retried() -> None:
    violation = EngineFailure("DELTA_NEW_CHECK_CONSTRAINT_VIOLATION", "rows violate", {"numRows": "3"})
    catalog = RacingCatalog(start(), conflicts=1, failure=violation)
    plan = planner.plan(catalog.read([T]), desired())
    sleeps: list[float] = []
    with pytest.raises(ExecutionError) as failure:
        execution.apply_converging(catalog, desired(), plan, sleep=sleeps.append)
    assert not failure.value.conflict
    assert sleeps == []


class LosingToAnotherApply(RacingCatalog):
    """Another apply of the same specs adds the constraint just before ours tries to."""

    def execute(self, statement: str, metadata: str | None = None) -> None:
        if "ADD CONSTRAINT" in statement and self.conflicts:
            self.conflicts -= 1
            self.table = Table(T, self.table.columns, checks=(RULE,))
            raise StatementFailed(EngineFailure("DELTA_CONSTRAINT_ALREADY_EXISTS", "Constraint 'pos' already exists"))
        super().execute(statement, metadata)


def test_a_statement_another_apply_already_ran_is_recognised_not_reported() -> None:
    catalog = LosingToAnotherApply(start(), conflicts=1)
    plan = planner.plan(catalog.read([T]), desired())
    sleeps: list[float] = []
    ran = execution.apply_converging(catalog, desired(), plan, sleep=sleeps.append)
    assert catalog.executed == ["ALTER TABLE `s`.`t` ADD COLUMNS (`b` string)"]
    assert ran == 1
    assert sleeps == []  # nothing to wait for: the re-read shows the work is done
    assert planner.plan(catalog.read([T]), desired()).is_empty


def test_already_exists_that_a_re_read_does_not_explain_is_raised() -> None:
    # The engine says the constraint exists, but the re-read does not show it: a real failure, not a race.
    exists = EngineFailure("DELTA_CONSTRAINT_ALREADY_EXISTS", "Constraint 'pos' already exists")
    catalog = RacingCatalog(start(), conflicts=99, failure=exists)
    plan = planner.plan(catalog.read([T]), desired())
    sleeps: list[float] = []
    with pytest.raises(ExecutionError) as failure:
        execution.apply_converging(catalog, desired(), plan, sleep=sleeps.append)
    assert failure.value.raced
    assert not failure.value.conflict
    assert "a constraint with this name already exists" in str(failure.value)
    assert "Gave up" not in str(failure.value)
    assert len(sleeps) == execution.CONFLICT_RETRIES  # re-read after waiting: the other apply may be mid-way
    assert catalog.executed == ["ALTER TABLE `s`.`t` ADD COLUMNS (`b` string)"]
