"""What every format says of a plan's names: which of them are views (a plan does not record it), counts
of tables and views in the words scripts read (`4 table(s)`, `1 view`), the names no spec holds, the
blocked tables."""

from __future__ import annotations

from collections.abc import Collection

from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning.actions import Action, BreaksView, CreateSchema, CreateView, Plan, RemoveTable
from delta_sync.planning.hazards import Assessment


def unmanaged_text(names: tuple[TableName, ...]) -> str:
    """Information only: what the specs' schemas hold that no spec names (`strict: true` drops them)."""
    return f"not in any spec ({len(names)}): {', '.join(str(n) for n in names)}  (strict: true would drop them)"


def unordered_text(names: tuple[TableName, ...]) -> str:
    """Information only, said once: the project does not manage column order, and where it differs."""
    return (
        f"column order is not managed (column_order: ignore): it differs from the spec in {len(names)} "
        f"table(s): {', '.join(str(n) for n in names)}"
    )


def views_of(plan: Plan, desired: CatalogState) -> frozenset[TableName]:
    """Which of the plan's names are views. Neither a plan nor a saved plan's desired state records them, but
    every table a plan keeps is one of `desired`'s tables, and a table it drops or restores has an action that
    only tables have; a view it leaves alone has no action at all."""
    tables = {a.name for a in plan.actions if not isinstance(a, CreateSchema) and not _about_a_view(a)}
    return frozenset(set(plan.tables) - set(desired.tables) - tables)


def views_changed(actions: Collection[Action]) -> frozenset[TableName]:
    """The views that `actions` create, replace or drop: the views among the names of a plan's statements."""
    return frozenset(a.name for a in actions if isinstance(a, CreateView | RemoveTable) and _about_a_view(a))


def _about_a_view(action: Action) -> bool:
    return isinstance(action, CreateView | BreaksView) or (isinstance(action, RemoveTable) and action.view)


def objects(tables: int, views: int = 0) -> str:
    """A count of a plan's tables and views: `4 table(s)` when there is no view (the words scripts may
    read), else `2 table(s) and 1 view`, or `2 views`."""
    if not views:
        return f"{tables} table(s)"
    counted = f"{views} view{'' if views == 1 else 's'}"
    return f"{tables} table(s) and {counted}" if tables else counted


def objects_of(names: Collection[str | TableName], views: Collection[TableName]) -> str:
    """`objects` of the distinct `names` (a plan's, or the tables its statements name), `views` among them."""
    named = {str(n) for n in names}
    viewed = named & {str(v) for v in views}
    return objects(len(named) - len(viewed), len(viewed))


def objects_match(tables: int, views: int, what: str) -> str:
    """`4 table(s) match the specs`, `2 table(s) and 1 view match the specs`, `1 view matches the specs`."""
    verb = "matches" if (tables, views) == (0, 1) else "match"
    return f"{objects(tables, views)} {verb} {what}"


def _blocked(assessment: Assessment | None) -> frozenset[TableName]:
    return assessment.blocked_tables if assessment is not None else frozenset()
