"""Rollback: undo a plan from Delta's own history. Pure: history and table states in, actions out.

Every commit of an apply is stamped `{"delta-sync": {"plan": <id>, ...}}` (policy.commit_metadata), so the
history of a table says which versions a plan made and which came after. Per table:

- the plan created it: DROP TABLE (blocked as destructive when others wrote rows into it since);
- nobody wrote since (or only OPTIMIZE, which changes no row): RESTORE to the version before the plan;
- someone wrote since: never RESTORE (it would discard their rows). The reverse change is planned
  forward instead, by the planner, from the table as it is to `reverse(...)`: each part of the table
  the plan changed goes back to what it was, every other part (what others changed) stays.

Table features the plan enabled stay in the protocol either way (RESTORE and ALTER never downgrade
it); `features_enabled` lists them, and a rollback drops the removable ones only when allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from delta_sync.model.catalog import Commit
from delta_sync.model.state import Column, Table, TableName
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff.conventions import COLUMN_MAPPING, TYPE_WIDENING

# How far back a rollback looks for the plan's commits in each table's history.
HISTORY_LIMIT = 1000

# Why a table that does not exist has nothing to undo: a table the plan created and a rollback of it
# dropped leaves no history to find the plan in.
GONE = (
    "it does not exist, so nothing of plan {plan} is left in it (a table the plan created and a rollback "
    "of it dropped keeps no history)"
)

# Operations that change neither rows nor schema: a RESTORE across them discards nothing.
_NEUTRAL = frozenset({"OPTIMIZE"})

# Operations that change metadata only: a table the plan created and others only altered holds no
# rows of theirs.
_METADATA_ONLY = frozenset(
    {
        "CREATE TABLE",
        "ADD COLUMNS",
        "CHANGE COLUMN",
        "CHANGE COLUMNS",
        "RENAME COLUMN",
        "DROP COLUMNS",
        "REPLACE COLUMNS",
        "SET TBLPROPERTIES",
        "UNSET TBLPROPERTIES",
        "ADD CONSTRAINT",
        "DROP CONSTRAINT",
        "CLUSTER BY",
        "UPGRADE PROTOCOL",
        "DROP FEATURE",
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
    }
)

REMOVABLE_FEATURES = protocol.REMOVABLE_FEATURES

_FEATURE_PREFIX = "delta.feature."
# Properties Delta manages or that switch a feature on: a rollback leaves them as they are (the feature
# stays in the protocol whatever the property says).
_MANAGED = (
    _FEATURE_PREFIX,
    "delta.columnmapping.",
    "delta.minreaderversion",
    "delta.minwriterversion",
    "delta.requirecheckpointprotectionbeforeversion",
    COLUMN_MAPPING[0].lower(),
    TYPE_WIDENING[0].lower(),
)


def stamp(commit: Commit) -> dict[str, Any]:
    """delta-sync's stamp in a commit's userMetadata (empty for anyone else's commit)."""
    if not commit.metadata:
        return {}
    try:
        data = json.loads(commit.metadata)
    except (ValueError, RecursionError):  # anyone's text may be there
        return {}
    inner = data.get("delta-sync") if isinstance(data, dict) else None
    return inner if isinstance(inner, dict) else {}


def rollback_stamp(plan_id: str, rolls_back: str, kind: str) -> str:
    """A rollback's commits: its own plan id, and the plan it undoes."""
    return json.dumps({"delta-sync": {"plan": plan_id, "rollback": rolls_back, "action": kind}}, separators=(",", ":"))


def _of_plan(commit: Commit, plan_id: str) -> bool:
    return stamp(commit).get("plan") == plan_id


def _undoing(commit: Commit, plan_id: str) -> bool:
    return stamp(commit).get("rollback") == plan_id


def describe(commit: Commit) -> str:
    """A commit as a rollback names it: `version 8 (WRITE)`, with who wrote it when known."""
    who = commit.user or commit.engine
    return f"version {commit.version} ({commit.operation}{f' by {who}' if who else ''})"


class Way(StrEnum):
    RESTORE = "restore"
    FORWARD = "forward"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class Undo:
    """What undoing plan `plan_id` means for one table, from its history."""

    table: TableName
    plan_id: str
    way: Way
    why: str
    # The version before the plan's first commit (-1 when the plan created the table).
    before: int
    # The plan's own commits (those that landed: a half-applied plan has fewer).
    mine: tuple[int, ...]
    # Commits since the plan's first one by anyone else (earlier rollbacks of the plan excluded).
    others: tuple[Commit, ...]
    # The plan's RENAME COLUMN commits, old name -> new name, in order.
    renames: tuple[tuple[str, str], ...] = ()

    @property
    def last(self) -> int:
        return self.mine[-1]

    @property
    def writers(self) -> tuple[Commit, ...]:
        """The commits since that wrote rows (not metadata only)."""
        return tuple(c for c in self.others if c.operation.upper() not in _METADATA_ONLY)


def touched(plan_id: str, history: list[Commit]) -> bool:
    """Whether the history holds a commit of the plan, or of a rollback of it."""
    return any(_of_plan(c, plan_id) or _undoing(c, plan_id) for c in history)


def undo_of(plan_id: str, table: TableName, history: list[Commit]) -> Undo | None:
    """How to undo plan `plan_id` on `table`, given its history (any order); None when the plan made no
    commit there."""
    mine = sorted((c for c in history if _of_plan(c, plan_id)), key=lambda c: c.version)
    if not mine:
        return None
    first = mine[0]
    before = first.version - 1
    since = sorted((c for c in history if c.version > before and not _of_plan(c, plan_id)), key=lambda c: c.version)
    others = tuple(c for c in since if not _undoing(c, plan_id))
    versions = tuple(c.version for c in mine)
    renames = tuple(
        (params["oldColumnPath"], params["newColumnPath"])
        for c in mine
        if c.operation.upper() == "RENAME COLUMN"
        and {"oldColumnPath", "newColumnPath"} <= (params := dict(c.parameters)).keys()
    )
    if first.version == 0 and first.operation.upper().startswith("CREATE"):
        return Undo(table, plan_id, Way.DROP, f"plan {plan_id} created it", -1, versions, others)
    active = [c for c in others if c.operation.upper() not in _NEUTRAL]
    if not active:
        why = f"nobody wrote the table since plan {plan_id}"
        if others:
            why += f" (only {', '.join(describe(c) for c in others)}, which changes no data)"
        return Undo(table, plan_id, Way.RESTORE, why, before, versions, others, renames)
    why = (
        f"written since plan {plan_id} by {', '.join(describe(c) for c in active)}: a RESTORE would discard "
        "that, so the reverse change is planned forward and keeps it"
    )
    return Undo(table, plan_id, Way.FORWARD, why, before, versions, others, renames)


def _managed(key: str) -> bool:
    return key.lower().startswith(_MANAGED)


def features_enabled(before: Table, after: Table) -> list[str]:
    """The table features the plan added to the protocol."""
    have = {k[len(_FEATURE_PREFIX) :] for k, _v in before.properties if k.startswith(_FEATURE_PREFIX)}
    now = {k[len(_FEATURE_PREFIX) :] for k, _v in after.properties if k.startswith(_FEATURE_PREFIX)}
    return sorted(now - have)


def reverse(current: Table, before: Table, after: Table, renames: tuple[tuple[str, str], ...] = ()) -> Table:
    """The table a rollback aims at: every part the plan changed (from `before` to `after`) as it was
    before, every other part as it is now (`current`, which holds what others did since)."""
    forward = {old.lower(): new for old, new in renames}
    columns: list[Column] = []
    matched: set[str] = set()
    for was in before.columns:
        name = forward.get(was.key, was.name)
        renamed = name.lower() != was.key
        then, now = after.column(name), current.column(name)
        matched |= {name.lower(), was.key}
        if now is None and renamed and current.column(was.name) is not None:
            now, renamed = current.column(was.name), False  # renamed back already
        if now is None:
            if then is None:
                columns.append(was)  # the plan dropped it: it comes back (empty)
            continue  # else someone dropped it since: left so
        if then is None:
            columns.append(now)  # the plan dropped it and someone added one of that name since
            continue
        columns.append(_column(was, then, now, renamed))
    for now in current.columns:
        if now.key not in matched and after.column(now.name) is None:
            columns.append(now)  # added by someone else since the plan
    checks = _merge(
        {c.name: c for c in before.checks}, {c.name: c for c in after.checks}, {c.name: c for c in current.checks}
    )
    had, made = dict(before.properties), dict(after.properties)
    # Managed keys are left out: a RESTORE or DROP FEATURE sets them as Delta sees fit, and the planner
    # changes no key the desired table does not name.
    properties = {k: v for k, v in current.properties if not _managed(k)}
    removed: list[str] = []
    for key in sorted(set(had) | set(made)):
        if _managed(key) or had.get(key) == made.get(key):
            continue
        if key in had:
            properties[key] = had[key]
        else:
            properties.pop(key, None)
            removed.append(key)
    return replace(
        current,
        columns=tuple(columns),
        checks=tuple(sorted(checks.values(), key=lambda c: c.name)),
        comment=_pick(before.comment, after.comment, current.comment),
        partitioned_by=_pick(before.partitioned_by, after.partitioned_by, current.partitioned_by),
        clustered_by=_pick(before.clustered_by, after.clustered_by, current.clustered_by),
        properties=tuple(sorted(properties.items())),
        removed_properties=tuple(removed),
        primary_key=_pick(before.primary_key, after.primary_key, current.primary_key),
        foreign_keys=_pick(before.foreign_keys, after.foreign_keys, current.foreign_keys),
        origin=None,
    )


def _column(was: Column, then: Column, now: Column, renamed: bool) -> Column:
    """A column attribute by attribute: what the plan changed goes back, what others changed stays."""
    return replace(
        now,
        name=was.name if renamed else now.name,
        type=_pick(was.type, then.type, now.type),
        nullable=_pick(was.nullable, then.nullable, now.nullable),
        comment=_pick(was.comment, then.comment, now.comment),
        default=_pick(was.default, then.default, now.default),
        generated=_pick(was.generated, then.generated, now.generated),
        identity=_pick(was.identity, then.identity, now.identity),
        renamed_from=now.name if renamed else None,
    )


def _pick(before: Any, after: Any, current: Any) -> Any:
    """Three-way: what the plan changed goes back; what it left is as it is now."""
    return before if before != after else current


def _merge(before: dict[str, Any], after: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    merged = {}
    for key in sorted(set(before) | set(after) | set(current)):
        value = _pick(before.get(key), after.get(key), current.get(key))
        if value is not None:
            merged[key] = value
    return merged
