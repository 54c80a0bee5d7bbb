"""The commands that only read the catalog: import (live tables -> specs), drift (who changed what since the
last apply), check (declared keys against the data now). Part of the shell, beside `api`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from delta_sync.model.catalog import Catalog, Commit, ProbeResult
from delta_sync.model.errors import CatalogError, DeltaSyncError
from delta_sync.model.state import (
    CatalogState,
    ForeignKey,
    PrimaryKey,
    SchemaName,
    Table,
    TableName,
    View,
    ignored_by,
)
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.actions import CreateSchema, Plan
from delta_sync.planning.diff import planner
from delta_sync.review import views
from delta_sync.specs import importer


def import_targets(catalog: Catalog, targets: Sequence[str], ignore: Sequence[str] = ()) -> list[TableName]:
    """`SCHEMA` (every table in it but those the project's `ignore:` patterns leave to other tools),
    `SCHEMA.TABLE` or `CATALOG.SCHEMA.TABLE` (refused when ignored) -> table names."""
    names: list[TableName] = []
    for target in targets:
        parts = target.split(".")
        if len(parts) == 1 and parts[0].strip():
            listed = catalog.list_tables(SchemaName(None, parts[0].lower()))
            names.extend(name for name in listed if ignored_by(name, ignore) is None)
            continue
        try:
            name = TableName.parse(target)
        except ValueError as exc:
            raise DeltaSyncError(f"import {target}: {exc}") from None
        pattern = ignored_by(name, ignore)
        if pattern is not None:
            raise DeltaSyncError(
                f"import {target}: it matches `{pattern}` under ignore: in delta-sync.yaml, so another tool "
                "manages it and it was not imported; remove the pattern if delta-sync is to manage it"
            )
        names.append(name)
    return sorted(set(names))


def import_specs(
    catalog: Catalog,
    names: Sequence[TableName],
    out: Path,
    *,
    force: bool = False,
    on_table: Callable[[TableName], None] = lambda _n: None,
    defaults: Mapping[str, str] | None = None,
) -> tuple[list[Path], list[str]]:
    """Write one spec per table under `out`; returns the files written and the tables skipped (with why).
    A property equal to the project's default (`defaults`) is left out of the spec."""
    paths = {name: importer.spec_path(out, name) for name in names}
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not force:
        raise DeltaSyncError(
            "import would overwrite existing spec files (nothing was written): "
            + ", ".join(existing)
            + ". Pass --force to overwrite them, or --out another folder."
        )
    texts: dict[Path, str] = {}
    skipped: list[str] = []
    for start in range(0, len(names), IMPORT_BATCH):
        batch = names[start : start + IMPORT_BATCH]
        found = _read_each(catalog, batch, skipped)
        for name in batch:
            on_table(name)
            if name not in found:
                continue  # skipped, with its reason
            table = found[name]
            if table is None:
                skipped.append(f"{name}: no such table")
            else:
                texts[paths[name]] = importer.spec_text(table, defaults)
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(texts), skipped


# Tables read per catalog call: one listing of schemas serves them all, and progress still moves.
IMPORT_BATCH = 25


def _read_each(
    catalog: Catalog, names: Sequence[TableName], skipped: list[str]
) -> dict[TableName, Table | View | None]:
    """The tables of `names`: one that can't be read (not Delta, unreadable) is skipped with its reason, and
    the others still come."""
    failed: dict[TableName, str] = {}
    state = read_tolerant(catalog, names, failed)
    skipped.extend(f"{name}: {why}" for name, why in failed.items())
    return {name: state.table(name) or state.views.get(name) for name in names if name not in failed}


def read_tolerant(
    catalog: Catalog, names: Iterable[TableName], failed: dict[TableName, str] | None = None
) -> CatalogState:
    """The tables and views of `names`, read together; when one can't be read, each on its own, so that one
    that is not Delta (or unreadable) is left out (its reason in `failed`) and the others still come."""
    names = sorted(set(names))
    if not names:
        return CatalogState(tables={})
    try:
        return catalog.read(names)
    except CatalogError:
        pass
    tables: dict[TableName, Table] = {}
    views: dict[TableName, View] = {}
    for name in names:
        try:
            state = catalog.read([name])
        except CatalogError as exc:
            if failed is not None:
                failed[name] = str(exc)
            continue
        tables.update(state.tables)
        views.update(state.views)
    return CatalogState(tables=tables, views=views)


@dataclass(frozen=True, slots=True)
class Drift:
    plan: Plan
    desired: CatalogState
    # Per drifted table, the commits since the last delta-sync apply (newest first).
    commits: dict[TableName, list[Commit]]


def drift(catalog: Catalog, desired: CatalogState) -> Drift:
    current = catalog.read(desired.names_to_read())
    plan = planner.plan(current, desired)
    # As in plan: a view of the specs whose query does not resolve is an error of the spec, never "in sync".
    # Only that is wanted here; what the analysis adds to the plan (re-creations, hazards) is not drift.
    views.check(catalog, plan, current, desired)
    changed = sorted({a.name for a in plan.changes if not isinstance(a, CreateSchema)})
    commits: dict[TableName, list[Commit]] = {}
    for name in changed:
        if current.table(name) is None:
            commits[name] = []  # a view, a table to create or to rename: no history to read under this name
            continue
        history = catalog.history(name)
        since = []
        for commit in history:
            if commit.by_delta_sync:
                break
            since.append(commit)
        commits[name] = since
    return Drift(plan, desired, commits)


@dataclass(frozen=True, slots=True)
class KeyCheck:
    """What `check` found for one declared key."""

    table: TableName
    key: PrimaryKey | ForeignKey
    result: ProbeResult

    @property
    def holds(self) -> bool:
        return not self.result.violations


def check_keys(
    catalog: Catalog, desired: CatalogState, on_status: Callable[[str], None] = lambda _m: None
) -> list[KeyCheck]:
    """Every key the specs declare, against the data as it is now: no engine enforces keys, so writers
    break them; this finds out. One scan per table for all its keys."""
    work = [t for t in (desired.tables[n] for n in sorted(desired.tables)) if t.primary_key or t.foreign_keys]
    current = catalog.read([t.name for t in work] + [k.table for t in work for k in t.foreign_keys])
    missing = [str(t.name) for t in work if current.table(t.name) is None]
    if missing:
        raise DeltaSyncError(f"cannot check the keys of {', '.join(missing)}: no such table (run apply first)")
    found: list[KeyCheck] = []
    for done, table in enumerate(work):
        on_status(f"Checking the keys of {table.name} ({done + 1}/{len(work)})...")
        declared: list[tuple[PrimaryKey | ForeignKey, str | None]] = []
        if table.primary_key is not None:
            declared.append((table.primary_key, None))
        for key in table.foreign_keys:
            declared.append((key, keyprobe.parent_now(key, current, desired)))
        results = {r.check: r for r in catalog.probe_keys(table.name, table.name.sql(), declared)}
        found.extend(KeyCheck(table.name, key, results[key.name]) for key, _r in declared)
    return found
