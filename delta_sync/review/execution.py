"""Apply: a reviewed plan's statements run wave by wave on the catalog, each Delta commit stamped with the
plan id; a commit race re-reads, re-plans and goes on; then the catalog is re-read to confirm it matches
the specs (or, for a saved plan, the plan's desired tables)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import replace

from delta_sync.model.catalog import Catalog, StatementFailed
from delta_sync.model.errors import DeltaSyncError, ExecutionError, SpecError, UnsafePlanError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planfile import document as planfile
from delta_sync.planning.actions import CreateSchema, DropTable, Plan, RemoveTable
from delta_sync.planning.diff import planner
from delta_sync.planning.hazards import Hazard
from delta_sync.planning.statements import Statement, statements_of, table_of, waves
from delta_sync.review import deadline, outcomes, pipeline, policy, views
from delta_sync.review.results import Assessed

CONFLICT_RETRIES = 5


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
        return run_statements(
            catalog, statements, plan_id or pipeline.new_plan_id(), on_step, on_done, parallel, rolls_back
        )
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
                    with deadline.running(f"{statement.table}: {statement.sql.splitlines()[0]}", index):
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
                _wait_cancelling(catalog, futures)
                with lock:
                    done = sorted(applied)
                raise outcomes.interrupted(statements, done, deadline.reason(done)) from None
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


def _wait_cancelling(catalog: Catalog, futures: Sequence[Future[None]]) -> None:
    """The statements in flight to their end. After a statement_timeout, its Spark job may start only after the
    first cancel (Delta reads and plans on the driver first): it is cancelled again until it ends."""
    cancel = getattr(catalog, "cancel_running", None)
    while deadline.expired is not None and callable(cancel):
        _done, running = wait(futures, timeout=0.2)
        if not running:
            return
        cancel()
    wait(futures)


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
    plan_id = plan_id or pipeline.new_plan_id()
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
    current = pipeline.read_current(catalog, desired)
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


def verify_converged(
    catalog: Catalog,
    desired: CatalogState,
    skipped: Iterable[TableName] = (),
    plan_id: str | None = None,
    read: CatalogState | None = None,
    others: list[str] | None = None,
) -> Plan:
    """Re-read the catalog after apply; what is left should be nothing but blocked or skipped items.

    With the plan id and the tables as the review read them: a table that differs because another writer
    committed to it since (another apply of other specs, a job) is that writer's doing, not a failure of this
    apply: one sentence per such table goes to `others`, and only what nobody else touched is an error."""
    remaining = pipeline.make_plan(catalog, desired)
    left_alone = set(skipped)
    pending = [
        a
        for a in remaining.changes
        if a not in remaining.blocked
        and (isinstance(a, CreateSchema) or a.name not in left_alone)
        # strict mode: a table or view created while apply ran was not reviewed; the next plan shows it
        and not (isinstance(a, RemoveTable) and a.strict)
    ]
    moved: dict[str, str] = {}
    if pending and plan_id is not None and read is not None:
        for name in {a.name for a in pending if not isinstance(a, CreateSchema)}:
            found = _other_writer(catalog, name, read, plan_id)
            if found is not None:
                moved[str(name)] = found
    unexplained = [a for a in pending if table_of(a) not in moved]
    if unexplained:
        listing = "\n".join(f"  {table_of(a)}: {type(a).__name__}" for a in unexplained)
        raise DeltaSyncError(
            "apply ran every statement, but the catalog still differs from the specs:\n"
            f"{listing}\nThis is a delta-sync bug; please report it with the output of `delta-sync plan`."
        )
    if others is not None:
        others.extend(moved[name] for name in sorted(moved))
    return remaining


def _plan_of(metadata: str | None) -> str | None:
    try:
        found = json.loads(metadata or "")["delta-sync"]["plan"]
    except (ValueError, KeyError, TypeError):
        return None
    return found if isinstance(found, str) else None


def _other_writer(catalog: Catalog, name: TableName, read: CatalogState, plan_id: str) -> str | None:
    """The sentence naming a commit to `name` since the review read it that this apply did not make, if any."""
    before = read.tables[name].version if name in read.tables else None
    try:
        commits = catalog.history(name, limit=50)
    except Exception:  # history unreadable: no excuse for the difference
        return None
    for commit in commits:  # newest first
        if before is not None and commit.version <= before:
            return None
        if plan_id not in (commit.metadata or ""):
            other_plan = _plan_of(commit.metadata) if commit.by_delta_sync else None
            who = f"delta-sync plan {other_plan}" if other_plan else commit.user or commit.engine or "another writer"
            return (
                f"{name} was changed by another writer while apply ran (version {commit.version}, "
                f"{commit.operation} by {who}); this apply's own statements all ran, and `delta-sync plan` "
                "shows what the specs still ask of it"
            )
    return None


def apply_saved(
    catalog: Catalog,
    saved: planfile.SavedPlan,
    on_step: Callable[[int, int, Statement], None] = lambda *_a: None,
    on_done: Callable[[int, int, Statement], None] = lambda *_a: None,
    parallel: int = 1,
    allowed: Iterable[Hazard] = (),
    reviewed: Assessed | None = None,
    others: list[str] | None = None,
) -> int:
    """Run a saved plan exactly, if no table moved since it was made and nothing in it is blocked
    under `allowed`; then re-read the tables and confirm they match the plan's desired tables (`others`: as
    in verify_converged)."""
    review = reviewed or pipeline.review_saved(catalog, saved, allowed)
    policy.refuse_blocked(review, saved.plan_id, saved.allowed)
    count = apply_plan(catalog, review.plan, on_step, on_done, saved.plan_id, parallel, saved.rolls_back)
    verify_converged(catalog, planfile.rebuild(saved)[1], (), saved.plan_id, review.current, others)
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
