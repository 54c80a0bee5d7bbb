"""Hazards: what each planned action risks, what the data says, and what policy lets through.

Pure. `assess(plan, current, probes, allowed)` gives every finding with its class, a one-line
reason and the spec line that caused it; `Assessment.blocked` is what stops apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from delta_sync.actions import (
    Action,
    AddCheck,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    ClusterBy,
    CreateTable,
    DropColumns,
    DropNotNull,
    EnableFeature,
    Plan,
    RenameColumn,
    SetProperties,
    Unsupported,
)
from delta_sync.model import CatalogState, Check, ForeignKey, Origin, PrimaryKey, Table, TableName, quote_ident
from delta_sync.planner import (
    COLUMN_MAPPING,
    NOT_NULL_PREFIX,
    mapping_only_names,
    references,  # one definition of "a rule reads a column"
)


class Hazard(StrEnum):
    DESTRUCTIVE = "destructive"
    DATA_DEPENDENT = "data-dependent"
    IRREVERSIBLE = "irreversible"
    BREAKING = "breaking"
    UNSUPPORTED = "unsupported"


ALLOWABLE = frozenset({Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE, Hazard.BREAKING})
# Checked against the data by a probe, then allowed when the data agrees.
PROBED = frozenset({Hazard.DATA_DEPENDENT})

# Properties that switch on a Delta table feature which cannot be dropped again.
_PERMANENT_FEATURES = {
    "delta.enablechangedatafeed": "change data feed",
    "delta.appendonly": "append-only",
    "delta.enabledeletionvectors": "deletion vectors",
    "delta.enablerowtracking": "row tracking",
}


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


# ProbeResult.source of a rule that apply leaves to its own ADD CONSTRAINT, run before anything of the
# table changes: Delta scans the rows then and commits nothing if one violates (api.checked_first).
CHECKED_BY_CONSTRAINT = "constraint"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one scan found for one rule. `violations` is None when no scan ran (`skipped` says why,
    or `source` is CHECKED_BY_CONSTRAINT)."""

    table: TableName
    check: str
    violations: int | None
    # Up to 5 violating rows, each as (column, SQL literal) pairs (delta_sync.literals): the table's
    # key-like columns and those the rule reads.
    samples: tuple[tuple[tuple[str, str], ...], ...] = ()
    skipped: str = ""
    # "scan" (read the data), "statistics" (Delta's per-file null counts answered it) or CHECKED_BY_CONSTRAINT.
    source: str = "scan"


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
            return [
                (Hazard.DESTRUCTIVE, f"dropping {names} makes its data unreachable (only time travel keeps it)"),
                (Hazard.BREAKING, f"readers and streams that select {names} break"),
            ]
        case EnableFeature():
            return [(Hazard.IRREVERSIBLE, f"{action.reason}: `{action.key}` upgrades the table protocol for good")]
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
            return [
                (Hazard.IRREVERSIBLE, f"`{c.key}` adds the {_PERMANENT_FEATURES[c.key.lower()]} feature for good")
                for c in action.changes
                if c.key.lower() in _PERMANENT_FEATURES and c.after.lower() == "true"
            ] + [
                (Hazard.IRREVERSIBLE, f"`{c.key}` adds a table feature for good")
                for c in action.changes
                if c.key.lower().startswith("delta.feature.")
            ]
        case _:
            return []


def _column_mapping_at_create(table: Table) -> list[tuple[Hazard, str]]:
    odd = mapping_only_names(table.columns)
    if not odd or not any(k.lower() == COLUMN_MAPPING[0].lower() for k, _v in table.properties):
        return []
    names = ", ".join(f"`{n}`" for n in odd)
    reason = f"the name(s) {names} need column mapping: `{COLUMN_MAPPING[0]}` upgrades the table protocol for good"
    return [(Hazard.IRREVERSIBLE, reason)]


def find(plan: Plan, current: CatalogState) -> tuple[Finding, ...]:
    findings = []
    for index, action in enumerate(plan.actions):
        table = getattr(action, "name", None)
        if not isinstance(table, TableName):
            continue
        for hazard, reason in _hazards(action, current):
            findings.append(
                Finding(index, table, hazard, reason, _origin(action), _checked(action), _subject(action, reason))
            )
    return tuple(findings)


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
    return {table: tuple(checks) for table, checks in rules.items()}


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


def probe_relation(current: Table, desired: Table) -> str:
    """The existing rows as they will look after the plan, for rules to be checked against.

    Columns the plan adds are NULL in existing rows (a default only fills future inserts) and
    renamed columns carry their new name, so a rule on either can be checked before it exists.
    """
    select = []
    for col in desired.columns:
        existing = current.column(col.name)
        source = current.column(col.renamed_from) if existing is None and col.renamed_from else existing
        if source is None:
            select.append(f"CAST(NULL AS {col.type}) AS {quote_ident(col.name)}")
        else:
            select.append(f"{quote_ident(source.name)} AS {quote_ident(col.name)}")
    return f"(SELECT {', '.join(select)} FROM {current.name.sql()})"


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


def assess(plan: Plan, current: CatalogState, probes: Iterable[ProbeResult], allowed: Iterable[Hazard]) -> Assessment:
    findings = find(plan, current)
    probes = tuple(probes)
    allow = frozenset(allowed)
    blocks = []
    for finding in findings:
        action = plan.actions[finding.index]
        if finding.hazard is Hazard.UNSUPPORTED:
            remedy = action.remedy if isinstance(action, Unsupported) else ""
            blocks.append(Block(finding, finding.reason, remedy or "change the spec"))
        elif finding.hazard is Hazard.DATA_DEPENDENT:
            result = next((p for p in probes if p.table == finding.table and p.check == finding.check), None)
            if result is not None and result.violations:
                blocks.append(_data_block(finding, action, result.violations))
        elif finding.hazard not in allow:
            blocks.append(Block(finding, finding.reason, f"allow it with --allow {finding.hazard.value}"))
    return Assessment(findings, probes, allow, tuple(blocks))


def _data_block(finding: Finding, action: Action, violations: int) -> Block:
    """What existing rows that break a new rule or key block, and how to unblock it."""
    fix = f'fix those rows first (delta-sync sql "UPDATE {finding.table} ..." or "DELETE FROM {finding.table} ...")'
    if isinstance(action, AddPrimaryKey):
        what = "1 key value repeats or is NULL" if violations == 1 else f"{violations} key values repeat or are NULL"
        return Block(finding, f"will fail: {what} in `{action.key.name}`", f"{fix}, or change the key")
    if isinstance(action, AddForeignKey):
        rows = "1 row has" if violations == 1 else f"{violations} rows have"
        parent = f"no parent row in {action.key.table}"
        return Block(finding, f"will fail: {rows} {parent} for `{action.key.name}`", f"{fix}, or change the key")
    rows = f"{violations} rows violate" if violations != 1 else "1 row violates"
    rule = action.check.name if isinstance(action, AddCheck) else finding.check
    return Block(
        finding,
        f"will fail: {rows} `{rule}`",
        f'fix those rows first (delta-sync sql "UPDATE {finding.table} ..."), or change the rule',
    )
