"""What delta-sync asks of an engine (the `Catalog` protocol) and the values an engine returns.

Below both the engine (`delta_sync.spark`) and the review (`delta_sync.review`): the engine depends only
downwards, and the shell only on this protocol. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from delta_sync.model.errors import SpecProblem
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, ForeignKey, PrimaryKey, SchemaName, Table, TableName

# Tables `apply` changes at once by default: each statement is a Delta commit whose latency (log
# write, metastore update, the scan of ADD CONSTRAINT) overlaps well with other tables' on one driver.
APPLY_PARALLEL = 4


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one scan found for one rule. `violations` is None when no scan ran (`skipped` says why,
    or `source` is CHECKED_BY_CONSTRAINT)."""

    table: TableName
    check: str
    violations: int | None
    # Up to 5 violating rows, each as (column, SQL literal) pairs (delta_sync.sql.literals): the table's
    # key-like columns and those the rule reads.
    samples: tuple[tuple[tuple[str, str], ...], ...] = ()
    skipped: str = ""
    # "scan" (read the data), "statistics" (Delta's per-file null counts answered it) or CHECKED_BY_CONSTRAINT.
    source: str = "scan"


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Commit:
    """One entry of DESCRIBE HISTORY."""

    version: int
    timestamp: str
    operation: str
    user: str | None = None
    metadata: str | None = None
    # The writing engine (commitInfo.engineInfo): open-source Delta records no user, but this.
    engine: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()

    @property
    def by_delta_sync(self) -> bool:
        return self.metadata is not None and '"delta-sync"' in self.metadata


class StatementFailed(Exception):
    """Raised by a Catalog when the engine rejects a statement."""

    def __init__(self, failure: EngineFailure) -> None:
        self.failure = failure
        super().__init__(failure.message)


class Catalog(Protocol):
    def read(self, names: Iterable[TableName]) -> CatalogState: ...

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        """What is wrong with each CHECK (not boolean, not deterministic, unknown column or function,
        a user-defined function), judged against the table as its spec declares it; empty when all is well."""
        ...

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        """One sentence per statement the engine's parser (Delta's) refuses; parsing only, nothing runs."""
        ...

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        """Check `checks` against the rows of `relation` (the table as the plan will leave it)."""
        ...

    def probe_keys(
        self, table: TableName, relation: str, keys: Sequence[tuple[PrimaryKey | ForeignKey, str | None]]
    ) -> list[ProbeResult]:
        """Check declared keys against the rows of `relation` (the table as the plan will leave it), in one
        scan: per primary key the repeated key values plus the rows with a NULL key part; per foreign key
        (with the relation of its parent as the plan leaves it) the rows whose non-NULL key has no parent
        row. One ProbeResult per key (`check` = the key's name), samples as (column, SQL literal) pairs."""
        ...

    def execute(self, statement: str, metadata: str | None = None) -> None: ...

    def statement_danger(self, statement: str) -> str | None:
        """Why a statement given to `delta-sync sql` can delete or overwrite rows or objects (decided from the
        engine's parse of it; nothing runs), or None."""
        ...

    def query(self, statement: str, limit: int) -> QueryResult: ...

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        """The table's latest commits, newest first."""
        ...

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        """Every table and view of the schema (temporary views excluded)."""
        ...

    def list_views(self, schema: SchemaName) -> list[TableName]:
        """The views of the schema (temporary views excluded)."""
        ...

    def analyse_queries(
        self,
        stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]],
        queries: Sequence[tuple[str, str]],
    ) -> list[str | None]:
        """Register each stand-in (a temporary view name, its columns as (name, type)) as an empty temporary
        view, then analyse each query in order (nothing runs); a query that resolves is registered under its
        name when it has one, for later queries to read. Per query None, or the engine's error in one line.
        The temporary views are dropped again; the catalog is unchanged."""
        ...


class TimeTravelCatalog(Catalog, Protocol):
    """A catalog that can read a table as it was at an earlier version (what a rollback needs)."""

    def read_at(self, name: TableName, version: int) -> Table:
        """The table as it was at `version` (Delta's log: schema, properties, rules, features)."""
        ...
