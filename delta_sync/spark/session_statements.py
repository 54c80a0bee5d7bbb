"""Running statements on a catalog's session, and parsing and analysing them without running: each apply thread's
own session (with the caller's runtime settings carried over), a commit's userMetadata set for one statement and
given back, the statement told to the warm engine's lease while it runs, Spark's parser on planned statements,
the views' queries analysed over stand-in tables, and a query's first rows.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from delta_sync.model.catalog import QueryResult, StatementFailed
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import quote_ident
from delta_sync.spark import engine_borrow, interrupts
from delta_sync.spark.exceptions import engine_failure, unparsable
from delta_sync.spark.session import derby_locked, locked_error
from delta_sync.spark.table_reads import SessionCatalog

# Delta records this session setting in each commit's `userMetadata` (DESCRIBE HISTORY shows it).
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def thread_session(spark_catalog: SessionCatalog) -> Any:
    # A Spark Connect client session has no newSession(); its catalog runs one statement at a time.
    if threading.current_thread() is threading.main_thread() or not hasattr(spark_catalog.spark, "newSession"):
        return spark_catalog.spark
    session = getattr(spark_catalog._threads, "session", None)
    if session is None:
        session = spark_catalog._threads.session = spark_catalog.spark.newSession()
        engine_borrow.tag_session(session)
        interrupts.tag_thread(session)
        if spark_catalog.local is None:
            _copy_settings(spark_catalog.spark, session)
    return session


def execute(spark_catalog: SessionCatalog, statement: str, metadata: str | None = None) -> None:
    spark = thread_session(spark_catalog)
    # A session the caller owns may carry its own userMetadata: it gets it back afterwards.
    previous = spark.conf.get(_USER_METADATA, None) if metadata is not None and spark_catalog.local is None else None
    try:
        if metadata is not None:
            spark.conf.set(_USER_METADATA, metadata)
        engine_borrow.statement("running", statement)
        spark.sql(statement)
    except Exception as exc:
        if spark_catalog.local is not None and derby_locked(spark_catalog.local, exc):
            raise locked_error(spark_catalog.local) from None
        raise StatementFailed(engine_failure(exc)) from None
    finally:
        engine_borrow.statement("ended", statement)
        if previous is not None:
            spark.conf.set(_USER_METADATA, previous)
        elif metadata is not None:
            spark.conf.unset(_USER_METADATA)


def statement_problems(spark_catalog: SessionCatalog, statements: Sequence[str]) -> list[str]:
    """One sentence per statement that Spark's parser (Delta's, with its extension on) refuses.
    Parsing only: nothing is analysed or run. Delta parses an ADD CONSTRAINT's expression again
    when it runs, from its own tokens joined by spaces (`::` becomes `: :`), so that is parsed too."""
    parser = spark_catalog.spark._jsparkSession.sessionState().sqlParser()
    problems = []
    for statement in statements:
        try:
            parsed = parser.parsePlan(statement)
            if parsed.getClass().getSimpleName() == "AlterTableAddConstraint":
                parser.parseExpression(parsed.expr())
        except Exception as exc:
            problems.append(unparsable(statement, exc))
    return problems


def analyse_queries(
    spark_catalog: SessionCatalog,
    stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]],
    queries: Sequence[tuple[str, str]],
) -> list[str | None]:
    spark = spark_catalog.spark
    registered: list[str] = []
    results: list[str | None] = []
    try:
        for name, columns in stand_ins:
            schema = ", ".join(f"{quote_ident(column)} {kind}" for column, kind in columns)
            spark.createDataFrame([], schema).createOrReplaceTempView(name)
            registered.append(name)
        for name, query in queries:
            try:
                frame = spark.sql(query)
                _ = frame.schema  # analysed here (over Spark Connect, by the server)
            except Exception as exc:
                failure = engine_failure(exc)
                lines = failure.message.strip().splitlines()
                results.append((lines[0] if lines else repr(exc))[:500])
                continue
            if name:
                frame.createOrReplaceTempView(name)
                registered.append(name)
            results.append(None)
    except DeltaSyncError:
        raise
    except Exception as exc:
        raise spark_catalog._engine_error(exc, "Could not analyse the views' queries") from None
    finally:
        for name in registered:
            spark.catalog.dropTempView(name)
    return results


def run_query(spark_catalog: SessionCatalog, statement: str, limit: int) -> QueryResult:
    spark = spark_catalog.spark
    try:
        # Spark runs a command (DDL, DML: a commit) inside sql(), and only analyses a query there: told to the warm
        # engine as a statement, it is awaited should this command die; a query's rows, read afterwards, are not.
        engine_borrow.statement("running", statement)
        try:
            frame = spark.sql(statement)
        finally:
            engine_borrow.statement("ended", statement)
        rows = frame.limit(limit + 1).collect() if frame.columns else []
    except Exception as exc:
        raise spark_catalog._engine_error(exc, "The statement failed") from None
    return QueryResult(
        columns=tuple(frame.columns),
        rows=tuple(tuple(row) for row in rows[:limit]),
        truncated=len(rows) > limit,
    )


def _copy_settings(source: Any, target: Any) -> None:
    """A new session (one per apply thread) starts from the application's settings only: what the caller
    set on its session at runtime (settings, the current catalog and schema) is carried over, so a
    statement means the same on every thread."""
    for key, value in source.conf.getAll.items():
        if target.conf.get(key, None) != value and source.conf.isModifiable(key):
            target.conf.set(key, value)
    # `USE CATALOG` / `USE` are session state, not settings: two-part names must resolve alike.
    target.catalog.setCurrentCatalog(source.catalog.currentCatalog())
    target.catalog.setCurrentDatabase(source.catalog.currentDatabase())
