"""`delta-sync graph` and the diagram of the Markdown plan: the Mermaid text parses (a small grammar check of the
subset written, as Mermaid 10's lexer reads it), names what the specs or the plan hold, and the Graphviz text is
well formed; names of every shape (dots, dashes, backticks, spaces, quotes, unicode) parse."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.keys import foreign_key_name, primary_key_name
from delta_sync.model.state import CatalogState, Column, ForeignKey, PrimaryKey, Table, TableName, View
from delta_sync.planning.actions import (
    AddForeignKey,
    BreaksView,
    CreateView,
    DropForeignKey,
    Plan,
    RemoveTable,
    Unsupported,
)
from delta_sync.planning.diff.planner import plan
from delta_sync.render import markdown
from delta_sync.render.diagram import dot, label, mermaid
from delta_sync.render.graph import Graph, Node, PlanDiagram, around, plan_graph, project_graph
from delta_sync.render.markdown import render_markdown
from delta_sync.specs.spec_files import load_specs
from tests.unit.builders import col, name, table

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

# --- a Mermaid erDiagram check, for the subset delta-sync writes -------------------------------------------

# Mermaid's lexer: a quoted entity name holds anything but `"`, `%`, `\` and line breaks.
_ENTITY = r'"([^"%\r\n\v\b\\]+)"'
_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
_KEY = r"(?:PK|FK|UK)"
_COMMENT = r'"([^"%\r\n]*)"'
_ATTRIBUTE = re.compile(rf"({_WORD}) ({_WORD})(?: ({_KEY}(?:, {_KEY})*))?(?: {_COMMENT})?")
# Cardinality on the left (`}o`: zero or more) and on the right (`o{`), then the line: `--` solid, `..` dashed.
_RELATIONSHIP = re.compile(rf"{_ENTITY} (\|o|\|\||\}}o|\}}\|)(--|\.\.)(o\||\|\||o\{{|\|\{{) {_ENTITY} : {_COMMENT}")


@dataclass
class ErDiagram:
    entities: dict[str, list[tuple[str, str, tuple[str, ...], str]]] = field(default_factory=dict)
    relationships: list[tuple[str, str, str, str]] = field(default_factory=list)


def parse_er(text: str) -> ErDiagram:
    """The entities (with their attributes) and relationships of an erDiagram; AssertionError for anything
    outside the subset: the header, entities alone or with a block of attributes, relationships."""
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[0] == "erDiagram", lines[0]
    assert "%%" not in text  # `%%{...}%%` anywhere is a directive to Mermaid
    found = ErDiagram()
    block: str | None = None
    for number, line in enumerate(lines[1:], 2):
        where = f"line {number}: {line!r}"
        stripped = line.strip()
        if block is not None:
            if stripped == "}":
                block = None
                continue
            attribute = _ATTRIBUTE.fullmatch(stripped)
            assert attribute, where
            type_, column, keys, comment = attribute.groups()
            # The lexer reads PK, FK and UK as keys in any case, wherever they stand in a block.
            assert type_.lower() not in ("pk", "fk", "uk"), where
            assert column.lower() not in ("pk", "fk", "uk"), where
            key_list = tuple(keys.split(", ")) if keys else ()
            found.entities[block].append((type_, column, key_list, comment or ""))
            continue
        entity = re.fullmatch(rf"{_ENTITY}( \{{)?", stripped)
        if entity:
            assert entity.group(1) not in found.entities, f"{where}: declared twice"
            found.entities[entity.group(1)] = []
            if entity.group(2):
                block = entity.group(1)
            continue
        relationship = _RELATIONSHIP.fullmatch(stripped)
        assert relationship, where
        left, card_a, line_kind, card_b, right, role = relationship.groups()
        assert left in found.entities, f"{where}: an entity not declared before"
        assert right in found.entities, f"{where}: an entity not declared before"
        found.relationships.append((left, f"{card_a}{line_kind}{card_b}", right, role))
    assert block is None, "a block is not closed"
    return found


# --- a DOT check ---------------------------------------------------------------------------------------------

_DOT_STRING = r'"(?:[^"\\]|\\.)*"'
_DOT_ATTRIBUTE = rf"[a-z]+=(?:{_DOT_STRING}|[A-Za-z0-9]+)"
_DOT_STATEMENT = re.compile(rf"({_DOT_STRING})(?: -> ({_DOT_STRING}))? \[({_DOT_ATTRIBUTE}(?:, {_DOT_ATTRIBUTE})*)\];")


def dot_ids(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The node ids and edges of a digraph as `dot` writes them: braces balanced outside strings, each statement
    a quoted id (or two, with ->) and its attributes."""
    depth = 0
    for token in re.findall(rf"{_DOT_STRING}|[{{}}]", text):
        depth += {"{": 1, "}": -1}.get(token, 0)
        assert depth >= 0
    assert depth == 0
    lines = text.splitlines()
    assert lines[0] == "digraph schema {"
    assert lines[-1] == "}"
    nodes, edges = [], []
    for line in lines[1:-1]:
        stripped = line.strip()
        if re.fullmatch(r"(rankdir=LR|(node|edge) \[fontname=\"Helvetica\"\]);", stripped):
            continue
        statement = _DOT_STATEMENT.fullmatch(stripped)
        assert statement, line
        source, target, _attributes = statement.groups()
        if target is None:
            nodes.append(_unquote(source))
        else:
            edges.append((_unquote(source), _unquote(target)))
    return nodes, edges


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


# --- projects ------------------------------------------------------------------------------------------------

SHOP = {
    "customers.yaml": """\
        table: shop.customers
        columns:
          - {name: customer_id, type: bigint, nullable: false}
          - {name: email, type: string}
        primary_key: [customer_id]
        """,
    "orders.yaml": """\
        table: shop.orders
        columns:
          - {name: order_id, type: bigint, nullable: false}
          - {name: customer_id, type: bigint, nullable: false}
        primary_key: [order_id]
        foreign_keys:
          - {columns: [customer_id], references: shop.customers(customer_id)}
        """,
    "order_items.yaml": """\
        table: shop.order_items
        columns:
          - {name: order_id, type: bigint, nullable: false}
          - {name: line_no, type: int, nullable: false}
          - {name: sku, type: string}
        primary_key: [order_id, line_no]
        foreign_keys:
          - {columns: [order_id], references: shop.orders(order_id)}
          - {columns: [sku], references: shop.products(sku)}
        """,
    "products.yaml": """\
        table: shop.products
        columns:
          - {name: sku, type: string, nullable: false}
        primary_key: [sku]
        """,
    "big_orders.yaml": """\
        view: shop.big_orders
        sql: SELECT o.order_id, c.email FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.customer_id
        """,
}


def shop(root: Path) -> Path:
    folder = root / "specs" / "shop"
    folder.mkdir(parents=True)
    for file, text in SHOP.items():
        (folder / file).write_text(textwrap.dedent(text))
    return root / "specs"


def test_the_example_projects_diagram_parses_and_names_its_tables() -> None:
    desired = load_specs(REPO / "specs")
    found = parse_er(mermaid(project_graph(desired)))
    assert set(found.entities) == {str(n) for n in desired.tables} | {f"{n} (view)" for n in desired.views}
    keys = sum(1 for t in desired.tables.values() for _ in t.foreign_keys)
    assert len([r for r in found.relationships if r[3] != "reads"]) == keys


def test_a_project_with_keys_and_a_view(tmp_path: Path) -> None:
    found = parse_er(mermaid(project_graph(load_specs(shop(tmp_path)))))
    assert found.entities == {
        "shop.customers": [("bigint", "customer_id", ("PK",), "")],
        "shop.order_items": [
            ("bigint", "order_id", ("PK", "FK"), ""),
            ("int", "line_no", ("PK",), ""),
            ("string", "sku", ("FK",), ""),
        ],
        "shop.orders": [("bigint", "order_id", ("PK",), ""), ("bigint", "customer_id", ("FK",), "")],
        "shop.products": [("string", "sku", ("PK",), "")],
        "shop.big_orders (view)": [],
    }
    assert found.relationships == [
        # A child's key column that may be NULL (sku) may have no parent: zero or one.
        ("shop.order_items", "}o--||", "shop.orders", "order_id"),
        ("shop.order_items", "}o--o|", "shop.products", "sku"),
        ("shop.orders", "}o--||", "shop.customers", "customer_id"),
        ("shop.big_orders (view)", "}o..o{", "shop.customers", "reads"),
        ("shop.big_orders (view)", "}o..o{", "shop.orders", "reads"),
    ]


ODD_NAMES = [
    "we.ird-name",
    "sp ace",
    "back`tick",
    "ünï©ødé 表",
    'quo"te',
    "per%cent %%{init: {}}%%",
    "back\\slash",
    "new\nline",
    "br{ace} [x]",
    "co:lon",
    "1st",
    "erDiagram",
    "PK",
    "a #2;",
]
ODD_COLUMNS = (
    Column("pk", "bigint", nullable=False),
    Column("Fk", "decimal(18,2)"),
    Column("uk col`x", "array<string>"),
    Column("ünï", "struct<a:int,b:string>"),
    Column("_x", "string"),
    Column("9 lives", "int"),
)


def odd_state() -> CatalogState:
    tables: dict[TableName, Table] = {}
    parent: TableName | None = None
    for index, text in enumerate(ODD_NAMES):
        this = TableName("c-at", f"s-{index}", text)
        keys = (ForeignKey(f'fk "{index}" %', ("Fk", "uk col`x"), parent, ("pk", "ünï")),) if parent else ()
        primary = PrimaryKey("pk", ("pk", "ünï", "_x", "9 lives"))
        tables[this] = Table(this, ODD_COLUMNS, primary_key=primary, foreign_keys=keys)
        parent = this
    viewed = TableName(None, "v", 'vi`ew "x" %')
    views = {viewed: View(viewed, "SELECT * FROM s.t JOIN `c-at`.`s-0` ON 1 = 1")}
    return CatalogState(tables=tables, views=views)


def test_names_of_every_shape_parse_and_stay_apart() -> None:
    graph = project_graph(odd_state())
    found = parse_er(mermaid(graph))
    assert len(found.entities) == len(graph.nodes) == len(ODD_NAMES) + 2  # the view, and s.t it reads
    for node in graph.nodes:
        assert any(str(node.name.name).split()[0][:3].replace('"', "\uff02") in e for e in found.entities), node
    assert len(found.relationships) == len(graph.edges) == len(ODD_NAMES)
    attributes = found.entities[label(next(n for n in graph.nodes if n.name.schema == "s-1"))]
    # A column that is not a plain word keeps its name (and a type its spelling) in the attribute's comment.
    assert ("bigint", "pk_", ("PK",), "pk") in attributes
    assert ("decimal", "Fk_", ("FK",), "Fk; decimal(18,2)") in attributes
    assert ("array", "uk_col_x", ("FK",), "uk col`x; array<string>") in attributes
    assert ("int", "_9_lives", ("PK",), "9 lives") in attributes
    roles = {r[3] for r in found.relationships}
    assert "Fk, uk col`x -> pk, ünï" in roles


def test_two_names_that_read_the_same_stay_two_entities() -> None:
    one, two = TableName(None, "s", 'a"b'), TableName(None, "s", "a\uff02b")
    graph = Graph((Node(one), Node(two)), ())
    assert list(parse_er(mermaid(graph)).entities) == ["s.a\uff02b", "s.a\uff02b #2"]


def test_dot_quotes_every_id_and_balances_its_braces(tmp_path: Path) -> None:
    nodes, edges = dot_ids(dot(project_graph(load_specs(shop(tmp_path)))))
    assert nodes == ["shop.customers", "shop.order_items", "shop.orders", "shop.products", "shop.big_orders"]
    assert ("shop.order_items", "shop.products") in edges
    assert ("shop.big_orders", "shop.orders") in edges
    graph = project_graph(odd_state())
    nodes, edges = dot_ids(dot(graph))

    def shown(table: TableName) -> str:  # a line break is DOT's `\n` in an id too
        return str(table).replace("\n", "n")

    assert nodes == [shown(n.name) for n in graph.nodes]
    assert edges == [(shown(e.source), shown(e.target)) for e in graph.edges]


def test_around_keeps_the_names_and_their_direct_neighbours(tmp_path: Path) -> None:
    whole = project_graph(load_specs(shop(tmp_path)))
    near = around(whole, [name("shop.customers")])
    assert [str(n.name) for n in near.nodes] == ["shop.customers", "shop.orders", "shop.big_orders"]
    assert {(str(e.source), str(e.target)) for e in near.edges} == {
        ("shop.orders", "shop.customers"),
        ("shop.big_orders", "shop.customers"),
    }
    assert near.left_out == 2


# --- the plan's diagram ------------------------------------------------------------------------------------


def chain() -> dict[str, Table]:
    """a <- b <- c <- d by foreign keys, and e apart."""
    tables = {}
    parent = None
    for letter in "abcde":
        base = table(f"s.{letter}", col("id", "bigint", nullable=False), col("up", "bigint", nullable=False))
        key = PrimaryKey(primary_key_name(base.name, ("id",)), ("id",))
        refs = (ForeignKey(foreign_key_name(base.name, ("up",), parent), ("up",), parent, ("id",)),) if parent else ()
        tables[letter] = dataclasses.replace(base, primary_key=key, foreign_keys=refs)
        parent = None if letter == "d" else base.name
    return tables


def touched_names(markdown: str) -> ErDiagram:
    """The diagram of a Markdown plan, parsed."""
    start = markdown.index("<details><summary>Diagram: ")
    fence = markdown.index("```mermaid\n", start) + len("```mermaid\n")
    return parse_er(markdown[fence : markdown.index("```\n", fence)])


def test_the_plans_diagram_names_what_it_touches_and_their_direct_neighbours() -> None:
    tables = chain()
    desired = {t.name: t for t in tables.values()}
    desired[name("s.c")] = dataclasses.replace(tables["c"], columns=(*tables["c"].columns, col("note")))
    view = View(name("s.v"), "SELECT * FROM s.c")
    the_plan = plan(
        CatalogState({t.name: t for t in tables.values()}, frozenset({name("s.a").schema_name})),
        CatalogState(desired, views={view.name: view}),
    )
    markdown = render_markdown(the_plan, desired=CatalogState(desired), views={view.name})
    found = touched_names(markdown)
    # c changes, v is new; b is c's parent, d its child. a (b's parent) and e are not drawn.
    assert set(found.entities) == {"s.c (changed)", "s.v (view, new)", "s.b", "s.d"}
    assert sorted((r[0], r[2]) for r in found.relationships) == [
        ("s.c (changed)", "s.b"),
        ("s.d", "s.c (changed)"),
        ("s.v (view, new)", "s.c (changed)"),
    ]
    assert "<details><summary>Diagram: 3 tables and 1 view (2 touched by the plan)</summary>" in markdown
    assert "_Shows what the plan touches and its direct neighbours; 2 other tables of the specs left out._" in markdown
    # Before the tables' sections, after the summary.
    assert markdown.index("Diagram: ") < markdown.index("<details><summary><code>s.c</code>")


def test_the_plans_diagram_marks_each_kind_of_change() -> None:
    tables = chain()
    a, b, c = tables["a"], tables["b"], tables["c"]
    old_key, new_key = b.foreign_keys[0], dataclasses.replace(b.foreign_keys[0], name="renamed")
    actions = (
        DropForeignKey(b.name, old_key),
        AddForeignKey(b.name, new_key),
        RemoveTable(name("s.gone")),
        RemoveTable(name("s.old_view"), view=True),
        CreateView(View(name("s.v"), "SELECT * FROM s.a"), before=View(name("s.v"), "SELECT 1")),
        BreaksView(c.name, name("s.w"), "UNRESOLVED_COLUMN"),
        Unsupported(c.name, "id", "why", "how"),
    )
    the_plan = Plan(actions, tuple(sorted({a.name, b.name, c.name, name("s.gone"), name("s.v"), name("s.w")})))
    drawn = plan_graph(the_plan, {t.name: t for t in (a, b, c)}, views={name("s.v"), name("s.w")})
    assert drawn.graph is not None
    found = parse_er(mermaid(drawn.graph))
    assert set(found.entities) == {
        "s.a",
        "s.b (changed)",
        "s.c (changed, blocked)",
        "s.gone (dropped)",
        "s.old_view (view, dropped)",
        "s.v (view, replaced)",
        "s.w (view, broken)",
    }
    assert ("s.b (changed)", "}o--||", "s.a", "up -> id (replaced)") in found.relationships
    assert ("s.w (view, broken)", "}o..o{", "s.c (changed, blocked)", "reads (broken)") in found.relationships
    assert ("s.v (view, replaced)", "}o..o{", "s.a", "reads") in found.relationships


def test_a_new_tables_keys_are_not_marked_apart(tmp_path: Path) -> None:
    desired = load_specs(shop(tmp_path))
    the_plan = plan(CatalogState({}), desired)
    markdown = render_markdown(the_plan, desired=desired, views=set(desired.views))
    found = touched_names(markdown)
    assert "shop.orders (new)" in found.entities
    assert all(not comment for attributes in found.entities.values() for *_, comment in attributes)
    assert {r[3] for r in found.relationships} == {"order_id", "sku", "customer_id", "reads"}


def test_a_large_plan_draws_only_what_it_touches_then_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    tables = chain()
    by_name = {t.name: t for t in tables.values()}
    the_plan = Plan((AddForeignKey(name("s.c"), tables["c"].foreign_keys[0]),), tuple(sorted(by_name)))
    near = plan_graph(the_plan, by_name, limit=3)
    assert near.graph is not None
    assert not near.alone
    assert [label(n) for n in near.graph.nodes] == ["s.b", "s.c (changed)", "s.d"]
    # Over the limit, without the neighbours: the table and the parent of the key it adds.
    alone = plan_graph(the_plan, by_name, limit=2)
    assert alone.alone
    assert alone.graph is not None
    assert [label(n) for n in alone.graph.nodes] == ["s.b", "s.c (changed)"]
    assert alone.graph.left_out == 3
    over = plan_graph(the_plan, by_name, limit=1)
    assert over.graph is None
    assert over.omitted == "the plan touches 2 tables and views, more than 1 can show"
    assert "Diagram" not in render_markdown(Plan((), tuple(by_name)), desired=CatalogState(by_name))
    assert plan_graph(Plan((), tuple(by_name)), by_name) == PlanDiagram(None)

    # The comment says why it has no diagram.
    monkeypatch.setattr(markdown, "plan_graph", functools.partial(plan_graph, limit=1))
    said = render_markdown(the_plan, desired=CatalogState(by_name))
    assert "\n\n_No diagram: the plan touches 2 tables and views, more than 1 can show._\n\n" in said


@pytest.mark.parametrize("desired", [True, False])
def test_the_diagram_is_drawn_from_what_a_saved_plan_holds(desired: bool) -> None:
    """`show` prints what `plan` printed: the diagram uses the desired tables and the plan's actions, never
    views the plan does not touch (a saved plan holds none)."""
    tables = chain()
    by_name = {t.name: t for t in tables.values()}
    changed = dataclasses.replace(tables["e"], columns=(*tables["e"].columns, col("note")))
    view = View(name("s.v"), "SELECT * FROM s.e")
    the_plan = plan(
        CatalogState(by_name, frozenset({name("s.a").schema_name}), views={view.name: view}),
        CatalogState({**by_name, changed.name: changed}, views={view.name: view}),
    )
    state = CatalogState({**by_name, changed.name: changed}, views={view.name: view} if desired else {})
    found = touched_names(render_markdown(the_plan, desired=state, views={view.name}))
    assert set(found.entities) == {"s.e (changed)"}


# --- the command -------------------------------------------------------------------------------------------


def test_graph_runs_offline_on_the_example_specs_without_a_jvm() -> None:
    script = (
        "import runpy, sys\n"
        "sys.argv = ['delta-sync', 'graph', 'specs', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('delta_sync', run_name='__main__')\n"
        "finally:\n"
        "    if any(m.split('.')[0] in ('pyspark', 'py4j', 'delta') for m in sys.modules):\n"
        "        print('A JVM LIBRARY WAS LOADED', file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env.update({"PATH": str(Path(sys.executable).parent), "DELTA_SYNC_NO_ENGINE": "1"})
    for args, check in (([], parse_er), (["--format", "dot"], dot_ids)):
        done = subprocess.run(
            [sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "A JVM LIBRARY WAS LOADED" not in done.stderr
        check(done.stdout)
        assert "4 tables, 0 views" in done.stderr


def test_graph_prints_mermaid_and_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(cli.app, ["graph", "specs"])
    assert done.exit_code == 0, done.output
    assert set(parse_er(done.stdout).entities) >= {"shop.orders", "shop.big_orders (view)"}
    assert "4 tables, 1 view, 3 foreign keys, 2 reads by views." in done.stderr
    done = runner.invoke(cli.app, ["graph", "specs", "-f", "dot", "--around", "shop.products"])
    assert done.exit_code == 0, done.output
    assert dot_ids(done.stdout) == (["shop.order_items", "shop.products"], [("shop.order_items", "shop.products")])


def test_graph_says_what_is_wrong_in_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = shop(tmp_path)
    monkeypatch.chdir(tmp_path)
    unknown = runner.invoke(cli.app, ["graph", "--around", "shop.nope"])
    assert unknown.exit_code == 1
    assert unknown.stderr == "Error: --around shop.nope: no table or view of the specs has that name\n"
    (specs / "shop" / "orders.yaml").write_text("table: shop.orders\ncolumns:\n  - {name: id, type: nosuchtype}\n")
    bad = runner.invoke(cli.app, ["graph"])
    assert bad.exit_code == 1
    assert bad.stdout == ""
    # As validate says it: each problem one sentence at its file and line.
    assert bad.stderr.splitlines()[0] == "1 problem in specs:"
    assert bad.stderr.splitlines()[1].strip().startswith("specs/shop/orders.yaml:3: column `id`: bad type")


def test_the_docs_show_what_graph_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/schema-diagram.md's two sessions: the project above (its first), the example project (`specs/`)."""
    from tests.docs_text import page

    sessions = re.findall(r"```console\n\$ delta-sync graph specs/\n(.*?)```", page("schema-diagram.md"), re.DOTALL)
    assert len(sessions) == 2, sessions
    shop(tmp_path)
    for root, shown in ((tmp_path, sessions[0]), (REPO, sessions[1])):
        monkeypatch.chdir(root)
        done = runner.invoke(cli.app, ["graph", "specs/"])
        assert done.exit_code == 0, done.output
        assert done.stdout + done.stderr == shown
