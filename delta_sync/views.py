"""Views checked against the tables as the plan leaves them, before anything runs.

Every query a view of the specs declares, and the current query of each view that reads a table the plan
changes in a breaking way (a column dropped, renamed or retyped, a rewrite, the table renamed or dropped),
is analysed by the engine against stand-ins: empty temporary views with each table's columns as the plan
leaves them (viewsql.rewrite puts their names in the query). Nothing in the catalog changes, no data is read.

- a spec's query that does not resolve is an error of the spec, at its line;
- an existing view whose query stops resolving is a `BreaksView` on the table change (a breaking hazard
  naming the view); a view of the specs that reads a changed table is re-created after the change.

Only the engine's analyser knows what resolves (functions, implicit casts, struct fields), so this asks it,
through the Catalog protocol; the decisions around it are pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta_sync import viewsql
from delta_sync.actions import (
    Action,
    AlterColumnType,
    BreaksView,
    CreateView,
    DropColumns,
    Plan,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RewriteTable,
    sort_key,
)
from delta_sync.engine import Catalog
from delta_sync.errors import SpecError, SpecProblem
from delta_sync.model import CatalogState, TableName, View, quote_ident
from delta_sync.planner import view_depths

_BREAKING = (RenameColumn, DropColumns, AlterColumnType, RewriteTable, RenameTable, RemoveTable)
_GONE = "__delta_sync_gone_"


@dataclass(frozen=True, slots=True)
class Work:
    """What the engine is asked: stand-ins to register, then queries to analyse in order."""

    stand_ins: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    # (temporary view name to register the query under, or "" for none; the query), per query.
    queries: tuple[tuple[str, str], ...]
    # Per query: the view it is, and whether it is the spec's query (else the view's current one).
    subjects: tuple[tuple[TableName, bool], ...]
    # Stand-in name -> the real name, for the engine's messages.
    names: Mapping[str, str]


def changed_tables(plan: Plan) -> dict[TableName, TableName]:
    """Tables the plan changes in a way a view may not survive: the name a view reads -> the table's
    name in the plan (a renamed table is read by its old name)."""
    found: dict[TableName, TableName] = {}
    for action in plan.actions:
        if isinstance(action, RenameTable):
            found[action.before] = action.name
        elif isinstance(action, _BREAKING):  # a view dropped counts too: the views over it break
            found.setdefault(action.name, action.name)
    return found


def needs_engine(plan: Plan, current: CatalogState, desired: CatalogState) -> bool:
    """Whether there is anything to analyse: a view to create or replace, or a breaking change of a table
    some view may read (views are only looked for in the specs' schemas)."""
    if any(isinstance(a, CreateView) for a in plan.actions):
        return True
    changed = changed_tables(plan)
    return bool(changed) and bool(desired.views or current.listed_views)


def work(plan: Plan, current: CatalogState, desired: CatalogState, existing: Mapping[TableName, View]) -> Work:
    """The analysis to run: every view of the specs (in dependency order, each registered for the views
    over it), then the current query of each view in `existing` that reads a changed table."""
    gone = {a.before for a in plan.actions if isinstance(a, RenameTable)}
    gone |= {a.name for a in plan.actions if isinstance(a, RemoveTable)}
    names: dict[str, str] = {}
    replacements: dict[TableName, str] = {}
    stand_ins = []
    for index, (name, table) in enumerate(sorted(desired.tables.items())):
        alias = f"__delta_sync_table_{index}"
        replacements[name] = alias
        names[alias] = str(name)
        stand_ins.append((alias, tuple((c.name, c.type) for c in table.columns)))
    for index, name in enumerate(sorted(gone - set(desired.tables))):
        replacements[name] = f"{_GONE}{index}"
        names[f"{_GONE}{index}"] = str(name)
    depths = view_depths(desired.views)
    ordered = sorted(desired.views, key=lambda n: (depths[n], n))
    for index, name in enumerate(ordered):
        alias = f"__delta_sync_view_{index}"
        replacements[name] = alias
        names[alias] = str(name)
    queries: list[tuple[str, str]] = []
    subjects: list[tuple[TableName, bool]] = []
    for name in ordered:
        queries.append((replacements[name], viewsql.rewrite(desired.views[name].sql, replacements)))
        subjects.append((name, True))
    changed = changed_tables(plan)
    for name, view in sorted(existing.items()):
        if viewsql.read_tables(view.sql) & set(changed):
            queries.append(("", viewsql.rewrite(view.sql, replacements)))
            subjects.append((name, False))
    return Work(tuple(stand_ins), tuple(queries), tuple(subjects), names)


def apply_results(
    plan: Plan,
    desired: CatalogState,
    existing: Mapping[TableName, View],
    job: Work,
    errors: Sequence[str | None],
) -> Plan:
    """The plan with what the analysis found:
    - an existing view that fails is a BreaksView on each changed table it reads;
    - a spec's query that fails is a SpecError, unless it is the view's current query and fails because of
      the plan's table changes (that is the BreaksView's point), or because a view it reads fails;
    - a spec's view that reads a changed table is re-created after the change (when its query resolves)."""
    changed = changed_tables(plan)
    failed: dict[TableName, str] = {}
    problems = []
    for (name, declared), error in zip(job.subjects, errors, strict=True):
        if not declared or error is None:
            continue
        failed[name] = error
        view = desired.views[name]
        reads = viewsql.read_tables(view.sql)
        was = existing.get(name)
        unchanged = was is not None and viewsql.normalize(was.sql) == viewsql.normalize(view.sql)
        if reads & set(failed) or (unchanged and reads & set(changed)):
            continue
        origin = view.origin
        problems.append(
            SpecProblem(
                origin.file if origin else "",
                origin.line if origin else 0,
                f"view `{name}`: its query does not resolve against the tables as the plan leaves them: "
                f"{_named(error, job.names)}",
                "fix sql: (name the tables it reads as schema.table)",
            )
        )
    if problems:
        raise SpecError(problems)
    actions: list[Action] = list(plan.actions)
    for (name, declared), error in zip(job.subjects, errors, strict=True):
        if declared or error is None:
            continue
        spec = desired.views.get(name)
        origin = spec.origin if spec is not None else None
        replaced = spec is not None and name not in failed
        for read in sorted(viewsql.read_tables(existing[name].sql) & set(changed)):
            actions.append(BreaksView(changed[read], name, _named(error, job.names), origin, replaced))
    planned = {a.name for a in actions if isinstance(a, CreateView)}
    depths = view_depths(desired.views)
    for name, view in sorted(desired.views.items()):
        reads = viewsql.read_tables(view.sql) & set(changed)
        if reads and name not in planned and name in existing and name not in failed:
            why = f"re-created after the change of {', '.join(str(changed[r]) for r in sorted(reads))}"
            actions.append(CreateView(view, depths[name], existing[name], (why,)))
    return Plan(tuple(sorted(actions, key=sort_key)), plan.tables, plan.unmanaged)


def _named(error: str, names: Mapping[str, str]) -> str:
    """The engine's message with the stand-ins' names put back."""
    for alias, name in sorted(names.items(), key=lambda item: -len(item[0])):
        error = error.replace(quote_ident(alias), quote_ident(name)).replace(alias, name)
    return error


def check(catalog: Catalog, plan: Plan, current: CatalogState, desired: CatalogState) -> Plan:
    """The plan, its views checked (see the module's doc); no engine call when no view is concerned."""
    if not needs_engine(plan, current, desired):
        return plan
    existing = dict(current.views)
    others = sorted(current.listed_views - set(existing) - set(desired.views))
    if others and changed_tables(plan):
        existing.update(catalog.read(others).views)
    job = work(plan, current, desired, existing)
    errors = catalog.analyse_queries(job.stand_ins, job.queries) if job.queries else []
    return apply_results(plan, desired, existing, job, errors)
