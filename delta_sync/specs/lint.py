"""`delta-sync lint`'s engine: the rules delta-sync.yaml turns on (delta_sync.specs.lint_rules), run over every
table spec as its file is written, less the rules the spec's own `lint: {disable: [...]}` turns off, give
findings at the line of the YAML node each one is about. Pure: the documents come read (spec_files), and the
command line prints the report.

A view or a tombstone is not linted: the rules are about tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from delta_sync.specs.lint_rules import RULES, Level, LintSettings, Subject
from delta_sync.specs.spec_models import TableSpec
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
    """Every finding, sorted by file and line, and how many table specs were linted."""

    findings: tuple[Finding, ...]
    tables: int
    rules: int

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
        if not self.rules:
            return f"{specs}: no lint rules (add a `lint:` section to delta-sync.yaml to turn rules on)."
        if not self.findings:
            return f"{specs}: no findings ({self.rules} rule{'s' if self.rules != 1 else ''})."
        counts = [_count(self.errors, "error"), _count(self.warnings, "warning")]
        return f"{', '.join(counts)} in {specs}."

    def to_json(self) -> dict[str, Any]:
        return {
            "findings": [finding.to_json() for finding in self.findings],
            "summary": {"errors": self.errors, "warnings": self.warnings, "tables": self.tables, "rules": self.rules},
        }


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def enabled(settings: LintSettings | None) -> list[str]:
    """The rules `settings` turns on, in their order."""
    if settings is None:
        return []
    return [name for name, (field, _check) in RULES.items() if getattr(settings, field) is not None]


def lint(docs: Iterable[Doc], settings: LintSettings | None, defaults: Mapping[str, str] | None = None) -> Report:
    """The findings of the rules `settings` turns on, over the table specs among `docs` (read and with the
    environment applied; a document that is not a valid table spec is left to `validate`), each table with the
    properties the environment's `defaults` give it."""
    rules = enabled(settings)
    findings: list[Finding] = []
    tables = 0
    for doc in docs:
        spec = _table_spec(doc)
        if spec is None:
            continue
        tables += 1
        subject = Subject(doc.data, spec, defaults or {})
        disabled = set(spec.lint.disable) if spec.lint is not None else set()
        for name in rules:
            if name in disabled:
                continue
            field, check = RULES[name]
            for hit in check(subject, getattr(settings, field)):
                findings.append(Finding(doc.file, doc.line(*hit.loc), name, hit.level, hit.message))
    return Report(tuple(sorted(findings)), tables, len(rules))


def _table_spec(doc: Doc) -> TableSpec | None:
    if "table" not in doc.data or "drop" in doc.data:
        return None
    try:
        return TableSpec.model_validate(doc.data)
    except ValidationError:
        return None
