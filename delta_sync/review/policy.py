"""Pure decisions about a plan, between the planner and the shell: what to scan before apply, what
apply leaves to a rule's own ADD CONSTRAINT, what `--skip-blocked` keeps, what a commit records, what
a saved plan holds and when it is refused as blocked."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.errors import UnsafePlanError
from delta_sync.model.policy import size_text
from delta_sync.model.state import CatalogState, Check, Table, TableName
from delta_sync.planfile import codec as plancodec
from delta_sync.planfile import document as planfile
from delta_sync.planning import hazard_rules, hazards
from delta_sync.planning.actions import AddCheck, Backfill, CreateSchema, Plan, RewriteTable
from delta_sync.planning.diff import conventions
from delta_sync.planning.statements import Statement, checked_first, statements_of
from delta_sync.render.document import plan_json
from delta_sync.review.results import Assessed

A = TypeVar("A", bound=Assessed)


def rules_to_scan(
    plan: Plan, current: CatalogState, applying: bool
) -> tuple[list[tuple[TableName, tuple[Check, ...]]], list[ProbeResult]]:
    """The rules a probe must scan for, per table; when `applying`, those left to their own ADD
    CONSTRAINT (checked_first) come back as results instead."""
    constant = hazard_rules.answered_by_backfill(plan)
    answered = [
        ProbeResult(table, c.name, 0, source=hazards.BY_CONSTANT_BACKFILL)
        for table, checks in hazard_rules.rules_to_probe(plan, current).items()
        for c in checks
        if (table, c.name) in constant
    ]
    work = sorted(
        (table, kept)
        for table, checks in hazard_rules.rules_to_probe(plan, current).items()
        if (kept := tuple(c for c in checks if (table, c.name) not in constant))
    )
    if not applying:
        return work, answered
    own = leading_rules(plan)
    left = [
        ProbeResult(table, c.name, None, source=hazards.CHECKED_BY_CONSTRAINT)
        for table, checks in work
        for c in checks
        if (str(table), c.name) in own
    ]
    scan = [(t, kept) for t, checks in work if (kept := tuple(c for c in checks if (str(t), c.name) not in own))]
    return scan, left + answered


def over_scan_limit(
    work: list[tuple[TableName, tuple[Check, ...]]], current: CatalogState, desired: CatalogState
) -> tuple[list[tuple[TableName, tuple[Check, ...]]], list[ProbeResult]]:
    """The scans to run, less those of tables above the environment's `limits: {scan: ...}`: those are not read
    (their changes are blocked by the limit, with both figures), and their rules say why."""
    kept: list[tuple[TableName, tuple[Check, ...]]] = []
    skipped: list[ProbeResult] = []
    for table, checks in work:
        why = above_scan_limit(table, current, desired)
        if why is None:
            kept.append((table, checks))
        else:
            skipped.extend(ProbeResult(table, c.name, None, skipped=why) for c in checks)
    return kept, skipped


def above_scan_limit(table: TableName, current: CatalogState, desired: CatalogState) -> str | None:
    """Why a data check of `table` is not run: its size is above `limits: {scan: ...}` (None: it is run)."""
    limit = desired.policy.limit("scan") if desired.policy is not None else None
    have = current.table(table)
    if limit is None or have is None or have.size_bytes is None or have.size_bytes <= limit.size:
        return None
    return f"{size_text(have.size_bytes)} is above {limit.text('limits')}"


def new_rules(plan: Plan, desired: CatalogState) -> list[tuple[Table, list[Check]]]:
    """The spec's CHECKs the plan adds or changes, with their tables as the specs declare them
    (delta-sync's own NOT NULL rules are left out: it writes those itself)."""
    rules: dict[TableName, list[Check]] = {}
    for action in plan.actions:
        if isinstance(action, AddCheck) and not action.check.name.startswith(conventions.NOT_NULL_PREFIX):
            rules.setdefault(action.name, []).append(action.check)
    return [(table, checks) for name, checks in rules.items() if (table := desired.table(name)) is not None]


def moving_expressions(plan: Plan, current: CatalogState) -> list[tuple[Table, list[Check]]]:
    """Each `backfill` and `using` the plan runs, as a rule over the table as it is now (they read its
    current columns), for Spark to analyse before anything runs: it must resolve, convert to the column's
    type and be deterministic. The rule is always true; only its analysis counts."""
    rules: dict[TableName, list[Check]] = {}
    for action in plan.actions:
        if isinstance(action, Backfill):
            rules.setdefault(action.name, []).append(
                Check(
                    f"backfill of `{action.column}`",
                    f"CAST(({action.expression}) AS {action.type}) IS NULL OR TRUE",
                    action.origin,
                )
            )
        elif isinstance(action, RewriteTable):
            rules.setdefault(action.name, []).extend(
                Check(
                    f"using of `{c.column}`",
                    f"CAST(({c.expression}) AS {c.after}) IS NULL OR TRUE",
                    c.origin,
                )
                for c in action.conversions
            )
    return [(table, checks) for name, checks in rules.items() if (table := current.table(name)) is not None]


def without_blocked(review: Assessed) -> Plan:
    """The plan minus every action on a blocked table (`apply --skip-blocked`)."""
    blocked = review.assessment.blocked_tables
    kept = tuple(a for a in review.plan.actions if isinstance(a, CreateSchema) or a.name not in blocked)
    return replace(review.plan, actions=kept)


def leading_rules(plan: Plan) -> set[tuple[str, str | None]]:
    statements = statements_of(plan)
    return {(statements[i].table, statements[i].check) for i in checked_first(statements)}


def commit_metadata(plan_id: str, statement: Statement, rolls_back: str | None = None) -> str:
    """What each Delta commit of an apply records in `userMetadata` (shown by DESCRIBE HISTORY); a
    rewrite also records the version it replaced, its restore point; a rollback the plan it undoes."""
    stamp: dict[str, Any] = {"plan": plan_id, "action": statement.kind}
    if rolls_back is not None:
        stamp["rollback"] = rolls_back
    if statement.restore_version is not None:
        stamp["restore_version"] = statement.restore_version
    return json.dumps({"delta-sync": stamp}, separators=(",", ":"))


def refuse_blocked(review: Assessed, plan_id: str, made_with: Iterable[str] = ()) -> None:
    """A saved plan whose hazards are blocked here: exit 3, naming each, as `plan` would."""
    if not review.blocked:
        return
    lines = [f"plan {plan_id} is blocked here, so nothing was applied:"]
    for block in review.assessment.blocks:
        where = f" ({block.finding.origin})" if block.finding.origin else ""
        lines.append(f"  {block.finding.table}: {block.finding.hazard.value}: {block.why}{where}; {block.unblock}")
    made = sorted(made_with)
    if made:
        lines.append(f"(the plan was made with --allow {','.join(made)})")
    raise UnsafePlanError("\n".join(lines))


LOCAL_ENVIRONMENT = "local"


def plan_document(
    result: Assessed,
    desired: CatalogState,
    plan_id: str,
    specs: str,
    environment: str = LOCAL_ENVIRONMENT,
    specs_dir: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The saved-plan file: the JSON view of the plan plus what `apply` needs to run it exactly. `settings`:
    the project settings it was reviewed with, as planfile.inputs records them (None: a rollback's)."""
    document = plan_json(result.plan, result.assessment)
    # The header's `tables` (name + fingerprint) supersedes the plain list of names.
    document.update(
        planfile.header(plan_id, environment, specs, result.current, result.plan.read_names, specs_dir=specs_dir)
    )
    document["statements"] = [
        {"table": s.table, "kind": s.kind.value, "sql": s.sql, "check": s.check} for s in statements_of(result.plan)
    ]
    document["blocked"] = result.blocked
    document["allowed"] = sorted(h.value for h in result.assessment.allowed)
    document["typed_actions"] = [plancodec.encode(a) for a in result.plan.actions]
    document["desired"] = [plancodec.encode(desired.tables[name]) for name in sorted(desired.tables)]
    # What `show` needs to re-derive the hazards offline, exactly as they were: the tables as read (their
    # metadata; a plan file holds no row of any table, so no probe's sample rows).
    document["current"] = [plancodec.encode(result.current.tables[name]) for name in sorted(result.current.tables)]
    # The engines the compatibility check held the plan to: apply and show check against the same.
    document["readers"] = [c.text() for c in desired.consumers if not c.writes]
    document["writers"] = [c.text() for c in desired.consumers if c.writes]
    document["settings"] = dict(settings) if settings is not None else None
    ruled = [f for f in result.assessment.findings if f.hazard is hazards.Hazard.RULE]
    if ruled:
        # What `show` shows again: the rules are the team's code, and a saved plan is shown without running it.
        blocked = {id(b.finding) for b in result.assessment.blocks}
        document["rules"] = [
            {
                "rule": f.check,
                "severity": "error" if id(f) in blocked else "warning",
                "message": f.reason,
                "table": str(f.table),
                "origin": None if f.origin is None else {"file": f.origin.file, "line": f.origin.line},
            }
            for f in ruled
        ]
    kept = desired.policy
    if kept is not None and (not kept.empty or any(t.allows for t in desired.tables.values())):
        document["policy"] = plancodec.encode(kept)
    return document


def without_samples(review: A) -> A:
    """The review as a saved plan keeps it: the data checks' counts, not the rows they found."""
    probes = tuple(replace(p, samples=()) for p in review.assessment.probes)
    return replace(review, assessment=replace(review.assessment, probes=probes))
