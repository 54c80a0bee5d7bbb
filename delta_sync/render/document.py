"""Plans -> the JSON document of `--format json` (format_version 1): each action's fields, origin and SQL
with the hazards found on it, the summary's counts, the protocol changes, rehearsals and data checks."""

from __future__ import annotations

from typing import Any, assert_never

from delta_sync.model import keys
from delta_sync.model.state import Allow, Column, ForeignKey, Origin, PrimaryKey, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
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
from delta_sync.planning.hazards import Assessment, Finding, Hazard


def _place_json(place: Place) -> dict[str, Any]:
    return {"first": True} if place.after is None else {"after": place.after}


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
            if t.defaulted:
                # Which properties are the project's defaults (`defaults:`), not the spec's own.
                data["defaults"] = sorted(t.defaulted)
        case AddColumns() | DropColumns():
            data["columns"] = [_column_json(c) for c in action.columns]
            if isinstance(action, AddColumns) and action.places:
                data["places"] = [None if p is None else _place_json(p) for p in action.places]
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
        case MoveColumn():
            data.update(column=action.column, parent=list(action.parent), place=_place_json(action.place))
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
            data["changes"] = [
                {"key": c.key, "before": c.before, "after": c.after, **({"source": "default"} if c.default else {})}
                for c in action.changes
            ]
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
            data["strict"] = action.strict
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
        "unordered": [str(t) for t in plan.unordered],
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
        **(
            {"stale_allows": [_stale_json(name, allow) for name, allow in assessment.stale_allows]}
            if assessment is not None and assessment.stale_allows
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
    if finding.size_bytes is not None:
        data["table_bytes"] = finding.size_bytes
    if finding.hazard is Hazard.RULE:
        data["rule"] = finding.check
    let = assessment.allowance(finding)
    if let is not None:
        # What let it through besides --allow: the spec's named allows, or safe_below: for a small table.
        data["allowed_by"] = {
            "by": let.by,
            "origin": _origin_json(let.origin),
            "allows": [{"kind": a.kind, "target": a.target, "origin": _origin_json(a.origin)} for a in let.allows],
        }
    return data


def _origin_json(origin: Origin | None) -> dict[str, Any] | None:
    return None if origin is None else {"file": origin.file, "line": origin.line}


def _stale_json(table: TableName, allow: Allow) -> dict[str, Any]:
    return {"table": str(table), "kind": allow.kind, "target": allow.target, "origin": _origin_json(allow.origin)}
