"""Plans -> the SQL script of `--format sql`: the statements as they will run, each table's under a
comment naming it, what is blocked kept as comments so that the script never runs it."""

from __future__ import annotations

from delta_sync.planning import ddl
from delta_sync.planning.actions import CreateSchema, Notice, Plan, Unsupported
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.render.counts import _blocked


def render_sql(plan: Plan, assessment: Assessment | None = None, plan_id: str | None = None) -> str:
    """The statements as they will run, each table's under a comment naming it; blocked items as comments."""
    blocked = _blocked(assessment)
    lines = [f"-- delta-sync plan{f' {plan_id}' if plan_id else ''}: {plan.summary_with(blocked)}"]
    current = None
    for action in plan.actions:
        if isinstance(action, Notice):
            continue
        name = None if isinstance(action, CreateSchema) else action.name
        table = str(action.schema) if isinstance(action, CreateSchema) else str(action.name)
        if table != current:
            lines += ["", f"-- {table}" + (": BLOCKED, not applied" if name in blocked else "")]
            current = table
            for block in assessment.blocks if assessment is not None else ():
                if block.finding.table == name and block.finding.hazard is not Hazard.UNSUPPORTED:
                    lines.append(f"-- BLOCKED ({block.finding.hazard.value}): {block.why}. Fix: {block.unblock}")
        if isinstance(action, Unsupported):
            lines.append(f"-- BLOCKED: {action.reason}. Fix: {action.remedy}")
        # A blocked table's statements will not run; keep them visible but not runnable.
        prefix = "-- " if name in blocked else ""
        lines.extend(f"{prefix}{sql};".replace("\n", f"\n{prefix}") for sql in ddl.to_sql(action))
    return "\n".join(lines) + "\n"
