"""Plans -> the rich, Terraform-like text diff: a header per table and its actions' lines, each hazard and
data check under the line it is about (a blocked check with sample rows of its violations), the unmanaged
names, the summary line; `THEME` styles it, and `plain_text` renders it without a terminal."""

from __future__ import annotations

from collections.abc import Collection

from rich.console import Console, Group, RenderableType
from rich.text import Text
from rich.theme import Theme

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import TableName
from delta_sync.planning.actions import (
    Action,
    CreateSchema,
    CreateTable,
    CreateView,
    DropTable,
    Notice,
    Plan,
    RemoveTable,
    RestoreTable,
    Unsupported,
)
from delta_sync.planning.hazard_rules import human_bytes
from delta_sync.planning.hazards import (
    ALLOWABLE,
    BY_CONSTANT_BACKFILL,
    CHECKED_BY_CONSTRAINT,
    Assessment,
    Finding,
    Hazard,
)
from delta_sync.planning.rehearsal import Outcome
from delta_sync.planning.team_policy import stale_text
from delta_sync.render.actions import _action_lines, _is_replaced_drop, _line, _lines_with_subjects
from delta_sync.render.counts import objects_match, unmanaged_text, unordered_text
from delta_sync.sql.literals import table_lines

THEME = Theme(
    {
        "ds.create": "green",
        "ds.change": "yellow",
        "ds.remove": "red",
        "ds.blocked": "bold red",
        "ds.muted": "dim",
        "ds.table": "bold",
        "ds.ok": "green",
    }
)


def _finding_lines(finding: Finding, assessment: Assessment) -> list[Text]:
    where = f"  ({finding.origin})" if finding.origin else ""
    # The size of the table the check scans or the backfill updates, beside it.
    where = (f"  [table: {human_bytes(finding.size_bytes)}]" if finding.size_bytes is not None else "") + where
    block = assessment.block_for(finding)
    if block is not None:
        first = Text("      ")
        first.append(f"! blocked ({finding.hazard.value}): ", style="ds.blocked")
        first.append(f"{block.why}{where}")
        lines = [first]
        action_probe = _probe_for(finding, assessment)
        if action_probe is not None and action_probe.samples:
            lines.append(Text("        sample rows:", style="ds.muted"))
            lines.extend(Text(f"          {row}", style="ds.muted") for row in table_lines(action_probe.samples))
        fix = Text("        ")
        fix.append("-> ", style="ds.muted")
        fix.append(block.unblock)
        lines.append(fix)
        return lines
    line = Text("      ")
    if finding.hazard is Hazard.DATA_DEPENDENT:
        result = _probe_for(finding, assessment)
        if result is not None and result.violations == 0:
            line.append("✓ data-dependent: ", style="ds.ok")
            if result.source == BY_CONSTANT_BACKFILL:
                line.append("✓ data-dependent: ", style="ds.ok")
                line.append(f"the backfill is a constant: no row is left NULL{where}")
                return [line]
            how = "checked in Delta's statistics" if result.source == "statistics" else "checked"
            line.append(f"{how}: no existing row violates it{where}")
            return [line]
        if result is not None and result.source == CHECKED_BY_CONSTRAINT:
            line.append("• data-dependent: ", style="ds.ok")
            line.append(
                f"checked by its own ADD CONSTRAINT, first: a violation stops apply before other changes{where}"
            )
            return [line]
        skipped = f"not checked ({result.skipped})" if result is not None and result.skipped else finding.reason
        line.append("⚠ data-dependent: ", style="ds.change")
        line.append(f"{skipped}{where}")
        return [line]
    if finding.hazard is Hazard.RULE:
        line.append(f"⚠ rule {finding.check} (warning): ", style="ds.change")
        line.append(f"{finding.reason}{where}")
        return [line]
    let = assessment.allowance(finding)
    by = "" if let is None else f" by {let.by}" + (f" at {let.origin}" if let.origin is not None else "")
    line.append(f"⚠ {finding.hazard.value} (allowed{by}): ", style="ds.change")
    line.append(f"{finding.reason}{where}")
    return [line]


def _probe_for(finding: Finding, assessment: Assessment) -> ProbeResult | None:
    return assessment.probe(finding.table, finding.check) if finding.check is not None else None


def plain_text(renderable: RenderableType, width: int = 120) -> str:
    """A rendering as plain text (no colors, no terminal needed): for logs, notebooks and tests."""
    console = Console(width=width, color_system=None, theme=THEME, highlight=False, soft_wrap=True)
    with console.capture() as captured:
        console.print(renderable)
    return captured.get()


def render_text(plan: Plan, assessment: Assessment | None = None, views: Collection[TableName] = ()) -> RenderableType:
    """`views`: which of the plan's names are views (views_of), for the summary's counts."""
    parts: list[RenderableType] = []
    for action in plan.actions:
        if isinstance(action, CreateSchema):
            parts.append(_line("+", "ds.create", f"create schema {action.schema}", indent=0))
    for name in plan.tables:
        actions = plan.actions_for(name)
        if not actions:
            continue
        if all(isinstance(a, Notice) for a in actions):
            parts.append(_line("#", "ds.muted", f"{name}: no changes", indent=0))
            parts.extend(line for a in actions for line in _action_lines(a))
            continue
        blocked = assessment is not None and name in assessment.blocked_tables
        parts.append(_table_header(name, actions, blocked))
        change = assessment.protocol_change(name) if assessment is not None else None
        if change is not None and change.notable:
            parts.append(_line("#", "ds.muted", f"protocol: {change.text()}"))
        rehearsed = assessment.rehearsal(name) if assessment is not None else None
        if rehearsed is not None:
            style = "ds.blocked" if rehearsed.outcome is Outcome.FAILED else "ds.muted"
            parts.append(_line("#", style, f"rehearsal: {rehearsed.text()}"))
        for index, action in enumerate(plan.actions):
            if isinstance(action, CreateSchema) or action.name != name:
                continue
            findings = [
                f for f in (assessment.for_action(index) if assessment else ()) if f.hazard is not Hazard.UNSUPPORTED
            ]
            placed: set[int] = set()
            if not _is_replaced_drop(action, actions):
                for line, subject in _lines_with_subjects(action, actions):
                    parts.append(line)
                    for i, finding in enumerate(findings):
                        if subject is not None and finding.subject == subject and assessment is not None:
                            parts.extend(_finding_lines(finding, assessment))
                            placed.add(i)
            if assessment is not None:
                for i, finding in enumerate(findings):
                    if i not in placed:
                        parts.extend(_finding_lines(finding, assessment))
    if plan.unmanaged:
        parts.append(_line("#", "ds.muted", unmanaged_text(plan.unmanaged), indent=0))
    if plan.unordered:
        parts.append(_line("#", "ds.muted", unordered_text(plan.unordered), indent=0))
    for table, allow in assessment.stale_allows if assessment is not None else ():
        parts.append(_line("#", "ds.change", f"{table}: {stale_text(allow)}", indent=0))
    parts.append(render_summary(plan, assessment, views))
    return Group(*parts)


def _table_header(name: TableName, actions: tuple[Action, ...], blocked: bool = False) -> Text:
    if blocked or any(isinstance(a, Unsupported) for a in actions):
        mark, style, verb = "!", "ds.blocked", "blocked"
    elif any(isinstance(a, CreateTable) for a in actions):
        mark, style, verb = "+", "ds.create", "create table"
    elif any(isinstance(a, CreateView) and not a.replacing for a in actions):
        mark, style, verb = "+", "ds.create", "create view"
    elif any(isinstance(a, CreateView) for a in actions):
        mark, style, verb = "~", "ds.change", "replace view"
    elif any(isinstance(a, DropTable) for a in actions):
        mark, style, verb = "-", "ds.remove", "drop table"
    elif any(isinstance(a, RemoveTable) for a in actions):
        mark, style, verb = (
            "-",
            "ds.remove",
            "drop view" if any(isinstance(a, RemoveTable) and a.view for a in actions) else "drop table",
        )
    elif any(isinstance(a, RestoreTable) for a in actions):
        mark, style, verb = "~", "ds.change", "restore table"
    else:
        mark, style, verb = "~", "ds.change", "change table"
    origin = next((a.table.origin for a in actions if isinstance(a, CreateTable)), None)
    origin = origin or next((a.view.origin for a in actions if isinstance(a, CreateView)), None)
    line = Text()
    line.append(f"{mark} {verb} ", style=style)
    line.append(str(name), style="ds.table")
    if origin is not None:
        line.append(f"  ({origin.file})", style="ds.muted")
    return line


def render_summary(plan: Plan, assessment: Assessment | None = None, views: Collection[TableName] = ()) -> Text:
    if plan.is_empty:
        shown = set(views) & set(plan.tables)
        counts = objects_match(len(plan.tables) - len(shown), len(shown), "the specs")
        return Text(f"No changes. {counts}.", style="ds.ok")
    blocked_tables = assessment.blocked_tables if assessment is not None else frozenset()
    blocked = bool(plan.blocked or blocked_tables)
    text = Text(f"Plan: {plan.summary_with(blocked_tables)}.", style="ds.blocked" if blocked else "ds.table")
    if assessment is not None:
        flags = sorted({b.finding.hazard.value for b in assessment.blocks if b.finding.hazard in ALLOWABLE})
        if flags:
            text.append(f" To allow: --allow {','.join(flags)}.", style="ds.blocked")
        if any(p.skipped == "--no-probes" for p in assessment.probes):
            text.append(" Data checks skipped (--no-probes): new rules may still fail on existing rows.")
    return text
