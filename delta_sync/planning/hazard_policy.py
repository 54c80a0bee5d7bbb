"""The assessment of a plan: `assess(plan, current, probes, allowed)` gives every finding (the actions',
the consumers' compatibility, the rehearsals') and what blocks apply by policy (an allowable hazard not
allowed), by the data (a probe that counted violations), or always (unsupported, a failed rehearsal)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import (
    CatalogState,
    Consumer,
    Origin,
    TableName,
)
from delta_sync.planning import team_policy
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    Backfill,
    BreaksView,
    CreateSchema,
    Plan,
    RewriteTable,
    Unsupported,
)
from delta_sync.planning.compatibility import compat
from delta_sync.planning.diff.planner import renamed_current
from delta_sync.planning.feature_gates import needing
from delta_sync.planning.hazard_rules import action_origin, find, row_count
from delta_sync.planning.hazards import Allowance, Assessment, Block, Finding, Hazard
from delta_sync.planning.probe_queries import cast_rule, not_null_column
from delta_sync.planning.rehearsal import Outcome, Rehearsal


def assess(
    plan: Plan,
    current: CatalogState,
    probes: Iterable[ProbeResult],
    allowed: Iterable[Hazard],
    consumers: Sequence[Consumer] = (),
    rehearsals: Sequence[Rehearsal] | None = None,
    desired: CatalogState | None = None,
) -> Assessment:
    """Every finding of the plan, and what blocks it. `consumers`: the engines that must keep reading or
    writing the tables (the project's `readers:` / `writers:`), checked against each protocol change.
    `rehearsals`: how the plan went on shallow clones; a failure blocks its table (never allowable).
    `desired`: the specs' tables (their `protect:` and `allow:`) and the environment's policy
    (delta_sync.planning.team_policy)."""
    probes = tuple(probes)
    read = current
    current = renamed_current(current, plan)
    policy = desired.policy if desired is not None else None
    findings = (
        tuple(_with_count(f, probes) for f in find(plan, current))
        + tuple(_compatibility(plan, p) for p in compat.problems(plan, current, consumers))
        + tuple(_rehearsal_findings(plan, rehearsals or ()))
    )
    origins = {i: action_origin(a) for i, a in enumerate(plan.actions)}
    # A rename's protection is the old name's, as the catalog holds it before the plan.
    both = replace(current, tables={**read.tables, **current.tables})
    findings += tuple(team_policy.protected_findings(plan, both, desired, origins))
    findings += tuple(team_policy.limit_findings(findings, plan, policy))
    findings = _located(plan, findings)
    allow = frozenset(allowed)
    denied = frozenset(policy.deny) if policy is not None else frozenset()
    blocks = []
    allowances: list[Allowance] = []
    for finding in findings:
        action = plan.actions[finding.index]
        if finding.hazard is Hazard.PROTECTED:
            blocks.append(Block(finding, finding.reason, team_policy.PROTECTED_UNBLOCK))
        elif finding.hazard is Hazard.LIMIT:
            blocks.append(Block(finding, finding.reason, team_policy.LIMIT_UNBLOCK))
        elif finding.hazard is Hazard.UNSUPPORTED:
            remedy = action.remedy if isinstance(action, Unsupported) else ""
            blocks.append(Block(finding, finding.reason, remedy or "change the spec"))
        elif finding.hazard is Hazard.REHEARSAL:
            # Delta refused something (a statement, the clone itself), or the clone came out unlike the spec.
            refused = any(r.table == finding.table and r.error_class is not None for r in rehearsals or ())
            blocks.append(Block(finding, finding.reason, REHEARSAL_UNBLOCK if refused else REHEARSAL_DIFFERS))
        elif finding.hazard is Hazard.DATA_DEPENDENT:
            result = next((p for p in probes if p.table == finding.table and p.check == finding.check), None)
            if result is not None and result.violations:
                blocks.append(_data_block(finding, action, result.violations, plan))
        elif finding.hazard not in allow:
            let = _let_through(finding, action, current, desired, denied)
            if isinstance(let, Allowance):
                allowances.append(let)
            else:
                why = f"{finding.reason}; {let}" if let else finding.reason
                blocks.append(Block(finding, why, f"allow it with --allow {finding.hazard.value}"))
    protocols = tuple(compat.changes(plan, current).items())
    rehearsed = None if rehearsals is None else tuple(rehearsals)
    stale = team_policy.stale_allows(plan, desired)
    return Assessment(findings, probes, allow, tuple(blocks), protocols, rehearsed, tuple(allowances), stale)


def with_rules(plan: Plan, assessment: Assessment, results: Sequence[team_policy.RuleResult]) -> Assessment:
    """The assessment with the findings of the team's Python rules: an `error` blocks (never allowable), a
    `warning` is shown."""
    if not results:
        return assessment
    origins = {i: action_origin(a) for i, a in enumerate(plan.actions)}
    found = team_policy.rule_findings(plan, results, origins)
    blocks = tuple(
        Block(f, f"{f.reason} (rule {r.rule})", team_policy.rule_unblock(r.rule))
        for f, r in found
        if r.severity == "error"
    )
    findings = assessment.findings + tuple(f for f, _r in found)
    return replace(assessment, findings=findings, blocks=assessment.blocks + blocks)


def _let_through(
    finding: Finding, action: Action, current: CatalogState, desired: CatalogState | None, denied: frozenset[str]
) -> Allowance | str:
    """What lets an allowable finding through that --allow does not: its spec's named allows, else the
    environment's safe_below: for a small table; else why not ('' when nothing names it). A class the
    environment denies is let through by nothing."""
    if finding.hazard.value in denied:
        return ""
    named = team_policy.allowed_by(finding, action, desired)
    if isinstance(named, tuple):
        return team_policy.allowance(finding, named)
    safe = team_policy.safe_allowance(finding, current, desired.policy if desired is not None else None)
    return safe if safe is not None else named


def _located(plan: Plan, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """A finding whose own action has no spec line (a live view it breaks, a statement of a rehearsal) takes
    the line of the first change of its table that has one: the change it is about."""
    lines: dict[TableName, Origin] = {}
    for action in plan.actions:
        origin = action_origin(action)
        # A broken view's line is the view's spec, not its table's change.
        if origin is not None and not isinstance(action, CreateSchema | BreaksView):
            lines.setdefault(action.name, origin)
    return tuple(
        f if f.origin is not None or f.table not in lines else replace(f, origin=lines[f.table]) for f in findings
    )


def _compatibility(plan: Plan, problem: compat.Problem) -> Finding:
    """A declared engine's problem, at the line of the column that needs the feature when an added column does
    (and under that column's line)."""
    action = plan.actions[problem.index]
    column = next((c for c in (needing(action, f) for f in problem.added) if c is not None), None)
    if not isinstance(action, AddColumns) or column is None:
        return Finding(problem.index, problem.table, Hazard.COMPATIBILITY, problem.reason, action_origin(action))
    subject = column.name.rsplit(".", 1)[-1] if action.parent else column.name
    origin = column.origin or action_origin(action)
    return Finding(problem.index, problem.table, Hazard.COMPATIBILITY, problem.reason, origin, None, subject)


def _on(action: Action, table: TableName) -> bool:
    return not isinstance(action, CreateSchema) and action.name == table


REHEARSAL_DIFFERS = (
    "report it with the output of `delta-sync plan --format json --rehearse`; plan and apply without --rehearse "
    "are unchanged, and apply's own check after the statements would report the same difference"
)


REHEARSAL_UNBLOCK = (
    "change the spec so that Delta accepts the statement (the rehearsal ran on a clone: the table is unchanged)"
)


def _rehearsal_findings(plan: Plan, rehearsals: Iterable[Rehearsal]) -> list[Finding]:
    """A failed rehearsal, on the action whose statement Delta refused (else the table's first action)."""
    found = []
    for rehearsed in rehearsals:
        if rehearsed.outcome is not Outcome.FAILED:
            continue
        index = rehearsed.index
        if index is None:
            index = next((i for i, a in enumerate(plan.actions) if _on(a, rehearsed.table)), None)
        if index is None:
            continue
        reason = f"{rehearsed.failure()} (rehearsed on a shallow clone of the table)"
        found.append(Finding(index, rehearsed.table, Hazard.REHEARSAL, reason, action_origin(plan.actions[index])))
    return found


def _with_count(finding: Finding, probes: tuple[ProbeResult, ...]) -> Finding:
    """A backfill's finding with the number of rows it updates, once its probe counted them."""
    if finding.hazard is not Hazard.REWRITE or finding.check is None:
        return finding
    result = next((p for p in probes if p.table == finding.table and p.check == finding.check), None)
    if result is None or result.violations is None:
        return finding
    return replace(finding, reason=f"{finding.reason}; {row_count(result.violations)} to update")


def _rows(violations: int, verb: str = "violate") -> str:
    return f"1 row {verb}s" if violations == 1 else f"{violations} rows {verb}"


def _data_block(finding: Finding, action: Action, violations: int, plan: Plan) -> Block:
    """What existing rows that break a new rule or key block, and how to unblock it."""
    fix = f'fix those rows first (delta-sync sql "UPDATE {finding.table} ..." or "DELETE FROM {finding.table} ...")'
    if isinstance(action, AddPrimaryKey):
        what = "1 key value repeats or is NULL" if violations == 1 else f"{violations} key values repeat or are NULL"
        return Block(finding, f"will fail: {what} in `{action.key.name}`", f"{fix}, or change the key")
    if isinstance(action, AddForeignKey):
        rows = "1 row has" if violations == 1 else f"{violations} rows have"
        parent = f"no parent row in {action.key.table}"
        return Block(finding, f"will fail: {rows} {parent} for `{action.key.name}`", f"{fix}, or change the key")
    if isinstance(action, RewriteTable):
        conversion = next((c for c in action.conversions if cast_rule(c.column).name == finding.check), None)
        if conversion is not None:
            what = f"{_rows(violations, 'hold')} a `{conversion.column}` that does not convert to {conversion.after}"
            return Block(
                finding,
                f"will fail: {what} ({conversion.expression} gives NULL)",
                "fix those rows first, or give the column a `using:` expression that converts them "
                "(e.g. using: TRY_CAST(...) keeps them as NULL)",
            )
        return Block(
            finding,
            f"will fail: {_rows(violations)} `{finding.check}` once converted",
            "fix those rows first, change the rule, or the column's `using:`",
        )
    column = not_null_column(action.check) if isinstance(action, AddCheck) else None
    fill = next(
        (
            a
            for a in plan.actions
            if isinstance(a, Backfill)
            and a.name == finding.table
            and column is not None
            and a.column.lower() == column.lower()
        ),
        None,
    )
    if fill is not None:
        return Block(
            finding,
            f"will fail: the backfill of `{fill.column}` ({fill.expression}) is NULL for {row_count(violations)}",
            "change `backfill:` so that it gives every row a value, or fix those rows first",
        )
    rows = f"{violations} rows violate" if violations != 1 else "1 row violates"
    rule = action.check.name if isinstance(action, AddCheck) else finding.check
    return Block(
        finding,
        f"will fail: {rows} `{rule}`",
        f'fix those rows first (delta-sync sql "UPDATE {finding.table} ..."), or change the rule',
    )
