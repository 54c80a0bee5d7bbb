"""Saved plans: a versioned JSON document that `apply` can run exactly, and refuse when stale.

The document holds, per table, a fingerprint of the state the plan was made against (exists or not,
Delta table version, a hash of the state read). `apply plan.json` re-reads those tables and runs the
saved statements only if no fingerprint moved, and only under the project settings it was reviewed with
(`inputs.py`). It never holds secrets: SQL, names, settings and hashes only, a setting that holds a secret
as a digest. Its checksum (`checksum.py`) covers the whole of it, so a file edited anywhere is refused before
it is read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, Consumer, Table, TableName, View
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import codec as plancodec
from delta_sync.planning.actions import CreateSchema, Plan, RenameTable, sort_key
from delta_sync.planning.statements import statements_of, table_of
from delta_sync.sql import queries as viewsql
from delta_sync.version import __version__

# 2: the typed actions, the desired tables, the allowed hazard classes and the signature.
# 3: the checksum over the whole content (a file of format 2 has none, so it is refused as of another format).
# 4: the project settings the plan was reviewed with (inputs.py); a file of format 3 does not say which, so it
#    is refused as of another format rather than applied under settings nobody reviewed.
FORMAT_VERSION = 4
# A CI secret: when set, `plan --out` signs the file and `apply FILE` refuses one not signed with it.
KEY_VARIABLE = "DELTA_SYNC_PLAN_KEY"


class RefusedPlanError(DeltaSyncError):
    """A saved plan that must not run as it stands (stale, edited, for another environment); nothing was applied."""

    exit_code = 4


class StalePlanError(RefusedPlanError):
    """The catalog moved since the plan was made; nothing was applied."""


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
    # Not statements.Kind: a kind edited in the file is refused as an edit (rebuild, exit 4), not as unreadable.
    kind: str
    sql: str
    check: str | None = None


class SavedProbe(_Frozen):
    table: str
    check: str
    violations: int | None = None
    source: str = "scan"
    skipped: str | None = None


class SavedChecksum(_Frozen):
    """The whole content's digest, and short digests per field that locate an edit (checksum.py)."""

    sha256: str
    fields: dict[str, str | list[str]]


class SavedPlan(_Frozen):
    """The part of a plan file that `apply` reads; the rest (readable actions, hazards) is for people and tools."""

    format_version: Literal[4]
    tool_version: str
    environment: str
    plan_id: str
    specs_hash: str
    # The spec folder the plan was made from, relative to the project root (POSIX), if known.
    specs: str | None = None
    tables: tuple[SavedTable, ...]
    statements: tuple[SavedStatement, ...]
    blocked: bool = False
    # The hazard classes the plan was made with (--allow and the environment's allow).
    allowed: tuple[str, ...] = ()
    # The closed action union, losslessly (plancodec): apply rebuilds every statement from these.
    typed_actions: tuple[dict[str, Any], ...]
    # The tables as the specs declared them: what apply confirms the catalog matches afterwards.
    desired: tuple[dict[str, Any], ...]
    # The tables as the plan read them (for `show`, which re-derives the hazards without a catalog).
    current: tuple[dict[str, Any], ...] | None = None
    probes: tuple[SavedProbe, ...] = ()
    # Made on a caller's SparkSession (the library's `spark=`): it applies through such a session only,
    # never through the environment's own catalog, which may be another one.
    on_session: bool = False
    # A rollback plan (`delta-sync rollback --out`): the id of the plan it undoes, stamped in its commits.
    rolls_back: str | None = None
    # The engines that must keep reading / writing the tables (the project's `readers:` / `writers:`): what
    # apply and show re-derive the compatibility findings against.
    readers: tuple[str, ...] = ()
    writers: tuple[str, ...] = ()
    # Every project setting the review was made with (inputs.py), secrets as digests; apply refuses the plan
    # when one differs now. None for a rollback plan, which Delta's history makes, not the specs. No default:
    # a file of this format without it was not made by delta-sync.
    settings: dict[str, Any] | None
    # The environment's policy the plan was reviewed under (model.policy), when it has one: what `show` and
    # `apply` decide protections, limits and allows with, as `plan` did.
    policy: dict[str, Any] | None = None
    # Optional here only so that a file without one is refused as edited (exit 4), not as unreadable.
    checksum: SavedChecksum | None = None
    signature: str | None = None


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
        "primary_key": [table.primary_key.name, *table.primary_key.columns] if table.primary_key else None,
        "foreign_keys": [[k.name, *k.columns, str(k.table), *k.references] for k in table.foreign_keys],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(table: Table | View | None) -> Fingerprint:
    if table is None:
        return Fingerprint(exists=False)
    if isinstance(table, View):
        # A view has no version: its definition is what must not move between plan and apply.
        columns = [[c.name, c.comment] for c in table.columns or ()]
        canonical = {"sql": viewsql.normalize(table.sql), "comment": table.comment, "columns": columns}
        return Fingerprint(exists=True, state=hashlib.sha256(json.dumps(canonical).encode()).hexdigest()[:16])
    return Fingerprint(exists=True, version=table.version, state=state_hash(table))


def found(current: CatalogState, name: TableName) -> Table | View | None:
    return current.table(name) or current.views.get(name)


def specs_hash(paths: Iterable[Path], root: Path) -> str:
    """A hash of the spec files' names (relative to `root`, so the same wherever the project is) and contents.
    The project settings that make the desired state with them are recorded one by one (`settings`), so that a
    refusal can name the one that changed."""
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
        "tables": [
            {"name": str(name), "fingerprint": fingerprint(found(current, name)).model_dump()} for name in names
        ],
    }


def looks_like_plan(path: Path) -> bool:
    """A saved plan is known by its content (a JSON object with a plan id), whatever its file name."""
    try:
        with path.open("rb") as file:
            head = file.read(1 << 16)
    except OSError:
        return False
    if not head.lstrip().startswith(b"{"):
        return False
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and ("plan_id" in data or "format_version" in data)


def canonical(document: dict[str, Any]) -> bytes:
    """The signed content: the whole document but its signature (its checksum included), in one spelling."""
    return plansum.canonical({k: v for k, v in document.items() if k != plansum.SIGNATURE})


def verify(document: dict[str, Any], what: str) -> None:
    """Refuse (exit 4) a plan document that is not exactly as it was made: edited anywhere, its readable
    part too, or without its checksum. `what` names it (`plan.json`, `plan 3f1c...`)."""
    problem = plansum.difference(document)
    if problem is None:
        return
    if plansum.FIELD not in document:
        raise RefusedPlanError(
            f"{what} has no checksum (every plan file of format {FORMAT_VERSION} has one: it was removed), so "
            "nothing of it was applied; make a new plan and review it again"
        )
    raise RefusedPlanError(
        f"{what} was edited after it was made ({problem}), so nothing of it was applied; make a new plan and "
        "review it again"
    )


def signature(document: dict[str, Any], key: str) -> str:
    return "hmac-sha256:" + hmac.new(key.encode(), canonical(document), hashlib.sha256).hexdigest()


def check_signature(path: Path, key: str | None) -> str:
    """Refuse a file that is not signed with `key` (when a key is set); say what was checked."""
    data = json.loads(path.read_text())
    found = data.get("signature")
    if not key:
        if found:
            return f"signed, but {KEY_VARIABLE} is not set here: the signature was not checked"
        return f"unsigned (set {KEY_VARIABLE} where plans are made and applied to sign and check them)"
    if not found:
        raise RefusedPlanError(
            f"{path} is not signed, and {KEY_VARIABLE} is set here: only plans signed with that key are applied. "
            "Make the plan with the key set."
        )
    if not hmac.compare_digest(str(found), signature(data, key)):
        raise RefusedPlanError(
            f"{path}: the signature does not match its content (the file was edited after it was made, "
            f"or signed with another {KEY_VARIABLE}), so it was not applied. Make a new plan and review it again."
        )
    return "signature checked"


def load(path: Path) -> SavedPlan:
    """A saved plan file, refused when of another format (exit 1), edited anywhere (exit 4: its checksum)
    or not a plan (exit 1). Every reader of a plan file goes through here."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DeltaSyncError(f"{path} is not a readable plan file: {exc}") from None
    if isinstance(data, dict) and data.get("format_version") not in (None, FORMAT_VERSION):
        raise DeltaSyncError(
            f"{path} has plan format {data.get('format_version')}; this delta-sync reads format {FORMAT_VERSION}. "
            "Make the plan again with this version."
        )
    if isinstance(data, dict) and plansum.FIELD in data:
        verify(data, str(path))
    try:
        saved = SavedPlan.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise DeltaSyncError(f"{path} is not a delta-sync plan file ({where}: {problem['msg']})") from None
    if saved.checksum is None:
        verify(data, str(path))  # a plan without its checksum: refused as edited
    return saved


def moved(saved: SavedPlan, current: CatalogState) -> list[str]:
    """How each table differs from when the plan was made; empty when the plan is still valid."""
    changes = []
    for entry in saved.tables:
        now = fingerprint(found(current, TableName.parse(entry.name)))
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


def rebuild(saved: SavedPlan) -> tuple[Plan, CatalogState]:
    """The plan and the desired tables from the file's typed actions, refusing (exit 4) a file whose
    statements are not exactly what those actions make, or whose actions reach beyond its tables."""
    names = {TableName.parse(t.name) for t in saved.tables}
    schemas = {name.schema_name for name in names}
    actions = tuple(plancodec.decode_action(a, f"typed_actions[{i}]") for i, a in enumerate(saved.typed_actions))
    for action in actions:
        outside = action.schema not in schemas if isinstance(action, CreateSchema) else action.name not in names
        outside = outside or (isinstance(action, RenameTable) and action.before not in names)
        if outside:
            raise RefusedPlanError(
                f"plan {saved.plan_id} changes {table_of(action)}, which it did not read when it was made "
                "(it is not among its tables); the file was edited, so it was not applied"
            )
    if list(actions) != sorted(actions, key=sort_key):
        raise RefusedPlanError(f"plan {saved.plan_id}: its actions are out of order; the file was edited")
    renamed_from = {a.before for a in actions if isinstance(a, RenameTable)}
    plan = Plan(actions=actions, tables=tuple(sorted(names - renamed_from)))
    expected = statements_of(plan)
    found = saved.statements
    for index in range(max(len(expected), len(found))):
        want = expected[index] if index < len(expected) else None
        got = found[index] if index < len(found) else None
        same = (
            want is not None
            and got is not None
            and (want.table, want.kind, want.sql, want.check) == (got.table, got.kind, got.sql, got.check)
        )
        if not same:
            shown = got.sql.splitlines()[0] if got is not None else "(missing)"
            raise RefusedPlanError(
                f"plan {saved.plan_id}: statement {index + 1} is not what its actions make "
                f"(`{shown}`); the file was edited, so nothing was applied. Make a new plan and review it again."
            )
    tables = [plancodec.decode_table(t, f"desired[{i}]") for i, t in enumerate(saved.desired)]
    consumers = Consumer.of_texts(saved.readers, saved.writers)
    policy = plancodec.decode_policy(saved.policy) if saved.policy is not None else None
    kept = {t.name: t for t in tables if t.name in names}
    return plan, CatalogState(tables=kept, consumers=consumers, policy=policy)


def probe_results(saved: SavedPlan) -> list[ProbeResult]:
    return [
        ProbeResult(TableName.parse(p.table), p.check, p.violations, skipped=p.skipped or "", source=p.source)
        for p in saved.probes
    ]


def read_state(saved: SavedPlan) -> CatalogState:
    """The tables as the plan read them (absent: they did not exist)."""
    tables = [plancodec.decode_table(t, f"current[{i}]") for i, t in enumerate(saved.current or ())]
    return CatalogState(tables={t.name: t for t in tables})
