"""Hazards: what each planned action risks, what the data says, and what policy lets through.

Pure. `assess(plan, current, probes, allowed)` gives every finding with its class, a one-line
reason and the spec line that caused it; `Assessment.blocked` is what stops apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import assert_never

from delta_sync.model.catalog import ProbeResult as ProbeResult
from delta_sync.model.state import (
    CatalogState,
    Check,
    Consumer,
    ForeignKey,
    Origin,
    PrimaryKey,
    Table,
    TableName,
    quote_ident,
)
from delta_sync.planning import compat, protocol
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
from delta_sync.planning.planner import (
    COLUMN_MAPPING,
    NOT_NULL_PREFIX,
    mapping_only_names,
    not_null_check_name,
    references,  # one definition of "a rule reads a column"
    renamed_current,
)
from delta_sync.planning.rehearsal import Outcome, Rehearsal
from delta_sync.sql import expressions


class Hazard(StrEnum):
    DESTRUCTIVE = "destructive"
    DATA_DEPENDENT = "data-dependent"
    IRREVERSIBLE = "irreversible"
    BREAKING = "breaking"
    UNSUPPORTED = "unsupported"
    REWRITE = "rewrite"
    COMPATIBILITY = "compatibility"
    # Delta refused a statement of the plan on a shallow clone of the table (plan --rehearse).
    REHEARSAL = "rehearsal"


ALLOWABLE = frozenset({Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE, Hazard.BREAKING, Hazard.REWRITE, Hazard.COMPATIBILITY})
# Checked against the data by a probe, then allowed when the data agrees.
PROBED = frozenset({Hazard.DATA_DEPENDENT})


@dataclass(frozen=True, slots=True)
class Finding:
    index: int
    table: TableName
    hazard: Hazard
    reason: str
    origin: Origin | None = None
    # The rule a data-dependent finding is about, to match it with its probe.
    check: str | None = None
    # The part of its action a finding is about (a property key), so it is shown on that line.
    subject: str | None = None


# ProbeResult.source of a NOT NULL rule on a column whose backfill is a literal that is not NULL: no row
# can be left NULL, so no scan is needed for it.
BY_CONSTANT_BACKFILL = "backfill"

# ProbeResult.source of a rule that apply leaves to its own ADD CONSTRAINT, run before anything of the
# table changes: Delta scans the rows then and commits nothing if one violates (api.checked_first).
CHECKED_BY_CONSTRAINT = "constraint"


@dataclass(frozen=True, slots=True)
class Block:
    finding: Finding
    why: str
    unblock: str


@dataclass(frozen=True, slots=True)
class Assessment:
    findings: tuple[Finding, ...]
    probes: tuple[ProbeResult, ...]
    allowed: frozenset[Hazard]
    blocks: tuple[Block, ...]
    # Each table whose Delta protocol the plan changes (delta_sync.planning.protocol), in plan order.
    protocols: tuple[tuple[TableName, protocol.Change], ...] = ()
    # Each table's rehearsal on a shallow clone, in plan order; None when the plan was not rehearsed.
    rehearsals: tuple[Rehearsal, ...] | None = None

    def rehearsal(self, table: TableName) -> Rehearsal | None:
        return next((r for r in self.rehearsals or () if r.table == table), None)

    def protocol_change(self, table: TableName) -> protocol.Change | None:
        return next((change for name, change in self.protocols if name == table), None)

    @property
    def blocked_tables(self) -> frozenset[TableName]:
        return frozenset(b.finding.table for b in self.blocks)

    def for_action(self, index: int) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.index == index)

    def block_for(self, finding: Finding) -> Block | None:
        return next((b for b in self.blocks if b.finding == finding), None)

    def probe(self, table: TableName, check: str) -> ProbeResult | None:
        return next((p for p in self.probes if p.table == table and p.check == check), None)


def _origin(action: Action) -> Origin | None:
    origin = getattr(action, "origin", None)
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
                lost = f"loses the values of {_count(action.values)}"
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
                    return [(Hazard.IRREVERSIBLE, "clustering adds table features that can never be removed")]
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


def _enabling(key: str, value: str) -> str:
    """What turning a feature on through `key` commits the table to."""
    features = protocol.features_of_properties([(key, value)]) or [key]
    named = ", ".join(features)
    removable = [f for f in features if f in protocol.REMOVABLE_FEATURES]
    if len(removable) == len(features):
        costs = "; ".join(protocol.DROP_COSTS[f] for f in removable)
        return f"`{key}` adds the {named} table feature: only DROP FEATURE removes it again ({costs})"
    return f"`{key}` adds the {named} table feature for good (open-source Delta cannot drop it)"


def _column_mapping_at_create(table: Table) -> list[tuple[Hazard, str]]:
    odd = mapping_only_names(table.columns)
    if not odd or not any(k.lower() == COLUMN_MAPPING[0].lower() for k, _v in table.properties):
        return []
    names = ", ".join(f"`{n}`" for n in odd)
    reason = f"the name(s) {names} need column mapping: {_enabling(*COLUMN_MAPPING)}"
    return [(Hazard.IRREVERSIBLE, reason)]


def find(plan: Plan, current: CatalogState) -> tuple[Finding, ...]:
    findings = []
    for index, action in enumerate(plan.actions):
        table = getattr(action, "name", None)
        if not isinstance(table, TableName):
            continue
        if isinstance(action, RewriteTable | Backfill):
            findings.extend(_moving_findings(index, action, current))
            continue
        for hazard, reason in _hazards(action, current):
            findings.append(
                Finding(index, table, hazard, reason, _origin(action), _checked(action), _subject(action, reason))
            )
    return tuple(findings)


# Probe rules of the changes that move data, over the relation of probe_relation: a rewrite's
# conversion that turns a value into NULL (a failed cast), and the rows a backfill gives a value.
CAST_RULE_PREFIX = "ds_cast_"
FILL_RULE_PREFIX = "ds_fill_"
_BEFORE = "__ds_before_"
_UNFILLED = "__ds_unfilled_"


def before_column(column: str) -> str:
    """The relation's column holding a converted column's value as the table has it now (probe_relation)."""
    return _BEFORE + column.lower()


def unfilled_column(column: str) -> str:
    """The relation's column holding a backfilled column's value before the backfill (probe_relation)."""
    return _UNFILLED + column.lower()


def is_helper_column(name: str) -> bool:
    return name.lower().startswith((_BEFORE, _UNFILLED))


def _rule_suffix(column: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", column.lower())


def cast_rule(conversion_column: str) -> Check:
    before = quote_ident(before_column(conversion_column))
    return Check(
        CAST_RULE_PREFIX + _rule_suffix(conversion_column),
        f"{before} IS NULL OR {quote_ident(conversion_column)} IS NOT NULL",
    )


def fill_rule(column: str) -> Check:
    """Its "violations" are the rows the backfill updates (those where the column is NULL now)."""
    return Check(FILL_RULE_PREFIX + _rule_suffix(column), f"{quote_ident(unfilled_column(column))} IS NOT NULL")


def _size(action: RewriteTable) -> str:
    if action.num_files is None:
        return "size unknown"
    files = "1 file" if action.num_files == 1 else f"{action.num_files} files"
    return files if action.size_bytes is None else f"{files}, {human_bytes(action.size_bytes)}"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


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
    features = {k.lower() for k, _v in table.properties} if table is not None else set()
    if action.clustered_by and "delta.feature.clustering" not in features:
        why = "clustering adds table features that can never be removed"
        findings.append(Finding(index, name, Hazard.IRREVERSIBLE, why, action.origin))
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


def unfilled_of(check: Check) -> str | None:
    """The column a backfill's row-count rule (fill_rule) counts the NULLs of."""
    found = re.fullmatch(r"`((?:[^`]|``)+)` IS NOT NULL", check.expression.strip())
    if not check.name.startswith(FILL_RULE_PREFIX) or found is None:
        return None
    name = found.group(1).replace("``", "`")
    return name[len(_UNFILLED) :] if name.lower().startswith(_UNFILLED) else None


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


_NOT_NULL_RULE = re.compile(r"`((?:[^`]|``)+)`\s+IS\s+NOT\s+NULL\Z", re.IGNORECASE)


def not_null_column(check: Check) -> str | None:
    """The column a delta-sync NOT NULL check guards, if `check` is one."""
    found = _NOT_NULL_RULE.match(check.expression.strip())
    if not check.name.startswith(NOT_NULL_PREFIX) or found is None:
        return None
    return found.group(1).replace("``", "`")


def probe_relation(current: Table, desired: Table, actions: Iterable[Action] = ()) -> str:
    """The existing rows as they will look after the plan, for rules to be checked against.

    Columns the plan adds are NULL in existing rows (a default only fills future inserts) and
    renamed columns carry their new name, so a rule on either can be checked before it exists.
    With the table's `actions`: a rewrite's conversions give the converted values (a cast that fails
    gives NULL, as try_cast does, instead of failing the scan) and a backfill fills the NULLs; the value
    before either is kept in a column of its own (before_column) for the rules that count them.
    """
    conversions = {c.column.lower(): c for a in actions if isinstance(a, RewriteTable) for c in a.conversions}
    fills = {a.column.lower(): a for a in actions if isinstance(a, Backfill)}
    select, extra = [], []
    for col in desired.columns:
        existing = current.column(col.name)
        source = current.column(col.renamed_from) if existing is None and col.renamed_from else existing
        value = f"CAST(NULL AS {col.type})" if source is None else quote_ident(source.name)
        if source is not None and source.key in conversions:
            before = value
            value = f"({expressions.tolerant_casts(conversions[source.key].expression)})"
            extra.append(f"{before} AS {quote_ident(before_column(source.name))}")
        fill = fills.get(col.key)
        if fill is not None:
            extra.append(f"{value} AS {quote_ident(unfilled_column(col.name))}")
            value = f"coalesce({value}, CAST(({fill.expression}) AS {col.type}))"
        select.append(f"{value} AS {quote_ident(col.name)}")
    return f"(SELECT {', '.join(select + extra)} FROM {current.name.sql()})"


def probe_sql(relation: str, checks: Sequence[Check]) -> str:
    """One scan counting, per rule, the rows Delta would reject (false or NULL both violate)."""
    counts = ", ".join(
        f"count_if(NOT coalesce(({check.expression}), false)) AS {quote_ident(check.name)}" for check in checks
    )
    return f"SELECT {counts} FROM {relation}"


def sample_columns(check: Check, fields: Sequence[tuple[str, bool]], primary_key: Sequence[str] = ()) -> list[str]:
    """What a sample row of `check` shows, of the relation's (name, nullable) fields: the table's primary-key
    columns first, in key order, when it has one, then the columns the rule reads, in table order. Without a
    primary key, its key-like columns (NOT NULL ones, else the first) and the rule's, in table order."""
    by_name = {name.lower(): name for name, _ in fields}
    first = [by_name[c.lower()] for c in primary_key if c.lower() in by_name]
    if first:
        return first + [name for name, _ in fields if name not in first and references(check.expression, name)]
    keys = {name for name, nullable in fields if not nullable} or {name for name, _ in fields[:1]}
    return [name for name, _ in fields if name in keys or references(check.expression, name)]


def sample_sql(
    relation: str,
    check: Check,
    fields: Sequence[tuple[str, bool]] = (),
    limit: int = 5,
    primary_key: Sequence[str] = (),
) -> str:
    """Up to `limit` rows violating `check`; with the relation's fields, only the columns that tell them apart."""
    columns = ", ".join(quote_ident(c) for c in sample_columns(check, fields, primary_key)) or "*"
    return f"SELECT {columns} FROM {relation} WHERE NOT coalesce(({check.expression}), false) LIMIT {limit}"


def assess(
    plan: Plan,
    current: CatalogState,
    probes: Iterable[ProbeResult],
    allowed: Iterable[Hazard],
    consumers: Sequence[Consumer] = (),
    rehearsals: Sequence[Rehearsal] | None = None,
) -> Assessment:
    """Every finding of the plan, and what blocks it. `consumers`: the engines that must keep reading or
    writing the tables (the project's `readers:` / `writers:`), checked against each protocol change.
    `rehearsals`: how the plan went on shallow clones; a failure blocks its table (never allowable)."""
    probes = tuple(probes)
    current = renamed_current(current, plan)
    findings = (
        tuple(_with_count(f, probes) for f in find(plan, current))
        + tuple(
            Finding(p.index, p.table, Hazard.COMPATIBILITY, p.reason, _origin(plan.actions[p.index]))
            for p in compat.problems(plan, current, consumers)
        )
        + tuple(_rehearsal_findings(plan, rehearsals or ()))
    )
    allow = frozenset(allowed)
    blocks = []
    for finding in findings:
        action = plan.actions[finding.index]
        if finding.hazard is Hazard.UNSUPPORTED:
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
            blocks.append(Block(finding, finding.reason, f"allow it with --allow {finding.hazard.value}"))
    protocols = tuple(compat.changes(plan, current).items())
    rehearsed = None if rehearsals is None else tuple(rehearsals)
    return Assessment(findings, probes, allow, tuple(blocks), protocols, rehearsed)


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
        found.append(Finding(index, rehearsed.table, Hazard.REHEARSAL, reason, _origin(plan.actions[index])))
    return found


def _with_count(finding: Finding, probes: tuple[ProbeResult, ...]) -> Finding:
    """A backfill's finding with the number of rows it updates, once its probe counted them."""
    if finding.hazard is not Hazard.REWRITE or finding.check is None:
        return finding
    result = next((p for p in probes if p.table == finding.table and p.check == finding.check), None)
    if result is None or result.violations is None:
        return finding
    return replace(finding, reason=f"{finding.reason}; {_count(result.violations)} to update")


def _count(rows: int) -> str:
    return "1 row" if rows == 1 else f"{rows} rows"


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
            f"will fail: the backfill of `{fill.column}` ({fill.expression}) is NULL for {_count(violations)}",
            "change `backfill:` so that it gives every row a value, or fix those rows first",
        )
    rows = f"{violations} rows violate" if violations != 1 else "1 row violates"
    rule = action.check.name if isinstance(action, AddCheck) else finding.check
    return Block(
        finding,
        f"will fail: {rows} `{rule}`",
        f'fix those rows first (delta-sync sql "UPDATE {finding.table} ..."), or change the rule',
    )
