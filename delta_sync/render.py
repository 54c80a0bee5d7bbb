"""Plans -> text (rich, Terraform-like) and JSON. Pure functions of the plan."""

from __future__ import annotations

from typing import Any, assert_never

from rich.console import Group, RenderableType
from rich.text import Text
from rich.theme import Theme

from delta_sync import ddl
from delta_sync.actions import (
    Action,
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    DropCheck,
    Plan,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Unsupported,
)
from delta_sync.model import TableName

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


def _line(mark: str, style: str, text: str, indent: int = 4) -> Text:
    line = Text(" " * indent)
    line.append(f"{mark} ", style=style)
    line.append(text)
    return line


def _create_lines(action: CreateTable) -> list[Text]:
    table = action.table
    lines = []
    for col in table.columns:
        extra = "" if col.nullable else " NOT NULL"
        comment = f"  -- {_comment(col.comment)}" if col.comment else ""
        lines.append(_line("+", "ds.create", f"{col.name} {col.type}{extra}{comment}"))
    if table.partitioned_by:
        lines.append(_line("+", "ds.create", f"partitioned by ({', '.join(table.partitioned_by)})"))
    if table.comment is not None:
        lines.append(_line("+", "ds.create", f"comment {_value(table.comment)}"))
    lines.extend(_line("+", "ds.create", f"property {k} = {_value(v)}") for k, v in table.properties)
    return lines


def _action_lines(action: Action) -> list[Text]:
    match action:
        case CreateSchema() | CreateTable():
            return _create_lines(action) if isinstance(action, CreateTable) else []
        case AddColumns():
            return [
                _line(
                    "+",
                    "ds.create",
                    f"column {c.name} {c.type}" + (f"  -- {_comment(c.comment)}" if c.comment else ""),
                )
                for c in action.columns
            ]
        case SetColumnComment():
            text = f"column {action.column} comment: {_value(action.before)} -> {_value(action.after)}"
            return [_line("~", "ds.change", text)]
        case SetTableComment():
            return [_line("~", "ds.change", f"comment: {_value(action.before)} -> {_value(action.after)}")]
        case SetProperties():
            return [
                _line("+", "ds.create", f"property {c.key} = {_value(c.after)}")
                if c.before is None
                else _line("~", "ds.change", f"property {c.key}: {_value(c.before)} -> {_value(c.after)}")
                for c in action.changes
            ]
        case AddCheck():
            if action.replaces is not None:
                change = f"{action.replaces.expression} -> {action.check.expression}"
                return [_line("~", "ds.change", f"check {action.check.name}: {change}")]
            return [_line("+", "ds.create", f"check {action.check.name}: {action.check.expression}")]
        case DropCheck():
            return [_line("-", "ds.remove", f"check {action.check.name}: {action.check.expression}")]
        case Unsupported():
            where = f"  ({action.origin})" if action.origin else ""
            blocked = _line("!", "ds.blocked", f"{action.reason}{where}")
            fix = Text("        ")
            fix.append("fix: ", style="ds.muted")
            fix.append(action.remedy)
            return [blocked, fix]
        case _:
            assert_never(action)


def _is_replaced_drop(action: Action, actions: tuple[Action, ...]) -> bool:
    return isinstance(action, DropCheck) and any(
        isinstance(a, AddCheck) and a.replaces == action.check and a.name == action.name for a in actions
    )


def render_text(plan: Plan) -> RenderableType:
    parts: list[RenderableType] = []
    for action in plan.actions:
        if isinstance(action, CreateSchema):
            parts.append(_line("+", "ds.create", f"create schema {action.schema}", indent=0))
    for name in plan.tables:
        actions = plan.actions_for(name)
        if not actions:
            continue
        parts.append(_table_header(name, actions))
        for action in actions:
            if not _is_replaced_drop(action, actions):
                parts.extend(_action_lines(action))
    parts.append(render_summary(plan))
    return Group(*parts)


def _table_header(name: TableName, actions: tuple[Action, ...]) -> Text:
    if any(isinstance(a, Unsupported) for a in actions):
        mark, style, verb = "!", "ds.blocked", "blocked"
    elif any(isinstance(a, CreateTable) for a in actions):
        mark, style, verb = "+", "ds.create", "create table"
    else:
        mark, style, verb = "~", "ds.change", "change table"
    origin = next((a.table.origin for a in actions if isinstance(a, CreateTable)), None)
    line = Text()
    line.append(f"{mark} {verb} ", style=style)
    line.append(str(name), style="ds.table")
    if origin is not None:
        line.append(f"  ({origin.file})", style="ds.muted")
    return line


def render_summary(plan: Plan) -> Text:
    if plan.is_empty:
        return Text(f"No changes. {len(plan.tables)} table(s) match the specs.", style="ds.ok")
    return Text(f"Plan: {plan.summary}.", style="ds.blocked" if plan.blocked else "ds.table")


def action_json(action: Action) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": type(action).__name__}
    if isinstance(action, CreateSchema):
        data["schema"] = str(action.schema)
    else:
        data["table"] = str(action.name)
    match action:
        case CreateTable():
            t = action.table
            data["columns"] = [
                {"name": c.name, "type": c.type, "nullable": c.nullable, "comment": c.comment}
                for c in t.columns
            ]
            data.update(
                comment=t.comment, partitioned_by=list(t.partitioned_by), properties=dict(t.properties)
            )
        case AddColumns():
            data["columns"] = [
                {"name": c.name, "type": c.type, "nullable": c.nullable, "comment": c.comment}
                for c in action.columns
            ]
        case SetColumnComment():
            data.update(column=action.column, before=action.before, after=action.after)
        case SetTableComment():
            data.update(before=action.before, after=action.after)
        case SetProperties():
            data["changes"] = [{"key": c.key, "before": c.before, "after": c.after} for c in action.changes]
        case AddCheck():
            data.update(check=action.check.name, expression=action.check.expression)
            if action.replaces is not None:
                data["replaces"] = action.replaces.expression
        case DropCheck():
            data.update(check=action.check.name, expression=action.check.expression)
        case Unsupported():
            data.update(subject=action.subject, reason=action.reason, remedy=action.remedy)
        case CreateSchema():
            pass
        case _:
            assert_never(action)
    origin = getattr(action, "origin", None) or (
        action.table.origin if isinstance(action, CreateTable) else None
    )
    if origin is not None:
        data["origin"] = {"file": origin.file, "line": origin.line}
    data["sql"] = list(ddl.to_sql(action))
    return data


def plan_json(plan: Plan) -> dict[str, Any]:
    summary = plan.summary
    return {
        "format_version": 1,
        "summary": {
            "create": summary.create,
            "change": summary.change,
            "unchanged": summary.unchanged,
            "blocked": summary.blocked,
        },
        "tables": [str(t) for t in plan.tables],
        "actions": [action_json(a) for a in plan.actions],
    }
