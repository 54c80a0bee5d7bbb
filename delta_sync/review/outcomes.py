"""How an apply ends when it does not end well, in words a user can act on. Pure: the shell passes what
happened (the statements, which ran, the engine's failure, sample rows) and raises what comes back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from delta_sync.model import failures
from delta_sync.model.errors import DeltaSyncError, ExecutionError, UnsafePlanError
from delta_sync.model.failures import EngineFailure
from delta_sync.planning.actions import AddCheck, Plan
from delta_sync.planning.diff import conventions
from delta_sync.planning.statements import Statement, checked_first
from delta_sync.sql import literals


class DataBlockedError(UnsafePlanError):
    """A new rule's own ADD CONSTRAINT found rows that violate it: the data blocks that table (exit 3),
    as a probe in `plan` would have."""

    def __init__(self, message: str, applied: Sequence[str]) -> None:
        super().__init__(message)
        self.applied = tuple(applied)


VIOLATION = "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION"


class ApplyInterrupted(DeltaSyncError):
    """Ctrl-C during apply: what ran and what did not."""

    exit_code = 130


def interrupted(statements: Sequence[Statement], done: Sequence[int], reason: str | None = None) -> ApplyInterrupted:
    """`reason`: why, when it was not Ctrl-C (a statement over the environment's statement_timeout)."""
    lines = [f"Interrupted: apply stopped after {len(done)} of {len(statements)} statement(s)."]
    if reason is not None:
        lines.insert(0, f"{reason[:1].upper()}{reason[1:]}.")
    if done:
        lines.append(f"  applied ({len(done)}):")
        lines.extend(
            f"    {n}. {statements[i].table}: {statements[i].sql.splitlines()[0]}" for n, i in enumerate(done, 1)
        )
    left = [s for i, s in enumerate(statements) if i not in set(done)]
    if left:
        lines.append(f"  not applied ({len(left)}):")
        lines.extend(f"    {s.table}: {s.sql.splitlines()[0]}" for s in left)
    lines.append("Run apply again to continue: it re-reads the tables and runs only what is left.")
    return ApplyInterrupted("\n".join(lines))


class StatementError(ExecutionError):
    """A statement the engine refused, with the engine's failure."""

    def __init__(self, message: str, *, failure: EngineFailure, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.failure = failure


def execution_error(
    statements: Sequence[Statement],
    index: int,
    failure: EngineFailure,
    done: Sequence[int],
    also_failed: Sequence[Statement] = (),
) -> StatementError:
    current = statements[index]
    sql = current.sql
    applied = [statements[i].sql for i in done]
    constraint = f"`{current.check}`" if current.check else ""
    lines = [
        f"apply stopped at statement {index + 1} of {len(statements)} ({current.table}): "
        f"{failures.describe(failure, table=current.table, constraint=constraint)}",
        f"  failed: {sql.splitlines()[0]}{' ...' if len(sql.splitlines()) > 1 else ''}",
    ]
    if applied:
        lines.append(f"  already applied ({len(applied)}):")
        lines.extend(f"    {n}. {s.splitlines()[0]}" for n, s in enumerate(applied, 1))
    else:
        lines.append("  nothing had been applied before it")
    lines.extend(f"  also failed, on another table: {s.table}: {s.sql.splitlines()[0]}" for s in also_failed)
    included = "the failed ones included" if also_failed else "this one included"
    lines.append(f"  not applied: {len(statements) - len(applied)} statement(s), {included}")
    lines.append("Fix the cause (e.g. correct the rows with `delta-sync sql`, or the spec), then re-run apply:")
    lines.append("it re-reads the tables and continues from where it stopped.")
    return StatementError(
        "\n".join(lines),
        failure=failure,
        statement=sql,
        index=index,
        applied=applied,
        conflict=failures.is_conflict(failure),
        raced=failures.is_race(failure),
    )


def violated_rule(plan: Plan, statements: Sequence[Statement], failed: StatementError) -> AddCheck | None:
    """The new rule whose own first ADD CONSTRAINT found violating rows (nothing of its table ran before)."""
    if failed.failure.error_class != VIOLATION or failed.index not in checked_first(statements):
        return None
    statement = statements[failed.index]
    return next(
        (
            a
            for a in plan.actions
            if isinstance(a, AddCheck) and str(a.name) == statement.table and a.check.name == statement.check
        ),
        None,
    )


def data_blocked(
    rule: AddCheck, statements: Sequence[Statement], failed: StatementError, samples: Sequence[Any]
) -> DataBlockedError:
    """Exit 3, as a probe in `plan` would have said: the rule, Delta's count, sample rows, what went in."""
    table = str(rule.name)
    rows = failed.failure.parameters.get("numRows") or "some"
    check = rule.check
    named = (
        f"NOT NULL ({check.expression})"
        if check.name.startswith(conventions.NOT_NULL_PREFIX)
        else f"`{check.name}` ({check.expression})"
    )
    lines = [
        f"blocked by the data: {rows} existing row{'' if rows == '1' else 's'} of {table} "
        f"violate{'s' if rows == '1' else ''} {named}{f' ({check.origin})' if check.origin else ''}; "
        f"its own ADD CONSTRAINT found {'it' if rows == '1' else 'them'}, before anything of {table} changed",
    ]
    if samples:
        lines.append(f"  violating rows ({len(samples)} shown):")
        lines.extend(f"    {line}" for line in literals.table_lines(samples))
    others = list(failed.applied)
    if others:
        lines.append(f"  applied on other tables before it ({len(others)}):")
        lines.extend(f"    {n}. {sql.splitlines()[0]}" for n, sql in enumerate(others, 1))
    else:
        lines.append("  nothing was applied")
    lines.append(f"  not applied: {len(statements) - len(others)} statement(s)")
    lines.append(
        f'Fix those rows first (delta-sync sql "UPDATE {table} ..."), or change the rule; then run apply again.'
    )
    return DataBlockedError("\n".join(lines), others)
