"""Rollback's shell: read each table's history and its states before and after a plan, build the
rollback plan (`delta_sync.planning.rollback` decides what undoing means), and check it as `plan` checks one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from delta_sync.model.catalog import TimeTravelCatalog
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, Policy, Table, TableName, quote_ident
from delta_sync.planning import rollback as undoing
from delta_sync.planning.actions import (
    Action,
    CreateSchema,
    DropColumns,
    DropFeature,
    DropTable,
    EnableFeature,
    Notice,
    Plan,
    RestoreTable,
    sort_key,
)
from delta_sync.planning.diff import planner
from delta_sync.planning.hazards import Hazard
from delta_sync.planning.rollback import Undo, Way
from delta_sync.render.actions import action_lines
from delta_sync.review import pipeline, policy
from delta_sync.review.results import Assessed


class UnknownPlanError(DeltaSyncError):
    """No table's history holds a commit of the plan (exit 1)."""


@dataclass(frozen=True, slots=True)
class RollbackReview:
    plan_id: str
    assessed: Assessed
    # What each table it touches gets back to (the tables it drops are not here).
    desired: CatalogState
    undos: tuple[Undo, ...]
    # Tables the plan touched that have nothing left to undo, with why.
    done: tuple[tuple[TableName, str], ...]


def review_rollback(
    catalog: TimeTravelCatalog,
    plan_id: str,
    tables: Iterable[TableName],
    allowed: Iterable[Hazard] = (),
    *,
    probes: bool = True,
    on_status: Callable[[str], None] = lambda _m: None,
    policy: Policy | None = None,
) -> RollbackReview:
    """What undoing plan `plan_id` on `tables` takes, checked: raises UnknownPlanError when no table's
    history names the plan. `policy`: the environment's (its protected tables are never restored or dropped)."""
    allowed = frozenset(allowed)
    names = sorted(set(tables))
    current = catalog.read(names)
    undos: list[Undo] = []
    seen = False
    for name in names:
        if current.table(name) is None:
            continue
        on_status(f"Reading the history of {name}...")
        history = catalog.history(name, undoing.HISTORY_LIMIT)
        seen = seen or undoing.touched(plan_id, history)
        undo = undoing.undo_of(plan_id, name, history)
        if undo is not None:
            undos.append(undo)
    done: list[tuple[TableName, str]] = []
    if not seen:
        absent = [n for n in names if current.table(n) is None]
        if not absent:
            listing = ", ".join(str(n) for n in names) or "(no tables)"
            raise UnknownPlanError(
                f"plan {plan_id}: no commit of it in the history of {listing} (the last {undoing.HISTORY_LIMIT} "
                "commits of each); check the id (DESCRIBE HISTORY shows it in userMetadata), or pass the saved "
                "plan file, which names the tables it changed"
            )
        # A dropped table keeps no history: once a rollback dropped every table a plan created (all it
        # touched), the plan's id is found nowhere. A table looked up that does not exist may be one of
        # those, so this is nothing left to undo (exit 0), not an unknown id; where every table exists, it is.
        done.extend((n, undoing.GONE.format(plan=plan_id)) for n in absent)
    actions: list[Action] = []
    wanted: dict[TableName, Table] = {}
    for undo in undos:
        have = current.table(undo.table)
        assert have is not None  # only existing tables have a history
        if undo.way is Way.DROP:
            actions.append(DropTable(undo.table, plan_id, tuple(undoing.describe(c) for c in undo.writers)))
            continue
        on_status(f"Reading {undo.table} as it was before plan {plan_id}...")
        before, after = catalog.read_at(undo.table, undo.before), catalog.read_at(undo.table, undo.last)
        want = undoing.reverse(have, before, after, undo.renames)
        alone = CatalogState({undo.table: have}, current.schemas, current.capabilities)
        backwards = planner.plan(alone, CatalogState({undo.table: want}, current.schemas))
        features = [f for f in undoing.features_enabled(before, after) if f"delta.feature.{f}" in have.property_map]
        extra = _feature_steps(undo, features, Hazard.IRREVERSIBLE in allowed)
        if backwards.is_empty:
            done.append((undo.table, f"it is as it was before plan {plan_id} (version {undo.before})"))
            actions.extend(extra)  # the features the plan enabled may still be there
            continue
        wanted[undo.table] = want
        if undo.way is Way.RESTORE:
            # What the table gets back (a RESTORE needs no feature to get there).
            shown = [a for a in backwards.changes if not isinstance(a, EnableFeature)]
            changes = tuple(line for a in shown for line in action_lines(a))
            undoes = tuple(range(undo.before + 1, (have.version or undo.last) + 1))
            actions.append(RestoreTable(undo.table, undo.before, plan_id, undoes, changes))
            actions.append(Notice(undo.table, "", undo.why))
        else:
            actions.extend(_counted(catalog, undo, backwards.actions))
            actions.append(Notice(undo.table, "", undo.why))
        actions.extend(extra)
    touched = sorted({a.name for a in actions if not isinstance(a, CreateSchema)})
    plan = Plan(tuple(sorted(actions, key=sort_key)), tuple(touched))
    desired = CatalogState(wanted, current.schemas, policy=policy)
    read = CatalogState({n: t for n in touched if (t := current.table(n)) is not None}, current.schemas)
    probed = pipeline.probe(catalog, pipeline.Planned(desired, read, plan), probes=probes, on_status=on_status)
    return RollbackReview(plan_id, pipeline.assess(probed, allowed), desired, tuple(undos), tuple(done))


def rollback_document(result: RollbackReview, plan_id: str, environment: str) -> dict[str, Any]:
    """A rollback plan as a saved-plan document (`apply FILE` runs it): its own id, the plan it undoes
    (stamped in every commit), and per table how and why."""
    from delta_sync.planfile import document as planfile

    document = policy.plan_document(result.assessed, result.desired, plan_id, "", environment)
    document.update(planfile.header(plan_id, environment, "", result.assessed.current, result.assessed.plan.tables))
    document["rolls_back"] = result.plan_id
    document["rollback"] = {
        "plan": result.plan_id,
        "tables": [
            {
                "table": str(u.table),
                "way": u.way.value,
                "why": u.why,
                "before_version": u.before,
                "plan_versions": list(u.mine),
                "written_since": [undoing.describe(c) for c in u.writers],
            }
            for u in result.undos
            if u.table in result.assessed.plan.tables
        ],
        "nothing_to_undo": [{"table": str(t), "why": why} for t, why in result.done],
    }
    return document


def _feature_steps(undo: Undo, features: Sequence[str], drop: bool) -> list[Action]:
    """Features stay in the protocol whatever a rollback does: say so, and drop the removable ones when
    irreversible changes are allowed."""
    steps: list[Action] = []
    for feature in features:
        if feature not in undoing.REMOVABLE_FEATURES:
            why = f"the table keeps the {feature} feature plan {undo.plan_id} enabled: open-source Delta cannot drop it"
            steps.append(Notice(undo.table, f"feature {feature}", why))
        elif drop:
            steps.append(DropFeature(undo.table, feature, f"plan {undo.plan_id} enabled it"))
        else:
            why = (
                f"the table keeps the {feature} feature plan {undo.plan_id} enabled (neither RESTORE nor ALTER "
                f"downgrades a protocol); --allow irreversible also drops it (ALTER TABLE ... DROP FEATURE {feature})"
            )
            steps.append(Notice(undo.table, f"feature {feature}", why))
    return steps


def _counted(catalog: TimeTravelCatalog, undo: Undo, actions: Sequence[Action]) -> list[Action]:
    """The reverse change, each dropped column with the values it holds and who wrote them since."""
    out: list[Action] = []
    for action in actions:
        if isinstance(action, DropColumns) and not action.parent:
            held = " OR ".join(f"{quote_ident(c.name)} IS NOT NULL" for c in action.columns)
            found = catalog.query(f"SELECT count_if({held}) AS n FROM {undo.table.sql()}", 1)
            values = int(found.rows[0][0] or 0) if found.rows else 0
            written = tuple(undoing.describe(c) for c in undo.writers) if values else ()
            action = replace(action, values=values, written_by=written)
        out.append(action)
    return out
