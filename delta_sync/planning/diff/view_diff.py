"""The views of the specs: which to create or replace (`plan_views`, `view_differences`), and their order,
views over views after the views they read (`view_depths`)."""

from __future__ import annotations

from collections.abc import Mapping

from delta_sync.model.state import (
    CatalogState,
    TableName,
    View,
)
from delta_sync.planning.actions import Action, CreateView, Unsupported
from delta_sync.planning.team_policy import PROTECTED_PROPERTY
from delta_sync.sql import queries as viewsql


def view_depths(views: Mapping[TableName, View]) -> dict[TableName, int]:
    """How many views of `views` each one reads through (0: it reads tables only). The specs refuse cycles."""
    reads = {name: viewsql.read_tables(view.sql) & set(views) for name, view in views.items()}
    depths: dict[TableName, int] = {}

    def depth(name: TableName, seen: frozenset[TableName]) -> int:
        if name not in depths:
            inner = [depth(other, seen | {name}) for other in reads[name] if other not in seen]
            depths[name] = 1 + max(inner) if inner else 0
        return depths[name]

    for name in views:
        depth(name, frozenset())
    return depths


def plan_views(current: CatalogState, desired: CatalogState) -> list[Action]:
    """A view of the specs is created, or replaced when its query (normalised), comment, columns or protection
    differ."""
    found: list[Action] = []
    depths = view_depths(desired.views)
    for name, want in sorted(desired.views.items()):
        have = current.views.get(name)
        if have is None and current.table(name) is not None:
            found.append(
                Unsupported(
                    name,
                    "",
                    f"`{name}` is a table, and the spec declares a view",
                    "drop the table first (a tombstone spec: table: ..., drop: true, in an earlier apply), "
                    "or give the view another name",
                    want.origin,
                )
            )
        elif have is None:
            found.append(CreateView(want, depths[name]))
        else:
            reasons = view_differences(have, want)
            if reasons:
                found.append(CreateView(want, depths[name], have, reasons))
    return found


def view_differences(have: View, want: View) -> tuple[str, ...]:
    """Why the view as it is differs from its spec, one line each; empty when it does not. The mark of
    `protect: true` is a property of the view, restated by every CREATE OR REPLACE VIEW."""
    reasons = []
    if viewsql.normalize(have.sql) != viewsql.normalize(want.sql):
        reasons.append("query changed")
    if have.comment != want.comment:
        reasons.append(f"comment: {_quoted(have.comment)} -> {_quoted(want.comment)}")
    had = have.columns or ()
    if want.columns is None:
        pass  # names and comments come from the query (a column of a view over a view keeps its comment)
    elif [c.name.lower() for c in had] != [c.name.lower() for c in want.columns]:
        reasons.append(f"columns: ({', '.join(c.name for c in had)}) -> ({', '.join(c.name for c in want.columns)})")
    else:
        for old, new in zip(had, want.columns, strict=True):
            if old.comment != new.comment:
                reasons.append(f"column {new.name} comment: {_quoted(old.comment)} -> {_quoted(new.comment)}")
    if want.protected is not None and not have.marked:
        reasons.append(f'protect: true: + property {PROTECTED_PROPERTY} = "true"')
    elif want.protected is None and have.marked:
        # The one change that lifts the protection: shown, so that a reviewer approves it before any drop.
        reasons.append(f'protect: true removed: - property {PROTECTED_PROPERTY} (was "true"), no longer protected')
    return tuple(reasons)


def reshapes(have: View, want: View) -> bool:
    """Whether replacing the view `have` by `want` may change what the views over it read: its query or its
    column names change (a comment cannot)."""
    if viewsql.normalize(have.sql) != viewsql.normalize(want.sql):
        return True
    names = [c.name.lower() for c in want.columns] if want.columns is not None else None
    return names is not None and names != [c.name.lower() for c in have.columns or ()]


def _quoted(text: str | None) -> str:
    return "(none)" if text is None else repr(text)
