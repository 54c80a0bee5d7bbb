"""The imperative shell: read state, plan, apply. The CLI is one client of these functions."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from delta_sync.model.catalog import APPLY_PARALLEL as APPLY_PARALLEL
from delta_sync.model.catalog import Catalog as Catalog
from delta_sync.model.catalog import Commit as Commit
from delta_sync.model.catalog import QueryResult as QueryResult
from delta_sync.model.catalog import StatementFailed as StatementFailed
from delta_sync.model.errors import DeltaSyncError, ExecutionError, SpecError, UnsafePlanError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, ForeignKey, PrimaryKey, TableName
from delta_sync.planfile import document as planfile
from delta_sync.planning import hazards, outcomes, planner
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.actions import CreateSchema, DropTable, Plan, RemoveTable
from delta_sync.planning.hazards import Hazard, ProbeResult
from delta_sync.planning.outcomes import ApplyInterrupted as ApplyInterrupted
from delta_sync.planning.outcomes import DataBlockedError as DataBlockedError
from delta_sync.planning.outcomes import StatementError as StatementError
from delta_sync.planning.statements import Statement as Statement
from delta_sync.planning.statements import checked_first as checked_first
from delta_sync.planning.statements import statements_of as statements_of
from delta_sync.planning.statements import table_of, waves
from delta_sync.review import clones, policy, readonly, views
from delta_sync.review.policy import LOCAL_ENVIRONMENT as LOCAL_ENVIRONMENT
from delta_sync.review.policy import Review as Review
from delta_sync.review.policy import commit_metadata as commit_metadata
from delta_sync.review.policy import new_rules as new_rules
from delta_sync.review.policy import plan_document as plan_document
from delta_sync.review.policy import refuse_blocked as refuse_blocked
from delta_sync.review.policy import rules_to_scan as rules_to_scan
from delta_sync.review.policy import without_blocked as without_blocked
from delta_sync.review.readonly import IMPORT_BATCH as IMPORT_BATCH
from delta_sync.review.readonly import Drift as Drift
from delta_sync.review.readonly import KeyCheck as KeyCheck
from delta_sync.review.readonly import check_keys as check_keys
from delta_sync.review.readonly import drift as drift
from delta_sync.review.readonly import import_specs as import_specs
from delta_sync.review.readonly import import_targets as import_targets
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import Environment, Project

PROJECT_FILE = "delta-sync.yaml"
STATE_DIR = ".delta-sync"


def project_root(start: Path | None = None) -> Path:
    """The nearest directory holding delta-sync.yaml or .delta-sync/, else the working directory."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / PROJECT_FILE).is_file() or (candidate / STATE_DIR).is_dir():
            return candidate
    return here


def environment(name: str | None = None) -> tuple[Project, Environment]:
    """The project around the working directory and its environment `name` (default: the project's)."""
    project = load_project(project_root())
    return project, project.env(name)


def env_home(project: Project, env: Environment) -> Path:
    """Where an environment keeps its embedded catalog: `.delta-sync/<env>/` (DELTA_SYNC_HOME overrides)."""
    override = os.environ.get("DELTA_SYNC_HOME")
    if override:
        return Path(override).resolve()
    return project.root / STATE_DIR / env.name


def open_catalog(env: Environment | None = None, on_status: Callable[[str], None] = lambda _m: None) -> Catalog:
    """The catalog `env` works on: through its Spark Connect server (connect:), else through an
    in-process session (the default environment without one)."""
    project, env = environment(None) if env is None else (load_project(project_root()), env)
    if env.connect:
        # A client session only: no JVM in this process; the token is masked in every message.
        from delta_sync.spark.connect import open_connect_catalog

        return open_connect_catalog(env.connect, on_status, project.redact)
    # Imported here so that `--help` and `validate` never load pyspark.
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog

    master, conf = "local[*]", {}
    if env.spark is not None:
        master, conf = env.spark.master or master, dict(env.spark.conf)
    elif env.submit is not None:
        # plan reads in client mode with the job's settings (its catalog), on this machine.
        conf = {k: v for k, v in env.submit.conf.items() if not k.startswith(("spark.yarn.", "spark.kubernetes."))}
    return SparkCatalog(LocalCatalog(env_home(project, env), master, conf, redact=project.redact), on_status)


def refuse_unparsable(catalog: Catalog, plan: Plan) -> None:
    """Every statement the plan would run goes through the engine's parser first (nothing runs): one
    Delta would refuse to parse is an error of the plan, not a failure half-way through apply."""
    statements = [s.sql for s in statements_of(plan)]
    problems = catalog.statement_problems(statements) if statements else []
    if problems:
        raise DeltaSyncError(
            f"the plan holds {len(problems)} statement(s) the engine cannot parse, so nothing was run:\n"
            + "\n".join(f"  {p}" for p in problems)
            + "\nWith valid specs this is a delta-sync bug: please report it with `delta-sync plan --format sql`."
        )


def read_current(catalog: Catalog, desired: CatalogState) -> CatalogState:
    """The catalog as the plan needs it: the tables the specs name (and their previous names and
    tombstones), and what else the specs' schemas hold (unmanaged tables and views)."""
    current = catalog.read([n for n in desired.names_to_read() if n not in desired.dropped])
    # A tombstone may name a table of another format: it is dropped all the same (found by the listing).
    gone = readonly.read_tolerant(catalog, desired.dropped)
    current = replace(current, tables={**current.tables, **gone.tables}, views={**current.views, **gone.views})
    schemas = sorted({n.schema_name for n in [*desired.tables, *desired.views, *desired.dropped]} & current.schemas)
    listed: set[TableName] = set()
    views: set[TableName] = set()
    for schema in schemas:
        listed.update(catalog.list_tables(schema))
        views.update(catalog.list_views(schema))
    current = replace(current, listed=frozenset(listed | views), listed_views=frozenset(views))
    if desired.strict:
        # What strict mode drops is read too: its size for the plan, its fingerprint for a saved plan.
        others = readonly.read_tolerant(catalog, planner.unmanaged_names(current, desired))
        current = replace(current, tables={**current.tables, **others.tables}, views={**current.views, **others.views})
    return current


def make_plan(catalog: Catalog, desired: CatalogState) -> Plan:
    return planner.plan(read_current(catalog, desired), desired)


def review(
    catalog: Catalog,
    desired: CatalogState,
    allowed: Iterable[Hazard] = (),
    *,
    probes: bool = True,
    applying: bool = False,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Review:
    """Read, plan, and check the data against new rules. `applying`: the plan is about to run, so a
    rule whose ADD CONSTRAINT leads its table's statements is left to that statement (it scans the
    rows itself, before anything of the table changed) instead of being scanned twice."""
    current = read_current(catalog, desired)
    plan = views.check(catalog, planner.plan(current, desired), current, desired)
    return check(catalog, plan, current, desired, allowed, probes=probes, applying=applying, on_status=on_status)


def check(
    catalog: Catalog,
    plan: Plan,
    current: CatalogState,
    desired: CatalogState,
    allowed: Iterable[Hazard] = (),
    *,
    probes: bool = True,
    applying: bool = False,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Review:
    """A plan's checks: its rules' expressions, its statements' parse, its data probes and hazards."""
    read, current = current, planner.renamed_current(current, plan)
    problems = catalog.check_problems(policy.new_rules(plan, desired) + policy.moving_expressions(plan, current))
    if problems:
        raise SpecError(problems)
    refuse_unparsable(catalog, plan)
    work, results = policy.rules_to_scan(plan, current, applying)
    if not probes:
        for table, checks in work:
            results.extend(ProbeResult(table, c.name, None, skipped="--no-probes") for c in checks)
    elif work:
        done = 0

        def probe(item: tuple[TableName, tuple[Check, ...]]) -> list[ProbeResult]:
            nonlocal done
            table, checks = item
            have, want = current.table(table), desired.table(table)
            if have is None or want is None:  # never so: only existing tables get rules to probe
                return []
            relation = hazards.probe_relation(have, want, plan.actions_for(table))
            found = catalog.probe(table, checks, relation, primary_key=want.primary_key)
            done += 1
            on_status(f"Checked the data of {done}/{len(work)} table(s) against their new rules ({table})...")
            return found

        on_status(f"Checking the data of {len(work)} table(s) against their new rules...")
        # Each probe is a small Spark job; overlapping them hides the per-job latency (py4j and Spark
        # both take calls from several threads). Results keep the tables' order.
        with ThreadPoolExecutor(max_workers=PROBE_THREADS) as pool:
            for found in pool.map(probe, work):
                results.extend(found)
    results.extend(_probe_keys(catalog, plan, current, desired, probes, on_status))
    return Review(plan, read, hazards.assess(plan, read, results, allowed, desired.consumers))


def rehearse(
    catalog: Catalog,
    review: Review,
    desired: CatalogState,
    plan_id: str,
    env: Environment,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Review:
    """The review with its plan rehearsed on shallow clones (delta_sync.review.clones): a statement Delta refuses
    there blocks its table (hazard `rehearsal`); every table's outcome is in `assessment.rehearsals`."""
    found = clones.rehearse(
        catalog,
        review.plan,
        review.current,
        desired,
        plan_id,
        env.rehearsal_schema,
        env.rehearse_max_bytes,
        on_status,
    )
    before = review.assessment
    assessment = hazards.assess(review.plan, review.current, before.probes, before.allowed, desired.consumers, found)
    return Review(review.plan, review.current, assessment)


def _probe_keys(
    catalog: Catalog,
    plan: Plan,
    current: CatalogState,
    desired: CatalogState,
    probes: bool,
    on_status: Callable[[str], None],
) -> list[ProbeResult]:
    """The keys the plan adds to tables with rows, checked against those rows as the plan leaves them
    (one scan per table); a foreign key's parent as the plan leaves it too."""
    work: dict[TableName, list[PrimaryKey | ForeignKey]] = {}
    for table, key in hazards.keys_to_probe(plan, current):
        work.setdefault(table, []).append(key)
    if not probes:
        return [ProbeResult(t, k.name, None, skipped="--no-probes") for t, found in work.items() for k in found]
    results: list[ProbeResult] = []
    for done, (table, found) in enumerate(sorted(work.items())):
        have, want = current.table(table), desired.table(table)
        if have is None or want is None:  # never so: only existing tables get keys to probe
            continue
        on_status(f"Checking the keys of {table} against its rows ({done + 1}/{len(work)})...")
        declared = [
            (k, keyprobe.parent_after_plan(k, current, desired) if isinstance(k, ForeignKey) else None) for k in found
        ]
        results.extend(catalog.probe_keys(table, hazards.probe_relation(have, want), declared))
    return results


def new_plan_id() -> str:
    return uuid.uuid4().hex[:16]


def apply_plan(
    catalog: Catalog,
    plan: Plan,
    on_step: Callable[[int, int, Statement], None] = lambda *_a: None,
    on_done: Callable[[int, int, Statement], None] = lambda *_a: None,
    plan_id: str | None = None,
    parallel: int = 1,
    rolls_back: str | None = None,
) -> int:
    """Run the plan's statements (see run_statements); returns how many ran. Stops at the first failure."""
    if plan.blocked:
        raise UnsafePlanError(
            f"{len(plan.blocked)} change{'s are' if len(plan.blocked) != 1 else ' is'} blocked; "
            "nothing was applied. Change the specs as each blocked item says, then re-run."
        )
    statements = statements_of(plan)
    try:
        return run_statements(catalog, statements, plan_id or new_plan_id(), on_step, on_done, parallel, rolls_back)
    except outcomes.StatementError as failed:
        # The same verdict whichever path found a violation: the scan before apply, or the rule's own
        # ADD CONSTRAINT leading its table (nothing of that table ran before it).
        rule = outcomes.violated_rule(plan, statements, failed)
        if rule is None:
            raise
        try:
            # Fetched after the failure, as a probe in `plan` shows them.
            found = catalog.probe(rule.name, [rule.check], rule.name.sql())
            samples = found[0].samples if found else ()
        except DeltaSyncError:
            samples = ()
        raise outcomes.data_blocked(rule, statements, failed, samples) from None


def run_statements(
    catalog: Catalog,
    statements: Sequence[Statement],
    plan_id: str,
    on_step: Callable[[int, int, Statement], None] = lambda *_a: None,
    on_done: Callable[[int, int, Statement], None] = lambda *_a: None,
    parallel: int = 1,
    rolls_back: str | None = None,
) -> int:
    """Run `statements` wave by wave (statements.waves): schemas first, then up to `parallel` tables at
    once, each table's statements in their order.

    The ADD CONSTRAINTs that lead their tables (`checked_first`) run as a wave of their own before
    anything else: when existing rows violate one, apply stops before any table's columns,
    properties or comments changed (only other tables' new constraints, which hold, may be in).
    Foreign keys are dropped and added in waves of their own, around the primary keys they reference.

    At the first failure no further statement starts; those already running end (each is one commit,
    which lands or not), and the error lists what was applied. `on_step` and `on_done` may be called
    from several threads."""
    applied: list[int] = []
    failed: list[tuple[int, EngineFailure]] = []
    lock = threading.Lock()
    stop = threading.Event()  # a failure anywhere, or Ctrl-C in the main thread: start nothing new

    def run_lane(lane: Sequence[int]) -> None:
        try:
            for index in lane:
                if stop.is_set():
                    return
                statement = statements[index]
                on_step(index, len(statements), statement)
                try:
                    catalog.execute(statement.sql, policy.commit_metadata(plan_id, statement, rolls_back))
                except StatementFailed as failure:
                    with lock:
                        failed.append((index, failure.failure))
                    stop.set()
                    return
                with lock:
                    applied.append(index)
                on_done(index, len(statements), statement)
        except BaseException:
            stop.set()  # not a statement's own failure (the catalog is gone, say): the other lanes stop too
            raise

    def run_wave(lanes: Sequence[list[int]]) -> None:
        workers = max(1, min(parallel, getattr(catalog, "max_parallel", 1), len(lanes)))
        if failed or not lanes:
            return
        # Even one lane runs on a worker thread: the main thread only waits, so Ctrl-C (and
        # pyspark's handler, which cancels the running jobs through py4j) never lands in the middle
        # of a py4j call of this thread ("reentrant call").
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delta-sync-apply") as pool:
            futures = [pool.submit(run_lane, lane) for lane in lanes]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            except KeyboardInterrupt:
                stop.set()  # no new statement starts; those in flight end (each lands or not)
                wait(futures)
                with lock:
                    done = sorted(applied)
                raise outcomes.interrupted(statements, done) from None
            except BaseException:
                stop.set()
                raise
        errors = [error for future in futures if (error := future.exception()) is not None]
        if errors:
            raise errors[0]

    for wave in waves(statements):
        run_wave(wave)
    if failed:
        failed.sort()
        index, failure = failed[0]
        others = [statements[i] for i, _f in failed[1:]]
        raise outcomes.execution_error(statements, index, failure, sorted(applied), others) from None
    return len(statements)


CONFLICT_RETRIES = 5
PROBE_THREADS = 4


def apply_converging(
    catalog: Catalog,
    desired: CatalogState,
    plan: Plan,
    on_step: Callable[[int, int, Statement], None] = lambda *_a: None,
    on_done: Callable[[int, int, Statement], None] = lambda *_a: None,
    plan_id: str | None = None,
    skipped: Iterable[TableName] = (),
    sleep: Callable[[float], None] = time.sleep,
    parallel: int = 1,
) -> int:
    """Apply `plan`; when a concurrent writer wins a commit race, back off, re-read and re-plan, and go on.

    Re-planning from the re-read state (rather than retrying the statement) means a statement that
    did land is never run twice. The same holds when another apply of the same specs got there first
    (the engine says a constraint, column or table already exists): if the re-plan no longer holds the
    statement, it was a race, and apply goes on; if it still does, the failure is real and is raised.
    Gives up after CONFLICT_RETRIES conflicts, saying what ran.
    """
    plan_id = plan_id or new_plan_id()
    left_alone = set(skipped)
    ran = 0
    # Rules the review left to their own ADD CONSTRAINT (not probed): a re-plan must keep them first.
    unprobed = policy.leading_rules(plan)
    # Drops the review saw: a re-plan must not add others (strict mode: a table created meanwhile).
    reviewed = frozenset(a.name for a in plan.actions if isinstance(a, RemoveTable))
    waits = 0
    while True:
        try:
            return ran + apply_plan(catalog, plan, on_step, on_done, plan_id, parallel)
        except ExecutionError as failed:
            ran += len(failed.applied)
            if not (failed.conflict or failed.raced):
                raise
            if failed.raced and not failed.conflict:
                plan = _replan(catalog, desired, left_alone, unprobed, ran, reviewed)
                if failed.statement not in {s.sql for s in statements_of(plan)}:
                    continue  # the other apply did it: nothing to wait for
            if waits == CONFLICT_RETRIES:
                if not failed.conflict:
                    raise  # still failing after re-reads: the statement's own failure, as the engine said
                raise ExecutionError(
                    f"{failed}\nGave up after {CONFLICT_RETRIES} conflicts with concurrent writers; "
                    f"{ran} statement(s) were applied in all. Re-run apply when the writers are quieter.",
                    statement=failed.statement,
                    index=failed.index,
                    applied=failed.applied,
                    conflict=True,
                ) from None
            # Another writer is mid-way (e.g. still creating the table): give it time, then re-read.
            sleep(min(0.5 * 2**waits, 8.0))
            waits += 1
            plan = _replan(catalog, desired, left_alone, unprobed, ran, reviewed)


def _replan(
    catalog: Catalog,
    desired: CatalogState,
    left_alone: set[TableName],
    unprobed: set[tuple[str, str | None]],
    ran: int,
    reviewed_drops: frozenset[TableName] = frozenset(),
) -> Plan:
    current = read_current(catalog, desired)
    planned = planner.plan(current, desired)
    try:
        replanned = views.check(catalog, planned, current, desired)
    except SpecError:
        # The views passed when the plan was reviewed: one that fails now was broken by what this apply already
        # ran, as the review allowed (or by another writer). The rest of the plan still runs; the next plan names it.
        replanned = planned
    replanned = replace(
        replanned,
        actions=tuple(
            a
            for a in replanned.actions
            if isinstance(a, CreateSchema)
            or (a.name not in left_alone and (not isinstance(a, RemoveTable) or a.name in reviewed_drops))
        ),
    )
    # A concurrent writer may have changed a column a rule reads: the rule would now run after other
    # changes of its table, and nothing checked the data for it. Stop; a new apply probes it.
    leading = policy.leading_rules(replanned)
    moved = [s for s in statements_of(replanned) if (s.table, s.check) in unprobed - leading]
    if moved:
        raise DeltaSyncError(
            f"{moved[0].table} changed while apply ran: its new rule `{moved[0].check}` would now run after "
            f"other changes of the table, unchecked against the data, so apply stopped ({ran} statement(s) "
            "were applied). Re-run apply: it re-reads the tables and checks the data first."
        )
    return replanned


def verify_converged(catalog: Catalog, desired: CatalogState, skipped: Iterable[TableName] = ()) -> Plan:
    """Re-read the catalog after apply; what is left should be nothing but blocked or skipped items."""
    remaining = make_plan(catalog, desired)
    left_alone = set(skipped)
    pending = [
        a
        for a in remaining.changes
        if a not in remaining.blocked
        and (isinstance(a, CreateSchema) or a.name not in left_alone)
        # strict mode: a table or view created while apply ran was not reviewed; the next plan shows it
        and not (isinstance(a, RemoveTable) and a.origin is None)
    ]
    if pending:
        listing = "\n".join(f"  {table_of(a)}: {type(a).__name__}" for a in pending)
        raise DeltaSyncError(
            "apply ran every statement, but the catalog still differs from the specs:\n"
            f"{listing}\nThis is a delta-sync bug; please report it with the output of `delta-sync plan`."
        )
    return remaining


def review_saved(catalog: Catalog, saved: planfile.SavedPlan, allowed: Iterable[Hazard] = ()) -> Review:
    """A saved plan, rebuilt from its typed actions and checked against the catalog as it is now: refused
    (exit 4) when a table moved or the plan already ran; its hazards re-derived against `allowed`."""
    if saved.blocked:
        raise UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved")
    plan, desired = planfile.rebuild(saved)
    refuse_unparsable(catalog, plan)
    drops = [a.name for a in plan.actions if isinstance(a, RemoveTable)]
    current = catalog.read([n for n in plan.read_names if n not in drops])
    others = readonly.read_tolerant(catalog, drops)
    current = replace(current, tables={**current.tables, **others.tables}, views={**current.views, **others.views})
    moved = planfile.moved(saved, current)
    if moved:
        # Only tables that exist have a history; a dropped one is simply stale.
        applied = [
            str(n)
            for n in plan.tables
            if current.table(n) is not None and any(saved.plan_id in (c.metadata or "") for c in catalog.history(n))
        ]
        if applied:
            raise planfile.StalePlanError(
                f"plan {saved.plan_id} was already applied (to {', '.join(applied)}); make a new plan"
            )
        raise planfile.StalePlanError(
            "the catalog changed since this plan was made, so it was not applied:\n"
            + "\n".join(f"  {line}" for line in moved)
            + "\nMake a new plan and review it again."
        )
    probes = planfile.probe_results(saved)
    return Review(plan, current, hazards.assess(plan, current, probes, allowed, desired.consumers))


def apply_saved(
    catalog: Catalog,
    saved: planfile.SavedPlan,
    on_step: Callable[[int, int, Statement], None] = lambda *_a: None,
    on_done: Callable[[int, int, Statement], None] = lambda *_a: None,
    parallel: int = 1,
    allowed: Iterable[Hazard] = (),
    reviewed: Review | None = None,
) -> int:
    """Run a saved plan exactly, if no table moved since it was made and nothing in it is blocked
    under `allowed`; then re-read the tables and confirm they match the plan's desired tables."""
    review = reviewed or review_saved(catalog, saved, allowed)
    policy.refuse_blocked(review, saved.plan_id, saved.allowed)
    count = apply_plan(catalog, review.plan, on_step, on_done, saved.plan_id, parallel, saved.rolls_back)
    verify_converged(catalog, planfile.rebuild(saved)[1])
    dropped = [
        a.name
        for a in review.plan.actions
        if isinstance(a, DropTable) or (isinstance(a, RemoveTable) and not a.view and a.origin is not None)
    ]
    left = sorted(catalog.read(dropped).tables) if dropped else []
    if left:
        raise DeltaSyncError(
            f"apply ran every statement, but {', '.join(str(n) for n in left)} still exist(s); "
            "this is a delta-sync bug, please report it"
        )
    return count
