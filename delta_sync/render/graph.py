"""The schema as a graph: the tables with their keys and the views reading them, built from the specs' tables
and views (`delta-sync graph`) or, for a plan, only what it touches and their direct neighbours, each change
marked (the diagram of the Markdown plan). `render.diagram` writes it as Mermaid or Graphviz text. Pure."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import assert_never

from delta_sync.model.state import CatalogState, ForeignKey, PrimaryKey, Table, TableName, View
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    BreaksView,
    ClusterBy,
    CreateSchema,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumns,
    DropFeature,
    DropForeignKey,
    DropNotNull,
    DropPrimaryKey,
    DropTable,
    EnableFeature,
    MoveColumn,
    Notice,
    Plan,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RestoreTable,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)
from delta_sync.sql.queries import QueryError, read_tables

# Beyond this many tables and views a plan's diagram shows only what the plan touches, without neighbours;
# beyond it still, none (a picture of hundreds of boxes is read by nobody).
MAX_NODES = 100

# What a plan does to a table or view, strongest first: a name shows the first of these it has, then `blocked`.
NEW, DROPPED, RESTORED, RENAMED, REPLACED, CHANGED, BROKEN, BLOCKED = (
    "new",
    "dropped",
    "restored",
    "renamed",
    "replaced",
    "changed",
    "broken",
    "blocked",
)
_STATUSES = (NEW, DROPPED, RESTORED, RENAMED, REPLACED, CHANGED, BROKEN)
OUTSIDE = "not in the specs"


@dataclass(frozen=True, slots=True)
class Attribute:
    """A key column of a table: its name and type as the spec declares them, the keys it is part of (PK, FK),
    and what the plan does to its key (`new key`, `key dropped`; empty: nothing)."""

    column: str
    type: str
    keys: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    """A table or view. `marks`: what the plan does to it (`new`, `changed`, ...; `renamed from s.t`), or
    `not in the specs` for a name a key or a view's query refers to that no spec declares."""

    name: TableName
    view: bool = False
    attributes: tuple[Attribute, ...] = ()
    marks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    """A foreign key from `source` (the child) to `target` (the parent), labelled with its columns; or, `reads`,
    a view (`source`) reading a table or view (`target`). `optional`: a foreign key column may be NULL, so a
    child row may have no parent."""

    source: TableName
    target: TableName
    label: str
    reads: bool = False
    optional: bool = False
    marks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Graph:
    """Tables and views (sorted: tables first, by name) and the edges between them. `left_out`: the tables and
    views of the project a plan's diagram leaves out (neither touched nor a neighbour of what is)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    left_out: int = 0

    @property
    def touched(self) -> tuple[Node, ...]:
        """The nodes a plan does something to."""
        return tuple(n for n in self.nodes if n.marks and OUTSIDE not in n.marks)


# --- building --------------------------------------------------------------------------------------------


def _attributes(table: Table) -> tuple[Attribute, ...]:
    primary = {c.lower() for c in table.primary_key.columns} if table.primary_key else set()
    foreign = {c.lower() for key in table.foreign_keys for c in key.columns}
    found = []
    for column in table.columns:
        keys = tuple(k for k, cols in (("PK", primary), ("FK", foreign)) if column.key in cols)
        if keys:
            found.append(Attribute(column.name, column.type, keys))
    return tuple(found)


def _fk_label(key: ForeignKey) -> str:
    columns = ", ".join(key.columns)
    if [c.lower() for c in key.columns] == [c.lower() for c in key.references]:
        return columns
    return f"{columns} -> {', '.join(key.references)}"


def _fk_edge(table: Table, key: ForeignKey, marks: tuple[str, ...] = ()) -> Edge:
    optional = any(c is None or c.nullable for c in (table.column(name) for name in key.columns))
    return Edge(table.name, key.table, _fk_label(key), optional=optional, marks=marks)


def _reads(view: View) -> frozenset[TableName]:
    try:
        return read_tables(view.sql)
    except QueryError:
        return frozenset()


def _read_edges(view: View) -> list[Edge]:
    return [Edge(view.name, name, "reads", reads=True) for name in sorted(_reads(view))]


class _Builder:
    """Nodes and edges collected by name, marks added as a plan's actions are read."""

    def __init__(self, known: Collection[TableName] = (), views: Collection[TableName] = ()) -> None:
        self.nodes: dict[TableName, Node] = {}
        self.edges: dict[tuple[TableName, TableName, str, bool], Edge] = {}
        # Names of the specs this builder has no table or view for (a plan's), and which of them are views.
        self.known = frozenset(known)
        self.views = frozenset(views)

    def table(self, table: Table) -> None:
        node = self.nodes.get(table.name)
        self.nodes[table.name] = Node(table.name, False, _attributes(table), node.marks if node else ())
        for key in table.foreign_keys:
            self.edge(_fk_edge(table, key))

    def view(self, view: View) -> None:
        node = self.nodes.get(view.name)
        self.nodes[view.name] = Node(view.name, True, (), node.marks if node else ())
        for edge in _read_edges(view):
            self.edge(edge)

    def edge(self, edge: Edge) -> None:
        key = (edge.source, edge.target, edge.label, edge.reads)
        known = self.edges.get(key)
        self.edges[key] = edge if known is None else replace(known, marks=_merge(known.marks, edge.marks))

    def mark(self, name: TableName, *marks: str, view: bool | None = None) -> None:
        node = self.nodes.get(name) or Node(name, name in self.views if view is None else view)
        self.nodes[name] = replace(node, marks=_merge(node.marks, marks))

    def created(self, name: TableName) -> bool:
        node = self.nodes.get(name)
        return node is not None and NEW in node.marks

    def note(self, name: TableName, key: PrimaryKey | ForeignKey, note: str) -> None:
        """Key columns `note`d (`new key`, `key dropped`), added to the table's attributes if it lacks them."""
        node = self.nodes.get(name) or Node(name)
        kind = "PK" if isinstance(key, PrimaryKey) else "FK"
        wanted = {c.lower() for c in key.columns}
        attributes = list(node.attributes)
        for index, attribute in enumerate(attributes):
            if attribute.column.lower() in wanted:
                wanted.discard(attribute.column.lower())
                keys = attribute.keys if kind in attribute.keys else (*attribute.keys, kind)
                both = note if attribute.note in ("", note) else "key replaced"
                attributes[index] = replace(attribute, keys=keys, note=both)
        attributes += [Attribute(c, "", (kind,), note) for c in key.columns if c.lower() in wanted]
        self.nodes[name] = replace(node, attributes=tuple(attributes))

    def graph(self) -> Graph:
        for edge in self.edges.values():
            for name in (edge.source, edge.target):
                if name not in self.nodes:
                    self.nodes[name] = Node(name, name in self.views, marks=() if name in self.known else (OUTSIDE,))
        nodes = sorted(self.nodes.values(), key=lambda n: (n.view, n.name))
        # A key dropped and added again on the same columns (renamed, or another parent's columns) is replaced.
        edges = [replace(e, marks=(REPLACED,)) if {NEW, DROPPED} <= set(e.marks) else e for e in self.edges.values()]
        edges.sort(key=lambda e: (e.reads, e.source, e.target, e.label))
        return Graph(tuple(replace(n, marks=_shown(n.marks)) for n in nodes), tuple(edges))


def _merge(before: Iterable[str], more: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*before, *more]))


def _shown(marks: tuple[str, ...]) -> tuple[str, ...]:
    """The strongest status a node has (a new table is not also `changed`; a renamed one says from what, and
    whether it changes too), then `blocked`."""
    status = next((m for m in _STATUSES if m in marks), None)
    if status == RENAMED:
        shown = [m for m in marks if m.startswith(f"{RENAMED} from ")] + ([CHANGED] if CHANGED in marks else [])
    else:
        shown = [status] if status else []
    return (*shown, *(m for m in (BLOCKED, OUTSIDE) if m in marks))


def project_graph(desired: CatalogState) -> Graph:
    """Every table and view the specs declare, with their keys and what each view reads; a name a key or a
    query refers to that no spec declares is a node marked `not in the specs`."""
    builder = _Builder()
    for table in desired.tables.values():
        builder.table(table)
    for view in desired.views.values():
        builder.view(view)
    return builder.graph()


def around(graph: Graph, names: Collection[TableName]) -> Graph:
    """The nodes named, their direct neighbours, and the edges that touch a node named."""
    focus = set(names)
    edges = tuple(e for e in graph.edges if e.source in focus or e.target in focus)
    kept = focus | {e.source for e in edges} | {e.target for e in edges}
    nodes = tuple(n for n in graph.nodes if n.name in kept)
    return Graph(nodes, edges, left_out=_declared(graph.nodes) - _declared(nodes))


def _declared(nodes: Iterable[Node]) -> int:
    return sum(1 for n in nodes if OUTSIDE not in n.marks)


def _touch(builder: _Builder, action: Action) -> None:
    """What `action` does to the names of the diagram."""
    match action:
        case CreateSchema() | Notice():
            pass
        case CreateTable():
            if action.name not in builder.nodes:
                builder.table(action.table)
            builder.mark(action.name, NEW, view=False)
        case CreateView():
            if action.name not in builder.nodes:
                builder.view(action.view)
            builder.mark(action.name, REPLACED if action.replacing else NEW, view=True)
        case RemoveTable():
            builder.mark(action.name, DROPPED, view=action.view)
        case DropTable():
            builder.mark(action.name, DROPPED, view=False)
        case RestoreTable():
            builder.mark(action.name, RESTORED, view=False)
        case RenameTable():
            builder.mark(action.name, RENAMED, f"{RENAMED} from {action.before}", view=False)
        case BreaksView():
            # The view reads the table, itself or through other views.
            builder.mark(action.view, REPLACED if action.replaced else BROKEN, view=True)
            builder.mark(action.name, CHANGED)
            builder.edge(Edge(action.view, action.name, "reads", reads=True, marks=(BROKEN,)))
        case Unsupported():
            builder.mark(action.name, BLOCKED)
        case AddPrimaryKey():
            # Everything of a new table is new: its keys are not marked apart.
            if not builder.created(action.name):
                builder.mark(action.name, CHANGED, view=False)
                builder.note(action.name, action.key, "new key")
        case DropPrimaryKey():
            builder.mark(action.name, CHANGED, view=False)
            builder.note(action.name, action.key, "key dropped")
        case AddForeignKey():
            fresh = builder.created(action.name)
            if not fresh:
                builder.mark(action.name, CHANGED, view=False)
            builder.edge(Edge(action.name, action.key.table, _fk_label(action.key), marks=() if fresh else (NEW,)))
        case DropForeignKey():
            builder.mark(action.name, CHANGED, view=False)
            builder.edge(Edge(action.name, action.key.table, _fk_label(action.key), marks=(DROPPED,)))
        case (
            EnableFeature()
            | RenameColumn()
            | DropColumns()
            | AlterColumnType()
            | DropNotNull()
            | SetDefault()
            | UnsetProperties()
            | ClusterBy()
            | AddColumns()
            | MoveColumn()
            | SetColumnComment()
            | SetTableComment()
            | SetProperties()
            | AddCheck()
            | DropCheck()
            | Backfill()
            | RewriteTable()
            | DropFeature()
        ):
            builder.mark(action.name, CHANGED, view=False)
        case _:
            assert_never(action)


@dataclass(frozen=True, slots=True)
class PlanDiagram:
    """A plan's diagram; without one (`graph` None), why not (`omitted`; empty when the plan touches nothing)."""

    graph: Graph | None
    omitted: str = ""
    # The diagram leaves out the neighbours of what the plan touches (too many to draw).
    alone: bool = False


def plan_graph(
    plan: Plan,
    tables: Mapping[TableName, Table] | None = None,
    views: Collection[TableName] = (),
    blocked: Collection[TableName] = (),
    limit: int = MAX_NODES,
) -> PlanDiagram:
    """What `plan` touches and their direct neighbours among `tables` (the specs' tables, with their keys; without
    them, what the plan's own actions say), each marked with what the plan does to it. A view is known by what the
    plan does to it (created, replaced, broken by a change, dropped), as a saved plan knows it. `views`: which of
    the plan's names are views. A foreign key the plan adds or drops is marked on its line. `blocked`: the tables
    a plan's assessment blocks."""
    builder = _Builder(plan.tables, views)
    for table in (tables or {}).values():
        builder.table(table)
    for action in plan.actions:
        _touch(builder, action)
    for name in blocked:
        builder.mark(name, BLOCKED)
    whole = builder.graph()
    touched = [n.name for n in whole.nodes if n.marks and OUTSIDE not in n.marks]
    # Edges the plan adds or drops are touched too, and bring their ends.
    touched += [e.source for e in whole.edges if e.marks]
    if not touched:
        return PlanDiagram(None)
    shown = around(whole, touched)
    if len(shown.nodes) <= limit:
        return PlanDiagram(shown)
    focus = set(touched) | {e.target for e in whole.edges if e.marks}
    alone = Graph(
        tuple(n for n in whole.nodes if n.name in focus),
        tuple(e for e in whole.edges if e.source in focus and e.target in focus),
    )
    alone = replace(alone, left_out=_declared(whole.nodes) - _declared(alone.nodes))
    if len(alone.nodes) <= limit:
        return PlanDiagram(alone, alone=True)
    return PlanDiagram(None, f"the plan touches {len(alone.nodes)} tables and views, more than {limit} can show")
