"""Views checked against the tables as the plan leaves them, before anything runs.

On every plan, the query of every view of the specs is analysed by the engine against stand-ins: empty
temporary views with each table's columns as the plan leaves them (viewsql.rewrite puts their names in the
query), each view registered in turn under its declared column names for the views over it. So are the views
no spec names that a breaking change reaches (a column dropped, renamed or retyped, a rewrite, the table
renamed or dropped, a view of the specs replaced with another query or other column names), directly or
through other views, with their query as stored, read as Spark reads a view (each column cast to its stored
type); and, before the plan re-creates it, the stored query of a view of the specs the plan replaces.
Nothing in the catalog changes, no data is read.

- a spec's query that does not resolve is an error of the spec, at its line, when the plan creates or replaces
  the view, or when nothing the plan changes reaches it (a view an earlier apply broke never plans as
  "no changes");
- a view that stops working because of the plan's changes, or because it reads a view that does, is a
  `BreaksView` on the change (a breaking hazard naming the view); a view of the specs that reads a changed
  table or view is re-created after the change;
- unless it fails already: a view that would be put on a change is asked once more, against the catalog as it
  is (a second engine call, only when one fails). Broken before the plan, a view of the specs is an error of
  its spec, as when nothing changes, and one no spec names is a notice: the plan does not break either.

Only the engine's analyser knows what resolves (functions, implicit casts, struct fields), so this asks it,
through the Catalog protocol; the decisions around it are pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta_sync.model.catalog import Catalog
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import CatalogState, TableName, View, quote_ident
from delta_sync.planning.actions import (
    Action,
    AlterColumnType,
    BreaksView,
    CreateView,
    DropColumns,
    Notice,
    Plan,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RewriteTable,
    sort_key,
)
from delta_sync.planning.diff.view_diff import reshapes, view_depths
from delta_sync.sql import queries as viewsql

_BREAKING = (RenameColumn, DropColumns, AlterColumnType, RewriteTable, RenameTable, RemoveTable)
_GONE = "__delta_sync_gone_"


@dataclass(frozen=True, slots=True)
class Work:
    """What the engine is asked: stand-ins to register, then queries to analyse in order."""

    stand_ins: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    # (temporary view name to register the query under, or "" for none; the query), per query.
    queries: tuple[tuple[str, str], ...]
    # Per query: the view it is, and whether it is the spec's query (else the view's query as stored: a view no
    # spec names, as the plan leaves it, or a view of the specs before the plan replaces it).
    subjects: tuple[tuple[TableName, bool], ...]
    # Stand-in name -> the real name, for the engine's messages.
    names: Mapping[str, str]


def changed_tables(plan: Plan) -> dict[TableName, TableName]:
    """Tables and views the plan changes in a way a view over them may not survive: the name a view reads -> its
    name in the plan (a renamed table is read by its old name). A view dropped counts, and so does a view of the
    specs replaced with another query or other column names: what reads it gets other columns."""
    found: dict[TableName, TableName] = {}
    for action in plan.actions:
        if isinstance(action, RenameTable):
            found[action.before] = action.name
        elif isinstance(action, _BREAKING) or (
            isinstance(action, CreateView) and action.before is not None and reshapes(action.before, action.view)
        ):
            found.setdefault(action.name, action.name)
    return found


def needs_engine(plan: Plan, current: CatalogState, desired: CatalogState) -> bool:
    """Whether there is anything to analyse: a view of the specs (each one on every plan), or a breaking
    change of a table some view may read (views are only looked for in the specs' schemas)."""
    if desired.views or any(isinstance(a, CreateView) for a in plan.actions):
        return True
    return bool(changed_tables(plan)) and bool(current.listed_views)


def reached(
    plan: Plan, desired: CatalogState, existing: Mapping[TableName, View]
) -> dict[TableName, frozenset[TableName]]:
    """Per view (of the specs, or in `existing`), the names of changed tables (keys of changed_tables) it reads,
    directly or through other views, by its query as stored or as the plan leaves it."""
    changed = set(changed_tables(plan))
    reads: dict[TableName, set[TableName]] = {}
    for views in (existing, desired.views):
        for name, view in views.items():
            reads.setdefault(name, set()).update(viewsql.read_tables(view.sql))
    found = {name: frozenset(read & changed) for name, read in reads.items()}
    grew = True
    while grew:  # views over views are few levels deep: a handful of rounds
        grew = False
        for name, read in reads.items():
            more = found[name].union(*(found[other] for other in read if other in found and other != name))
            if more != found[name]:
                found[name], grew = more, True
    return found


def work(plan: Plan, current: CatalogState, desired: CatalogState, existing: Mapping[TableName, View]) -> Work:
    """The analysis to run: every view of the specs and every view of `existing` no spec names that a change
    reaches, as the plan leaves them, in dependency order, each registered for the views over it; then the
    stored query of each view of the specs the plan replaces that reads a changed table."""
    changed = changed_tables(plan)
    removed = {a.name for a in plan.actions if isinstance(a, RemoveTable)}
    gone = {a.before for a in plan.actions if isinstance(a, RenameTable)} | removed
    reach = reached(plan, desired, existing)
    after: dict[TableName, View] = dict(desired.views)
    after.update({n: v for n, v in existing.items() if n not in after and n not in removed and reach.get(n)})
    depths = view_depths(after)
    ordered = sorted(after, key=lambda n: (depths[n], n))
    replacing = {a.name for a in plan.actions if isinstance(a, CreateView)}
    before = [
        name
        for name in sorted(existing)
        if name in desired.views and name in replacing and viewsql.read_tables(existing[name].sql) & set(changed)
    ]
    read = set().union(*(viewsql.read_tables(v.sql) for v in [*after.values(), *(existing[n] for n in before)]))
    names: dict[str, str] = {}
    replacements: dict[TableName, str] = {}
    stand_ins = []
    # Only the tables some query reads: a project of hundreds of tables has few views.
    for index, name in enumerate(sorted(set(desired.tables) & read)):
        alias = f"__delta_sync_table_{index}"
        replacements[name] = alias
        names[alias] = str(name)
        stand_ins.append((alias, tuple((c.name, c.type) for c in desired.tables[name].columns)))
    for index, name in enumerate(sorted(gone - set(desired.tables))):
        replacements[name] = f"{_GONE}{index}"
        names[f"{_GONE}{index}"] = str(name)
    for index, name in enumerate(ordered):
        alias = f"__delta_sync_view_{index}"
        replacements[name] = alias
        names[alias] = str(name)
    queries: list[tuple[str, str]] = []
    subjects: list[tuple[TableName, bool]] = []
    for name in ordered:
        view = after[name]
        text = viewsql.rewrite(view.sql, replacements)
        if name in desired.views:
            if view.columns is not None:
                text = viewsql.with_names(text, [c.name for c in view.columns], name.name)
        else:
            text = _as_stored(text, view)
        queries.append((replacements[name], text))
        subjects.append((name, name in desired.views))
    for name in before:
        queries.append(("", _as_stored(viewsql.rewrite(existing[name].sql, replacements), existing[name])))
        subjects.append((name, False))
    return Work(tuple(stand_ins), tuple(queries), tuple(subjects), names)


def _as_stored(text: str, view: View) -> str:
    columns = view.columns or ()
    return viewsql.as_stored(
        text, view.query_columns, [c.name for c in columns], view.name.name, [c.type for c in columns]
    )


def suspects(
    plan: Plan, desired: CatalogState, existing: Mapping[TableName, View], job: Work, errors: Sequence[str | None]
) -> tuple[TableName, ...]:
    """The views that fail as the plan leaves them and that `apply_results` would put on a change of the plan:
    views that exist, that the plan neither creates nor replaces, and that a change reaches; and views of the
    specs the plan replaces whose stored query fails until then. Whether each one fails already, before the plan,
    tells whether the plan is what breaks it."""
    replacing = {a.name for a in plan.actions if isinstance(a, CreateView)}
    reach = reached(plan, desired, existing)
    found: set[TableName] = set()
    for (name, declared), error in zip(job.subjects, errors, strict=True):
        if error is None or name not in existing:
            continue
        if (name in replacing and not declared) or (name not in replacing and reach.get(name)):
            found.add(name)
    return tuple(sorted(found))


def before_queries(plan: Plan, desired: CatalogState, names: Sequence[TableName]) -> tuple[tuple[str, str], ...]:
    """Each of `names` as it is asked against the catalog as it is, no stand-in: a view of the specs the plan
    keeps by its spec's query under its declared names (what an error of its spec is about), any other view as
    Spark reads it."""
    replacing = {a.name for a in plan.actions if isinstance(a, CreateView)}
    queries: list[tuple[str, str]] = []
    for name in names:
        spec = desired.views.get(name) if name not in replacing else None
        if spec is None:
            text = f"SELECT * FROM {name.sql()}"
        elif spec.columns is not None:
            text = viewsql.with_names(spec.sql, [c.name for c in spec.columns], name.name)
        else:
            text = spec.sql
        queries.append(("", text))
    return tuple(queries)


def apply_results(
    plan: Plan,
    desired: CatalogState,
    existing: Mapping[TableName, View],
    job: Work,
    errors: Sequence[str | None],
    already: Mapping[TableName, str] | None = None,
) -> Plan:
    """The plan with what the analysis found (the subjects in the order `work` gives them, views before the views
    over them; `already`: the views of `suspects` that fail before the plan too, with the engine's error):
    - a spec's query that fails is a SpecError when the plan creates or replaces the view, or when no change
      of the plan reaches it (then it fails as it is), or when it fails already; a view over a failing one is
      not reported again;
    - a view no spec names that fails already is a Notice on a change that reaches it, not a hazard;
    - otherwise a view that fails (of the specs or not) is a BreaksView on each change that reaches it,
      saying which view it reads when that one stops working too;
    - the stored query of a view the plan replaces that fails is a BreaksView the plan repairs, unless it fails
      already;
    - a spec's view that reads a changed table or view is re-created after the change (when its query
      resolves)."""
    already = already or {}
    changed = changed_tables(plan)
    reach = reached(plan, desired, existing)
    replacing = {a.name for a in plan.actions if isinstance(a, CreateView)}
    invalid: set[TableName] = set()  # reported as errors of the specs, or reading one that is
    broken: dict[TableName, frozenset[TableName]] = {}  # stop working: the tables whose change breaks them
    failed: set[TableName] = set()  # the spec's query fails
    problems: list[SpecProblem] = []
    found: list[Action] = []
    notices: list[Action] = []
    for (name, declared), error in zip(job.subjects, errors, strict=True):
        if error is None:
            continue
        spec = desired.views.get(name)
        if spec is not None and not declared:
            # Before the plan replaces it: its own query fails against the changed table until then (unless it
            # fails already: then the plan repairs it, and breaks nothing).
            if name not in invalid and name not in already:
                for read in sorted(viewsql.read_tables(existing[name].sql) & set(changed)):
                    found.append(BreaksView(changed[read], name, _named(error, job.names), spec.origin, True))
            continue
        view = spec if spec is not None else existing[name]
        reads = viewsql.read_tables(view.sql)
        if declared:
            failed.add(name)
        if reads & invalid:
            invalid.add(name)
            continue
        through = sorted(reads & set(broken))
        roots = {changed[r] for r in reads & set(changed)}.union(*(broken[v] for v in through))
        roots = roots or {changed[r] for r in reach.get(name, ())}
        why = f"reads view `{through[0]}`, which stops working" if through else _named(error, job.names)
        if spec is not None and (name in replacing or name not in existing or not roots):
            invalid.add(name)
            problems.append(_unresolved(spec, why, error))
            continue
        if name in already:
            # The plan is not what breaks it, so no hazard: a spec to fix, or a view no spec names to leave be.
            invalid.add(name)
            if spec is not None:
                problems.append(_unresolved(spec, already[name], already[name], sorted(roots)))
            else:
                message = f"view `{name}` (not in the specs) fails already, before this plan: {already[name]}"
                notices.append(Notice(min(roots), f"view {name}", message))
            continue
        broken[name] = frozenset(roots)
        origin = spec.origin if spec is not None else None
        found.extend(BreaksView(root, name, why, origin) for root in sorted(roots))
    if problems:
        raise SpecError(problems)
    actions: list[Action] = [*plan.actions, *found, *notices]
    depths = view_depths(desired.views)
    for name, view in sorted(desired.views.items()):
        reads = viewsql.read_tables(view.sql) & set(changed)
        if reads and name not in replacing and name in existing and name not in failed:
            why = f"re-created after the change of {', '.join(str(changed[r]) for r in sorted(reads))}"
            actions.append(CreateView(view, depths[name], existing[name], (why,)))
    return Plan(tuple(sorted(actions, key=sort_key)), plan.tables, plan.unmanaged, plan.unordered)


# Spark 4 words it the other way round: "aliased" counts the query's columns, "source expressions" the names.
_ARITY = re.compile(
    r"ASSIGNMENT_ARITY_MISMATCH\].*?aliased: (\d+) does not match the number of source expressions: (\d+)"
)


def _unresolved(view: View, why: str, error: str, changes: Sequence[TableName] = ()) -> SpecProblem:
    """`changes`: the plan's changes that reach a view failing already, before them."""
    origin = view.origin
    against = "the tables as the plan leaves them"
    hint = "fix sql: (name the tables it reads as schema.table)"
    if changes:
        against = f"the catalog as it is, before the plan changes {', '.join(f'`{c}`' for c in changes)}"
        hint = "fix sql: the view fails already, so the plan's change is not the cause (name tables as schema.table)"
    message = f"view `{view.name}`: its query does not resolve against {against}: {why}"
    arity = _ARITY.search(error)
    # Only the count of the names viewsql.with_names gives: an arity error of the query's own aliases keeps its text.
    if view.columns is not None and arity is not None and int(arity.group(2)) == len(view.columns):
        gives = arity.group(1)
        message = f"view `{view.name}`: `columns:` lists {len(view.columns)} column(s), but its query gives {gives}"
        hint = "list every column of the query in columns:, in order"
    return SpecProblem(origin.file if origin else "", origin.line if origin else 0, message, hint)


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
    failing = suspects(plan, desired, existing, job, errors)
    answers = catalog.analyse_queries((), before_queries(plan, desired, failing)) if failing else []
    already = {name: error for name, error in zip(failing, answers, strict=True) if error is not None}
    return apply_results(plan, desired, existing, job, errors, already)
