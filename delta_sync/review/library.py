"""delta-sync as a Python library: plan and apply table specs from a job, a notebook or a test, on the
caller's SparkSession (``spark=``) or on the project's environment (delta-sync.yaml), as the CLI does.

The CLI and the spark-submit entrypoint are clients of these functions: one path, not two. Every
failure is a DeltaSyncError (its ``exit_code`` is the CLI's), never a bare py4j error.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from pydantic import ValidationError

from delta_sync.model.catalog import APPLY_PARALLEL, TimeTravelCatalog
from delta_sync.model.errors import CatalogError, DeltaSyncError, UnsafePlanError
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planfile import document as planfile
from delta_sync.planning import ddl
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.planning.rehearsal import Rehearsal
from delta_sync.planning.statements import Statement
from delta_sync.review import deadline, environments, execution, pipeline, policy, readonly
from delta_sync.review import rollback as undo
from delta_sync.review.readonly import Drift, KeyCheck
from delta_sync.review.results import (
    ApplyResult,
    BlockedPlanError,
    CancelledError,
    Imported,
    Progress,
    ProgressCallback,
    ReviewedPlan,
)
from delta_sync.specs.project_file import load_project

_PLAN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,63}")
P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("delta_sync")


def _log_progress(event: Progress) -> None:
    log.info(event.message)


def _boundary(fn: Callable[P, R]) -> Callable[P, R]:
    """An engine error that escaped the catalog's own handling (the session was stopped, say) comes out
    as a CatalogError with the engine's first line, not as a bare py4j/pyspark exception."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            if kwargs.get("spark") is None:
                return fn(*args, **kwargs)
            # The caller's session: Ctrl-C and statement_timeout cancel this call's jobs only (deadline).
            from delta_sync.spark import interrupts

            with interrupts.on_callers_session(kwargs["spark"]):
                return fn(*args, **kwargs)
        except DeltaSyncError:
            raise
        except Exception as exc:
            if not type(exc).__module__.startswith(("py4j", "pyspark")):
                raise
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CatalogError(f"Spark failed: {first}") from exc

    return wrapper


# --- public functions ---------------------------------------------------------------------------


def load_specs(specs: str | os.PathLike[str] | None = None, *, env: str | None = None) -> CatalogState:
    """The tables the specs declare, offline (no Spark): raises SpecError with every problem's file:line."""
    project, environment = environments.project_env(env)
    return environments.load_desired(project, environment, specs)


@_boundary
def plan(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    allow: Iterable[str | Hazard] | None = (),
    probes: bool = True,
    rehearse: bool = False,
    progress: ProgressCallback | None = None,
) -> ReviewedPlan:
    """Read the tables the specs name, plan the changes and check them (hazards, data probes); with
    `rehearse`, also run each table's statements on a shallow clone of it first (see delta_sync.review.clones)."""
    project, environment = environments.project_env(env)
    deadline.limit(environment.timeout_seconds, environment.statement_timeout)
    return pipeline.plan_specs(
        project, environment, specs, spark, allow, probes, progress or _log_progress, rehearsing=rehearse
    )[1]


@_boundary
def apply(
    specs_or_plan: str | os.PathLike[str] | ReviewedPlan | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    allow: Iterable[str | Hazard] | None = (),
    probes: bool = True,
    parallel: int = APPLY_PARALLEL,
    skip_blocked: bool = False,
    rehearse: bool = False,
    confirm: Callable[[ReviewedPlan], bool] | None = None,
    progress: ProgressCallback | None = None,
) -> ApplyResult:
    """Apply specs (review, run, re-read to confirm), or run a reviewed plan exactly (one from `plan`, or
    a saved plan file), refused when a table moved since it was made (StalePlanError).

    A plan with blocked changes raises BlockedPlanError (unless `skip_blocked`: its other tables are
    applied). `rehearse`: the plan runs on shallow clones first, and a statement Delta refuses there
    blocks its table. Then `confirm` sees the reviewed plan, before anything runs; returning False
    applies nothing."""
    progress = progress or _log_progress
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise DeltaSyncError(f"parallel={parallel!r}: must be a whole number, 1 or more")
    if isinstance(specs_or_plan, ReviewedPlan):
        return _apply_reviewed(specs_or_plan, None, spark, env, allow, parallel, confirm, progress, rehearse=rehearse)
    if specs_or_plan is not None and environments.is_plan_file(Path(specs_or_plan)):
        path = Path(specs_or_plan)
        return _apply_reviewed(None, path, spark, env, allow, parallel, confirm, progress, rehearse=rehearse)
    project, environment = environments.project_env(env)
    deadline.limit(environment.timeout_seconds, environment.statement_timeout)
    catalog, reviewed = pipeline.plan_specs(
        project, environment, specs_or_plan, spark, allow, probes, progress, not skip_blocked, rehearse
    )
    skipped: tuple[TableName, ...] = ()
    runnable = reviewed.plan
    if reviewed.blocked:
        if not skip_blocked:
            raise BlockedPlanError(_blocked_message(reviewed), reviewed)
        runnable = policy.without_blocked(reviewed)
        skipped = tuple(sorted(reviewed.assessment.blocked_tables))
    if confirm is not None and not confirm(reviewed):
        raise CancelledError("cancelled; nothing was applied")
    if runnable.is_empty:
        return ApplyResult(reviewed.id, (), skipped, True, catalog)
    ran = _Runner(progress)
    execution.apply_converging(
        catalog, reviewed.desired, runnable, ran.on_step, ran.on_done, reviewed.id, skipped, parallel=parallel
    )
    progress(Progress("Re-reading the catalog to confirm..."))
    others: list[str] = []
    execution.verify_converged(catalog, reviewed.desired, skipped, reviewed.id, reviewed.current, others)
    return ApplyResult(reviewed.id, ran.statements(), skipped, True, catalog, tuple(others))


def show(path: str | os.PathLike[str]) -> ReviewedPlan:
    """A saved plan as `plan` showed it when it was saved, without Spark or a catalog: its actions rebuilt
    from the typed actions, its hazards re-derived from the tables as the plan read them, its data checks
    as they were. `render(format)` prints what `delta-sync plan --format FORMAT` printed."""
    file = Path(path)
    saved = planfile.load(file)
    plan_, desired = planfile.rebuild(saved)
    allowed = frozenset(Hazard(h) for h in saved.allowed if h in {a.value for a in ALLOWABLE})
    current = planfile.read_state(saved)
    if saved.current is None:
        raise DeltaSyncError(
            f"{file}: this plan file was saved by an earlier delta-sync without the tables it read; "
            "make the plan again to show it"
        )
    document = json.loads(file.read_text())
    rehearsals = document.get("rehearsals")
    rehearsed = None
    if isinstance(rehearsals, list):
        try:
            rehearsed = [Rehearsal.from_json(r) for r in rehearsals]
        except (KeyError, ValueError, TypeError):
            raise DeltaSyncError(f"{file}: its `rehearsals` were changed and can no longer be read") from None
        # The failing statement's action, found again by its text (a saved plan keeps no indexes).
        index_of = {sql: i for i, a in enumerate(plan_.actions) for sql in ddl.to_sql(a)}
        rehearsed = [replace(r, index=index_of.get(r.statement or "")) for r in rehearsed]
    assessed = pipeline.assess(
        pipeline.saved_probes(pipeline.Planned(desired, current, plan_), saved), allowed, rehearsed
    )
    assessed = pipeline.with_saved_rules(assessed, document)
    return pipeline.reviewed(assessed, saved.plan_id, saved.environment, desired, document)


@_boundary
def plan_rollback(
    plan: str | os.PathLike[str],
    *,
    spark: Any = None,
    env: str | None = None,
    allow: Iterable[str | Hazard] | None = (),
    probes: bool = True,
    progress: ProgressCallback | None = None,
) -> ReviewedPlan:
    """What undoing a plan takes (`delta-sync rollback`'s plan): `plan` is a plan id, found in the
    history of the specs' tables, or a saved plan file, whose tables are searched. Per table: RESTORE
    when nobody wrote it since, the reverse change planned forward when someone did (their rows are
    kept), DROP TABLE when the plan created it. The result applies with `rollback()` or, saved, with
    `apply()`; its commits are stamped with the plan it undoes."""
    progress = progress or _log_progress
    project = load_project(environments.project_root())
    text = os.fspath(plan) if isinstance(plan, str | os.PathLike) else None
    if text is None:
        raise DeltaSyncError(f"plan={plan!r}: give a plan id or the path of a saved plan file")
    if environments.is_plan_file(Path(text)):
        saved, _note = environments.load_plan(Path(text), env)
        environment = project.env(saved.environment)
        plan_id, tables = saved.plan_id, [TableName.parse(t.name) for t in saved.tables]
    elif _PLAN_ID.fullmatch(text):
        environment = project.env(env)
        plan_id, tables = text, sorted(environments.load_desired(project, environment, None).tables)
    else:
        raise DeltaSyncError(f"{text}: neither a saved plan file nor a plan id (like 3f2a9c0d1e4b5a6c)")
    allowed = environments.allowed_hazards(allow, environment)
    catalog = cast(
        TimeTravelCatalog, environments.catalog_for(spark, environment, progress)
    )  # Spark's catalogs can time travel
    result = undo.review_rollback(
        catalog,
        plan_id,
        tables,
        allowed,
        probes=probes,
        on_status=environments.status_of(progress),
        policy=project.policy(environment.name) if environment.name in project.envs else None,
    )
    rollback_id = pipeline.new_plan_id()
    document = undo.rollback_document(result, rollback_id, environment.name)
    return pipeline.signed(result.assessed, result.desired, rollback_id, environment.name, document, spark is not None)


@_boundary
def rollback(
    plan: str | os.PathLike[str] | ReviewedPlan,
    *,
    spark: Any = None,
    env: str | None = None,
    allow: Iterable[str | Hazard] | None = (),
    confirm: Callable[[ReviewedPlan], bool] | None = None,
    progress: ProgressCallback | None = None,
) -> ApplyResult:
    """Undo a plan (see `plan_rollback`), or run a rollback plan it made: blocked items raise
    BlockedPlanError and nothing runs; `confirm` sees the rollback plan first. Nothing left to undo:
    an ApplyResult with no statements."""
    progress = progress or _log_progress
    if isinstance(plan, ReviewedPlan):
        reviewed = plan
        if not reviewed.document.get("rolls_back"):
            raise DeltaSyncError(f"plan {reviewed.id} is not a rollback plan; run it with apply()")
    else:
        reviewed = plan_rollback(plan, spark=spark, env=env, allow=allow, progress=progress)
    if reviewed.blocked:
        raise BlockedPlanError(_blocked_message(reviewed), reviewed)
    if reviewed.is_empty:
        return ApplyResult(reviewed.id, ())
    return _apply_reviewed(reviewed, None, spark, env, allow, APPLY_PARALLEL, confirm, progress)


@_boundary
def clean_rehearsals(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[TableName]:
    """Drop every clone `plan --rehearse` left in the scratch schemas of the specs' tables (a rehearsal
    that was killed); returns the clones dropped. Only tables stamped as rehearsal clones are dropped."""
    from delta_sync.planning import rehearsal
    from delta_sync.review import clones

    project, environment = environments.project_env(env)
    desired = environments.load_desired(project, environment, specs)
    schemas = sorted({rehearsal.scratch_schema(n, environment.rehearsal_schema) for n in desired.tables})
    progress = progress or _log_progress
    catalog = environments.catalog_for(spark, environment, progress)
    return clones.clean(catalog, schemas, environments.status_of(progress), everything=True)


@_boundary
def drift(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> Drift:
    """How the live tables differ from the specs, and per drifted table the commits since the last apply."""
    project, environment = environments.project_env(env)
    desired = environments.load_desired(project, environment, specs)
    return readonly.drift(environments.catalog_for(spark, environment, progress or _log_progress), desired)


@_boundary
def check_keys(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[KeyCheck]:
    """Every primary and foreign key the specs declare, checked against the data as it is now."""
    project, environment = environments.project_env(env)
    desired = environments.load_desired(project, environment, specs)
    on_status = environments.status_of(progress or _log_progress)
    return readonly.check_keys(
        environments.catalog_for(spark, environment, progress or _log_progress), desired, on_status
    )


@_boundary
def import_specs(
    targets: Sequence[str],
    out: str | os.PathLike[str] = "specs",
    *,
    spark: Any = None,
    env: str | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
) -> Imported:
    """Write one spec file per live table (`SCHEMA`, `SCHEMA.TABLE` or `CATALOG.SCHEMA.TABLE`) under `out`,
    so that `plan` right after shows no changes. Existing files are kept unless `force`."""
    if isinstance(targets, str):
        targets = [targets]
    if not targets or not all(isinstance(t, str) for t in targets):
        raise DeltaSyncError("import_specs: give one or more targets: SCHEMA, SCHEMA.TABLE or CATALOG.SCHEMA.TABLE")
    progress = progress or _log_progress
    _project, environment = environments.project_env(env)
    catalog = environments.catalog_for(spark, environment, progress)
    names = readonly.import_targets(catalog, targets, environment.ignore)
    if not names:
        raise DeltaSyncError(f"nothing to import: no tables in {', '.join(targets)}")
    count = 0

    def on_table(name: TableName) -> None:
        nonlocal count
        count += 1
        progress(Progress(f"Importing {name}", step=count, total=len(names), table=str(name), done=True))

    written, skipped = readonly.import_specs(
        catalog, names, Path(out), force=force, on_table=on_table, defaults=environment.table_defaults
    )
    return Imported(tuple(written), tuple(skipped))


def spark_schema(table: str, specs: str | os.PathLike[str] | None = None, *, env: str | None = None) -> Any:
    """The pyspark `StructType` the spec of `table` (schema.table or catalog.schema.table) declares, from the
    specs of the project around the working directory (or `specs`), offline: nullability as declared, column
    comments, and the metadata Delta keeps for generated and identity columns, nested types included. A job
    that writes the table with it and `mergeSchema` off never drifts from the spec. Imports pyspark, starts no
    JVM. Raises DeltaSyncError when no spec declares `table`."""
    from delta_sync.review.declarations import declared_table, load_declared
    from delta_sync.spark.schemas import struct_type
    from delta_sync.sql.schema_json import table_schema_json

    project, environment = environments.project_env(env)
    desired = load_declared(project, environment, specs)
    declared = declared_table(desired, table, environments.specs_folder(project, specs))
    return struct_type(table_schema_json(declared))


def with_delta(builder: Any) -> Any:
    """`builder` (a `SparkSession.builder`) with what a session needs for Delta: its jars (fetched once
    through Maven into ~/.cache/delta-sync), its SQL extension and catalog. For plain `python` jobs and
    notebooks that start their own session; spark-submit jobs pass the same settings on its command line."""
    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.session import delta_conf

    for key, value in delta_conf(delta_jars()).items():
        builder = builder.config(key, value)
    return builder


# --- the apply of a reviewed plan ----------------------------------------------------------------


def _apply_reviewed(
    reviewed: ReviewedPlan | None,
    path: Path | None,
    spark: Any,
    env: str | None,
    allow: Iterable[str | Hazard] | None,
    parallel: int,
    confirm: Callable[[ReviewedPlan], bool] | None,
    progress: ProgressCallback,
    on_driver: bool = False,
    rehearse: bool = False,
    driver_timeout: str | None = None,
) -> ApplyResult:
    """A reviewed plan runs exactly as reviewed, or not at all: refused when its tables moved since
    (or it already ran), when its specs changed, or when a hazard is not allowed here."""
    if path is not None:
        saved, _note = environments.load_plan(path, env)
        document: Mapping[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    else:
        assert reviewed is not None
        # A reviewed plan's document is the caller's to read: one changed since it was made is refused as a
        # plan file would be.
        planfile.verify(reviewed.document, f"plan {reviewed.id}")
        try:
            saved = planfile.SavedPlan.model_validate(reviewed.document)
        except ValidationError as exc:
            raise DeltaSyncError(
                f"plan {reviewed.id}: its document was changed and is no longer a plan ({exc.errors()[0]['msg']})"
            ) from None
        environments.refuse_other_env(saved, env)
        document = reviewed.document
    environment = environments.plan_environment(saved, spark, on_driver)
    if on_driver and driver_timeout:
        # The driver reads no project file: the command that submitted it gives the environment's limit.
        environment = environments.with_timeout(environment, driver_timeout)
    deadline.limit(environment.timeout_seconds, environment.statement_timeout)
    allowed = environments.allowed_hazards(allow, environment)
    if saved.blocked:
        raise UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved")
    plan_, desired = planfile.rebuild(saved)
    if plan_.is_empty:
        return ApplyResult(saved.plan_id, ())
    catalog = environments.catalog_for(spark, environment, progress)
    # The team's rules are not run again (the plan is the one reviewed), but their warnings are shown again.
    review = pipeline.with_saved_rules(pipeline.review_saved(catalog, saved, allowed), document)
    if rehearse:
        review = pipeline.rehearse(
            catalog, review, desired, saved.plan_id, environment, environments.status_of(progress)
        )
    now = pipeline.reviewed(review, saved.plan_id, saved.environment, desired, saved.model_dump(mode="json"))
    try:
        policy.refuse_blocked(review, saved.plan_id, saved.allowed)
    except UnsafePlanError as blocked:
        raise BlockedPlanError(str(blocked), now) from None
    if confirm is not None and not confirm(now):
        raise CancelledError("cancelled; nothing was applied")
    ran = _Runner(progress)
    others: list[str] = []
    execution.apply_saved(catalog, saved, ran.on_step, ran.on_done, parallel, allowed, review, others)
    return ApplyResult(saved.plan_id, ran.statements(), (), True, catalog, tuple(others))


@_boundary
def apply_on_driver(
    path: Path,
    spark: Any,
    parallel: int,
    allow: Iterable[str],
    progress: ProgressCallback,
    statement_timeout: str | None = None,
) -> ApplyResult:
    """The spark-submit entrypoint's apply: a saved plan on the driver's session, the plan alone deciding;
    `statement_timeout`: the submitting environment's, as written there."""
    return _apply_reviewed(
        None, path, spark, None, allow, parallel, None, progress, on_driver=True, driver_timeout=statement_timeout
    )


def _blocked_message(reviewed: ReviewedPlan) -> str:
    blocks = reviewed.blocks
    lines = [f"{len(blocks)} change{'s are' if len(blocks) != 1 else ' is'} blocked; nothing was applied:"]
    for block in blocks:
        where = f" ({block.finding.origin})" if block.finding.origin else ""
        lines.append(f"  {block.finding.table}: {block.finding.hazard.value}: {block.why}{where}; {block.unblock}")
    return "\n".join(lines)


class _Runner:
    """Progress events and the record of what ran (in the order it finished), from apply's per-statement
    callbacks, which come from several threads when tables run side by side."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.started: dict[int, float] = {}
        self.done: list[Statement] = []
        self.lock = threading.Lock()

    def on_step(self, index: int, total: int, statement: Statement) -> None:
        self.started[index] = time.monotonic()
        self.progress(self._event(index, total, statement, False, None))

    def on_done(self, index: int, total: int, statement: Statement) -> None:
        seconds = time.monotonic() - self.started.get(index, time.monotonic())
        with self.lock:
            self.done.append(statement)
        self.progress(self._event(index, total, statement, True, seconds))

    @staticmethod
    def _event(index: int, total: int, statement: Statement, done: bool, seconds: float | None) -> Progress:
        first = statement.sql.splitlines()[0]
        message = f"[{index + 1}/{total}] {statement.table}: {first[:100]}{'...' if len(first) > 100 else ''}"
        return Progress(message, index + 1, total, statement.table, statement.sql, done, seconds)

    def statements(self) -> tuple[Statement, ...]:
        with self.lock:
            return tuple(self.done)
