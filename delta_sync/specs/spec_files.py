"""Spec files (YAML, one table or view each) -> the desired CatalogState: the only part of loading specs
that touches files. It finds the files of a folder, has yamldoc read each one into plain data and the node
tree it came from (which gives the lines), applies the environment, and builds each document into the state;
every problem of every file is collected and raised as one SpecError, each pointing at the line it is about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import CatalogState, Origin, Table, TableName, View
from delta_sync.specs.desired_state import (
    _check_references,
    _check_table_renames,
    _check_view_cycles,
    _table,
    _tombstone,
    _view,
)
from delta_sync.specs.variables import _for_environment, _not_explained_by
from delta_sync.specs.yamldoc import Doc, Hints, read, shown_path

_HINTS = Hints(
    empty="a spec needs at least table: and columns:",
    too_large="declare one table per file",
    layout="start with `table: schema.table` and `columns:`; `delta-sync schema` shows the format",
)


def spec_paths(path: Path) -> list[Path]:
    """The spec files under `path` (a folder, or one file), in a stable order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        hint = "pass the folder that holds the table specs"
        raise SpecError([SpecProblem(shown_path(path), 0, f"{path} does not exist", hint)])
    files = sorted(p for p in {*path.rglob("*.yaml"), *path.rglob("*.yml")} if p.is_file())
    if not files:
        hint = "add one spec file per table there, or point at the folder that has them"
        raise SpecError([SpecProblem(shown_path(path), 0, f"no *.yaml or *.yml files under {path}/", hint)])
    return files


def load_specs(
    path: Path, vars: Mapping[str, str] | None = None, catalog: str | None = None, env: str | None = None
) -> CatalogState:
    """The desired state declared by the spec files under `path` (a folder, or one file).

    `vars` fill `${name}` in every string (the vars of the environment `env`); `catalog` is the
    catalog of two-part table names (its catalog)."""
    return load_spec_files(spec_paths(path), vars, catalog, env)


def load_spec_files(
    paths: Sequence[Path],
    vars: Mapping[str, str] | None = None,
    catalog: str | None = None,
    env: str | None = None,
) -> CatalogState:
    """The desired state declared by these spec files; raises SpecError listing every problem.

    A `${name}` that `vars` do not declare is a problem at its line, naming where to declare it
    (in environment `env`); the value holding it is not judged any further."""
    problems: list[SpecProblem] = []
    tables: dict[TableName, Table] = {}
    views: dict[TableName, View] = {}
    dropped: dict[TableName, Origin] = {}
    dropped_views: set[TableName] = set()
    declared: dict[TableName, Origin] = {}
    for path in paths:
        file_problems: list[SpecProblem] = []
        undeclared: list[SpecProblem] = []
        doc = read(path, file_problems, _HINTS)
        if doc is not None:
            doc = _for_environment(doc, vars or {}, catalog, env, undeclared)
        if doc is not None:
            duplicate = False
            key = "view" if "view" in doc.data and "table" not in doc.data else "table"
            name = _declared_name(doc, key)
            if name is not None:
                origin = Origin(doc.file, doc.line(key))
                first = declared.setdefault(name, origin)
                duplicate = first is not origin
                if duplicate:
                    message = f"{key} `{name}` is already declared at {first}"
                    file_problems.append(doc.problem((key,), message, "keep one spec file per table or view"))
            if "drop" in doc.data:
                tombstone = _tombstone(doc, file_problems, key)
                if tombstone is not None and not duplicate:
                    dropped[tombstone] = Origin(doc.file, doc.line(key))
                    if key == "view":
                        dropped_views.add(tombstone)
            elif key == "view":
                view = _view(doc, file_problems)
                if view is not None and not duplicate:
                    views[view.name] = view
            else:
                table = _table(doc, file_problems)
                if table is not None and not duplicate:
                    tables[table.name] = table
        file_problems = undeclared + _not_explained_by(undeclared, file_problems)
        problems.extend(sorted(file_problems, key=lambda p: p.line))
    problems.extend(_check_references(tables))
    problems.extend(_check_table_renames(tables, dropped))
    problems.extend(_check_view_cycles(views))
    if problems:
        raise SpecError(problems)
    return CatalogState(tables=tables, dropped=dropped, views=views, dropped_views=frozenset(dropped_views))


def spec_documents(
    paths: Sequence[Path],
    vars: Mapping[str, str] | None = None,
    catalog: str | None = None,
    env: str | None = None,
) -> list[Doc]:
    """Each spec file's document as the environment makes it (its vars filled in, its catalog in front of
    two-part names), with the lines it came from: for rules over the files as written (`lint`). A file that
    cannot be read is left out; load_spec_files reports it."""
    documents = []
    for path in paths:
        problems: list[SpecProblem] = []
        doc = read(path, problems, _HINTS)
        if doc is not None:
            documents.append(_for_environment(doc, vars or {}, catalog, env, problems))
    return documents


def _declared_name(doc: Doc, key: str = "table") -> TableName | None:
    """The table (or view) name, even when the rest of the file is broken (for duplicate detection)."""
    text = doc.data.get(key)
    try:
        return TableName.parse(text) if isinstance(text, str) else None
    except ValueError:
        return None
