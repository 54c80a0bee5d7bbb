"""What an environment changes in a spec file before it is judged: its `${name}` vars filled into every
string (`$${name}` being the escape for a literal `${name}`), with each undeclared name a problem at its
line, and its catalog put in front of two-part table names (the table's, a view's query's and the foreign
keys' references). `escape_vars` is the way back, for writing live text into a spec.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from delta_sync.model.errors import SpecProblem
from delta_sync.specs.yamldoc import Doc
from delta_sync.sql import queries as viewsql

_PROJECT_FILE = "delta-sync.yaml"  # settings.PROJECT_FILE; not imported: that module builds the project's models


# `${name}` of an environment's var; `$${name}` is the escape for a literal `${name}`.
_VAR_REF = re.compile(r"(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute_vars(value: Any, vars: Mapping[str, str]) -> Any:
    """`value` (a parsed spec document) with `${name}` replaced in every string, for the declared `vars`.

    `${name}` of an undeclared name is left as written here (loading a spec reports it). `$${name}`
    writes a literal `${name}`. Keys are not changed, and a replacement is not searched again, so a
    value containing `${...}` is taken as it is.
    """
    return _VarFiller(vars).fill(value, ())


def escape_vars(value: Any) -> Any:
    """`value` with every `${name}` in its strings written as `$${name}`, which a spec reads back as
    the same text: for writing live text (a comment, an expression) into a spec file."""
    if isinstance(value, str):
        return _VAR_REF.sub(lambda match: "$" + match.group(0), value)
    if isinstance(value, dict):
        return {key: escape_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [escape_vars(item) for item in value]
    return value


@dataclass
class _VarFiller:
    """Fills `${name}` in every string value, noting where an undeclared name was used."""

    vars: Mapping[str, str]
    undeclared: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)

    def fill(self, value: Any, loc: tuple[Any, ...]) -> Any:
        if isinstance(value, str):
            return _VAR_REF.sub(lambda match: self._value(match, loc), value) if "${" in value else value
        if isinstance(value, dict):
            return {key: self.fill(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [self.fill(item, (*loc, i)) for i, item in enumerate(value)]
        return value

    def _value(self, match: re.Match[str], loc: tuple[Any, ...]) -> str:
        escaped, name = match.groups()
        if escaped:
            return match.group(0)[1:]
        if name not in self.vars:
            self.undeclared.append((loc, name))
            return match.group(0)
        return self.vars[name]


def _for_environment(
    doc: Doc, vars: Mapping[str, str], catalog: str | None, env: str | None, problems: list[SpecProblem]
) -> Doc:
    filler = _VarFiller(vars)
    data = filler.fill(doc.data, ())
    where = f"envs.{env}.vars" if env else f"the vars: of the environment in {_PROJECT_FILE}"
    for loc, name in filler.undeclared:
        line = doc.line(*loc)
        problems.append(SpecProblem(doc.file, line, f"undeclared variable `{name}`", f"declare it in {where}"))
    if catalog:
        data = _in_catalog(data, catalog)
    return Doc(doc.file, doc.root, data)


def _in_catalog(data: dict[Any, Any], catalog: str) -> dict[Any, Any]:
    """Two-part names (the table's, and those its foreign keys reference) put in the environment's catalog."""
    for key in ("table", "view", "renamed_from"):
        name = data.get(key)
        if isinstance(name, str) and name.count(".") == 1:
            data = {**data, key: f"{catalog}.{name}"}
    query = data.get("sql")
    if isinstance(query, str) and viewsql.problem(query) is None:
        data = {**data, "sql": viewsql.qualify(query, catalog)}
    foreign_keys = data.get("foreign_keys")
    if isinstance(foreign_keys, list):
        data = {**data, "foreign_keys": [_references_in_catalog(fk, catalog) for fk in foreign_keys]}
    return data


def _references_in_catalog(fk: Any, catalog: str) -> Any:
    text = fk.get("references") if isinstance(fk, dict) else None
    if not isinstance(text, str) or "(" not in text:
        return fk  # reported as it is written
    table, paren, rest = text.partition("(")
    if table.strip().count(".") != 1:
        return fk
    return {**fk, "references": f"{catalog}.{table.strip()}{paren}{rest}"}


def _not_explained_by(undeclared: list[SpecProblem], problems: list[SpecProblem]) -> list[SpecProblem]:
    """`problems` without those on the line of an undeclared variable, which it explains:
    `shop.orders${suffix}` is not a bad table name, it is a missing declaration."""
    lines = {p.line for p in undeclared}
    return [p for p in problems if p.line not in lines]
