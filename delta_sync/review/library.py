"""delta-sync as a Python library: plan and apply table specs from a job, a notebook or a test, on the
caller's SparkSession (``spark=``) or on the project's environment (delta-sync.yaml), as the CLI does.

The CLI and the spark-submit entrypoint are clients of these functions: one path, not two. Every
failure is a DeltaSyncError (its ``exit_code`` is the CLI's), never a bare py4j error.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from pydantic import ValidationError

from delta_sync.model.catalog import Catalog, Commit, TimeTravelCatalog
from delta_sync.model.errors import CatalogError, DeltaSyncError, UnsafePlanError
from delta_sync.model.state import CatalogState, Consumer, TableName
from delta_sync.planfile import document as planfile
from delta_sync.planfile.document import StalePlanError
from delta_sync.planning import ddl
from delta_sync.planning.actions import Action
from delta_sync.planning.hazards import ALLOWABLE, Block, Finding, Hazard, ProbeResult, assess
from delta_sync.planning.rehearsal import Rehearsal
from delta_sync.planning.statements import Kind, Statement, statements_of
from delta_sync.render import text as render
from delta_sync.render.counts import views_of
from delta_sync.render.markdown import render_markdown
from delta_sync.render.sql import render_sql
from delta_sync.review import api
from delta_sync.review import rollback as undo
from delta_sync.review.policy import Review, refuse_blocked
from delta_sync.review.readonly import Drift, KeyCheck
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import Environment, Project

Format = Literal["text", "json", "sql", "markdown"]
_PLAN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,63}")
P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("delta_sync")


class BlockedPlanError(UnsafePlanError):
    """The plan holds changes that are blocked (exit 3); `plan` is the reviewed plan, with its blocks."""

    def __init__(self, message: str, plan: ReviewedPlan) -> None:
        super().__init__(message)
        self.plan = plan


class CancelledError(DeltaSyncError):
    """`confirm` said no: nothing was applied (exit 1)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of long work: a phase (`step` is None), or statement `step` of `total` starting or `done`."""

    message: str
    step: int | None = None
    total: int | None = None
    table: str | None = None
    sql: str | None = None
    done: bool = False
    seconds: float | None = None


ProgressCallback = Callable[[Progress], None]


def _log_progress(event: Progress) -> None:
    log.info(event.message)


@dataclass(frozen=True, eq=False)
class ReviewedPlan:
    """What `apply` would change, what it risks, and what the data said: `delta-sync plan`'s result."""

    id: str
    environment: str
    review: Review = field(repr=False)
    desired: CatalogState = field(repr=False)
    document: dict[str, Any] = field(repr=False)

    @property
    def actions(self) -> tuple[Action, ...]:
        return self.review.plan.actions

    @property
    def tables(self) -> tuple[TableName, ...]:
        return tuple(self.review.plan.tables)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every hazard, with its table, class, reason and spec origin (file:line)."""
        return self.review.assessment.findings

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The findings that stop apply, each with why and how to unblock it."""
        return self.review.assessment.blocks

    @property
    def probes(self) -> tuple[ProbeResult, ...]:
        """The data checks: for each new rule or key, how many rows break it (None when not scanned)."""
        return self.review.assessment.probes

    @property
    def blocked(self) -> bool:
        return self.review.blocked

    @property
    def is_empty(self) -> bool:
        return self.review.plan.is_empty

    @property
    def exit_code(self) -> int:
        """`delta-sync plan --detailed-exitcode`'s: 0 no changes, 2 changes to apply, 3 blocked."""
        return 3 if self.blocked else 0 if self.is_empty else 2

    @property
    def statements(self) -> tuple[Statement, ...]:
        """The statements apply runs, in order (blocked tables' included: apply refuses those)."""
        return tuple(statements_of(self.review.plan))

    def render(self, format: Format = "text") -> str:
        """The plan as `delta-sync plan --format FORMAT` prints it (text without colors)."""
        match format:
            case "json":
                return json.dumps(self.document, indent=2)
            case "sql":
                return render_sql(self.review.plan, self.review.assessment, self.id)
            case "markdown":
                views = views_of(self.review.plan, self.desired)
                return render_markdown(self.review.plan, self.review.assessment, views=views)
            case "text":
                views = views_of(self.review.plan, self.desired)
                return render.plain_text(render.render_text(self.review.plan, self.review.assessment, views))
        raise DeltaSyncError(f"render({format!r}): choose text, json, sql or markdown")

    def to_dict(self) -> dict[str, Any]:
        """The saved-plan document (`plan --format json`, `plan --out`): a copy."""
        return copy.deepcopy(self.document)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the plan for `apply(path)` or `delta-sync apply PATH` (signed when DELTA_SYNC_PLAN_KEY is set)."""
        target = Path(path)
        if not target.parent.is_dir():
            raise DeltaSyncError(f"{target}: folder {target.parent} does not exist; create it first")
        try:
            target.write_text(json.dumps(self.document, indent=2) + "\n")
        except OSError as exc:
            raise DeltaSyncError(f"{target}: cannot write the plan: {exc.strerror or exc}") from None
        return target


@dataclass(frozen=True, eq=False)
class ApplyResult:
    """What `apply` did. Failures raise instead (their `exit_code` is the CLI's)."""

    plan_id: str
    statements: tuple[Statement, ...]
    skipped: tuple[TableName, ...] = ()
    verified: bool = True
    _catalog: Catalog | None = field(default=None, repr=False)

    @property
    def applied(self) -> int:
        return len(self.statements)

    @property
    def exit_code(self) -> int:
        """`delta-sync apply`'s: 0 applied (or nothing to do), 3 when blocked tables were skipped."""
        return 3 if self.skipped else 0

    def commits(self) -> dict[TableName, list[Commit]]:
        """Per table, the Delta commits this apply made (newest first), each with its version: read from
        the tables' history, where every commit is stamped with the plan id."""
        if self._catalog is None:
            return {}
        found: dict[TableName, list[Commit]] = {}
        # Views and dropped tables have no history to read.
        skip = {Kind.CREATE_SCHEMA, Kind.CREATE_VIEW, Kind.REMOVE_TABLE}
        gone = {s.table for s in self.statements if s.kind is Kind.REMOVE_TABLE}
        for name in sorted(
            {TableName.parse(s.table) for s in self.statements if s.kind not in skip}
            - {TableName.parse(t) for t in gone}
        ):
            mine = [c for c in self._catalog.history(name) if self.plan_id in (c.metadata or "")]
            if mine:
                found[name] = mine
        return found


@dataclass(frozen=True, slots=True)
class Imported:
    written: tuple[Path, ...]
    skipped: tuple[str, ...]  # "table: why"


def _boundary(fn: Callable[P, R]) -> Callable[P, R]:
    """An engine error that escaped the catalog's own handling (the session was stopped, say) comes out
    as a CatalogError with the engine's first line, not as a bare py4j/pyspark exception."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
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
    project, environment = _project(env)
    return _load(project, environment, specs)


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
    project, environment = _project(env)
    return _plan(project, environment, specs, spark, allow, probes, progress or _log_progress, rehearse=rehearse)[1]


@_boundary
def apply(
    specs_or_plan: str | os.PathLike[str] | ReviewedPlan | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    allow: Iterable[str | Hazard] | None = (),
    probes: bool = True,
    parallel: int = api.APPLY_PARALLEL,
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
    if specs_or_plan is not None and _is_plan_file(Path(specs_or_plan)):
        path = Path(specs_or_plan)
        return _apply_reviewed(None, path, spark, env, allow, parallel, confirm, progress, rehearse=rehearse)
    project, environment = _project(env)
    catalog, reviewed = _plan(
        project, environment, specs_or_plan, spark, allow, probes, progress, not skip_blocked, rehearse
    )
    skipped: tuple[TableName, ...] = ()
    runnable = reviewed.review.plan
    if reviewed.blocked:
        if not skip_blocked:
            raise BlockedPlanError(_blocked_message(reviewed), reviewed)
        runnable = api.without_blocked(reviewed.review)
        skipped = tuple(sorted(reviewed.review.assessment.blocked_tables))
    if confirm is not None and not confirm(reviewed):
        raise CancelledError("cancelled; nothing was applied")
    if runnable.is_empty:
        return ApplyResult(reviewed.id, (), skipped, True, catalog)
    ran = _Runner(progress)
    api.apply_converging(
        catalog, reviewed.desired, runnable, ran.on_step, ran.on_done, reviewed.id, skipped, parallel=parallel
    )
    progress(Progress("Re-reading the catalog to confirm..."))
    api.verify_converged(catalog, reviewed.desired, skipped)
    return ApplyResult(reviewed.id, ran.statements(), skipped, True, catalog)


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
    assessment = assess(plan_, current, planfile.probe_results(saved), allowed, desired.consumers, rehearsed)
    return ReviewedPlan(saved.plan_id, saved.environment, Review(plan_, current, assessment), desired, document)


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
    project = load_project(api.project_root())
    text = os.fspath(plan) if isinstance(plan, str | os.PathLike) else None
    if text is None:
        raise DeltaSyncError(f"plan={plan!r}: give a plan id or the path of a saved plan file")
    if _is_plan_file(Path(text)):
        saved, _note = load_plan(Path(text), env)
        environment = project.env(saved.environment)
        plan_id, tables = saved.plan_id, [TableName.parse(t.name) for t in saved.tables]
    elif _PLAN_ID.fullmatch(text):
        environment = project.env(env)
        plan_id, tables = text, sorted(_load(project, environment, None).tables)
    else:
        raise DeltaSyncError(f"{text}: neither a saved plan file nor a plan id (like 3f2a9c0d1e4b5a6c)")
    allowed = _allowed(allow, environment)
    catalog = cast(TimeTravelCatalog, _catalog(spark, environment, progress))  # Spark's catalogs can time travel
    result = undo.review_rollback(catalog, plan_id, tables, allowed, probes=probes, on_status=_status(progress))
    rollback_id = api.new_plan_id()
    document = undo.rollback_document(result, rollback_id, environment.name)
    if spark is not None:
        document["on_session"] = True
    key = os.environ.get(planfile.KEY_VARIABLE)
    if key:
        document["signature"] = planfile.signature(document, key)
    return ReviewedPlan(rollback_id, environment.name, result.review, result.desired, document)


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
    return _apply_reviewed(reviewed, None, spark, env, allow, api.APPLY_PARALLEL, confirm, progress)


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

    project, environment = _project(env)
    desired = _load(project, environment, specs)
    schemas = sorted({rehearsal.scratch_schema(n, environment.rehearsal_schema) for n in desired.tables})
    progress = progress or _log_progress
    catalog = _catalog(spark, environment, progress)
    return clones.clean(catalog, schemas, _status(progress), everything=True)


@_boundary
def drift(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> Drift:
    """How the live tables differ from the specs, and per drifted table the commits since the last apply."""
    project, environment = _project(env)
    desired = _load(project, environment, specs)
    return api.drift(_catalog(spark, environment, progress or _log_progress), desired)


@_boundary
def check_keys(
    specs: str | os.PathLike[str] | None = None,
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[KeyCheck]:
    """Every primary and foreign key the specs declare, checked against the data as it is now."""
    project, environment = _project(env)
    desired = _load(project, environment, specs)
    on_status = _status(progress or _log_progress)
    return api.check_keys(_catalog(spark, environment, progress or _log_progress), desired, on_status)


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
    environment = _project(env)[1]
    catalog = _catalog(spark, environment, progress)
    names = api.import_targets(catalog, targets)
    if not names:
        raise DeltaSyncError(f"nothing to import: no tables in {', '.join(targets)}")
    count = 0

    def on_table(name: TableName) -> None:
        nonlocal count
        count += 1
        progress(Progress(f"Importing {name}", step=count, total=len(names), table=str(name), done=True))

    written, skipped = api.import_specs(catalog, names, Path(out), force=force, on_table=on_table)
    return Imported(tuple(written), tuple(skipped))


def with_delta(builder: Any) -> Any:
    """`builder` (a `SparkSession.builder`) with what a session needs for Delta: its jars (fetched once
    through Maven into ~/.cache/delta-sync), its SQL extension and catalog. For plain `python` jobs and
    notebooks that start their own session; spark-submit jobs pass the same settings on its command line."""
    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.session import delta_conf

    for key, value in delta_conf(delta_jars()).items():
        builder = builder.config(key, value)
    return builder


# --- shared steps ---------------------------------------------------------------------------------


def _project(env: str | None) -> tuple[Project, Environment]:
    project = load_project(api.project_root())
    return project, project.env(env)


def _load(project: Project, environment: Environment, specs: str | os.PathLike[str] | None) -> CatalogState:
    from delta_sync.specs.spec_files import load_specs as load

    folder = _folder(project, specs)
    if environment.strict and folder.resolve() != project.specs.resolve():
        raise DeltaSyncError(
            f"environment {environment.name} is strict: true, so every table and view no spec names is dropped; "
            f"{folder} is not the project's whole specs folder ({project.specs}), and the tables the other specs "
            "declare would be dropped. Plan the whole folder, or use an environment without strict: true."
        )
    desired = load(folder, environment.vars, environment.catalog, environment.name)
    consumers = Consumer.of_texts(environment.readers, environment.writers)
    return replace(desired, consumers=consumers, strict=environment.strict)


def _folder(project: Project, specs: str | os.PathLike[str] | None) -> Path:
    return project.specs if specs is None else Path(specs)


def _status(progress: ProgressCallback) -> Callable[[str], None]:
    return lambda message: progress(Progress(message))


def _catalog(spark: Any, environment: Environment, progress: ProgressCallback) -> Catalog:
    on_status = _status(progress)
    if spark is None:
        on_status("Reading the catalog...")
        return api.open_catalog(environment, on_status)
    from delta_sync.spark.given import session_catalog

    return session_catalog(spark, on_status)


def _allowed(values: Iterable[str | Hazard] | None, environment: Environment) -> frozenset[Hazard]:
    allowed: set[Hazard] = set(environment.allow)
    for value in [values] if isinstance(values, str) else values or ():
        for name in str(value).split(","):
            if not name.strip():
                continue
            try:
                hazard = Hazard(name.strip())
            except ValueError:
                choices = ", ".join(h.value for h in sorted(ALLOWABLE))
                raise DeltaSyncError(f"allow {name.strip()}: not a hazard class; choose from {choices}") from None
            if hazard not in ALLOWABLE:
                raise DeltaSyncError(
                    f"allow {name.strip()}: {hazard.value} changes are always checked or blocked and cannot be allowed"
                )
            allowed.add(hazard)
    return frozenset(allowed)


def _plan(
    project: Project,
    environment: Environment,
    specs: str | os.PathLike[str] | None,
    spark: Any,
    allow: Iterable[str | Hazard] | None,
    probes: bool,
    progress: ProgressCallback,
    applying: bool = False,
    rehearse: bool = False,
) -> tuple[Catalog, ReviewedPlan]:
    allowed = _allowed(allow, environment)
    folder = _folder(project, specs)
    desired = _load(project, environment, specs)
    digest = _specs_hash(folder)
    catalog = _catalog(spark, environment, progress)
    review = api.review(catalog, desired, allowed, probes=probes, applying=applying, on_status=_status(progress))
    plan_id = api.new_plan_id()
    if rehearse:
        review = api.rehearse(catalog, review, desired, plan_id, environment, _status(progress))
    document = api.plan_document(review, desired, plan_id, digest, environment.name, _specs_dir(project, folder))
    if spark is not None:
        document["on_session"] = True
    key = os.environ.get(planfile.KEY_VARIABLE)
    if key:
        document["signature"] = planfile.signature(document, key)
    return catalog, ReviewedPlan(plan_id, environment.name, review, desired, document)


def _specs_hash(folder: Path) -> str:
    from delta_sync.specs.spec_files import spec_paths

    return planfile.specs_hash(spec_paths(folder), folder if folder.is_dir() else folder.parent)


def _specs_dir(project: Project, folder: Path) -> str | None:
    """`folder` relative to the project root, as the plan file records it (None when outside the project)."""
    try:
        return folder.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return None


def _is_plan_file(path: Path) -> bool:
    return path.is_file() and planfile.looks_like_plan(path)


def load_plan(path: Path, env: str | None = None) -> tuple[planfile.SavedPlan, str]:
    """A saved plan file, checked before any Spark starts: its signature (when a key is set), its format,
    its environment (an `env` naming another is refused) and its statements against its typed actions.
    Returns what the signature check said too."""
    note = planfile.check_signature(path, os.environ.get(planfile.KEY_VARIABLE))
    saved = planfile.load(path)
    _refuse_other_env(saved, env)
    planfile.rebuild(saved)
    return saved, note


def _refuse_other_env(saved: planfile.SavedPlan, env: str | None) -> None:
    if env is not None and env != saved.environment:
        raise planfile.RefusedPlanError(
            f"plan {saved.plan_id} was made for environment {saved.environment}, not {env}, so it was not "
            f"applied; run it with --env {saved.environment}, or make a plan with --env {env}"
        )


def _plan_environment(saved: planfile.SavedPlan, spark: Any, on_driver: bool) -> Environment:
    """Where a saved plan runs: its environment; on a caller's session, that environment's settings
    when the project here has it (vars, allow), else the plan alone; on a spark-submit driver, the plan
    alone (the CLI checked the project before submitting, and a driver's folder may hold another copy)."""
    if saved.on_session and spark is None:
        raise planfile.RefusedPlanError(
            f"plan {saved.plan_id} was made on a SparkSession handed to delta-sync (spark=), so it was not "
            "applied through the environment's own catalog, which may be another one; apply it with spark= "
            "a session of the catalog it was made on"
        )
    if on_driver:
        return Environment(name=saved.environment)
    project = load_project(api.project_root())
    if spark is not None and saved.environment not in project.envs:
        return Environment(name=saved.environment)
    refuse_if_specs_changed(saved, project)
    return project.env(saved.environment)


def refuse_if_specs_changed(saved: planfile.SavedPlan, project: Project) -> None:
    """A reviewed plan must still be what the specs say: refused (exit 4) when they changed since. Where
    the plan's spec folder is not here (the plan travelled without the repository), the tables'
    fingerprints alone decide."""
    if saved.specs is None:
        return
    folder = project.root / saved.specs
    if folder.exists() and _specs_hash(folder) != saved.specs_hash:
        raise StalePlanError(
            f"the specs in {saved.specs}/ changed since plan {saved.plan_id} was made, so it was not applied; "
            "make a new plan and review it again"
        )


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
) -> ApplyResult:
    """A reviewed plan runs exactly as reviewed, or not at all: refused when its tables moved since
    (or it already ran), when its specs changed, or when a hazard is not allowed here."""
    if path is not None:
        saved, _note = load_plan(path, env)
    else:
        assert reviewed is not None
        try:
            saved = planfile.SavedPlan.model_validate(reviewed.document)
        except ValidationError as exc:
            raise DeltaSyncError(
                f"plan {reviewed.id}: its document was changed and is no longer a plan ({exc.errors()[0]['msg']})"
            ) from None
        _refuse_other_env(saved, env)
    environment = _plan_environment(saved, spark, on_driver)
    allowed = _allowed(allow, environment)
    if saved.blocked:
        raise UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved")
    plan_, desired = planfile.rebuild(saved)
    if plan_.is_empty:
        return ApplyResult(saved.plan_id, ())
    catalog = _catalog(spark, environment, progress)
    review = api.review_saved(catalog, saved, allowed)
    if rehearse:
        review = api.rehearse(catalog, review, desired, saved.plan_id, environment, _status(progress))
    now = ReviewedPlan(saved.plan_id, saved.environment, review, desired, saved.model_dump(mode="json"))
    try:
        refuse_blocked(review, saved.plan_id, saved.allowed)
    except UnsafePlanError as blocked:
        raise BlockedPlanError(str(blocked), now) from None
    if confirm is not None and not confirm(now):
        raise CancelledError("cancelled; nothing was applied")
    ran = _Runner(progress)
    api.apply_saved(catalog, saved, ran.on_step, ran.on_done, parallel, allowed, reviewed=review)
    return ApplyResult(saved.plan_id, ran.statements(), (), True, catalog)


@_boundary
def apply_on_driver(
    path: Path, spark: Any, parallel: int, allow: Iterable[str], progress: ProgressCallback
) -> ApplyResult:
    """The spark-submit entrypoint's apply: a saved plan on the driver's session, the plan alone deciding."""
    return _apply_reviewed(None, path, spark, None, allow, parallel, None, progress, on_driver=True)


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
