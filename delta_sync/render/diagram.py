"""A graph of tables, keys and views (`render.graph`) as text: a Mermaid `erDiagram` (`delta-sync graph`, and the
diagram of the Markdown plan) or a Graphviz digraph (`graph --format dot`). Pure.

Why one `erDiagram` and not a `flowchart`: keys are what a reviewer of a schema change reads first, and the ER
diagram draws a foreign key as a crow's foot and lists each table's key columns as PK / FK attributes, which a
flowchart can only imitate in its labels. A view is an entity of the same diagram, named `(view)`, and what it
reads is a dashed (non-identifying) line labelled `reads`, so a single diagram shows both and GitHub renders it
in a comment. Changes are marked in the entities' names (`shop.orders (changed)`): ER diagrams take `classDef`
styles only in recent Mermaid releases, and a diagram the reader's renderer cannot parse shows nothing at all.

The Mermaid written is a small subset that every Mermaid since 10 parses: entity names always quoted, with the
characters a quoted name cannot hold (`"`, `%`, `\\`, line breaks) replaced by look-alikes; attribute types and
names plain words (a column whose name is not one keeps it in the attribute's comment), never `PK`, `FK` or
`UK`; relationship labels quoted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from delta_sync.model.state import TableName
from delta_sync.render.graph import (
    BLOCKED,
    BROKEN,
    CHANGED,
    DROPPED,
    NEW,
    OUTSIDE,
    RENAMED,
    REPLACED,
    RESTORED,
    Attribute,
    Edge,
    Graph,
    Node,
)

# --- Mermaid ---------------------------------------------------------------------------------------------

# What a quoted entity name cannot hold, replaced by a look-alike.
_NAME_SWAPS = str.maketrans({'"': "\uff02", "%": "\uff05", "\\": "\uff3c", "\r": " ", "\n": " ", "\v": " ", "\b": " "})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Mermaid's lexer reads these as key markers wherever they stand in an entity's block (in any case).
_KEY_WORDS = frozenset({"pk", "fk", "uk"})


def label(node: Node) -> str:
    """The name a node is shown and referred to by: `shop.orders`, `shop.big_orders (view, new)`."""
    kinds = ["view"] if node.view else []
    marks = [*kinds, *node.marks]
    text = str(node.name) + (f" ({', '.join(marks)})" if marks else "")
    return " ".join(text.translate(_NAME_SWAPS).split())


def _labels(graph: Graph) -> dict[TableName, str]:
    """Each node's label, made unique (two names that differ only by a replaced character)."""
    found: dict[TableName, str] = {}
    taken: set[str] = set()
    for node in graph.nodes:
        text, count = label(node), 1
        while text in taken:
            count += 1
            text = f"{label(node)} #{count}"
        taken.add(text)
        found[node.name] = text
    return found


def _word(text: str, fallback: str) -> str:
    """`text` as a word Mermaid reads as an attribute's type or name: letters, digits and `_`."""
    word = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if not word or not _WORD.fullmatch(word):
        word = f"_{word}" if word else fallback
    return f"{word}_" if word.lower() in _KEY_WORDS else word


def _quoted(text: str) -> str:
    """A comment or a relationship's label: on one line, no `"`, and no `%` (`%%{` anywhere is a directive)."""
    return '"' + " ".join(text.replace('"', "'").replace("%", "\uff05").split()) + '"'


def _attribute_line(attribute: Attribute) -> str:
    base = _WORD.match(attribute.type)
    type_word = _word(base.group() if base else "", "key")
    name_word = _word(attribute.column, "column")
    notes = []
    if name_word != attribute.column:
        notes.append(attribute.column)
    if attribute.type and attribute.type != type_word:
        notes.append(attribute.type)
    if attribute.note:
        notes.append(attribute.note)
    line = f"{type_word} {name_word} {', '.join(attribute.keys)}"
    return f"{line} {_quoted('; '.join(notes))}" if notes else line


def _edge_label(edge: Edge) -> str:
    return edge.label + (f" ({', '.join(edge.marks)})" if edge.marks else "")


def mermaid(graph: Graph) -> str:
    """The graph as a Mermaid `erDiagram`: an entity per table (its key columns as attributes) and view, a
    relationship per foreign key (many children to one parent, or to at most one when a key column may be
    NULL) and per table a view reads (dashed, `reads`)."""
    labels = _labels(graph)
    lines = ["erDiagram"]
    for node in graph.nodes:
        name = _quoted_name(labels[node.name])
        if node.attributes:
            lines += [f"    {name} {{", *(f"        {_attribute_line(a)}" for a in node.attributes), "    }"]
        else:
            lines.append(f"    {name}")
    for edge in graph.edges:
        source, target = _quoted_name(labels[edge.source]), _quoted_name(labels[edge.target])
        lines.append(f"    {source} {_shape(edge)} {target} : {_quoted(_edge_label(edge))}")
    return "\n".join(lines) + "\n"


def _shape(edge: Edge) -> str:
    """A view's row comes from any number of rows of what it reads, and a row of that from none or many of the
    view's (dashed: no key); a foreign key's child rows have exactly one parent each, or at most one when a key
    column may be NULL."""
    if edge.reads:
        return "}o..o{"
    return "}o--o|" if edge.optional else "}o--||"


def _quoted_name(text: str) -> str:
    return f'"{text}"'


# --- Graphviz --------------------------------------------------------------------------------------------

_COLORS: Mapping[str, str] = {
    NEW: "darkgreen",
    DROPPED: "red3",
    RESTORED: "blue3",
    RENAMED: "darkorange3",
    REPLACED: "darkorange3",
    CHANGED: "darkorange3",
    BROKEN: "red3",
    BLOCKED: "red3",
    OUTSIDE: "gray50",
}


def _dot_string(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, line breaks as DOT's `\\n`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n") + '"'


def _color(marks: Iterable[str]) -> str | None:
    """The colour of the first mark that has one (`renamed from s.t` has `renamed`'s)."""
    keys = (m if m in _COLORS else m.split(" ")[0] for m in marks)
    return next((_COLORS[k] for k in keys if k in _COLORS), None)


def _dot_node(node: Node) -> str:
    lines = [str(node.name)]
    marks = (["view"] if node.view else []) + list(node.marks)
    if marks:
        lines.append(f"({', '.join(marks)})")
    for attribute in node.attributes:
        note = f" ({attribute.note})" if attribute.note else ""
        typed = f" {attribute.type}" if attribute.type else ""
        lines.append(f"{'/'.join(attribute.keys)} {attribute.column}{typed}{note}")
    attributes = [f"label={_dot_string(chr(10).join(lines))}"]
    attributes.append("shape=note" if node.view else "shape=box")
    color = _color(node.marks)
    if color:
        attributes.append(f"color={color}")
    if DROPPED in node.marks or OUTSIDE in node.marks:
        attributes.append("style=dashed")
    return f"  {_dot_string(str(node.name))} [{', '.join(attributes)}];"


def _dot_edge(edge: Edge) -> str:
    attributes = [f"label={_dot_string(_edge_label(edge))}"]
    if edge.reads:
        attributes.append("style=dashed")
    elif edge.optional:
        attributes.append("arrowhead=odot")
    color = _color(edge.marks)
    if color:
        attributes.append(f"color={color}")
    return f"  {_dot_string(str(edge.source))} -> {_dot_string(str(edge.target))} [{', '.join(attributes)}];"


def dot(graph: Graph) -> str:
    """The graph as a Graphviz digraph: a box per table (its key columns listed), a note per view, an arrow per
    foreign key from child to parent (a circle at its head when the key may be NULL), a dashed one from each
    view to what it reads. Every id quoted."""
    lines = ["digraph schema {", "  rankdir=LR;", '  node [fontname="Helvetica"];', '  edge [fontname="Helvetica"];']
    lines += [_dot_node(node) for node in graph.nodes]
    lines += [_dot_edge(edge) for edge in graph.edges]
    return "\n".join([*lines, "}"]) + "\n"
