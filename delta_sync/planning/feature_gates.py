"""The table features a plan adds to existing tables, each gated by the one table of Delta's features
(delta_sync.planning.features), whatever adds it: a column type (variant, timestamp_ntz), a type change, a
rewrite's conversion, a default, a CHECK. Pure.

The actions that say their own feature (EnableFeature, SetProperties, ClusterBy, DropFeature, and a rewrite's
clustering) are gated by hazard_rules with the same table's words; this module covers the rest, so that no way
of adding a feature goes ungated. Each finding names the column that needs the feature and its spec line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from delta_sync.model.state import CatalogState, Column, Origin, Table, TableName
from delta_sync.planning import features
from delta_sync.planning.actions import (
    Action,
    AddColumns,
    AlterColumnType,
    ClusterBy,
    CreateSchema,
    DropFeature,
    EnableFeature,
    Plan,
    RewriteTable,
    SetProperties,
)
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.hazards import Finding, Hazard

# Actions whose own hazard rule words the feature they add.
_SAID_BY_ITS_RULE = (EnableFeature, SetProperties, ClusterBy, DropFeature)


def feature_findings(plan: Plan, current: CatalogState) -> dict[int, list[Finding]]:
    """By action index, an `irreversible` finding for each gated feature the action adds to an existing table."""
    by_table: dict[TableName, list[tuple[int, Action]]] = {}
    for index, action in enumerate(plan.actions):
        if not isinstance(action, CreateSchema):
            by_table.setdefault(action.name, []).append((index, action))
    found: dict[int, list[Finding]] = {}
    for name, actions in by_table.items():
        table = current.table(name)
        if table is None:
            continue  # a new table: dropping it again is the way back
        for index, added in _added(table, actions):
            action = plan.actions[index]
            if isinstance(action, _SAID_BY_ITS_RULE):
                continue
            for feature in added:
                decided = features.decision(feature)
                if decided is not None and not decided.gated:
                    continue
                if isinstance(action, RewriteTable) and feature in ("clustering", "domainMetadata"):
                    continue  # the rewrite's own finding says it
                column = needing(action, feature)
                what = f"`{column.name}` ({column.type})" if column is not None else "this change"
                origin = column.origin if column is not None and column.origin else action_origin_of(action)
                subject = None
                if isinstance(action, AddColumns) and column is not None:
                    subject = column.name.rsplit(".", 1)[-1] if action.parent else column.name
                reason = f"{what} {features.adding(feature)}"
                found.setdefault(index, []).append(
                    Finding(index, name, Hazard.IRREVERSIBLE, reason, origin, None, subject)
                )
    return found


def _added(table: Table, actions: Sequence[tuple[int, Action]]) -> Iterable[tuple[int, list[str]]]:
    """Each action's features new to the table, the ones Delta adds only as another's requirement left out
    (the requiring one is named)."""
    change = protocol.evolve(table, actions)
    if change is not None:
        for step in change.steps:
            if step.before is None or step.after is None:
                continue
            yield step.index, _explicit(step.after.features - step.before.features)
        return
    # The table's protocol was not read: what the action itself turns on, less what the table names.
    have = protocol.named_features(table)
    for index, action in actions:
        new = {protocol.canonical(f) for f in protocol.enabled_by(action)} - have
        if new:
            yield index, _explicit(frozenset(new))
        have |= new


def _explicit(added: frozenset[str]) -> list[str]:
    required = {r for f in added for r in protocol.REQUIRES.get(f, ())}
    return sorted(f for f in added if f not in required)


def needing(action: Action, feature: str) -> Column | None:
    """The column (or rewritten column) of `action` whose type or options need `feature`."""
    if isinstance(action, AddColumns):
        prefix = ".".join(action.parent)
        for column in action.columns:
            if feature in protocol.features_of_column(column):
                name = f"{prefix}.{column.name}" if prefix else column.name
                return Column(name, column.type, origin=column.origin) if prefix else column
        return next((c for c in action.columns if protocol.features_of_column(c)), None)
    if isinstance(action, AlterColumnType):
        return Column(".".join((*action.parent, action.column)), action.after, origin=action.origin)
    if isinstance(action, RewriteTable):
        for conversion in action.conversions:
            if feature in protocol.features_of_type(conversion.after):
                return Column(conversion.column, conversion.after, origin=conversion.origin)
    return None


def action_origin_of(action: Action) -> Origin | None:
    origin = getattr(action, "origin", None)
    return origin if isinstance(origin, Origin) else None
