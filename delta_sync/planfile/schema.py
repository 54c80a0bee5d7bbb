"""The plan document (`plan --format json`, a saved plan file) as typed objects: what a team's Python rule
receives (`rules:` in delta-sync.yaml, delta_sync.specs.custom_rules) and what `schemas/plan.schema.json`
documents, generated from these models (`python -m delta_sync.planfile.schema` writes it; a test keeps the
two equal and checks real plans against it).

The readable part is typed field by field; each action's own fields (a column's type, a rewrite's
conversions) differ by `kind` and stay as extra attributes (`action.columns`, `action.conversions`); the parts
only `apply` reads (`typed_actions`, `desired`, `current`) stay plain JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Origin(_Part):
    """A spec line, relative to the working directory the plan was made in."""

    file: str
    line: int


class AllowEntry(_Part):
    kind: str = Field(description="The kind of change: drop_column, rewrite, ...")
    target: str = Field(description="What it changes: a column, the table.")
    origin: Origin | None = None


class AllowedBy(_Part):
    """What let an allowable hazard through besides --allow and the environment's allow:."""

    by: str = Field(description="In words: the spec's allows, or safe_below: with the table's size.")
    origin: Origin | None = None
    allows: list[AllowEntry] = Field(default_factory=list, description="The spec's allow: entries that named it.")


class Hazard(_Part):
    """A finding on an action: its class, why, and whether it blocks apply."""

    class_: str = Field(
        alias="class",
        description="destructive, data-dependent, irreversible, breaking, unsupported, rewrite, compatibility, "
        "rehearsal, protected, limit or rule",
    )
    reason: str
    blocked: bool
    why: str | None = Field(None, description="What blocks it (only when blocked).")
    unblock: str | None = Field(None, description="The way out (only when blocked).")
    origin: Origin | None = None
    table_bytes: int | None = Field(None, description="The size of the table a data check scans or a backfill updates.")
    allowed_by: AllowedBy | None = None
    rule: str | None = Field(None, description="The Python rule that found it (class rule).")


class Action(BaseModel):
    """One change, in plan order; its own fields depend on `kind` (e.g. DropColumns has `columns`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str = Field(description="The action's type: CreateTable, DropColumns, RewriteTable, ...")
    table: str | None = Field(None, description="schema.table (catalog.schema.table); absent for CreateSchema.")
    schema_: str | None = Field(None, alias="schema", description="The schema (CreateSchema only).")
    origin: Origin | None = None
    sql: list[str] = Field(description="The statements it runs.")
    hazards: list[Hazard] = Field(default_factory=list)


class Summary(_Part):
    create: int
    change: int
    unchanged: int
    blocked: int
    drop: int


class Probe(_Part):
    """A data check: the rows that break a new rule or key (None: not scanned, `skipped` says why)."""

    table: str
    check: str
    violations: int | None
    source: str
    skipped: str | None


class StaleAllow(_Part):
    table: str
    kind: str
    target: str
    origin: Origin | None


class SavedTable(_Part):
    name: str
    fingerprint: dict[str, Any]


class RuleResult(_Part):
    """A finding of a Python rule, as the plan recorded it."""

    rule: str
    severity: Literal["error", "warning"]
    message: str
    table: str | None = None
    origin: Origin | None = None


class PlanDocument(BaseModel):
    """`delta-sync plan --format json`: the plan, its hazards and data checks, and (in a saved plan) what
    apply needs to run it exactly."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="delta-sync plan")

    format_version: int
    summary: Summary
    tables: list[str] | list[SavedTable] = Field(
        description="The tables the plan read: names, or in a saved plan names with fingerprints."
    )
    unmanaged: list[str]
    unordered: list[str]
    actions: list[Action]
    protocols: list[dict[str, Any]]
    rehearsals: list[dict[str, Any]] | None = None
    stale_allows: list[StaleAllow] | None = None
    probes: list[Probe]
    rules: list[RuleResult] | None = None
    # A saved plan's header and what apply reads.
    tool_version: str | None = None
    environment: str | None = None
    plan_id: str | None = None
    specs_hash: str | None = None
    specs: str | None = None
    statements: list[dict[str, Any]] | None = None
    blocked: bool | None = None
    allowed: list[str] | None = None
    typed_actions: list[dict[str, Any]] | None = None
    desired: list[dict[str, Any]] | None = None
    current: list[dict[str, Any]] | None = None
    readers: list[str] | None = None
    writers: list[str] | None = None
    settings: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    on_session: bool | None = None
    rolls_back: str | None = None
    checksum: dict[str, Any] | None = None
    signature: str | None = None

    def hazards(self) -> list[tuple[Action, Hazard]]:
        """Every hazard with its action, in plan order."""
        return [(action, hazard) for action in self.actions for hazard in action.hazards]


def plan_json_schema() -> dict[str, Any]:
    schema = PlanDocument.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def schema_text() -> str:
    return json.dumps(plan_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # writes schemas/plan.schema.json
    SCHEMA_FILE.parent.mkdir(exist_ok=True)
    SCHEMA_FILE.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
