"""CHECK expressions analysed by Spark before anything runs: they must be boolean, deterministic, use
only the table's columns and built-in functions. Spark's analyser is the judge (the same one Delta
uses when it adds the constraint), so a rule that would fail at apply time fails at plan time instead,
as a spec error pointing at its line. Only analysis runs: no Spark job, no data read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from delta_sync.model.errors import SpecProblem
from delta_sync.model.state import Check, Table, quote_ident
from delta_sync.sql import expressions

_HINT = "a CHECK may use the table's columns (as the spec declares them) and Spark's built-in functions"


def empty_relation(table: Table) -> str:
    """A relation with the table's columns as the spec declares them (types included), and no rows."""
    columns = ", ".join(f"CAST(NULL AS {c.type}) AS {quote_ident(c.name)}" for c in table.columns)
    return f"(SELECT {columns} WHERE false)"


def check_problems(spark: Any, work: Iterable[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
    """Every problem of the given rules, each at its spec line."""
    work = [(table, checks) for table, checks in work if checks]
    if not work:
        return []
    user_functions = {str(row[0]).lower() for row in spark.sql("SHOW USER FUNCTIONS").collect()}
    problems: list[SpecProblem] = []
    for table, checks in work:
        if not any(_user_functions(c, user_functions) for c in checks) and _all_sound(spark, table, checks):
            continue  # the common case: one analysis of all the table's rules together
        for check in checks:
            message = _problem(spark, table, check, user_functions)
            if message is not None:
                origin = check.origin or table.origin
                where = (origin.file, origin.line) if origin else (str(table.name), 0)
                problems.append(SpecProblem(*where, f"{_label(check)} of {table.name}: {message}", _hint(check)))
    return problems


def _label(check: Check) -> str:
    """A spec CHECK by its name; a `backfill` / `using` expression analysed as a rule by what it is."""
    return check.name if " " in check.name else f"CHECK `{check.name}`"


def _hint(check: Check) -> str:
    if " " not in check.name:
        return _HINT
    return "it may use the table's current columns and Spark's built-in functions, and must give the column's type"


def _all_sound(spark: Any, table: Table, checks: Sequence[Check]) -> bool:
    """Whether all rules analyse as boolean and deterministic together (else each is examined alone)."""
    relation = empty_relation(table)
    rules = ", ".join(f"({c.expression}) AS {quote_ident(f'c{i}')}" for i, c in enumerate(checks))
    condition = " AND ".join(f"({c.expression})" for c in checks)
    try:
        fields = spark.sql(f"SELECT {rules} FROM {relation} AS t").schema.fields
        if any(f.dataType.typeName() != "boolean" for f in fields):
            return False
        _ = spark.sql(f"SELECT 1 FROM {relation} AS t JOIN (SELECT 1 AS `one`) AS o ON {condition}").schema
    except Exception:
        return False
    return True


def _user_functions(check: Check, user_functions: set[str]) -> list[str]:
    """The user-defined functions a rule calls. The session always lists some (Delta registers
    `table_changes`), so this is asked of each rule rather than of the list being empty."""
    called = expressions.called_functions(check.expression)
    return sorted(f for f in called if f in user_functions or f.rsplit(".", 1)[-1] in user_functions)


def _problem(spark: Any, table: Table, check: Check, user_functions: set[str]) -> str | None:
    udfs = _user_functions(check, user_functions)
    if udfs:
        return f"calls {', '.join(f'`{f}`' for f in udfs)}, a user-defined function; Delta CHECKs allow built-ins only"
    relation = empty_relation(table)
    try:
        field = spark.sql(f"SELECT ({check.expression}) AS `check` FROM {relation} AS t").schema.fields[0]
    except Exception as exc:
        return _first_line(exc)
    if field.dataType.typeName() != "boolean":
        return f"is of type {field.dataType.simpleString()}, not boolean"
    # Spark refuses a non-deterministic expression in a join condition (but not in a projection).
    try:
        _ = spark.sql(f"SELECT 1 FROM {relation} AS t JOIN (SELECT 1 AS `one`) AS o ON ({check.expression})").schema
    except Exception as exc:
        text = _first_line(exc)
        if "NON_DETERMINISTIC" in text.upper() or "nondeterministic" in text.lower():
            if " " in check.name:
                return "is not deterministic (a probe and the statement must compute the same values)"
            return "is not deterministic (Delta evaluates a CHECK on every write: it must give the same answer)"
        return text
    return None


def _first_line(exc: BaseException) -> str:
    from delta_sync.spark.exceptions import engine_failure

    failure = engine_failure(exc)
    text = failure.message.strip().splitlines()[0] if failure.message.strip() else type(exc).__name__
    return text
