"""The team's policy over a plan's findings (delta_sync.model.policy holds its values): which changes touch a
protected table (blocked, whatever is allowed), which named change a spec's `allow:` lets through, which
change is above a size limit (blocked with both figures), which class is let through on a table below
`safe_below`, and which allows no longer match any change (stale). Pure; hazard_policy calls it per finding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import assert_never

from delta_sync.model.policy import size_text
from delta_sync.model.state import Allow, CatalogState, Limit, Origin, Policy, TableName, ignored_by
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
from delta_sync.planning.hazards import Allowance, Finding, Hazard

# The kinds of change a spec's `allow:` can name, each with what its value names.
ALLOW_KINDS: Mapping[str, str] = {
    "drop_column": "a column the spec no longer declares (nested: parent.field)",
    "rename_column": "the column's old or new name",
    "change_type": "a column whose type changes (in place or by a rewrite)",
    "move_column": "a column that moves to the spec's order",
    "drop_not_null": "a column that becomes nullable",
    "backfill": "a column whose NULLs get its backfill: value",
    "rewrite": "the table (schema.table), rewritten by REPLACE TABLE ... AS SELECT",
    "rename_table": "the table's previous name",
    "enable_feature": "a table property that turns a feature on (delta.enableChangeDataFeed)",
    "drop_feature": "a table feature dropped (deletionVectors)",
    "break_view": "a view the change breaks (schema.view)",
}

# The table property that records a spec's `protect: true` on the table itself, so that a plan made after the
# spec is gone (a tombstone, a rename) still knows the table is protected; only a plan that removes
# `protect: true` from the spec unsets it, and that plan shows it.
PROTECTED_PROPERTY = "delta_sync.protected"


@dataclass(frozen=True, slots=True)
class _Touch:
    """What an action does that the policy looks at: the named changes an allow can match, and the table a
    protection forbids it on (with the verb), if it drops, renames, rewrites or restores one."""

    changes: tuple[tuple[str, str], ...] = ()
    protects: tuple[TableName, str] | None = None


def _path(parent: tuple[str, ...], column: str) -> str:
    return ".".join((*parent, column))


def _touch(action: Action) -> _Touch:
    match action:
        case DropColumns():
            return _Touch(tuple(("drop_column", _path(action.parent, c.name)) for c in action.columns))
        case RenameColumn():
            return _Touch((("rename_column", action.before), ("rename_column", action.after)))
        case AlterColumnType():
            return _Touch((("change_type", _path(action.parent, action.column)),))
        case MoveColumn():
            return _Touch((("move_column", _path(action.parent, action.column)),))
        case DropNotNull():
            return _Touch((("drop_not_null", _path(action.parent, action.column)),))
        case Backfill():
            return _Touch((("backfill", action.column),))
        case RewriteTable():
            changes = (("rewrite", str(action.name)), *(("change_type", c.column) for c in action.conversions))
            return _Touch(changes, (action.name, "rewrite"))
        case RenameTable():
            return _Touch((("rename_table", str(action.before)),), (action.before, "rename"))
        case EnableFeature():
            return _Touch((("enable_feature", action.key),))
        case DropFeature():
            return _Touch((("drop_feature", action.feature),))
        case BreaksView():
            return _Touch((("break_view", str(action.view)),))
        case RemoveTable():
            return _Touch((), (action.name, "drop"))
        case DropTable():
            return _Touch((), (action.name, "drop"))
        case RestoreTable():
            return _Touch((), (action.name, "restore"))
        case (
            CreateSchema()
            | CreateTable()
            | AddColumns()
            | SetColumnComment()
            | SetDefault()
            | SetTableComment()
            | SetProperties()
            | UnsetProperties()
            | ClusterBy()
            | Notice()
            | AddCheck()
            | DropCheck()
            | AddPrimaryKey()
            | DropPrimaryKey()
            | AddForeignKey()
            | DropForeignKey()
            | CreateView()
            | Unsupported()
        ):
            return _Touch()
        case _:
            assert_never(action)


def _matches(allow: Allow, kind: str, target: str) -> bool:
    if allow.kind != kind:
        return False
    want, have = allow.target.strip().lower(), target.lower()
    if kind in ("rewrite", "rename_table", "break_view"):
        # A table's own spec may name it as schema.table or by its last part.
        return want == have or want == have.rsplit(".", 1)[-1] or have.endswith(f".{want}")
    return want == have


# --- protection ---------------------------------------------------------------------------------


def _protection(name: TableName, current: CatalogState, desired: CatalogState | None) -> str | None:
    """Why `name` (a table or a view) is protected, naming the line that says so; None when it is not."""
    want = desired.table(name) if desired is not None else None
    if want is not None and want.protected is not None:
        return f"its spec says protect: true ({want.protected})"
    view = desired.views.get(name) if desired is not None else None
    if view is not None and view.protected is not None:
        return f"its spec says protect: true ({view.protected})"
    policy = desired.policy if desired is not None else None
    for protection in policy.protect if policy is not None else ():
        if ignored_by(name, [protection.pattern]) is not None:
            where = f" ({protection.origin})" if protection.origin is not None else ""
            return f"it matches `{protection.pattern}` under protect: in delta-sync.yaml{where}"
    have = current.table(name)
    if have is not None and have.property_map.get(PROTECTED_PROPERTY, "").lower() == "true":
        return f"the table is marked protected ({PROTECTED_PROPERTY}, set by a spec's protect: true)"
    had = current.views.get(name)
    if had is not None and had.marked:
        return f"the view is marked protected ({PROTECTED_PROPERTY}, set by a spec's protect: true)"
    return None


def protected_findings(
    plan: Plan, current: CatalogState, desired: CatalogState | None, origin_of: Mapping[int, Origin | None]
) -> list[Finding]:
    """A `protected` finding on each action that drops, renames away, rewrites or restores a protected table,
    or drops a protected view: always blocked, whatever --allow or allow: say. Replacing a view (CREATE OR
    REPLACE VIEW) is not blocked: it is how a view changes, as ALTER TABLE is for a table."""
    found = []
    for index, action in enumerate(plan.actions):
        touched = _touch(action).protects
        if touched is None or isinstance(action, CreateSchema):
            continue
        table, verb = touched
        why = _protection(table, current, desired)
        if why is None:
            continue
        reason = f"`{table}` is protected: {why}, so no plan may {verb} it"
        found.append(Finding(index, action.name, Hazard.PROTECTED, reason, origin_of.get(index)))
    return found


PROTECTED_UNBLOCK = "remove the protection first, as a change of its own (its plan shows it), then make this plan again"


# --- allows -------------------------------------------------------------------------------------


def allowed_by(finding: Finding, action: Action, desired: CatalogState | None) -> tuple[Allow, ...] | str:
    """The spec allows that let `finding` through (every named change of its action is allowed), else why
    not in words for its block ('' when its spec allows none of them)."""
    table = desired.table(finding.table) if desired is not None else None
    allows = table.allows if table is not None else ()
    changes = _touch(action).changes
    if not allows or not changes:
        return ""
    if isinstance(action, RenameColumn):
        # Either name names the rename.
        used = tuple(a for a in allows if any(_matches(a, k, t) for k, t in changes))
        return used[:1] if used else ""
    used_list: list[Allow] = []
    missing = []
    for kind, target in changes:
        allow = next((a for a in allows if _matches(a, kind, target)), None)
        if allow is None:
            missing.append(f"{kind}: {target}")
        elif allow not in used_list:
            used_list.append(allow)
    if not missing:
        return tuple(used_list)
    if not used_list:
        return ""
    return f"the spec's allow: does not name {', '.join(f'`{{{m}}}`' for m in missing)}"


def allowance(finding: Finding, allows: tuple[Allow, ...]) -> Allowance:
    texts = ", ".join(f"{{{a.text()}}}" for a in allows)
    return Allowance(finding, f"allow: {texts}", allows[0].origin, allows)


def stale_allows(plan: Plan, desired: CatalogState | None) -> tuple[tuple[TableName, Allow], ...]:
    """The spec allows that name no change of this plan: applied already, or never planned."""
    if desired is None:
        return ()
    planned: dict[TableName, list[tuple[str, str]]] = {}
    for action in plan.actions:
        if not isinstance(action, CreateSchema):
            planned.setdefault(action.name, []).extend(_touch(action).changes)
    stale = []
    for name in sorted(desired.tables):
        for allow in desired.tables[name].allows:
            if not any(_matches(allow, kind, target) for kind, target in planned.get(name, ())):
                stale.append((name, allow))
    return tuple(stale)


def stale_text(allow: Allow) -> str:
    where = f" ({allow.origin})" if allow.origin is not None else ""
    return f"allow {{{allow.text()}}}{where} matches no change of this plan: it was applied already; remove it"


# --- sizes --------------------------------------------------------------------------------------


def table_size(name: TableName, current: CatalogState) -> int | None:
    table = current.table(name)
    return table.size_bytes if table is not None else None


def work_size(finding: Finding, action: Action) -> tuple[str, int] | None:
    """What a finding's change reads or writes and how many bytes: a rewrite's files, a backfill's table, the
    table a data check scans; None when it moves no data or its size is unknown."""
    if finding.hazard is Hazard.REWRITE and isinstance(action, RewriteTable):
        return ("rewrite", action.size_bytes) if action.size_bytes is not None else None
    if finding.size_bytes is None:
        return None
    if finding.hazard is Hazard.REWRITE:
        return ("backfill", finding.size_bytes)
    return ("scan", finding.size_bytes) if finding.hazard is Hazard.DATA_DEPENDENT else None


def limit_findings(findings: Iterable[Finding], plan: Plan, policy: Policy | None) -> list[Finding]:
    """A `limit` finding for each change whose work is above the environment's `limits:` (one per action and
    kind), with both figures."""
    if policy is None or not policy.limits:
        return []
    found: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    for finding in findings:
        work = work_size(finding, plan.actions[finding.index])
        if work is None:
            continue
        kind, size = work
        limit = policy.limit(kind)
        if limit is None or size <= limit.size or (finding.index, kind) in seen:
            continue
        seen.add((finding.index, kind))
        verb = {"rewrite": "rewrites", "backfill": "updates a table of", "scan": "scans a table of"}[kind]
        reason = f"this change {verb} {size_text(size)}, above {limit.text('limits')}"
        found.append(Finding(finding.index, finding.table, Hazard.LIMIT, reason, finding.origin))
    return found


LIMIT_UNBLOCK = (
    "raise the limit under limits: in delta-sync.yaml for this environment, or make the change by hand in a "
    "maintenance window"
)


def safe_allowance(finding: Finding, current: CatalogState, policy: Policy | None) -> Allowance | None:
    """The finding let through by `safe_below:` when its table is smaller than the size given for its class."""
    safe = policy.safe(finding.hazard.value) if policy is not None else None
    size = table_size(finding.table, current)
    if safe is None or size is None or size >= safe.size:
        return None
    return Allowance(finding, f"{_safe_text(safe)}: the table holds {size_text(size)}", safe.origin)


def _safe_text(safe: Limit) -> str:
    return f"safe_below.{safe.kind} {safe.written}"


# --- rules written in Python --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleResult:
    """A finding of one of the team's Python rules (`rules:`), as the review hands it over: the rule
    (`package.module:function`), its severity, its message, the table it is about and its spec line."""

    rule: str
    severity: str
    message: str
    table: TableName | None = None
    origin: Origin | None = None

    def as_json(self) -> dict[str, object]:
        origin = {"file": self.origin.file, "line": self.origin.line} if self.origin is not None else None
        table = str(self.table) if self.table is not None else None
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "table": table, "origin": origin}


def rule_findings(
    plan: Plan, results: Iterable[RuleResult], origin_of: Mapping[int, Origin | None]
) -> list[tuple[Finding, RuleResult]]:
    """Each rule's finding on the first change of the table it names (else of the plan): class `rule`, its
    `check` the rule that found it. A plan with no change of a table has nothing to attach a finding to."""
    first: dict[TableName, int] = {}
    for index, action in enumerate(plan.actions):
        if not isinstance(action, CreateSchema):
            first.setdefault(action.name, index)
    if not first:
        return []
    found = []
    for result in results:
        named = first.get(result.table) if result.table is not None else None
        index = named if named is not None else min(first.values())
        action = plan.actions[index]
        table = action.name if not isinstance(action, CreateSchema) else next(iter(first))
        origin = result.origin or origin_of.get(index)
        found.append((Finding(index, table, Hazard.RULE, result.message, origin, result.rule), result))
    return found


def rule_unblock(rule: str) -> str:
    return f"change the plan so that rule {rule} passes, or the rule (rules: in delta-sync.yaml)"
