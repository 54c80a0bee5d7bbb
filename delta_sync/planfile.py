"""Saved plans: a versioned JSON document that `apply` can run exactly, and refuse when stale.

The document holds, per table, a fingerprint of the state the plan was made against (exists or not,
Delta table version, a hash of the state read). `apply plan.json` re-reads those tables and runs the
saved statements only if no fingerprint moved. It never holds secrets: SQL, names and hashes only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from delta_sync import __version__
from delta_sync.errors import DeltaSyncError
from delta_sync.model import CatalogState, Table, TableName

FORMAT_VERSION = 1


class StalePlanError(DeltaSyncError):
    """The catalog moved since the plan was made; nothing was applied."""

    exit_code = 4


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Fingerprint(_Frozen):
    exists: bool
    version: int | None = None
    state: str | None = None


class SavedTable(_Frozen):
    name: str
    fingerprint: Fingerprint


class SavedStatement(_Frozen):
    table: str
    kind: str
    sql: str
    check: str | None = None


class SavedPlan(_Frozen):
    """The part of a plan file that `apply` reads; the rest (actions, hazards, probes) is for people and tools."""

    format_version: Literal[1]
    tool_version: str
    environment: str
    plan_id: str
    specs_hash: str
    # The spec folder the plan was made from, relative to the project root (POSIX), if known.
    specs: str | None = None
    tables: tuple[SavedTable, ...]
    statements: tuple[SavedStatement, ...]
    blocked: bool = False


def state_hash(table: Table) -> str:
    """A hash of everything delta-sync compares (not file counts or versions)."""
    canonical = {
        "columns": [
            [c.name, c.type, c.nullable, c.comment, c.default, c.generated, repr(c.identity)] for c in table.columns
        ],
        "comment": table.comment,
        "checks": [[c.name, c.expression] for c in table.checks],
        "partitioned_by": list(table.partitioned_by),
        "clustered_by": list(table.clustered_by),
        "properties": [list(p) for p in table.properties],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(table: Table | None) -> Fingerprint:
    if table is None:
        return Fingerprint(exists=False)
    return Fingerprint(exists=True, version=table.version, state=state_hash(table))


def specs_hash(paths: Iterable[Path], root: Path) -> str:
    """A hash of the spec files' names (relative to `root`, so the same wherever the project is) and contents."""
    digest = hashlib.sha256()
    for path in paths:
        name = path.resolve().relative_to(root.resolve()).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def header(
    plan_id: str,
    environment: str,
    specs: str,
    current: CatalogState,
    names: Sequence[TableName],
    specs_dir: str | None = None,
) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "environment": environment,
        "plan_id": plan_id,
        "specs_hash": specs,
        **({"specs": specs_dir} if specs_dir is not None else {}),
        "tables": [{"name": str(name), "fingerprint": fingerprint(current.table(name)).model_dump()} for name in names],
    }


def load(path: Path) -> SavedPlan:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DeltaSyncError(f"{path} is not a readable plan file: {exc}") from None
    if isinstance(data, dict) and data.get("format_version") not in (None, FORMAT_VERSION):
        raise DeltaSyncError(
            f"{path} has plan format {data.get('format_version')}; this delta-sync reads format {FORMAT_VERSION}. "
            "Make the plan again with this version."
        )
    try:
        return SavedPlan.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise DeltaSyncError(f"{path} is not a delta-sync plan file ({where}: {problem['msg']})") from None


def moved(saved: SavedPlan, current: CatalogState) -> list[str]:
    """How each table differs from when the plan was made; empty when the plan is still valid."""
    changes = []
    for entry in saved.tables:
        now = fingerprint(current.table(TableName.parse(entry.name)))
        was = entry.fingerprint
        if now == was:
            continue
        if was.exists and not now.exists:
            changes.append(f"{entry.name} was dropped since the plan was made")
        elif not was.exists and now.exists:
            changes.append(f"{entry.name} was created since the plan was made (now at version {now.version})")
        elif was.version != now.version:
            changes.append(f"{entry.name} moved from version {was.version} to {now.version} since the plan was made")
        else:
            changes.append(f"{entry.name} changed since the plan was made")
    return changes
