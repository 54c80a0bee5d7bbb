"""Rehearse a plan on shallow clones (see delta_sync.planning.rehearsal): clone, run, re-read, compare, drop.

Only through the Catalog protocol, so it works wherever apply does: the embedded catalog, a Hive
metastore, Spark Connect, a caller's session. The source tables are only ever read: `SHALLOW CLONE`
writes the clone's log, and a managed clone's DROP TABLE deletes the clone's folder, never the
source's data files the clone referenced.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace

from delta_sync.model.catalog import Catalog, StatementFailed
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, SchemaName, TableName
from delta_sync.planning import ddl, hazard_rules, rehearsal
from delta_sync.planning.actions import Plan
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff import planner
from delta_sync.planning.rehearsal import Outcome, Rehearsal

# Tables rehearsed side by side: each clone is a few commits whose latency overlaps well.
PARALLEL = 4

# Engine errors that say the catalog will not take a new table here (not that Delta refuses the plan).
_NOT_ALLOWED = ("PERMISSION", "ACCESS_DENIED", "INSUFFICIENT", "UNAUTHORIZED", "READ_ONLY", "READONLY")


def _not_allowed(failure: EngineFailure) -> bool:
    text = f"{failure.error_class or ''} {failure.message}".upper().replace(" ", "_").replace("-", "_")
    return any(word in text for word in _NOT_ALLOWED)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def rehearse(
    catalog: Catalog,
    plan: Plan,
    current: CatalogState,
    desired: CatalogState,
    plan_id: str,
    schema_setting: str | None = None,
    max_bytes: int = rehearsal.DEFAULT_MAX_BYTES,
    on_status: Callable[[str], None] = lambda _m: None,
) -> tuple[Rehearsal, ...]:
    """Rehearse each table the plan changes; one Rehearsal per table, in plan order. Leftover clones of
    rehearsals that were killed are dropped first. Ctrl-C: no new table starts, the clones made so far
    are dropped, and KeyboardInterrupt goes on up."""
    names = rehearsal.tables_to_rehearse(plan)
    if not names:
        return ()
    schemas = sorted({rehearsal.scratch_schema(n, schema_setting) for n in names})
    clean(catalog, schemas, on_status)
    ready: dict[SchemaName, str | None] = {}
    for schema in schemas:
        try:
            catalog.execute(f"CREATE SCHEMA IF NOT EXISTS {schema.sql()}")
            ready[schema] = None
        except StatementFailed as failed:
            ready[schema] = f"cannot create the scratch schema {schema} ({_words(failed.failure)})"
    host, pid = socket.gethostname(), os.getpid()
    made: set[TableName] = set()
    lock = threading.Lock()
    stop = threading.Event()
    done = 0
    on_status(f"Rehearsing {len(names)} table(s) on shallow clones...")

    def one(name: TableName) -> Rehearsal:
        nonlocal done
        if stop.is_set():
            return Rehearsal(name, Outcome.NOT_POSSIBLE, 0.0, reason="interrupted")
        schema = rehearsal.scratch_schema(name, schema_setting)
        problem = ready[schema]
        started = time.monotonic()
        if problem is not None:
            found = Rehearsal(name, Outcome.NOT_POSSIBLE, 0.0, reason=problem)
        else:
            clone = rehearsal.clone_name(name, schema, plan_id)
            with lock:
                made.add(clone)
            try:
                found = _rehearse_table(catalog, plan, current, desired, name, clone, plan_id, host, pid, max_bytes)
            finally:
                _drop(catalog, clone)
                with lock:
                    made.discard(clone)
            found = replace(found, seconds=time.monotonic() - started)
        with lock:
            done += 1
            on_status(f"Rehearsed {done}/{len(names)} table(s) ({name}: {found.outcome.value})...")
        return found

    workers = max(1, min(PARALLEL, getattr(catalog, "max_parallel", 1), len(names)))
    results: list[Rehearsal] = []
    try:
        # Worker threads even for one table: the main thread only waits, so Ctrl-C lands here.
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delta-sync-rehearsal") as pool:
            futures = [pool.submit(one, n) for n in names]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:
                stop.set()
                wait(futures)
                raise
            results = [f.result() for f in futures]
    finally:
        for clone in sorted(made):  # interrupted: the clones in flight were not dropped yet
            _drop(catalog, clone)
        for schema in schemas:
            if rehearsal.owns_schema(schema) and ready.get(schema) is None:
                _drop_schema_if_empty(catalog, schema)
    return tuple(results)


def _rehearse_table(
    catalog: Catalog,
    plan: Plan,
    current: CatalogState,
    desired: CatalogState,
    name: TableName,
    clone: TableName,
    plan_id: str,
    host: str,
    pid: int,
    max_bytes: int,
) -> Rehearsal:
    actions = plan.actions_for(name)
    why = rehearsal.why_not(actions)
    if why is not None:
        return Rehearsal(name, Outcome.NOT_POSSIBLE, 0.0, reason=why)
    stamp = rehearsal.stamp(plan_id, name, host, pid, rehearsal.now())
    have = current.table(name)
    sampled = None
    if have is not None:
        version = f" VERSION AS OF {int(have.version)}" if have.version is not None else ""
        # The source's features named again: a clone leaves out those this Delta does not know (a newer
        # writer's), and a statement would then pass on the clone that fails on the table.
        # Only a table-features protocol (writer 7) lists features, unknown ones included; a legacy protocol
        # implies its features, and naming them would upgrade the clone's protocol.
        explicit = have.protocol is not None and have.protocol[1] >= protocol.TABLE_FEATURES_WRITER
        named = sorted(protocol.named_features(have)) if explicit else []
        features = ", ".join(named) or "none"
        pairs = [(rehearsal.STAMP, stamp)] + [(f"{protocol.FEATURE_PREFIX}{f}", "supported") for f in named]
        listed = ", ".join(f"{ddl.string_literal(k)} = {ddl.string_literal(v)}" for k, v in pairs)
        properties = f"TBLPROPERTIES ({listed})"
        try:
            catalog.execute(f"CREATE TABLE {clone.sql()} SHALLOW CLONE {name.sql()}{version} {properties}")
        except StatementFailed as failed:
            if _not_allowed(failed.failure):
                reason = f"cannot create a clone in {clone.schema_name} ({_words(failed.failure)})"
                return Rehearsal(name, Outcome.NOT_POSSIBLE, 0.0, reason=reason)
            return Rehearsal(
                name,
                Outcome.FAILED,
                0.0,
                clone,
                error_class=failed.failure.error_class,
                message=_words(failed.failure),
                reason=f"Delta refused a shallow clone of the table with its features ({features}): "
                f"{_words(failed.failure)}",
            )
        if have.comment is not None:
            # Through a Hive metastore a clone does not get the table comment (the metastore entry holds it).
            with contextlib.suppress(StatementFailed):
                catalog.execute(f"COMMENT ON TABLE {clone.sql()} IS {ddl.string_literal(have.comment)}")
        size = have.size_bytes or 0
        if rehearsal.moves_rows(actions) and size > max_bytes:
            sampled = _sample(catalog, name, clone, have.version, size)
            if sampled.startswith("!"):
                return Rehearsal(name, Outcome.NOT_POSSIBLE, 0.0, reason=sampled[1:])
    index_of = {id(a): i for i, a in enumerate(plan.actions)}
    for original, action in zip(actions, rehearsal.retarget(actions, clone, stamp), strict=True):
        for original_sql, sql in zip(ddl.to_sql(original), ddl.to_sql(action), strict=True):
            try:
                catalog.execute(sql)
            except StatementFailed as failed:
                return Rehearsal(
                    name,
                    Outcome.FAILED,
                    0.0,
                    clone,
                    sampled,
                    statement=original_sql,
                    index=index_of[id(original)],
                    error_class=failed.failure.error_class,
                    message=_words(failed.failure),
                )
    return _converged(catalog, desired, name, clone, sampled)


def _converged(
    catalog: Catalog, desired: CatalogState, name: TableName, clone: TableName, sampled: str | None
) -> Rehearsal:
    """The clone after the statements, compared with the spec as apply's own check compares the table."""
    want = desired.table(name)
    read = catalog.read([clone])
    have = read.table(clone)
    if want is None:  # the plan drops the table: the clone must be gone too
        left = [] if have is None else ["the table is still there"]
    else:
        if have is None:
            return Rehearsal(name, Outcome.FAILED, 0.0, clone, sampled, reason="the clone is gone after the statements")
        state = replace(read, tables={name: rehearsal.as_source(have, name)}, schemas=read.schemas | {name.schema_name})
        # The table alone: no views, tombstones or strict drops (the clone's schema holds none of them).
        alone = replace(desired, tables={name: want}, views={}, dropped={}, strict=False)
        remaining = planner.plan(state, alone)
        left = [type(a).__name__ for a in remaining.changes if a not in remaining.blocked]
    if left:
        reason = f"the clone still differs from the spec after the statements ({', '.join(left)}): a delta-sync bug"
        return Rehearsal(name, Outcome.FAILED, 0.0, clone, sampled, reason=reason)
    return Rehearsal(name, Outcome.PASSED, 0.0, clone, sampled)


def _sample(catalog: Catalog, name: TableName, clone: TableName, version: int | None, size: int) -> str:
    """Make the clone a small copy: same schema, properties, constraints and protocol, SAMPLE_ROWS rows of
    the source (DELETE without a condition only drops the clone's file references). '!why' on failure."""
    at = f" VERSION AS OF {int(version)}" if version is not None else ""
    try:
        catalog.execute(f"DELETE FROM {clone.sql()}")
        catalog.execute(f"INSERT INTO {clone.sql()} SELECT * FROM {name.sql()}{at} LIMIT {rehearsal.SAMPLE_ROWS}")
    except StatementFailed as failed:
        return f"!the table is larger than rehearse_max_bytes, and a sampled copy failed ({_words(failed.failure)})"
    return f"{rehearsal.SAMPLE_ROWS:,} rows of {hazard_rules.human_bytes(size)}"


def _words(failure: EngineFailure) -> str:
    line = failure.message.strip().splitlines()[0] if failure.message.strip() else "unknown error"
    line = line.removeprefix(f"[{failure.error_class}] ").strip() if failure.error_class else line
    line = line.rstrip(".")  # sentences around it end it
    return line if len(line) <= 400 else line[:400] + "..."


def _drop(catalog: Catalog, clone: TableName) -> None:
    # If this fails the clone is left for `rehearsal clean` and the next rehearsal, which find it by its stamp.
    with contextlib.suppress(StatementFailed):
        catalog.execute(f"DROP TABLE IF EXISTS {clone.sql()}")


def _drop_schema_if_empty(catalog: Catalog, schema: SchemaName) -> None:
    try:
        if not catalog.list_tables(schema):
            catalog.execute(f"DROP SCHEMA IF EXISTS {schema.sql()} RESTRICT")
    except (StatementFailed, DeltaSyncError):
        pass  # another rehearsal's clone arrived meanwhile: the schema stays


def leftovers(catalog: Catalog, schemas: Iterable[SchemaName], everything: bool = False) -> list[TableName]:
    """Stamped clones in `schemas` whose rehearsal no longer runs (`everything`: all stamped clones)."""
    host, now = socket.gethostname(), rehearsal.now()
    found: list[TableName] = []
    for schema in schemas:
        try:
            names = [n for n in catalog.list_tables(schema) if rehearsal.MARKER in n.name]
        except DeltaSyncError:
            continue  # no such schema: nothing left over there
        if not names:
            continue
        for table in catalog.read(names).tables.values():
            value = table.property_map.get(rehearsal.STAMP)
            if value is None:
                continue
            if everything:
                found.append(table.name)
                continue
            if rehearsal.is_leftover(value, host, _alive, now):
                found.append(table.name)
    return sorted(found)


def clean(
    catalog: Catalog,
    schemas: Iterable[SchemaName],
    on_status: Callable[[str], None] = lambda _m: None,
    everything: bool = False,
) -> list[TableName]:
    """Drop leftover clones (see leftovers); returns those dropped."""
    schemas = list(schemas)
    found = leftovers(catalog, schemas, everything)
    for clone in found:
        on_status(f"Dropping {clone}, left over from an earlier rehearsal...")
        _drop(catalog, clone)
    for schema in schemas:
        if found and rehearsal.owns_schema(schema):
            _drop_schema_if_empty(catalog, schema)
    return found
