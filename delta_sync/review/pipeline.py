"""The review between the specs and apply, as one pipeline of named stages, each a function from one
frozen result to the next: the desired tables are `read` (Read), the changes planned (Planned), the
views analysed (Analysed), the rules and keys probed against the data (Probed), the hazards assessed
(Assessed), the plan rehearsed on shallow clones when asked (Assessed), and the saved-plan document
built and signed (ReviewedPlan). `review` writes that order up to Assessed and `plan_specs` the whole of
it; a saved plan (`review_saved`), a plan file shown offline and a rollback plan join it at the stage
they start from, with the stage results they bring."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from delta_sync.model.catalog import Catalog, ProbeResult
from delta_sync.model.errors import DeltaSyncError, SpecError, UnsafePlanError
from delta_sync.model.state import CatalogState, Check, ForeignKey, Origin, PrimaryKey, TableName
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import document as planfile
from delta_sync.planning import hazard_policy, hazard_rules, probe_queries, team_policy
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.actions import Plan, RemoveTable
from delta_sync.planning.diff import planner
from delta_sync.planning.hazards import Hazard
from delta_sync.planning.rehearsal import Rehearsal
from delta_sync.planning.statements import statements_of
from delta_sync.review import clones, deadline, environments, policy, readonly, views
from delta_sync.review.results import Assessed, ProgressCallback, ReviewedPlan
from delta_sync.specs.settings import Environment, Project

PROBE_THREADS = 4


@dataclass(frozen=True, slots=True)
class Read:
    """The desired tables, and the catalog as the plan needs it (see read_current)."""

    desired: CatalogState
    current: CatalogState


@dataclass(frozen=True, slots=True)
class Planned:
    """The changes from the tables as read to the desired ones."""

    desired: CatalogState
    current: CatalogState
    plan: Plan


@dataclass(frozen=True, slots=True)
class Analysed(Planned):
    """A plan whose views the engine analysed against the tables as the plan leaves them."""


@dataclass(frozen=True, slots=True)
class Probed:
    """A plan with its data checks: each new rule's and key's count of rows that break it (or why none)."""

    desired: CatalogState
    current: CatalogState
    plan: Plan
    probes: tuple[ProbeResult, ...]


def new_plan_id() -> str:
    return uuid.uuid4().hex[:16]


# --- the stages, in order -----------------------------------------------------------------------


def read(catalog: Catalog, desired: CatalogState) -> Read:
    return Read(desired, read_current(catalog, desired))


def plan_changes(read: Read) -> Planned:
    return Planned(read.desired, read.current, planner.plan(read.current, read.desired))


def analyse(catalog: Catalog, planned: Planned) -> Analysed:
    plan = views.check(catalog, planned.plan, planned.current, planned.desired)
    return Analysed(planned.desired, planned.current, plan)


def probe(
    catalog: Catalog,
    planned: Planned,
    *,
    probes: bool = True,
    applying: bool = False,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Probed:
    """A plan's checks: its rules' expressions, its statements' parse, its data probes. `applying`: the
    plan is about to run, so a rule whose ADD CONSTRAINT leads its table's statements is left to that
    statement (it scans the rows itself, before anything of the table changed) instead of being scanned
    twice."""
    plan, desired = planned.plan, planned.desired
    read, current = planned.current, planner.renamed_current(planned.current, plan)
    problems = catalog.check_problems(policy.new_rules(plan, desired) + policy.moving_expressions(plan, current))
    if problems:
        raise SpecError(problems)
    refuse_unparsable(catalog, plan)
    work, results = policy.rules_to_scan(plan, current, applying)
    work, over = policy.over_scan_limit(work, current, desired)
    results.extend(over)
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
            relation = probe_queries.probe_relation(have, want, plan.actions_for(table))
            with deadline.running(f"the data check of {table}"):
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
    return Probed(desired, read, plan, tuple(results))


def assess(probed: Probed, allowed: Iterable[Hazard] = (), rehearsals: list[Rehearsal] | None = None) -> Assessed:
    """What the plan risks and what blocks it under `allowed`, from its data checks (and rehearsals)."""
    plan, current = probed.plan, probed.current
    found = hazard_policy.assess(
        plan, current, probed.probes, allowed, probed.desired.consumers, rehearsals, probed.desired
    )
    return Assessed(plan, current, found)


def rehearse(
    catalog: Catalog,
    review: Assessed,
    desired: CatalogState,
    plan_id: str,
    env: Environment,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Assessed:
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
    assessment = hazard_policy.assess(
        review.plan, review.current, before.probes, before.allowed, desired.consumers, found, desired
    )
    return Assessed(review.plan, review.current, assessment)


def judge(review: Assessed, desired: CatalogState, root: Path) -> Assessed:
    """The review with the findings of the team's Python rules (`rules:`), each given the plan as its JSON
    document says it (delta_sync.planfile.schema.PlanDocument); an error blocks. A rule that cannot be
    imported, raises or returns something else is one sentence naming it (exit 1)."""
    rules = desired.policy.rules if desired.policy is not None else ()
    if not rules:
        return review
    from delta_sync.planfile.schema import PlanDocument
    from delta_sync.render.document import plan_json
    from delta_sync.specs import custom_rules

    document = PlanDocument.model_validate(plan_json(review.plan, review.assessment))
    found = custom_rules.run(rules, root, document)
    results = [_rule_result(rule, finding) for rule, finding in found]
    assessment = hazard_policy.with_rules(review.plan, review.assessment, results)
    return Assessed(review.plan, review.current, assessment)


def _rule_result(rule: str, finding: Any) -> team_policy.RuleResult:
    table = None
    if finding.table:
        try:
            table = TableName.parse(finding.table)
        except ValueError:
            raise DeltaSyncError(
                f"rule {rule} named table {finding.table!r}, which is not schema.table or catalog.schema.table"
            ) from None
    origin = Origin(finding.file, finding.line or 0) if finding.file else None
    return team_policy.RuleResult(rule, finding.severity, finding.message, table, origin)


def with_saved_rules(review: Assessed, document: Mapping[str, Any]) -> Assessed:
    """A saved plan's review with the rules' findings as they were when it was made (`show`)."""
    saved = document.get("rules")
    if not isinstance(saved, list) or not saved:
        return review
    results = []
    for entry in saved:
        origin = entry.get("origin")
        table = entry.get("table")
        results.append(
            team_policy.RuleResult(
                str(entry["rule"]),
                str(entry["severity"]),
                str(entry["message"]),
                TableName.parse(table) if table else None,
                Origin(origin["file"], int(origin["line"])) if origin else None,
            )
        )
    return Assessed(review.plan, review.current, hazard_policy.with_rules(review.plan, review.assessment, results))


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
    for table, key in hazard_rules.keys_to_probe(plan, current):
        work.setdefault(table, []).append(key)
    if not probes:
        return [ProbeResult(t, k.name, None, skipped="--no-probes") for t, found in work.items() for k in found]
    results: list[ProbeResult] = []
    for done, (table, found) in enumerate(sorted(work.items())):
        have, want = current.table(table), desired.table(table)
        if have is None or want is None:  # never so: only existing tables get keys to probe
            continue
        over = policy.above_scan_limit(table, current, desired)
        if over is not None:
            results.extend(ProbeResult(table, k.name, None, skipped=over) for k in found)
            continue
        on_status(f"Checking the keys of {table} against its rows ({done + 1}/{len(work)})...")
        declared = [
            (k, keyprobe.parent_after_plan(k, current, desired) if isinstance(k, ForeignKey) else None) for k in found
        ]
        with deadline.running(f"the key check of {table}"):
            results.extend(catalog.probe_keys(table, probe_queries.probe_relation(have, want), declared))
    return results


def document(
    review: Assessed,
    desired: CatalogState,
    plan_id: str,
    environment: str,
    digest: str,
    specs_dir: str | None,
    on_session: bool,
    settings: Mapping[str, Any] | None = None,
) -> ReviewedPlan:
    """The last stage: the assessed plan with its saved-plan document (policy.plan_document), signed.
    `settings`: the project settings it was reviewed with (environments.reviewed_settings)."""
    made = policy.plan_document(review, desired, plan_id, digest, environment, specs_dir, settings)
    return signed(review, desired, plan_id, environment, made, on_session)


def signed(
    review: Assessed,
    desired: CatalogState,
    plan_id: str,
    environment: str,
    document: dict[str, Any],
    on_session: bool,
) -> ReviewedPlan:
    """The reviewed plan with its document, marked when made on a caller's session (it must be applied on
    one), sealed with its checksum (any edit of the file is refused) and signed when DELTA_SYNC_PLAN_KEY is
    set (the signature covers the checksum)."""
    if on_session:
        document["on_session"] = True
    plansum.seal(document)
    key = os.environ.get(planfile.KEY_VARIABLE)
    if key:
        document["signature"] = planfile.signature(document, key)
    return reviewed(review, plan_id, environment, desired, document)


def reviewed(
    review: Assessed, plan_id: str, environment: str, desired: CatalogState, document: dict[str, Any]
) -> ReviewedPlan:
    return ReviewedPlan(review.plan, review.current, review.assessment, plan_id, environment, desired, document)


# --- the order ----------------------------------------------------------------------------------


def review(
    catalog: Catalog,
    desired: CatalogState,
    allowed: Iterable[Hazard] = (),
    *,
    probes: bool = True,
    applying: bool = False,
    on_status: Callable[[str], None] = lambda _m: None,
) -> Assessed:
    """Read, plan, and check the data against new rules. `applying`: the plan is about to run, so a
    rule whose ADD CONSTRAINT leads its table's statements is left to that statement (it scans the
    rows itself, before anything of the table changed) instead of being scanned twice."""
    planned = analyse(catalog, plan_changes(read(catalog, desired)))
    return assess(probe(catalog, planned, probes=probes, applying=applying, on_status=on_status), allowed)


def plan_specs(
    project: Project,
    environment: Environment,
    specs: str | os.PathLike[str] | None,
    spark: Any,
    allow: Iterable[str | Hazard] | None,
    probes: bool,
    progress: ProgressCallback,
    applying: bool = False,
    rehearsing: bool = False,
) -> tuple[Catalog, ReviewedPlan]:
    """The specs reviewed, stage by stage (`review`), rehearsed when asked, and their plan's document."""
    allowed = environments.allowed_hazards(allow, environment)
    folder = environments.specs_folder(project, specs)
    desired = environments.load_desired(project, environment, specs)
    digest = environments.specs_hash(folder)
    catalog = environments.catalog_for(spark, environment, progress)
    on_status = environments.status_of(progress)
    assessed = review(catalog, desired, allowed, probes=probes, applying=applying, on_status=on_status)
    plan_id = new_plan_id()
    if rehearsing:
        assessed = rehearse(catalog, assessed, desired, plan_id, environment, on_status)
    assessed = judge(assessed, desired, project.root)
    specs_dir = environments.specs_dir(project, folder)
    settings = environments.reviewed_settings(project, environment, plan_id)
    made = document(assessed, desired, plan_id, environment.name, digest, specs_dir, spark is not None, settings)
    return catalog, made


# --- a saved plan joins the pipeline with its plan and its data checks as they were ----------------


def read_saved(catalog: Catalog, saved: planfile.SavedPlan) -> Planned:
    """A saved plan, rebuilt from its typed actions and read against the catalog as it is now: refused
    (exit 4) when a table moved or the plan already ran."""
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
    return Planned(desired, current, plan)


def saved_probes(planned: Planned, saved: planfile.SavedPlan) -> Probed:
    """A saved plan's data checks as they were when it was made (its plan is not probed again)."""
    return Probed(planned.desired, planned.current, planned.plan, tuple(planfile.probe_results(saved)))


def review_saved(catalog: Catalog, saved: planfile.SavedPlan, allowed: Iterable[Hazard] = ()) -> Assessed:
    """A saved plan, rebuilt from its typed actions and checked against the catalog as it is now: refused
    (exit 4) when a table moved or the plan already ran; its hazards re-derived against `allowed`."""
    return assess(saved_probes(read_saved(catalog, saved), saved), allowed)


# --- what the stages read -----------------------------------------------------------------------


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
