"""Rehearsal on shallow clones: the values and decisions, pure. `delta_sync.review.clones` runs them.

A rehearsal runs a table's statements, as the plan has them, on a `SHALLOW CLONE` of the table at the
version the plan read: Delta copies the metadata (schema, constraints, properties, protocol, column
mapping) in one commit of the clone and references the source's data files without writing to the
source. Whatever Delta would refuse at apply (a property value it rejects, a feature it cannot write,
a parser difference) it refuses on the clone first, while nothing of the table has changed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from delta_sync.model.state import SchemaName, Table, TableName
from delta_sync.planning.actions import (
    Action,
    Backfill,
    BreaksView,
    CreateSchema,
    CreateTable,
    CreateView,
    Notice,
    Plan,
    RemoveTable,
    RenameTable,
    RestoreTable,
    RewriteTable,
)

# The table property every clone carries: which plan made it, for which table, from which process.
STAMP = "delta_sync.rehearsal"
# Clone names: `<table>__rehearsal_<plan id>`; leftovers are looked for under this marker only.
MARKER = "__rehearsal_"
DEFAULT_SCHEMA_SUFFIX = "__delta_sync_rehearsal"
DEFAULT_MAX_BYTES = 1 << 30
# Rows of a sampled copy (a table larger than rehearse_max_bytes whose rows the plan moves).
SAMPLE_ROWS = 10_000
# A clone stamped by another machine is a leftover once this old (its process cannot be asked).
STALE_AFTER = timedelta(hours=6)


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_POSSIBLE = "not possible"


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """How one table's rehearsal went."""

    table: TableName
    outcome: Outcome
    seconds: float
    # The clone it ran on (gone again); None when no clone could be made.
    clone: TableName | None = None
    # Set when the rows were a sample (the table is larger than rehearse_max_bytes and the plan moves rows).
    sampled: str | None = None
    # A failure: the statement Delta refused, the index of its action in the plan, and Delta's words.
    statement: str | None = None
    index: int | None = None
    error_class: str | None = None
    message: str | None = None
    # Why there was no rehearsal (NOT_POSSIBLE), or what is left over after a run that did not converge.
    reason: str | None = None

    def text(self) -> str:
        took = f"{self.seconds:.1f} s"
        if self.outcome is Outcome.NOT_POSSIBLE:
            return f"not rehearsed: {self.reason}"
        on = f"on a sampled copy ({self.sampled})" if self.sampled else "on a shallow clone"
        if self.outcome is Outcome.PASSED:
            return f"passed {on} in {took}"
        # The failure itself is shown, blocked, on the change whose statement Delta refused.
        return f"failed {on} in {took}: {self.error_class or 'see the blocked item'}"

    def failure(self) -> str:
        if self.statement is None:
            return self.reason or "the clone did not come out as the spec says"
        error = f"{self.error_class}: " if self.error_class else ""
        first = self.statement.splitlines()[0]
        return f"Delta refused `{first}`: {error}{self.message}"

    def as_json(self) -> dict[str, object]:
        return {
            "table": str(self.table),
            "rehearsed": self.outcome is not Outcome.NOT_POSSIBLE,
            "outcome": self.outcome.value,
            "seconds": round(self.seconds, 3),
            "sampled": self.sampled,
            "statement": self.statement,
            "error_class": self.error_class,
            "message": self.message,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Rehearsal:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        seconds = data.get("seconds")
        return cls(
            TableName.parse(str(data["table"])),
            Outcome(str(data["outcome"])),
            float(seconds) if isinstance(seconds, int | float) else 0.0,
            sampled=text("sampled"),
            statement=text("statement"),
            error_class=text("error_class"),
            message=text("message"),
            reason=text("reason"),
        )


def scratch_schema(table: TableName, configured: str | None) -> SchemaName:
    """Where a table's clone goes: the environment's `rehearsal_schema:`, else `<schema>__delta_sync_rehearsal`
    in the table's catalog."""
    if configured:
        parts = configured.lower().split(".")
        if len(parts) == 2:
            return SchemaName(parts[0], parts[1])
        return SchemaName(table.catalog, parts[0])
    return SchemaName(table.catalog, f"{table.schema}{DEFAULT_SCHEMA_SUFFIX}")


def owns_schema(schema: SchemaName) -> bool:
    """A scratch schema delta-sync named itself: dropped again once empty."""
    return schema.name.endswith(DEFAULT_SCHEMA_SUFFIX)


def clone_name(table: TableName, schema: SchemaName, plan_id: str) -> TableName:
    # Table names in a metastore are at most 128 characters; the source's name is cut, not the plan id.
    suffix = f"{MARKER}{plan_id}"
    return TableName(schema.catalog, schema.name, f"{table.name[: 128 - len(suffix)]}{suffix}")


def stamp(plan_id: str, source: TableName, host: str, pid: int, now: datetime) -> str:
    data = {"plan": plan_id, "source": str(source), "host": host, "pid": pid, "started": now.isoformat()}
    return json.dumps(data, separators=(",", ":"))


def is_leftover(value: str, host: str, alive: Callable[[int], bool], now: datetime) -> bool:
    """Whether a stamped clone is left over from a rehearsal that is no longer running. `alive(pid)` is
    asked only for a clone stamped on this host (another host's processes cannot be asked: age decides)."""
    try:
        data = json.loads(value)
        started = datetime.fromisoformat(str(data["started"]))
    except (ValueError, KeyError, TypeError):
        return True  # a stamp delta-sync did not write as such: nothing else names a table like this
    pid = data.get("pid")
    if data.get("host") == host and isinstance(pid, int):
        return not alive(pid)
    return now - started > STALE_AFTER


def now() -> datetime:
    return datetime.now(UTC)


def tables_to_rehearse(plan: Plan) -> list[TableName]:
    """The tables whose statements a rehearsal runs, in plan order. A rollback's RESTORE refers to the
    source's own versions, which a clone does not have: such a table is not rehearsed."""
    names: list[TableName] = []
    views = {a.name for a in plan.actions if isinstance(a, CreateView) or (isinstance(a, RemoveTable) and a.view)}
    for action in plan.actions:
        # A view holds no data to clone: its query is analysed at plan time instead.
        if isinstance(action, CreateSchema | Notice | BreaksView) or action.name in names or action.name in views:
            continue
        names.append(action.name)
    return names


def why_not(actions: tuple[Action, ...]) -> str | None:
    if any(isinstance(a, RestoreTable) for a in actions):
        return "RESTORE refers to the table's own versions, which a clone does not have"
    if any(isinstance(a, RenameTable) for a in actions):
        return "a table rename changes the catalog's entry, which a clone does not share"
    if any(isinstance(a, RemoveTable) for a in actions):
        return "a drop changes the catalog's entry, which a clone does not share"
    return None


def moves_rows(actions: tuple[Action, ...]) -> bool:
    return any(isinstance(a, RewriteTable | Backfill) for a in actions)


def retarget(actions: tuple[Action, ...], clone: TableName, stamp_value: str) -> tuple[Action, ...]:
    """The table's actions, aimed at its clone. A new table is created under the clone's name with the
    stamp among its properties (a leftover is then recognised whatever step was killed)."""
    moved: list[Action] = []
    for action in actions:
        if isinstance(action, CreateTable):
            table = action.table
            # Never the spec's location: that is where the real table's files will be.
            properties = (*table.properties, (STAMP, stamp_value))
            moved.append(replace(action, table=replace(table, name=clone, properties=properties, location=None)))
        elif isinstance(action, CreateSchema | CreateView | BreaksView):
            continue
        else:
            moved.append(replace(action, name=clone))
    return tuple(moved)


def as_source(clone: Table, source: TableName) -> Table:
    """The clone as read, under the source's name and without its stamp: what convergence compares."""
    return replace(clone, name=source, properties=tuple((k, v) for k, v in clone.properties if k != STAMP))


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def valid_schema_setting(value: str) -> str | None:
    """What is wrong with a `rehearsal_schema:` value, or None."""
    parts = value.split(".")
    if len(parts) not in (1, 2) or not all(_IDENT.fullmatch(p) for p in parts):
        return "give a schema name (`scratch`) or catalog.schema (`main.scratch`): letters, digits and _"
    return None
