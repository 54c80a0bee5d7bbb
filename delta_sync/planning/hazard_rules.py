"""What each planned action risks: the hazard rules per action type (one `match` over the action union),
the findings of a plan (`find`: class, a one-line reason and the spec line that caused it), the rows a
rewrite or a backfill moves, and which rules and keys of the plan need a probe of the data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import assert_never

from delta_sync.model.policy import size_text
from delta_sync.model.state import (
    CatalogState,
    Check,
    ForeignKey,
    Origin,
    PrimaryKey,
    Table,
    TableName,
)
from delta_sync.planning import features
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
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff.conventions import (
    COLUMN_MAPPING,
    NOT_NULL_PREFIX,
    current_property,
    mapping_only_names,
    not_null_check_name,
    references,  # one definition of "a rule reads a column"
)
from delta_sync.planning.feature_gates import feature_findings
from delta_sync.planning.hazards import Finding, Hazard
from delta_sync.planning.probe_queries import cast_rule, fill_rule
from delta_sync.sql import expressions


def action_origin(action: Action) -> Origin | None:
    origin = getattr(action, "origin", None)
    if isinstance(action, AddColumns):
        origin = next((c.origin for c in action.columns if c.origin is not None), None)
    if isinstance(action, AddCheck):
        origin = action.check.origin
    if isinstance(action, CreateTable):
        origin = action.table.origin
    if isinstance(action, AddPrimaryKey | AddForeignKey):
        origin = action.key.origin
    return origin if isinstance(origin, Origin) else None


def _checked_rule(action: AddCheck) -> str:
    if action.check.name.startswith(NOT_NULL_PREFIX):
        return f"NOT NULL ({action.check.expression})"
    return f"CHECK {action.check.name} ({action.check.expression})"


def _has_rows(name: TableName, current: CatalogState) -> bool:
    table = current.table(name)
    return table is not None and table.num_files != 0


def _removal_reason(action: RemoveTable) -> str:
    if action.view:
        return f"dropping the view `{action.name}` removes its definition"
    if action.location is not None:
        return f"dropping `{action.name}` removes it from the catalog (its files at {action.location} stay)"
    if action.num_files is not None:
        size = f", {human_bytes(action.size_bytes)}" if action.size_bytes is not None else ""
        return f"dropping `{action.name}` deletes its data ({action.num_files} file(s){size}) and history"
    return f"dropping `{action.name}` deletes what it holds"


def _key_text(key: PrimaryKey | ForeignKey) -> str:
    columns = ", ".join(key.columns)
    if isinstance(key, PrimaryKey):
        return f"primary key {key.name} ({columns})"
    return f"foreign key {key.name} ({columns}) -> {key.table} ({', '.join(key.references)})"


def _hazards(action: Action, current: CatalogState) -> list[tuple[Hazard, str]]:
    match action:
        case Unsupported():
            return [(Hazard.UNSUPPORTED, action.reason)]
        case DropColumns():
            names = ", ".join(f"`{'.'.join((*action.parent, c.name))}`" for c in action.columns)
            breaking = (Hazard.BREAKING, f"readers and streams that select {names} break")
            if action.values == 0:
                return [breaking]  # counted: no value to lose
            lost = "makes its data unreachable (only time travel keeps it)"
            if action.values is not None:
                lost = f"loses the values of {row_count(action.values)}"
                if action.written_by:
                    lost += f" written since the plan by {', '.join(action.written_by)}"
            return [(Hazard.DESTRUCTIVE, f"dropping {names} {lost}"), breaking]
        case DropTable():
            if not action.written_by:
                return []
            return [
                (
                    Hazard.DESTRUCTIVE,
                    f"dropping the table discards the rows others wrote since plan {action.plan_id} created it "
                    f"({', '.join(action.written_by)})",
                )
            ]
        case DropFeature():
            return [(Hazard.IRREVERSIBLE, f"DROP FEATURE {action.feature}: {action.reason}")]
        case BreaksView():
            where = f" ({action.origin})" if action.origin else " (not in the specs)"
            then = "; the plan re-creates it after this change" if action.replaced else ""
            return [(Hazard.BREAKING, f"view `{action.view}`{where} stops working: {action.error}{then}")]
        case RenameTable():
            return [(Hazard.BREAKING, f"readers, jobs and views that use `{action.before}` break after the rename")]
        case RemoveTable():
            breaking = (Hazard.BREAKING, f"readers of `{action.name}` break")
            return [(Hazard.DESTRUCTIVE, _removal_reason(action)), breaking]
        case EnableFeature():
            return [(Hazard.IRREVERSIBLE, f"{action.reason}: {_enabling(action.key, action.value)}")]
        case CreateTable():
            return _column_mapping_at_create(action.table)
        case DropNotNull():
            path = ".".join((*action.parent, action.column))
            return [
                (Hazard.IRREVERSIBLE, f"`{path}` cannot be made NOT NULL again in place once it is dropped"),
                (Hazard.BREAKING, f"readers that rely on `{path}` never being NULL may break"),
            ]
        case RenameColumn():
            return [(Hazard.BREAKING, f"readers and streams that use `{action.before}` break after the rename")]
        case AlterColumnType():
            path = ".".join((*action.parent, action.column))
            return [(Hazard.BREAKING, f"readers of `{path}` see {action.after} instead of {action.before}")]
        case MoveColumn():
            path = ".".join((*action.parent, action.column))
            return [(Hazard.BREAKING, f"`{path}` moves {action.place.text()}: {BY_POSITION}")]
        case AddCheck():
            if not _has_rows(action.name, current):
                return []
            return [(Hazard.DATA_DEPENDENT, f"{_checked_rule(action)} fails if existing rows violate it")]
        case AddPrimaryKey():
            if not _has_rows(action.name, current):
                return []
            why = "fails if existing rows repeat a key value or leave a key part NULL"
            return [(Hazard.DATA_DEPENDENT, f"{_key_text(action.key)} {why}")]
        case AddForeignKey():
            if not _has_rows(action.name, current):
                return []
            return [(Hazard.DATA_DEPENDENT, f"{_key_text(action.key)} fails if existing rows reference no parent row")]
        case ClusterBy():
            table = current.table(action.name)
            if table is not None and not table.clustered_by and action.after:
                feature = any(k.lower() == "delta.feature.clustering" for k, _v in table.properties)
                if not feature:
                    return [(Hazard.IRREVERSIBLE, f"clustering {features.adding('clustering')}")]
            return []
        case SetProperties():
            table = current.table(action.name)
            have = {k.lower() for k, _v in table.properties} if table is not None else set()
            return [
                (Hazard.IRREVERSIBLE, _enabling(c.key, c.after))
                for c in action.changes
                if any(
                    f"{protocol.FEATURE_PREFIX}{f}".lower() not in have
                    for f in protocol.features_of_properties([(c.key, c.after)])
                )
            ]
        case (
            CreateSchema()
            # A new column at its place is shown with it (`(after x)`), not gated: adding a column is the most
            # common change, and a writer that inserts by position without naming columns breaks on any added
            # column's values; a move of columns readers already use is what `breaking` is for (DECISIONS.md).
            | AddColumns()
            | SetColumnComment()
            | SetTableComment()
            | UnsetProperties()
            | SetDefault()
            | Backfill()
            | DropCheck()
            | DropPrimaryKey()
            | DropForeignKey()
            | RewriteTable()
            | RestoreTable()
            | CreateView()
            | Notice()
        ):
            return []
        case _:
            assert_never(action)


# Why a column's place matters: Spark matches by position wherever no column names are given.
BY_POSITION = (
    "writers that insert by position (INSERT INTO ... VALUES, INSERT ... SELECT * without a column list) put "
    "values in other columns, and SELECT * returns another order"
)


def _enabling(key: str, value: str) -> str:
    """What turning a feature on through `key` commits the table to."""
    named = protocol.features_of_properties([(key, value)]) or [key]
    return "; ".join(f"`{key}` {features.adding(feature)}" for feature in named)


def _column_mapping_at_create(table: Table) -> list[tuple[Hazard, str]]:
    odd = mapping_only_names(table.columns)
    if not odd or not any(k.lower() == COLUMN_MAPPING[0].lower() for k, _v in table.properties):
        return []
    names = ", ".join(f"`{n}`" for n in odd)
    reason = f"the name(s) {names} need column mapping: {_enabling(*COLUMN_MAPPING)}"
    return [(Hazard.IRREVERSIBLE, reason)]


def find(plan: Plan, current: CatalogState) -> tuple[Finding, ...]:
    return tuple(_sized(f, plan.actions[f.index], current) for f in _found(plan, current))


def _sized(finding: Finding, action: Action, current: CatalogState) -> Finding:
    """A data check's or a backfill's finding with the size of the table it reads (when the plan read it)."""
    moving = finding.hazard is Hazard.REWRITE and isinstance(action, Backfill)
    if finding.hazard is not Hazard.DATA_DEPENDENT and not moving:
        return finding
    table = current.table(finding.table)
    if table is None or table.size_bytes is None:
        return finding
    return replace(finding, size_bytes=table.size_bytes)


def _found(plan: Plan, current: CatalogState) -> tuple[Finding, ...]:
    findings = []
    gated = feature_findings(plan, current)
    for index, action in enumerate(plan.actions):
        table = getattr(action, "name", None)
        if not isinstance(table, TableName):
            continue
        if isinstance(action, RewriteTable | Backfill):
            findings.extend(_moving_findings(index, action, current))
        else:
            for hazard, reason in _hazards(action, current):
                subject = _subject(action, reason)
                origin = _column_origin(action, subject) or action_origin(action)
                findings.append(Finding(index, table, hazard, reason, origin, _checked(action), subject))
        findings.extend(gated.get(index, ()))
    return tuple(findings)


def _column_origin(action: Action, subject: str | None) -> Origin | None:
    """The spec line of the column a finding of an AddColumns is about."""
    if not isinstance(action, AddColumns) or subject is None:
        return None
    return next((c.origin for c in action.columns if c.name == subject), None)


def _size(action: RewriteTable) -> str:
    if action.num_files is None:
        return "size unknown"
    files = "1 file" if action.num_files == 1 else f"{action.num_files} files"
    return files if action.size_bytes is None else f"{files}, {human_bytes(action.size_bytes)}"


# One way of showing a size, the policy's (limits:, safe_below:) and the plan's alike.
human_bytes = size_text


def _moving_findings(index: int, action: RewriteTable | Backfill, current: CatalogState) -> list[Finding]:
    """What a rewrite or a backfill risks: the data files it rewrites (class `rewrite`), and the rows that
    would make it fail (data-dependent, one probe rule each)."""
    name = action.name
    if isinstance(action, Backfill):
        reason = (
            f"UPDATE rewrites the data files holding rows where `{action.column}` is NULL, to give them "
            f"{action.expression} (concurrent writers may conflict; streaming readers see the rewritten files)"
        )
        return [Finding(index, name, Hazard.REWRITE, reason, action.origin, fill_rule(action.column).name)]
    restore = f"; restore point: version {action.restore_version}" if action.restore_version is not None else ""
    findings = [
        Finding(
            index,
            name,
            Hazard.REWRITE,
            f"REPLACE TABLE ... AS SELECT rewrites every data file of the table ({_size(action)}) in one commit: "
            f"concurrent writers conflict and apply retries; streaming readers see an overwrite{restore}",
            action.origin,
        )
    ]
    table = current.table(name)
    properties = {k.lower() for k, _v in table.properties} if table is not None else set()
    if action.clustered_by and "delta.feature.clustering" not in properties:
        why = f"clustering {features.adding('clustering')}"
        findings.append(Finding(index, name, Hazard.IRREVERSIBLE, why, action.origin))
    mapping = current_property(table.property_map, COLUMN_MAPPING[0]) if table is not None else None
    if action.conversions and mapping is not None and mapping.lower() in ("name", "id"):
        renamed = ", ".join(f"`{c.column}`" for c in action.conversions)
        why = (
            f"with column mapping, Delta gives the converted column(s) {renamed} new physical names in the "
            "rewrite (the others keep theirs): streaming readers of the table stop at this version unless they "
            "read with schema tracking (the schemaTrackingLocation option)"
        )
        findings.append(Finding(index, name, Hazard.BREAKING, why, action.conversions[0].origin))
    for conversion in action.conversions:
        findings.append(
            Finding(
                index,
                name,
                Hazard.BREAKING,
                f"readers of `{conversion.column}` see {conversion.after} instead of {conversion.before}",
                conversion.origin,
            )
        )
        if _has_rows(name, current):
            rule = cast_rule(conversion.column)
            why = f"`{conversion.column}` as {conversion.expression} fails the rewrite if a value does not convert"
            findings.append(Finding(index, name, Hazard.DATA_DEPENDENT, why, conversion.origin, rule.name))
    if _has_rows(name, current):
        converted = [c.column for c in action.conversions]
        for check in action.checks:
            if any(references(check.expression, column) for column in converted):
                why = f"{_rule_text(check)} is restated by the rewrite and fails it if a converted row violates it"
                findings.append(Finding(index, name, Hazard.DATA_DEPENDENT, why, check.origin, check.name))
    return findings


def _rule_text(check: Check) -> str:
    if check.name.startswith(NOT_NULL_PREFIX):
        return f"NOT NULL ({check.expression})"
    return f"CHECK {check.name} ({check.expression})"


def _checked(action: Action) -> str | None:
    """The name a probe reports a data-dependent action's rule under (ProbeResult.check)."""
    if isinstance(action, AddCheck):
        return action.check.name
    if isinstance(action, AddPrimaryKey | AddForeignKey):
        return action.key.name
    return None


def _subject(action: Action, reason: str) -> str | None:
    if isinstance(action, SetProperties):
        return next((c.key for c in action.changes if f"`{c.key}`" in reason), None)
    if isinstance(action, AddColumns):
        prefix = "".join(f"{p}." for p in action.parent)
        return next((c.name for c in action.columns if f"`{prefix}{c.name}`" in reason), None)
    return None


def rules_to_probe(plan: Plan, current: CatalogState) -> dict[TableName, tuple[Check, ...]]:
    """The new CHECK / NOT NULL rules per table that existing rows could violate."""
    rules: dict[TableName, list[Check]] = {}
    for finding in find(plan, current):
        action = plan.actions[finding.index]
        if finding.hazard is Hazard.DATA_DEPENDENT and isinstance(action, AddCheck):
            rules.setdefault(action.name, []).append(action.check)
        elif finding.hazard is Hazard.DATA_DEPENDENT and isinstance(action, RewriteTable):
            conversion = next((c for c in action.conversions if cast_rule(c.column).name == finding.check), None)
            rule = cast_rule(conversion.column) if conversion is not None else _named(action.checks, finding.check)
            if rule is not None:
                rules.setdefault(action.name, []).append(rule)
        elif finding.hazard is Hazard.REWRITE and isinstance(action, Backfill):
            rules.setdefault(action.name, []).append(fill_rule(action.column))
    return {table: tuple(checks) for table, checks in rules.items()}


def answered_by_backfill(plan: Plan) -> set[tuple[TableName, str]]:
    """The NOT NULL rules (table, rule name) that a constant backfill satisfies on every row."""
    return {
        (a.name, not_null_check_name(a.column))
        for a in plan.actions
        if isinstance(a, Backfill) and expressions.is_non_null_literal(a.expression)
    }


def _named(checks: Iterable[Check], name: str | None) -> Check | None:
    return next((c for c in checks if c.name == name), None)


def keys_to_probe(plan: Plan, current: CatalogState) -> list[tuple[TableName, PrimaryKey | ForeignKey]]:
    """The keys the plan adds to tables that hold rows, which those rows could break, in plan order."""
    probed: list[tuple[TableName, PrimaryKey | ForeignKey]] = []
    for finding in find(plan, current):
        action = plan.actions[finding.index]
        if finding.hazard is Hazard.DATA_DEPENDENT and isinstance(action, AddPrimaryKey | AddForeignKey):
            probed.append((action.name, action.key))
    return probed


def row_count(rows: int) -> str:
    return "1 row" if rows == 1 else f"{rows} rows"
