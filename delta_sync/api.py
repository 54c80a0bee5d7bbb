"""The imperative shell: read state, plan, apply. The CLI is one client of these functions."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from delta_sync import ddl, failures, planner
from delta_sync.actions import Action, AddCheck, CreateSchema, Plan
from delta_sync.errors import DeltaSyncError, ExecutionError, UnsafePlanError
from delta_sync.failures import EngineFailure
from delta_sync.model import CatalogState, TableName


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False


class StatementFailed(Exception):
    """Raised by a Catalog when the engine rejects a statement."""

    def __init__(self, failure: EngineFailure) -> None:
        self.failure = failure
        super().__init__(failure.message)


class Catalog(Protocol):
    def read(self, names: Iterable[TableName]) -> CatalogState: ...

    def execute(self, statement: str) -> None: ...

    def query(self, statement: str, limit: int) -> QueryResult: ...


PROJECT_FILE = "delta-sync.yaml"
STATE_DIR = ".delta-sync"


def project_root(start: Path | None = None) -> Path:
    """The nearest directory holding delta-sync.yaml or .delta-sync/, else the working directory."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / PROJECT_FILE).is_file() or (candidate / STATE_DIR).is_dir():
            return candidate
    return here


def local_home(start: Path | None = None) -> Path:
    override = os.environ.get("DELTA_SYNC_HOME")
    if override:
        return Path(override).resolve()
    return project_root(start) / STATE_DIR / "local"


def open_local_catalog(on_status: Callable[[str], None] = lambda _m: None) -> Catalog:
    # Imported here so that `--help` and `validate` never load pyspark.
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog

    return SparkCatalog(LocalCatalog(local_home()), on_status)


def make_plan(catalog: Catalog, desired: CatalogState) -> Plan:
    return planner.plan(catalog.read(desired.tables), desired)


def _table_of(action: Action) -> str:
    return str(action.schema) if isinstance(action, CreateSchema) else str(action.name)


def apply_plan(
    catalog: Catalog,
    plan: Plan,
    on_step: Callable[[int, int, Action, str], None] = lambda *_a: None,
    on_done: Callable[[int, int, Action, str], None] = lambda *_a: None,
) -> int:
    """Run the plan's statements in order; returns how many ran. Stops at the first failure."""
    if plan.blocked:
        raise UnsafePlanError(
            f"{len(plan.blocked)} change{'s are' if len(plan.blocked) != 1 else ' is'} blocked; "
            "nothing was applied. Change the specs as each blocked item says, then re-run."
        )
    statements = ddl.plan_statements(plan)
    for index, (action, sql) in enumerate(statements):
        on_step(index, len(statements), action, sql)
        try:
            catalog.execute(sql)
        except StatementFailed as failed:
            raise _execution_error(statements, index, failed.failure) from None
        on_done(index, len(statements), action, sql)
    return len(statements)


def _execution_error(
    statements: tuple[tuple[Action, str], ...], index: int, failure: EngineFailure
) -> ExecutionError:
    action, sql = statements[index]
    applied = [s for _a, s in statements[:index]]
    constraint = f"`{action.check.name}`" if isinstance(action, AddCheck) else ""
    lines = [
        f"apply stopped at statement {index + 1} of {len(statements)} ({_table_of(action)}): "
        f"{failures.describe(failure, table=_table_of(action), constraint=constraint)}",
        f"  failed: {sql.splitlines()[0]}{' ...' if len(sql.splitlines()) > 1 else ''}",
    ]
    if applied:
        lines.append(f"  already applied ({len(applied)}):")
        lines.extend(f"    {n}. {s.splitlines()[0]}" for n, s in enumerate(applied, 1))
    else:
        lines.append("  nothing had been applied before it")
    lines.append(f"  not applied: {len(statements) - index} statement(s), this one included")
    lines.append(
        "Fix the cause (e.g. correct the rows with `delta-sync sql`, or the spec), then re-run apply:"
    )
    lines.append("it re-reads the tables and continues from where it stopped.")
    return ExecutionError("\n".join(lines), statement=sql, index=index, applied=applied)


def verify_converged(catalog: Catalog, desired: CatalogState) -> Plan:
    """Re-read the catalog after apply; what is left should be nothing but blocked items."""
    remaining = make_plan(catalog, desired)
    pending = [a for a in remaining.actions if a not in remaining.blocked]
    if pending:
        listing = "\n".join(f"  {_table_of(a)}: {type(a).__name__}" for a in pending)
        raise DeltaSyncError(
            "apply ran every statement, but the catalog still differs from the specs:\n"
            f"{listing}\nThis is a delta-sync bug; please report it with the output of `delta-sync plan`."
        )
    return remaining
