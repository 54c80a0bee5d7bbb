"""Each action as the lines the text diff shows under its table (rich `Text`, styled with the theme's
names): columns, keys, checks, views, rewrites and restores, a blocked action with its fix. A dropped key or
check is shown on the line of what replaces it. `action_lines` gives the lines plain, for messages."""

from __future__ import annotations

from typing import assert_never

from rich.text import Text

from delta_sync.model import keys
from delta_sync.model.state import Column, ForeignKey, PrimaryKey
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
    MoveColumn,
    Notice,
    Place,
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
from delta_sync.planning.diff.conventions import NOT_NULL_PREFIX
from delta_sync.planning.hazard_rules import human_bytes
from delta_sync.sql import queries as viewsql


def _value(value: str | None) -> str:
    return "(none)" if value is None else repr(value) if "\n" in value else f'"{value}"'


def _comment(text: str) -> str:
    return repr(text) if "\n" in text or "\r" in text else text


def _place_text(place: Place | None) -> str:
    """An added column's place; nothing when it goes at the end, as additions always did."""
    return "" if place is None else f" ({place.text()})"


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
    defaulted = {key.lower() for key in table.defaulted}
    lines.extend(
        _line("+", "ds.create", f"property {k} = {_value(v)}{_from_default(k.lower() in defaulted)}")
        for k, v in table.properties
    )
    return lines


# Where a property's value comes from, when it is the project's `defaults:` rather than the spec.
DEFAULT_NOTE = "  (project default)"


def _from_default(default: bool) -> str:
    return DEFAULT_NOTE if default else ""


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
            return [
                _line("+", "ds.create", f"column {prefix}{_column_text(c)}{_place_text(action.place_of(i))}")
                for i, c in enumerate(action.columns)
            ]
        case MoveColumn():
            return [
                _line("~", "ds.change", f"move column {_prefix(action.parent)}{action.column} {action.place.text()}")
            ]
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
                else _line("+", "ds.create", f"property {c.key} = {_value(c.after)}{_from_default(c.default)}")
                if c.before is None
                else _line(
                    "~",
                    "ds.change",
                    f"property {c.key}: {_value(c.before)} -> {_value(c.after)}{_from_default(c.default)}",
                )
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
    if action.strict:
        why = "no spec names it, strict: true" + (f" at {action.origin}" if action.origin else "")
    else:
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
    """An action's lines, each with the part of the action it shows (a property key, an added column), if any."""
    lines = _action_lines(action, actions)
    if isinstance(action, SetProperties):
        return list(zip(lines, (c.key for c in action.changes), strict=True))
    if isinstance(action, AddColumns):
        return list(zip(lines, (c.name for c in action.columns), strict=True))
    return [(line, None) for line in lines]
