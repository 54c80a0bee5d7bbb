"""What the review and apply hand back: the assessed plan (the review's stage result: the plan, the tables
as read, what it risks and what the data said), the reviewed plan (`delta-sync plan`'s result: the
assessed plan with its id, environment, desired tables and saved-plan document), what apply did, the
progress events of long work, and the errors that carry a reviewed plan or a refusal."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from delta_sync.model.catalog import Catalog, Commit, ProbeResult
from delta_sync.model.errors import DeltaSyncError, UnsafePlanError
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning.actions import Action, Plan
from delta_sync.planning.hazards import Assessment, Block, Finding
from delta_sync.planning.statements import Kind, Statement, statements_of
from delta_sync.render import text as render
from delta_sync.render.counts import views_of
from delta_sync.render.markdown import render_markdown
from delta_sync.render.sql import render_sql

Format = Literal["text", "json", "sql", "markdown"]


class BlockedPlanError(UnsafePlanError):
    """The plan holds changes that are blocked (exit 3); `plan` is the reviewed plan, with its blocks."""

    def __init__(self, message: str, plan: ReviewedPlan) -> None:
        super().__init__(message)
        self.plan = plan


class CancelledError(DeltaSyncError):
    """`confirm` said no: nothing was applied (exit 1)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of long work: a phase (`step` is None), or statement `step` of `total` starting or `done`."""

    message: str
    step: int | None = None
    total: int | None = None
    table: str | None = None
    sql: str | None = None
    done: bool = False
    seconds: float | None = None


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True, eq=False)
class Assessed:
    """A plan with what it risks, what the data says, and what the policy blocks."""

    plan: Plan
    current: CatalogState
    assessment: Assessment

    @property
    def blocked(self) -> bool:
        return bool(self.assessment.blocks)


@dataclass(frozen=True, eq=False)
class ReviewedPlan(Assessed):
    """What `apply` would change, what it risks, and what the data said: `delta-sync plan`'s result."""

    plan: Plan = field(repr=False)
    current: CatalogState = field(repr=False)
    assessment: Assessment = field(repr=False)
    id: str
    environment: str
    desired: CatalogState = field(repr=False)
    document: dict[str, Any] = field(repr=False)

    @property
    def review(self) -> Assessed:
        """The plan, the tables as read and the assessment (the reviewed plan itself)."""
        return self

    @property
    def actions(self) -> tuple[Action, ...]:
        return self.plan.actions

    @property
    def tables(self) -> tuple[TableName, ...]:
        return tuple(self.plan.tables)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every hazard, with its table, class, reason and spec origin (file:line)."""
        return self.assessment.findings

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The findings that stop apply, each with why and how to unblock it."""
        return self.assessment.blocks

    @property
    def probes(self) -> tuple[ProbeResult, ...]:
        """The data checks: for each new rule or key, how many rows break it (None when not scanned)."""
        return self.assessment.probes

    @property
    def blocked(self) -> bool:
        return bool(self.assessment.blocks)

    @property
    def is_empty(self) -> bool:
        return self.plan.is_empty

    @property
    def exit_code(self) -> int:
        """`delta-sync plan --detailed-exitcode`'s: 0 no changes, 2 changes to apply, 3 blocked."""
        return 3 if self.blocked else 0 if self.is_empty else 2

    @property
    def statements(self) -> tuple[Statement, ...]:
        """The statements apply runs, in order (blocked tables' included: apply refuses those)."""
        return tuple(statements_of(self.plan))

    def render(self, format: Format = "text") -> str:
        """The plan as `delta-sync plan --format FORMAT` prints it (text without colors)."""
        match format:
            case "json":
                return json.dumps(self.document, indent=2)
            case "sql":
                return render_sql(self.plan, self.assessment, self.id)
            case "markdown":
                views = views_of(self.plan, self.desired)
                return render_markdown(self.plan, self.assessment, views=views, desired=self.desired)
            case "text":
                views = views_of(self.plan, self.desired)
                return render.plain_text(render.render_text(self.plan, self.assessment, views))
        raise DeltaSyncError(f"render({format!r}): choose text, json, sql or markdown")

    def to_dict(self) -> dict[str, Any]:
        """The saved-plan document (`plan --format json`, `plan --out`): a copy."""
        return copy.deepcopy(self.document)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the plan for `apply(path)` or `delta-sync apply PATH` (signed when DELTA_SYNC_PLAN_KEY is set)."""
        target = Path(path)
        if not target.parent.is_dir():
            raise DeltaSyncError(f"{target}: folder {target.parent} does not exist; create it first")
        try:
            target.write_text(json.dumps(self.document, indent=2) + "\n")
        except OSError as exc:
            raise DeltaSyncError(f"{target}: cannot write the plan: {exc.strerror or exc}") from None
        return target


@dataclass(frozen=True, eq=False)
class ApplyResult:
    """What `apply` did. Failures raise instead (their `exit_code` is the CLI's)."""

    plan_id: str
    statements: tuple[Statement, ...]
    skipped: tuple[TableName, ...] = ()
    verified: bool = True
    _catalog: Catalog | None = field(default=None, repr=False)
    # Tables another writer changed while apply ran, one sentence each: not this apply's failure.
    changed_by_others: tuple[str, ...] = ()

    @property
    def applied(self) -> int:
        return len(self.statements)

    @property
    def exit_code(self) -> int:
        """`delta-sync apply`'s: 0 applied (or nothing to do), 3 when blocked tables were skipped."""
        return 3 if self.skipped else 0

    def commits(self) -> dict[TableName, list[Commit]]:
        """Per table, the Delta commits this apply made (newest first), each with its version: read from
        the tables' history, where every commit is stamped with the plan id."""
        if self._catalog is None:
            return {}
        found: dict[TableName, list[Commit]] = {}
        # Views and dropped tables have no history to read.
        skip = {Kind.CREATE_SCHEMA, Kind.CREATE_VIEW, Kind.REMOVE_TABLE}
        gone = {s.table for s in self.statements if s.kind is Kind.REMOVE_TABLE}
        for name in sorted(
            {TableName.parse(s.table) for s in self.statements if s.kind not in skip}
            - {TableName.parse(t) for t in gone}
        ):
            mine = [c for c in self._catalog.history(name) if self.plan_id in (c.metadata or "")]
            if mine:
                found[name] = mine
        return found


@dataclass(frozen=True, slots=True)
class Imported:
    written: tuple[Path, ...]
    skipped: tuple[str, ...]  # "table: why"
