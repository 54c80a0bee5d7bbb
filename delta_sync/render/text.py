"""Plans -> text (rich, Terraform-like) and JSON. Pure functions of the plan."""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any, assert_never

from rich.console import Console, Group, RenderableType
from rich.text import Text
from rich.theme import Theme

from delta_sync.model import keys
from delta_sync.model.state import CatalogState, Column, ForeignKey, PrimaryKey, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
    TABLE_COMMENT_KEY,
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    BreaksView,
    ClusterBy,
    CreateSchema,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumns,
    DropFeature,
    DropForeignKey,
    DropNotNull,
    DropPrimaryKey,
    DropTable,
    EnableFeature,
    Notice,
    Plan,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RestoreTable,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)
from delta_sync.planning.hazards import (
    ALLOWABLE,
    BY_CONSTANT_BACKFILL,
    CHECKED_BY_CONSTRAINT,
    Assessment,
    Block,
    Finding,
    Hazard,
    ProbeResult,
    human_bytes,
)
from delta_sync.planning.planner import NOT_NULL_PREFIX
from delta_sync.planning.rehearsal import Outcome
from delta_sync.sql import queries as viewsql
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


def _value(value: str | None) -> str:
    return "(none)" if value is None else repr(value) if "\n" in value else f'"{value}"'


def _comment(text: str) -> str:
    return repr(text) if "\n" in text or "\r" in text else text


def _prefix(parent: tuple[str, ...]) -> str:
    return "".join(f"{part}." for part in parent)


def _line(mark: str, style: str, text: str, indent: int = 4) -> Text:
    line = Text(" " * indent)
    line.append(f"{mark} ", style=style)
    line.append(text)
    return line


def _column_text(col: Column) -> str:
    text = f"{col.name} {col.type}" + ("" if col.nullable else " NOT NULL")
    if col.generated is not None:
        text += f" GENERATED AS ({col.generated})"
    if col.identity is not None:
        kind = "ALWAYS" if col.identity.always else "BY DEFAULT"
        text += f" IDENTITY {kind} (start {col.identity.start}, step {col.identity.step})"
    if col.default is not None:
        text += f" DEFAULT {col.default}"
    return text + (f"  -- {_comment(col.comment)}" if col.comment else "")


def _create_lines(action: CreateTable) -> list[Text]:
    table = action.table
    lines = [_line("+", "ds.create", _column_text(col)) for col in table.columns]
    if table.partitioned_by:
        lines.append(_line("+", "ds.create", f"partitioned by ({', '.join(table.partitioned_by)})"))
    if table.clustered_by:
        lines.append(_line("+", "ds.create", f"clustered by ({', '.join(table.clustered_by)})"))
    if table.location is not None:
        lines.append(_line("+", "ds.create", f"location {table.location}  (external table)"))
    if table.comment is not None:
        lines.append(_line("+", "ds.create", f"comment {_value(table.comment)}"))
    lines.extend(_line("+", "ds.create", f"property {k} = {_value(v)}") for k, v in table.properties)
    return lines


def _key_columns(key: PrimaryKey | ForeignKey) -> str:
    text = f"({', '.join(key.columns)})"
    if isinstance(key, ForeignKey):
        text += f" -> {key.table} ({', '.join(key.references)})"
    return text


def _key_kind(key: PrimaryKey | ForeignKey) -> str:
    return "primary key" if isinstance(key, PrimaryKey) else "foreign key"


def _kept(action: AddPrimaryKey | AddForeignKey) -> str:
    if action.as_constraint:
        return "as an informational constraint"
    key = action.key
    where = keys.PRIMARY_KEY_PROPERTY if isinstance(key, PrimaryKey) else keys.foreign_key_property(key)
    return f"kept in table property {where}: open-source Delta refuses key constraints"


def _dropped_key(action: Action, actions: tuple[Action, ...]) -> PrimaryKey | ForeignKey | None:
    """The key an added key replaces on the same table: the primary key, or the foreign key of that name."""
    if isinstance(action, AddPrimaryKey):
        return next((a.key for a in actions if isinstance(a, DropPrimaryKey) and a.name == action.name), None)
    if isinstance(action, AddForeignKey):
        return next(
            (
                a.key
                for a in actions
                if isinstance(a, DropForeignKey) and a.name == action.name and a.key.name == action.key.name
            ),
            None,
        )
    return None


def _key_lines(action: AddPrimaryKey | AddForeignKey, actions: tuple[Action, ...]) -> list[Text]:
    key, kind = action.key, _key_kind(action.key)
    before = _dropped_key(action, actions)
    if before is None:
        return [_line("+", "ds.create", f"{kind} {key.name} {_key_columns(key)}  -- {_kept(action)}")]
    if isinstance(key, ForeignKey) and isinstance(before, ForeignKey) and keys.same_foreign_key(before, key):
        why = f"dropped and re-added unchanged around the change of {key.table}'s primary key"
        return [_line("~", "ds.change", f"{kind} {key.name}: {why}")]
    names = key.name if before.name == key.name else f"{before.name} -> {key.name}"
    # A foreign key's columns already read `(a) -> parent (b)`: a second arrow would not tell before from after.
    change = " -> " if isinstance(key, PrimaryKey) else ", now "
    return [_line("~", "ds.change", f"{kind} {names}: {_key_columns(before)}{change}{_key_columns(key)}")]


def _action_lines(action: Action, actions: tuple[Action, ...] = ()) -> list[Text]:
    """An action's lines; `actions` (the plan's) pair a dropped key with the key that replaces it."""
    match action:
        case CreateSchema() | CreateTable():
            return _create_lines(action) if isinstance(action, CreateTable) else []
        case AddColumns():
            prefix = _prefix(action.parent)
            return [_line("+", "ds.create", f"column {prefix}{_column_text(c)}") for c in action.columns]
        case EnableFeature():
            text = f"enable {action.key} = {_value(action.value)}  ({action.reason}; cannot be undone simply)"
            return [_line("+", "ds.change", text)]
        case RenameColumn():
            return [_line("~", "ds.change", f"rename column {action.before} -> {action.after}")]
        case DropColumns():
            prefix = _prefix(action.parent)
            return [_line("-", "ds.remove", f"column {prefix}{c.name} {c.type}") for c in action.columns]
        case AlterColumnType():
            change = f"{action.before} -> {action.after}"
            return [_line("~", "ds.change", f"column {_prefix(action.parent)}{action.column} type: {change}")]
        case DropNotNull():
            return [_line("~", "ds.change", f"column {_prefix(action.parent)}{action.column}: NOT NULL -> nullable")]
        case SetDefault():
            before, after = action.before or "(none)", action.after or "(none)"
            return [_line("~", "ds.change", f"column {action.column} default: {before} -> {after}")]
        case UnsetProperties():
            return [_line("-", "ds.remove", f"property {k} (was {_value(v)})") for k, v in action.removed]
        case ClusterBy():
            before = ", ".join(action.before) or "none"
            after = ", ".join(action.after) or "none"
            return [_line("~", "ds.change", f"clustered by: ({before}) -> ({after})")]
        case Notice():
            return [_line("#", "ds.muted", action.message)]
        case SetColumnComment():
            change = f"{_value(action.before)} -> {_value(action.after)}"
            text = f"column {_prefix(action.parent)}{action.column} comment: {change}"
            return [_line("~", "ds.change", text)]
        case SetTableComment():
            return [_line("~", "ds.change", f"comment: {_value(action.before)} -> {_value(action.after)}")]
        case SetProperties():
            return [
                _line("~", "ds.change", f"comment: {_value(c.before)} -> {_value(c.after)}")
                if c.key == TABLE_COMMENT_KEY
                else _line("+", "ds.create", f"property {c.key} = {_value(c.after)}")
                if c.before is None
                else _line("~", "ds.change", f"property {c.key}: {_value(c.before)} -> {_value(c.after)}")
                for c in action.changes
            ]
        case AddCheck():
            if action.moved_for is not None:
                return [_line("~", "ds.change", f"check {action.check.name}: {action.moved_for}")]
            if action.replaces is not None:
                change = f"{action.replaces.expression} -> {action.check.expression}"
                return [_line("~", "ds.change", f"check {action.check.name}: {change}")]
            note = "  (enforces NOT NULL)" if action.check.name.startswith(NOT_NULL_PREFIX) else ""
            return [_line("+", "ds.create", f"check {action.check.name}: {action.check.expression}{note}")]
        case DropCheck():
            return [_line("-", "ds.remove", f"check {action.check.name}: {action.check.expression}")]
        case AddPrimaryKey() | AddForeignKey():
            return _key_lines(action, actions)
        case DropPrimaryKey() | DropForeignKey():
            key = action.key
            return [_line("-", "ds.remove", f"{_key_kind(key)} {key.name} {_key_columns(key)}")]
        case Backfill():
            text = f"column {action.column}: backfill rows where it is NULL with {action.expression}"
            return [_line("~", "ds.change", text)]
        case RewriteTable():
            return _rewrite_lines(action)
        case RestoreTable():
            undone = _versions(action.undoes)
            text = f"restore to version {action.version} (undoes {undone}, plan {action.plan_id})"
            return [_line("~", "ds.change", text), *(_line(" ", "ds.change", c, indent=6) for c in action.changes)]
        case DropTable():
            return [_line("-", "ds.remove", f"drop the table (plan {action.plan_id} created it)")]
        case RenameTable():
            return [_line("~", "ds.change", f"rename table {action.before} -> {action.name}")]
        case RemoveTable():
            return [_line("-", "ds.remove", _removal_text(action))]
        case CreateView():
            return _view_lines(action)
        case BreaksView():
            where = f" ({action.origin})" if action.origin else " (not in the specs)"
            then = "; the plan re-creates it from its spec after this change" if action.replaced else ""
            return [_line("!", "ds.blocked", f"view {action.view}{where} stops working: {action.error}{then}")]
        case DropFeature():
            return [_line("-", "ds.remove", f"drop feature {action.feature} ({action.reason})")]
        case Unsupported():
            where = f"  ({action.origin})" if action.origin else ""
            blocked = _line("!", "ds.blocked", f"{action.reason}{where}")
            fix = Text("        ")
            fix.append("fix: ", style="ds.muted")
            fix.append(action.remedy)
            return [blocked, fix]
        case _:
            assert_never(action)


def _view_lines(action: CreateView) -> list[Text]:
    view, before = action.view, action.before
    if not action.replacing:
        lines = [_line("+", "ds.create", f"sql: {viewsql.one_line(view.sql)}")]
        if view.comment is not None:
            lines.append(_line("+", "ds.create", f"comment {_value(view.comment)}"))
        for column in view.columns or ():
            text = f"column {column.name}" + (f" comment {_value(column.comment)}" if column.comment else "")
            lines.append(_line("+", "ds.create", text))
        return lines
    lines = []
    if before is not None and viewsql.normalize(before.sql) != viewsql.normalize(view.sql):
        lines.append(_line("-", "ds.remove", f"sql: {viewsql.one_line(before.sql)}"))
        lines.append(_line("+", "ds.create", f"sql: {viewsql.one_line(view.sql)}"))
    lines.extend(_line("~", "ds.change", reason) for reason in action.reasons)
    return lines


def _removal_text(action: RemoveTable) -> str:
    kind = "view" if action.view else "table"
    why = f"tombstone {action.origin}" if action.origin else "no spec names it, strict: true"
    if action.location is not None:
        return f"drop the {kind} ({why}); its files at {action.location} stay"
    if action.num_files is not None:
        size = f", {human_bytes(action.size_bytes)}" if action.size_bytes is not None else ""
        return f"drop the {kind} ({why}) with its {action.num_files} data file(s){size}"
    return f"drop the {kind} ({why})"


def action_lines(action: Action) -> list[str]:
    """An action as `plan` shows it, one plain line each (no color)."""
    return [line.plain.strip() for line in _action_lines(action)]


def _versions(versions: tuple[int, ...]) -> str:
    if not versions:
        return "no version"
    if len(versions) == 1:
        return f"version {versions[0]}"
    if list(versions) == list(range(versions[0], versions[-1] + 1)):
        return f"versions {versions[0]}-{versions[-1]}"
    return "versions " + ", ".join(str(v) for v in versions)


def _rewrite_lines(action: RewriteTable) -> list[Text]:
    restore = f", restore point version {action.restore_version}" if action.restore_version is not None else ""
    lines = [_line("~", "ds.change", f"rewrite the table: one REPLACE TABLE ... AS SELECT{restore}")]
    for conversion in action.conversions:
        change = f"{conversion.before} -> {conversion.after} as {conversion.expression}"
        lines.append(_line("~", "ds.change", f"column {conversion.column} type: {change}", indent=6))
    layout = ", ".join(action.partitioned_by or action.clustered_by) or "none"
    kind = "partitioned by" if action.partitioned_by else "clustered by" if action.clustered_by else "layout"
    lines.append(_line(" ", "ds.muted", f"{kind}: ({layout})", indent=6))
    kept = ", ".join(c.name for c in action.checks) or "none"
    lines.append(_line(" ", "ds.muted", f"keeps every row, its properties, comment and checks ({kept})", indent=6))
    return lines


def _is_replaced_drop(action: Action, actions: tuple[Action, ...]) -> bool:
    """A drop shown on the line of what replaces it."""
    if isinstance(action, DropPrimaryKey | DropForeignKey):
        return any(
            a.name == action.name and _dropped_key(a, actions) == action.key
            for a in actions
            if not isinstance(a, CreateSchema)
        )
    return isinstance(action, DropCheck) and any(
        isinstance(a, AddCheck) and a.replaces == action.check and a.name == action.name for a in actions
    )


def _lines_with_subjects(action: Action, actions: tuple[Action, ...] = ()) -> list[tuple[Text, str | None]]:
    """An action's lines, each with the part of the action it shows (a property key), if any."""
    lines = _action_lines(action, actions)
    if isinstance(action, SetProperties):
        return list(zip(lines, (c.key for c in action.changes), strict=True))
    return [(line, None) for line in lines]


def _finding_lines(finding: Finding, assessment: Assessment) -> list[Text]:
    where = f"  ({finding.origin})" if finding.origin else ""
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
    line.append(f"⚠ {finding.hazard.value} (allowed): ", style="ds.change")
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
    parts.append(render_summary(plan, assessment, views))
    return Group(*parts)


def unmanaged_text(names: tuple[TableName, ...]) -> str:
    """Information only: what the specs' schemas hold that no spec names (`strict: true` drops them)."""
    return f"not in any spec ({len(names)}): {', '.join(str(n) for n in names)}  (strict: true would drop them)"


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


def views_of(plan: Plan, desired: CatalogState) -> frozenset[TableName]:
    """Which of the plan's names are views. Neither a plan nor a saved plan's desired state records them, but
    every table a plan keeps is one of `desired`'s tables, and a table it drops or restores has an action that
    only tables have; a view it leaves alone has no action at all."""
    tables = {a.name for a in plan.actions if not isinstance(a, CreateSchema) and not _about_a_view(a)}
    return frozenset(set(plan.tables) - set(desired.tables) - tables)


def views_changed(actions: Collection[Action]) -> frozenset[TableName]:
    """The views that `actions` create, replace or drop: the views among the names of a plan's statements."""
    return frozenset(a.name for a in actions if isinstance(a, CreateView | RemoveTable) and _about_a_view(a))


def _about_a_view(action: Action) -> bool:
    return isinstance(action, CreateView | BreaksView) or (isinstance(action, RemoveTable) and action.view)


def objects(tables: int, views: int = 0) -> str:
    """A count of a plan's tables and views: `4 table(s)` when there is no view (the words scripts may
    read), else `2 table(s) and 1 view`, or `2 views`."""
    if not views:
        return f"{tables} table(s)"
    counted = f"{views} view{'' if views == 1 else 's'}"
    return f"{tables} table(s) and {counted}" if tables else counted


def objects_of(names: Collection[str | TableName], views: Collection[TableName]) -> str:
    """`objects` of the distinct `names` (a plan's, or the tables its statements name), `views` among them."""
    named = {str(n) for n in names}
    viewed = named & {str(v) for v in views}
    return objects(len(named) - len(viewed), len(viewed))


def objects_match(tables: int, views: int, what: str) -> str:
    """`4 table(s) match the specs`, `2 table(s) and 1 view match the specs`, `1 view matches the specs`."""
    verb = "matches" if (tables, views) == (0, 1) else "match"
    return f"{objects(tables, views)} {verb} {what}"


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


def _column_json(c: Column) -> dict[str, Any]:
    data: dict[str, Any] = {"name": c.name, "type": c.type, "nullable": c.nullable, "comment": c.comment}
    if c.default is not None:
        data["default"] = c.default
    if c.generated is not None:
        data["generated"] = c.generated
    if c.identity is not None:
        data["identity"] = {"start": c.identity.start, "step": c.identity.step, "always": c.identity.always}
    return data


def action_json(action: Action) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": type(action).__name__}
    if isinstance(action, CreateSchema):
        data["schema"] = str(action.schema)
    else:
        data["table"] = str(action.name)
    match action:
        case CreateTable():
            t = action.table
            data["columns"] = [_column_json(c) for c in t.columns]
            data.update(
                comment=t.comment,
                partitioned_by=list(t.partitioned_by),
                clustered_by=list(t.clustered_by),
                properties=dict(t.properties),
            )
        case AddColumns() | DropColumns():
            data["columns"] = [_column_json(c) for c in action.columns]
            if isinstance(action, DropColumns) and action.values is not None:
                data.update(values=action.values, written_by=list(action.written_by))
            data["parent"] = list(action.parent)
        case EnableFeature():
            data.update(key=action.key, value=action.value, reason=action.reason)
        case RenameColumn():
            data.update(before=action.before, after=action.after)
        case AlterColumnType():
            data.update(column=action.column, parent=list(action.parent), before=action.before, after=action.after)
        case SetDefault():
            data.update(column=action.column, before=action.before, after=action.after)
        case DropNotNull():
            data.update(column=action.column, parent=list(action.parent))
        case UnsetProperties():
            data["removed"] = [{"key": k, "before": v} for k, v in action.removed]
        case ClusterBy():
            data.update(before=list(action.before), after=list(action.after))
        case Notice():
            data.update(subject=action.subject, message=action.message)
        case SetColumnComment():
            data.update(column=action.column, parent=list(action.parent), before=action.before, after=action.after)
        case SetTableComment():
            data.update(before=action.before, after=action.after)
        case SetProperties():
            data["changes"] = [{"key": c.key, "before": c.before, "after": c.after} for c in action.changes]
        case AddCheck():
            data.update(check=action.check.name, expression=action.check.expression)
            if action.replaces is not None:
                data["replaces"] = action.replaces.expression
            if action.moved_for is not None:
                data["moved_for"] = action.moved_for
        case DropCheck():
            data.update(check=action.check.name, expression=action.check.expression)
        case AddPrimaryKey() | DropPrimaryKey() | AddForeignKey() | DropForeignKey():
            data.update(_key_json(action.key), as_constraint=action.as_constraint)
        case Backfill():
            data.update(column=action.column, expression=action.expression, type=action.type)
        case RewriteTable():
            data.update(
                conversions=[
                    {"column": c.column, "before": c.before, "after": c.after, "expression": c.expression}
                    for c in action.conversions
                ],
                partitioned_by=list(action.partitioned_by),
                clustered_by=list(action.clustered_by),
                checks=[c.name for c in action.checks],
                reasons=list(action.reasons),
                restore_version=action.restore_version,
                num_files=action.num_files,
                size_bytes=action.size_bytes,
            )
        case RestoreTable():
            data.update(version=action.version, plan_id=action.plan_id, undoes=list(action.undoes))
            data.update(changes=list(action.changes))
        case DropTable():
            data.update(plan_id=action.plan_id, written_by=list(action.written_by))
        case RenameTable():
            data.update(before=str(action.before))
        case RemoveTable():
            data.update(
                view=action.view, num_files=action.num_files, size_bytes=action.size_bytes, location=action.location
            )
        case CreateView():
            view = action.view
            columns = None if view.columns is None else [{"name": c.name, "comment": c.comment} for c in view.columns]
            data.update(sql=view.sql, comment=view.comment, columns=columns, depth=action.depth)
            data.update(replace=action.replacing, reasons=list(action.reasons))
            if action.before is not None:
                data["before_sql"] = action.before.sql
        case BreaksView():
            data.update(view=str(action.view), error=action.error, replaced=action.replaced)
        case DropFeature():
            data.update(feature=action.feature, reason=action.reason)
        case Unsupported():
            data.update(subject=action.subject, reason=action.reason, remedy=action.remedy)
        case CreateSchema():
            pass
        case _:
            assert_never(action)
    origin = getattr(action, "origin", None) or (action.table.origin if isinstance(action, CreateTable) else None)
    if isinstance(action, CreateView):
        origin = action.view.origin
    if isinstance(action, AddPrimaryKey | DropPrimaryKey | AddForeignKey | DropForeignKey):
        origin = action.key.origin
    if origin is not None:
        data["origin"] = {"file": origin.file, "line": origin.line}
    data["sql"] = list(ddl.to_sql(action))
    return data


def _key_json(key: PrimaryKey | ForeignKey) -> dict[str, Any]:
    """The key as declared, and the table property that keeps it (written in either mode)."""
    if isinstance(key, PrimaryKey):
        return {"key": key.name, "columns": list(key.columns), "property": keys.PRIMARY_KEY_PROPERTY}
    return {
        "key": key.name,
        "columns": list(key.columns),
        "references": {"table": str(key.table), "columns": list(key.references)},
        "property": keys.foreign_key_property(key),
    }


def plan_json(plan: Plan, assessment: Assessment | None = None) -> dict[str, Any]:
    summary = plan.summary_with(assessment.blocked_tables if assessment is not None else frozenset())
    actions = [action_json(a) for a in plan.actions]
    if assessment is not None:
        for index, data in enumerate(actions):
            data["hazards"] = [_finding_json(f, assessment) for f in assessment.for_action(index)]
    return {
        "format_version": 1,
        "summary": {
            "create": summary.create,
            "change": summary.change,
            "unchanged": summary.unchanged,
            "blocked": summary.blocked,
            "drop": summary.drop,
        },
        "tables": [str(t) for t in plan.tables],
        "unmanaged": [str(t) for t in plan.unmanaged],
        "actions": actions,
        "protocols": [
            {"table": str(name), **change.as_json()}
            for name, change in (assessment.protocols if assessment is not None else ())
        ],
        **(
            {"rehearsals": [r.as_json() for r in assessment.rehearsals]}
            if assessment is not None and assessment.rehearsals is not None
            else {}
        ),
        "probes": [
            {
                "table": str(p.table),
                "check": p.check,
                "violations": p.violations,
                "source": p.source,
                "skipped": p.skipped or None,
            }
            for p in (assessment.probes if assessment is not None else ())
        ],
    }


def _finding_json(finding: Finding, assessment: Assessment) -> dict[str, Any]:
    block = assessment.block_for(finding)
    data: dict[str, Any] = {"class": finding.hazard.value, "reason": finding.reason, "blocked": block is not None}
    if block is not None:
        data.update(why=block.why, unblock=block.unblock)
    if finding.origin is not None:
        data["origin"] = {"file": finding.origin.file, "line": finding.origin.line}
    return data


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


def _blocked(assessment: Assessment | None) -> frozenset[TableName]:
    return assessment.blocked_tables if assessment is not None else frozenset()


# --- Markdown (pull request comments) ---------------------------------------------------------------

# GitHub refuses a comment longer than 65,536 characters; the default leaves room for what a workflow adds.
MARKDOWN_LIMIT = 65_000

# Outside code spans, what Markdown (or the HTML it allows) would read as markup.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
# A code span the messages already hold (`name`): kept as code, its content shown as is.
_MD_CODE_SPAN = re.compile(r"`[^`\n]+`")
_BACKTICKS = re.compile(r"`+")


def _md_text(text: str) -> str:
    """A message as one line of Markdown: its `code` spans kept, everything else shown literally."""
    text = " ".join(text.splitlines())
    out, end = [], 0
    for span in _MD_CODE_SPAN.finditer(text):
        out += [_MD_SPECIAL.sub(r"\\\1", text[end : span.start()]), span.group()]
        end = span.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[end:]))
    return "".join(out)


def _md_code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds (a longer run of them delimits it)."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _md_fence(lines: list[str], info: str) -> list[str]:
    """A fenced code block that no line of `lines` can close (its fence is longer than any backtick run)."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *lines, fence]


def _md_size(text: str) -> int:
    """A text's length as GitHub counts it against its limit: UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le")) // 2


def _md_plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _md_summary(plan: Plan, assessment: Assessment | None, views: Collection[TableName] = ()) -> str:
    """The text renderer's summary line, its counts in bold."""
    summary = render_summary(plan, assessment, views).plain
    if plan.is_empty:
        head, _, rest = summary.partition(". ")
        return f"**delta-sync plan: {_md_text(head)}.** {_md_text(rest)}".rstrip()
    counts = f"Plan: {plan.summary_with(_blocked(assessment))}."
    rest = summary.removeprefix(counts).strip()
    return f"**delta-sync plan: {_md_text(counts.removeprefix('Plan: '))}**" + (f" {_md_text(rest)}" if rest else "")


def _md_blocks(plan: Plan, assessment: Assessment | None) -> list[str]:
    """What stops apply, each with why, where in the specs and the way out."""
    items: list[tuple[TableName, str, str, str, str | None]] = []
    if assessment is not None:
        for block in assessment.blocks:
            finding = block.finding
            origin = str(finding.origin) if finding.origin else None
            items.append((finding.table, finding.hazard.value, block.why, block.unblock, origin))
    else:
        for action in plan.blocked:
            origin = str(action.origin) if action.origin else None
            items.append((action.name, Hazard.UNSUPPORTED.value, action.reason, action.remedy, origin))
    if not items:
        return []
    lines = [f"#### Blocked ({len(items)})", ""]
    for table, hazard, why, unblock, origin in items:
        where = f" ({_md_code(origin)})" if origin else ""
        lines.append(f"- {_md_code(str(table))} — {hazard}: {_md_text(why)}{where}")
        lines.append(f"  - **Fix:** {_md_text(unblock)}")
    return lines


def _md_schemas(plan: Plan) -> list[str]:
    """A paragraph per schema the plan creates (a list here would run on from the blocked items')."""
    return [
        f"Creates schema {_md_code(str(action.schema))}: {_md_code(sql + ';')}"
        for action in plan.actions
        if isinstance(action, CreateSchema)
        for sql in ddl.to_sql(action)
    ]


def _md_by_table(plan: Plan, assessment: Assessment | None) -> dict[TableName, tuple[Plan, Assessment | None]]:
    """Each table that has actions as a plan of its own, with the findings, blocks and data checks of
    that table renumbered to its actions: what the text renderer shows of one table, in time linear in
    the whole plan (a comment about thousands of tables renders as fast as about one)."""
    positions: dict[int, tuple[TableName, int]] = {}
    actions: dict[TableName, list[Action]] = {}
    for index, action in enumerate(plan.actions):
        if not isinstance(action, CreateSchema):
            mine = actions.setdefault(action.name, [])
            positions[index] = (action.name, len(mine))
            mine.append(action)
    findings: dict[TableName, list[Finding]] = {}
    blocks: dict[TableName, list[Block]] = {}
    probes: dict[TableName, list[ProbeResult]] = {}
    if assessment is not None:
        for finding in assessment.findings:
            if finding.index in positions:
                name, index = positions[finding.index]
                findings.setdefault(name, []).append(replace(finding, index=index))
        for block in assessment.blocks:
            if block.finding.index in positions:
                name, index = positions[block.finding.index]
                blocks.setdefault(name, []).append(replace(block, finding=replace(block.finding, index=index)))
        for probe in assessment.probes:
            probes.setdefault(probe.table, []).append(probe)
    return {
        name: (
            Plan(tuple(actions[name]), (name,)),
            None
            if assessment is None
            else Assessment(
                tuple(findings.get(name, ())),
                tuple(probes.get(name, ())),
                assessment.allowed,
                tuple(blocks.get(name, ())),
                tuple((table, change) for table, change in assessment.protocols if table == name),
                None if assessment.rehearsals is None else tuple(r for r in assessment.rehearsals if r.table == name),
            ),
        )
        for name in plan.tables
        if name in actions
    }


def _md_table_lines(table: Plan, assessment: Assessment | None) -> list[str]:
    """The lines the text renderer shows under a table's header (changes, hazards, data checks), without
    their indent. `table` is a plan of one table: render_text gives its header, its lines, then a summary."""
    group = render_text(table, assessment)
    assert isinstance(group, Group)
    return [part.plain.rstrip().removeprefix("    ") for part in group.renderables[1:-1] if isinstance(part, Text)]


def _md_status(actions: tuple[Action, ...], blocked: bool) -> str:
    if blocked or any(isinstance(a, Unsupported) for a in actions):
        return "blocked"
    if all(isinstance(a, Notice) for a in actions):
        return "no changes"
    if any(isinstance(a, CreateTable) or (isinstance(a, CreateView) and not a.replacing) for a in actions):
        return "create"
    if any(isinstance(a, DropTable | RemoveTable) for a in actions):
        return "drop"
    if any(isinstance(a, RestoreTable) for a in actions):
        return "restore"
    return "change"


def _md_table(name: TableName, table: Plan, assessment: Assessment | None) -> str:
    """One table (a plan of its own) as a collapsed section: its changes and hazards, then its SQL
    collapsed inside."""
    actions = table.actions
    changes = [a for a in actions if not isinstance(a, Notice | Unsupported) and not _is_replaced_drop(a, actions)]
    stops = len(assessment.blocks) if assessment is not None else len(table.blocked)
    status = _md_status(actions, bool(_blocked(assessment)))
    counts = [] if status == "no changes" else [_md_plural(len(changes), "change")]
    counts += [_md_plural(stops, "blocked item")] if stops else []
    origin = next((a.table.origin for a in actions if isinstance(a, CreateTable) and a.table.origin), None)
    origin = origin or next((a.view.origin for a in actions if isinstance(a, CreateView) and a.view.origin), None)
    spec = f" ({html.escape(origin.file)})" if origin is not None else ""
    heading = f"<code>{html.escape(str(name))}</code>: {', '.join([status, *counts])}{spec}"
    out = [f"<details><summary>{heading}</summary>", "", *_md_fence(_md_table_lines(table, assessment), "diff")]
    statements = [f"{sql};" for action in actions for sql in ddl.to_sql(action)]
    if statements:
        out += [
            "",
            f"<details><summary>SQL ({_md_plural(len(statements), 'statement')})</summary>",
            "",
            *_md_fence("\n".join(statements).splitlines(), "sql"),
            "",
            "</details>",
        ]
    return "\n".join([*out, "", "</details>"])


def _md_left_out(count: int, total: int, artifact: str | None) -> str:
    where = f"the plan artifact {_md_code(artifact)}" if artifact else "the saved plan file"
    return (
        f"**{count} of {_md_plural(total, 'table')} left out** to stay within GitHub's comment size limit; "
        f"the whole plan is in {where}."
    )


def render_markdown(
    plan: Plan,
    assessment: Assessment | None = None,
    *,
    limit: int = MARKDOWN_LIMIT,
    artifact: str | None = None,
    views: Collection[TableName] = (),
) -> str:
    """For pull request comments: the summary, what is blocked and how to unblock it, then one collapsed
    section per table (changes, hazards and data checks as the text shows them, its SQL collapsed inside).

    At most `limit` characters as GitHub counts them: whole table sections are left out from the end, and
    a last line says how many and points at `artifact` (else the saved plan file). The summary and the
    blocked items always stay, so a plan blocked in thousands of places may still be longer. `views`: which of
    the plan's names are views (views_of), for the summary's counts.
    """
    unmanaged = [f"_{html.escape(unmanaged_text(plan.unmanaged))}_"] if plan.unmanaged else []
    if plan.is_empty:
        return "\n\n".join([_md_summary(plan, assessment, views), *unmanaged]) + "\n"
    head = ["\n".join(part) for part in ([_md_summary(plan, assessment, views)], _md_blocks(plan, assessment)) if part]
    head += unmanaged
    head += _md_schemas(plan)
    sections = [_md_table(name, *table) for name, table in _md_by_table(plan, assessment).items()]
    # Parts are joined by a blank line, and the comment ends with a newline.
    size = sum(_md_size(part) + 2 for part in head) - 1
    kept = 0
    for section in sections:
        rest = len(sections) - kept - 1
        pointer = _md_size(_md_left_out(rest, len(sections), artifact)) + 2 if rest else 0
        if size + _md_size(section) + 2 + pointer > limit:
            break
        size += _md_size(section) + 2
        kept += 1
    tail = [_md_left_out(len(sections) - kept, len(sections), artifact)] if kept < len(sections) else []
    return "\n\n".join([*head, *sections[:kept], *tail]) + "\n"
