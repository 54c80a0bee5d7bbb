"""`adopt`: the live tables and views written back into their spec files. The catalog is read as `plan`
reads it and the same diff decides what differs; each spec whose table or view `plan` would change is
edited by `specs/adopt.py`, which keeps the file's comments and layout, against the spec with the
environment's `defaults:` merged in (as `plan` merges them). Tables no spec names are left to `import`;
tables the project's `ignore:` patterns leave to other tools are never adopted."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delta_sync.model.catalog import Catalog
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, TableName, ignored_by
from delta_sync.planning.actions import CreateSchema
from delta_sync.planning.diff import planner
from delta_sync.review import environments, pipeline, readonly
from delta_sync.review.results import Progress, ProgressCallback
from delta_sync.specs import adopt as adopter
from delta_sync.specs import fmt
from delta_sync.specs.settings import Environment


@dataclass(frozen=True, slots=True)
class Adopted:
    """What adopt would write (each spec file that differs) and what it left alone, one line each."""

    adoptions: tuple[adopter.Adoption, ...]
    notes: tuple[str, ...]

    @property
    def changed(self) -> tuple[adopter.Adoption, ...]:
        return tuple(a for a in self.adoptions if a.changed)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(w for a in self.adoptions for w in a.warnings)


def adopt(
    specs: str | os.PathLike[str] | None = None,
    tables: Sequence[str] = (),
    *,
    spark: Any = None,
    env: str | None = None,
    progress: ProgressCallback | None = None,
) -> Adopted:
    """The spec files edited to describe the live tables and views `plan` would change (only `tables`, when
    named), their comments and layout kept; nothing is written (`write` does)."""
    project, environment = environments.project_env(env)
    desired = environments.load_desired(project, environment, specs)
    catalog = environments.catalog_for(spark, environment, progress or (lambda _event: None))
    if progress is not None:
        progress(Progress("Comparing the live tables with their specs..."))
    return adopt_specs(catalog, desired, environment, tables)


def adopt_specs(
    catalog: Catalog, desired: CatalogState, environment: Environment, tables: Sequence[str] = ()
) -> Adopted:
    """The spec files edited to describe the live tables and views `plan` would change (only `tables`, when
    named); nothing is written (see `write`)."""
    current = pipeline.read_current(catalog, desired)
    plan = planner.plan(current, desired)
    differ = {a.name for a in plan.changes if not isinstance(a, CreateSchema)}
    notes: list[str] = []
    wanted = _named(catalog, tables, desired, current, notes, environment.catalog)
    adoptions = []
    for name in sorted(differ):
        if wanted is not None and name not in wanted:
            continue
        spec = desired.tables.get(name) or desired.views.get(name)
        live = current.table(name) or current.views.get(name)
        if spec is None:
            continue  # a tombstone's table, or one strict mode drops: a spec's business, not adopt's
        if live is None:
            notes.append(f"{name}: does not exist (apply creates it); its spec is left as it is")
            continue
        if spec.origin is None:
            continue
        source = spec.origin.file
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise DeltaSyncError(f"{source}: cannot read the file: {exc.strerror or exc}") from None
        defaults, order = environment.table_defaults, environment.column_order != "ignore"
        adoption = adopter.adopt_text(text, source, live, environment.vars, environment.catalog, defaults, order)
        adoptions.append(adoption)
        left = adopter.remaining_changes(adoption, live, environment.vars, environment.catalog, defaults, order)
        if left and not adoption.warnings:
            notes.append(f"{name}: {left} change(s) plan would still make are not adopted; edit {source} by hand")
    if wanted is None:
        notes.extend(f"{name}: no spec; left to `delta-sync import {name}`" for name in plan.unmanaged)
    return Adopted(tuple(adoptions), tuple(notes))


def _named(
    engine: Catalog,
    tables: Sequence[str],
    desired: CatalogState,
    current: CatalogState,
    notes: list[str],
    catalog: str | None,
) -> set[TableName] | None:
    if not tables:
        return None
    found: set[TableName] = set()
    for text in tables:
        try:
            name = TableName.parse(text)
        except ValueError as exc:
            raise DeltaSyncError(f"adopt {text}: {exc}") from None
        if catalog and name.catalog is None and text.count(".") == 1:
            name = TableName.parse(f"{catalog}.{text}")
        pattern = ignored_by(name, desired.ignore)
        if pattern is not None:
            notes.append(
                f"{name}: matches `{pattern}` under ignore: in delta-sync.yaml, so another tool manages it; "
                "not adopted (remove the pattern if delta-sync is to manage it)"
            )
        elif name in desired.tables or name in desired.views:
            found.add(name)
        elif name in (current.listed or ()) or readonly.read_tolerant(engine, [name]).names_to_read():
            notes.append(f"{name}: no spec; left to `delta-sync import {name}`")
        else:
            notes.append(f"{name}: no spec, and no such table or view")
    return found


def write(adopted: Adopted) -> list[str]:
    """Write each changed spec file (atomically, its mode kept); the files written."""
    written = []
    for adoption in adopted.changed:
        fmt._write_file(Path(os.path.abspath(adoption.source)), adoption.after, adoption.source)
        written.append(adoption.source)
    return written
