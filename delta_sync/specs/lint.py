"""`delta-sync lint`'s engine: the rules delta-sync.yaml turns on (delta_sync.specs.lint_rules), run over every
table spec as its file is written, less the rules the spec's own `lint: {disable: [...]}` turns off and, at a
column, the ones the column's own `lint: {disable: [...]}` turns off, give findings at the line of the YAML node
each one is about. A view spec gets the rules of comments and names (lint_rules.VIEW_RULES). Pure: the
documents come read (spec_files), and the command line prints the report.

A tombstone is not linted: what it drops is gone once applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from delta_sync.specs import custom_rules
from delta_sync.specs.lint_rules import RULES, VIEW_RULES, Hit, Level, LintSettings, Subject, ViewSubject
from delta_sync.specs.spec_models import TableSpec, ViewSpec
from delta_sync.specs.yamldoc import Doc


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One rule broken by one spec, at the line of the node it is about."""

    file: str
    line: int
    rule: str
    level: Level
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.level} {self.rule}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "level": self.level, "rule": self.rule, "message": self.message}


@dataclass(frozen=True, slots=True)
class Report:
    """Every finding, sorted by file and line, and how many table and view specs were linted."""

    findings: tuple[Finding, ...]
    tables: int
    rules: int
    views: int = 0

    @property
    def errors(self) -> int:
        return sum(1 for finding in self.findings if finding.level == "error")

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.errors

    @property
    def exit_code(self) -> int:
        """3 when an error rule failed; warnings alone pass."""
        return 3 if self.errors else 0

    def summary(self) -> str:
        specs = f"{self.tables} table spec{'s' if self.tables != 1 else ''}"
        if self.views:
            views = f"{self.views} view spec{'s' if self.views != 1 else ''}"
            specs = f"{specs} and {views}" if self.tables else views
        if not self.rules and not self.findings:
            return f"{specs}: no lint rules (add a `lint:` section to delta-sync.yaml to turn rules on)."
        if not self.findings:
            return f"{specs}: no findings ({self.rules} rule{'s' if self.rules != 1 else ''})."
        counts = [_count(self.errors, "error"), _count(self.warnings, "warning")]
        return f"{', '.join(counts)} in {specs}."

    def to_json(self) -> dict[str, Any]:
        return {
            "findings": [finding.to_json() for finding in self.findings],
            "summary": {
                "errors": self.errors,
                "warnings": self.warnings,
                "tables": self.tables,
                "views": self.views,
                "rules": self.rules,
            },
        }


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def enabled(settings: LintSettings | None) -> list[str]:
    """The rules `settings` turns on, in their order."""
    if settings is None:
        return []
    return [name for name, (field, _check) in RULES.items() if getattr(settings, field) is not None]


def lint(
    docs: Iterable[Doc],
    settings: LintSettings | None,
    defaults: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> Report:
    """The findings of the rules `settings` turns on, over the table and view specs among `docs` (read and with
    the environment applied; a document that is not a valid spec is left to `validate`), each table with the
    properties the environment's `defaults` give it; then the team's Python rules (`rules:`), imported from
    `root`, over each spec file."""
    rules = enabled(settings)
    custom = tuple(settings.rules) if settings is not None else ()
    functions = [(ref, custom_rules.load(ref, root or Path.cwd(), "lint rule")) for ref in custom]
    findings: list[Finding] = []
    tables = views = 0
    for doc in docs:
        table = _spec(doc, "table", TableSpec)
        view = _spec(doc, "view", ViewSpec) if table is None else None
        if table is not None:
            tables += 1
            findings.extend(_table_findings(doc, table, rules, settings, defaults or {}))
            findings.extend(_allow_findings(doc, table))
        elif view is not None:
            views += 1
            subject = ViewSubject(doc.data, view)
            for name in rules:
                check = VIEW_RULES.get(name)
                for hit in check(subject, getattr(settings, RULES[name][0])) if check is not None else ():
                    findings.append(_finding(doc, name, hit))
        if table is not None or view is not None:
            spec = custom_rules.SpecFile(doc.file, doc.data, "table" if table is not None else "view")
            for ref, function in functions:
                for found in custom_rules.call(ref, function, spec, "lint rule"):
                    line = doc.line(*found.at) if found.at else found.line or 1
                    findings.append(Finding(doc.file, line, ref, found.severity, found.message))
    return Report(tuple(sorted(findings)), tables, len(rules) + len(custom), views)


def _table_findings(
    doc: Doc, spec: TableSpec, rules: list[str], settings: LintSettings | None, defaults: Mapping[str, str]
) -> Iterator[Finding]:
    subject = Subject(doc.data, spec, defaults)
    disabled = set(spec.lint.disable) if spec.lint is not None else set()
    # Per column: only spec_models.COLUMN_LINT_RULES can be named there, each of them finding things at a column.
    exempt = {index: set(c.lint.disable) for index, c in enumerate(spec.columns) if c.lint is not None}
    for name in rules:
        if name in disabled:
            continue
        field, check = RULES[name]
        for hit in check(subject, getattr(settings, field)):
            if hit.loc[:1] == ("columns",) and name in exempt.get(hit.loc[1], ()):
                continue
            yield _finding(doc, name, hit)


# Always on: an allow is a new setting, and one that lets nothing through must not stay to let something
# else through later.
STALE_ALLOW = "stale-allow"


def _allow_findings(doc: Doc, spec: TableSpec) -> Iterator[Finding]:
    """A warning at each `allow:` entry the spec itself shows to be stale: the change it names is not in the
    spec (a dropped column still declared, a rename or backfill already gone from it). Whether an allowed
    change was already applied only the catalog knows: `plan` says so (stale_allows)."""
    columns = {c.name.lower(): c for c in spec.columns}
    renamed = {c.renamed_from.lower(): c for c in spec.columns if c.renamed_from}
    for index, entry in enumerate(spec.allow):
        for kind, target in entry.items():
            why = _stale_because(kind, target.strip(), spec, columns, renamed)
            if why is not None:
                message = f"allow {{{kind}: {target}}} lets nothing through: {why}; remove it"
                yield Finding(doc.file, doc.line("allow", index), STALE_ALLOW, "warning", message)


def _stale_because(
    kind: str, target: str, spec: TableSpec, columns: Mapping[str, Any], renamed: Mapping[str, Any]
) -> str | None:
    top = target.split(".", 1)[0].lower()
    if kind == "drop_column":
        return f"the spec still declares `{target}`" if top in columns and "." not in target else None
    if kind in ("change_type", "move_column", "drop_not_null", "backfill") and top not in columns:
        return f"the spec declares no column `{target}`"
    column = columns.get(top)
    if kind == "drop_not_null" and column is not None and not column.nullable:
        return f"`{target}` is nullable: false in the spec"
    if kind == "backfill" and column is not None and column.backfill is None:
        return f"`{target}` has no backfill: (applied, or never written)"
    if kind == "rename_column" and target.lower() not in renamed and not (top in columns and columns[top].renamed_from):
        return f"no column of the spec is renamed from or to `{target}`"
    if kind == "rename_table" and (spec.renamed_from or "").lower() != target.lower():
        return f"the spec's table is not renamed_from `{target}`"
    return None


def _finding(doc: Doc, rule: str, hit: Hit) -> Finding:
    return Finding(doc.file, doc.line(*hit.loc), rule, hit.level, hit.message)


_Spec = TypeVar("_Spec", TableSpec, ViewSpec)


def _spec(doc: Doc, key: str, model: type[_Spec]) -> _Spec | None:
    if key not in doc.data or "drop" in doc.data:
        return None
    try:
        return model.model_validate(doc.data)
    except ValidationError:
        return None
