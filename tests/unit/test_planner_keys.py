"""Keys in the plan: what the planner emits for primary and foreign keys, in what order, the SQL of both
ways a key is kept (table property; informational constraint), their hazards and how they render."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from delta_sync.model import keys
from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import UNITY_CATALOG, Capabilities, CatalogState, ForeignKey, Origin, PrimaryKey, Table
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
    Action,
    AddForeignKey,
    AddPrimaryKey,
    CreateTable,
    DropColumns,
    DropForeignKey,
    DropPrimaryKey,
    Plan,
    RenameColumn,
    SetProperties,
    UnsetProperties,
)
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazard_rules import keys_to_probe
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.render.document import action_json
from delta_sync.render.markdown import render_markdown
from tests.unit.builders import col, column, name, table

GOLDEN = Path(__file__).parent / "golden" / "keys_constraints.sql"


def pk(table_name: str, *columns: str, key_name: str | None = None) -> PrimaryKey:
    return PrimaryKey(key_name or keys.primary_key_name(name(table_name), columns), columns)


def fk(table_name: str, columns: tuple[str, ...], parent: str, references: tuple[str, ...]) -> ForeignKey:
    key_name = keys.foreign_key_name(name(table_name), columns, name(parent))
    return ForeignKey(key_name, columns, name(parent), references)


def keyed(base: Table, primary: PrimaryKey | None = None, *foreign: ForeignKey, rows: bool = True) -> Table:
    return replace(base, primary_key=primary, foreign_keys=foreign, num_files=1 if rows else 0)


def customers(primary: PrimaryKey | None = None, rows: bool = True) -> Table:
    base = table("shop.customers", col("id", "bigint", nullable=False), col("region", "string", nullable=False))
    return keyed(base, primary, rows=rows)


def orders(primary: PrimaryKey | None = None, *foreign: ForeignKey, rows: bool = True) -> Table:
    base = table(
        "shop.orders",
        col("id", "bigint", nullable=False),
        col("line", "int", nullable=False),
        col("customer_id", "bigint"),
    )
    return keyed(base, primary, *foreign, rows=rows)


CUSTOMER_FK = fk("shop.orders", ("customer_id",), "shop.customers", ("id",))


def states(current: list[Table], desired: list[Table], constraints: bool = False) -> tuple[CatalogState, CatalogState]:
    # Unity Catalog's key constraints, with its RENAME COLUMN allowed so that one plan shows both.
    unity = replace(UNITY_CATALOG, rename_column=True)
    capabilities: dict[str | None, Capabilities] = {None: unity} if constraints else {}
    have = CatalogState({t.name: t for t in current}, frozenset(t.name.schema_name for t in desired), capabilities)
    want = CatalogState({t.name: t for t in desired}, frozenset(t.name.schema_name for t in desired))
    return have, want


def planned(current: list[Table], desired: list[Table], constraints: bool = False) -> Plan:
    return plan(*states(current, desired, constraints))


def kinds(actions: tuple[Action, ...]) -> list[tuple[str, str]]:
    return [(type(a).__name__, str(getattr(a, "name", ""))) for a in actions]


def sql(result: Plan) -> list[str]:
    return [statement for _action, statement in ddl.plan_statements(result)]


# --- the planner ------------------------------------------------------------------------------------


def test_an_unchanged_key_plans_nothing_and_columns_compare_case_insensitively() -> None:
    key = pk("shop.orders", "id", "line")
    shouted = replace(key, columns=("ID", "Line"))
    assert planned([orders(key, CUSTOMER_FK)], [orders(shouted, CUSTOMER_FK)]).is_empty


def test_a_new_primary_key_is_added_and_a_removed_one_dropped() -> None:
    key = pk("shop.orders", "id")
    added = planned([orders()], [orders(key)])
    assert added.actions == (AddPrimaryKey(name("shop.orders"), key, False),)
    dropped = planned([orders(key)], [orders()])
    assert dropped.actions == (DropPrimaryKey(name("shop.orders"), key, False),)


def test_a_changed_key_is_a_drop_and_add_of_the_key_only() -> None:
    before, after = pk("shop.orders", "id"), pk("shop.orders", "id", "line")
    result = planned([orders(before)], [orders(after)])
    assert result.actions == (
        DropPrimaryKey(name("shop.orders"), before, False),
        AddPrimaryKey(name("shop.orders"), after, False),
    )


def test_column_order_is_part_of_a_key() -> None:
    before = pk("shop.orders", "id", "line", key_name="pk_orders")
    after = pk("shop.orders", "line", "id", key_name="pk_orders")
    assert kinds(planned([orders(before)], [orders(after)]).actions) == [
        ("DropPrimaryKey", "shop.orders"),
        ("AddPrimaryKey", "shop.orders"),
    ]


def test_a_renamed_key_is_dropped_and_added() -> None:
    before = pk("shop.orders", "id", key_name="orders_pk")
    after = pk("shop.orders", "id", key_name="pk_orders")
    result = planned([orders(before)], [orders(after)])
    assert [a.key.name for a in result.actions if isinstance(a, AddPrimaryKey | DropPrimaryKey)] == [
        "orders_pk",
        "pk_orders",
    ]


def test_foreign_keys_are_diffed_by_name() -> None:
    moved = replace(CUSTOMER_FK, references=("region",))
    result = planned([orders(None, CUSTOMER_FK)], [orders(None, moved)])
    assert result.actions == (
        DropForeignKey(name("shop.orders"), CUSTOMER_FK, False),
        AddForeignKey(name("shop.orders"), moved, False),
    )
    assert planned([orders(None, CUSTOMER_FK)], [orders()]).actions == (
        DropForeignKey(name("shop.orders"), CUSTOMER_FK, False),
    )


def test_a_new_table_gets_its_keys_after_the_create() -> None:
    result = planned([], [customers(pk("shop.customers", "id")), orders(pk("shop.orders", "id"), CUSTOMER_FK)])
    assert kinds(result.actions) == [
        ("CreateTable", "shop.customers"),
        ("AddPrimaryKey", "shop.customers"),
        ("CreateTable", "shop.orders"),
        ("AddPrimaryKey", "shop.orders"),
        ("AddForeignKey", "shop.orders"),
    ]
    create = next(a for a in result.actions if isinstance(a, CreateTable))
    # The key is not part of CREATE TABLE (Delta refuses inline key constraints).
    assert "PRIMARY KEY" not in ddl.to_sql(create)[0]
    assert "delta_sync" not in ddl.to_sql(create)[0]


def test_a_foreign_key_comes_after_the_primary_key_it_references_whatever_the_table_names() -> None:
    # The child sorts before its parent by name: the foreign key still comes after the parent's key.
    child = keyed(
        table("shop.a_lines", col("order_id", "bigint")),
        None,
        fk("shop.a_lines", ("order_id",), "shop.orders", ("id",)),
        rows=False,
    )
    result = planned([], [child, orders(pk("shop.orders", "id"), rows=False)], constraints=True)
    order = kinds(result.actions)
    assert order.index(("AddForeignKey", "shop.a_lines")) > order.index(("AddPrimaryKey", "shop.orders"))
    assert order[-1] == ("AddForeignKey", "shop.a_lines")


def test_foreign_keys_are_dropped_before_any_table_changes_and_added_after() -> None:
    parent_before, parent_after = pk("shop.customers", "id"), pk("shop.customers", "id", "region")
    child_before = fk("shop.orders", ("customer_id",), "shop.customers", ("id",))
    child_after = replace(child_before, columns=("customer_id", "line"), references=("id", "region"))
    result = planned(
        [customers(parent_before), orders(None, child_before)],
        [customers(parent_after), orders(None, child_after)],
        constraints=True,
    )
    assert kinds(result.actions) == [
        ("DropForeignKey", "shop.orders"),
        ("DropPrimaryKey", "shop.customers"),
        ("AddPrimaryKey", "shop.customers"),
        ("AddForeignKey", "shop.orders"),
    ]


def test_a_constraint_foreign_key_is_moved_around_the_change_of_the_key_it_references() -> None:
    before, after = pk("shop.customers", "id"), pk("shop.customers", "id", key_name="customers_pk")
    result = planned(
        [customers(before), orders(None, CUSTOMER_FK)], [customers(after), orders(None, CUSTOMER_FK)], True
    )
    assert result.actions == (
        DropForeignKey(name("shop.orders"), CUSTOMER_FK, True),
        DropPrimaryKey(name("shop.customers"), before, True),
        AddPrimaryKey(name("shop.customers"), after, True),
        AddForeignKey(name("shop.orders"), CUSTOMER_FK, True),
    )


def test_a_foreign_key_kept_in_a_property_depends_on_nothing_and_stays() -> None:
    before, after = pk("shop.customers", "id"), pk("shop.customers", "id", key_name="customers_pk")
    result = planned([customers(before), orders(None, CUSTOMER_FK)], [customers(after), orders(None, CUSTOMER_FK)])
    assert kinds(result.actions) == [("DropPrimaryKey", "shop.customers"), ("AddPrimaryKey", "shop.customers")]


def test_a_key_over_a_dropped_column_is_dropped_before_the_column() -> None:
    key = pk("shop.orders", "id", "line")
    current = replace(orders(key), properties=(("delta.columnMapping.mode", "name"),))
    desired = replace(
        table("shop.orders", col("id", "bigint", nullable=False), col("customer_id", "bigint")),
        properties=(("delta.columnMapping.mode", "name"),),
        primary_key=pk("shop.orders", "id"),
    )
    actions = planned([current], [desired]).actions
    order = [type(a) for a in actions]
    assert order.index(DropPrimaryKey) < order.index(DropColumns) < order.index(AddPrimaryKey)


def test_a_key_over_a_renamed_column_is_dropped_before_the_rename_and_added_after() -> None:
    current = replace(
        orders(pk("shop.orders", "id", key_name="orders_pk")), properties=(("delta.columnMapping.mode", "name"),)
    )
    desired = replace(
        table(
            "shop.orders",
            column("order_id", "bigint", nullable=False, renamed_from="id"),
            col("line", "int", nullable=False),
            col("customer_id", "bigint"),
        ),
        properties=(("delta.columnMapping.mode", "name"),),
        primary_key=pk("shop.orders", "order_id", key_name="orders_pk"),
    )
    order = [type(a) for a in planned([current], [desired]).actions]
    assert order == [DropPrimaryKey, RenameColumn, AddPrimaryKey]


def test_key_properties_are_never_planned_as_properties() -> None:
    # A key property written by hand that does not decode stays a plain property on the read side;
    # the spec cannot declare it (spec_values.py), and the key actions overwrite it.
    current = replace(orders(), properties=(("delta_sync.primary_key", "garbage"), ("owner", "a")))
    desired = replace(
        orders(pk("shop.orders", "id")),
        properties=(("delta_sync.primary_key", "x"), ("Delta_Sync.Foreign_Key.f", "y"), ("owner", "b")),
        removed_properties=("delta_sync.primary_key",),
    )
    actions = planned([current], [desired]).actions
    assert [type(a) for a in actions] == [SetProperties, AddPrimaryKey]
    assert isinstance(actions[0], SetProperties)
    assert [c.key for c in actions[0].changes] == ["owner"]
    assert not any(isinstance(a, UnsetProperties) for a in actions)


# --- SQL --------------------------------------------------------------------------------------------


def test_property_mode_sql_sets_and_unsets_the_key_property() -> None:
    before, after = pk("shop.orders", "id"), pk("shop.orders", "id", "line")
    result = planned([orders(before, CUSTOMER_FK)], [orders(after)])
    assert sql(result) == [
        "ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS "
        "('delta_sync.foreign_key.fk_shop_orders__customer_id__shop_customers')",
        "ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.primary_key')",
        "ALTER TABLE `shop`.`orders` SET TBLPROPERTIES "
        """('delta_sync.primary_key' = '{"name":"pk_shop_orders__id_line","columns":["id","line"]}')""",
    ]


def test_property_values_are_quoted_as_sql_strings() -> None:
    odd = PrimaryKey("pk_odd", ("it's", "back\\slash"))
    (statement,) = ddl.to_sql(AddPrimaryKey(name("shop.orders"), odd))
    encoded = keys.encode_primary_key(odd)
    assert statement == (
        "ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta_sync.primary_key' = "
        + "'"
        + encoded.replace("\\", "\\\\").replace("'", "\\'")
        + "')"
    )


def constraint_plan() -> Plan:
    """Every key statement of the constraint mode: create with keys, change a key, move a foreign key."""
    lines = keyed(
        table("shop.lines", col("order_id", "bigint", nullable=False), col("n", "int", nullable=False)),
        pk("shop.lines", "order_id", "n"),
        fk("shop.lines", ("order_id",), "shop.orders", ("id",)),
        rows=False,
    )
    current = [customers(pk("shop.customers", "id")), orders(pk("shop.orders", "id"), CUSTOMER_FK)]
    desired = [customers(pk("shop.customers", "id", "region")), orders(pk("shop.orders", "id")), lines]
    return planned(current, desired, constraints=True)


def constraint_sql() -> str:
    return "".join(f"{statement};\n" for statement in sql(constraint_plan()))


def test_constraint_mode_sql_matches_its_golden_file() -> None:
    # tests/spark/test_key_ddl.py parses every statement of this file with Spark's parser.
    assert constraint_sql() == GOLDEN.read_text(encoding="utf-8")


def test_constraint_mode_writes_the_property_too_after_the_constraint() -> None:
    key = pk("shop.orders", "id")
    add = ddl.to_sql(AddPrimaryKey(name("shop.orders"), key, as_constraint=True))
    assert add == (
        "ALTER TABLE `shop`.`orders` ADD CONSTRAINT pk_shop_orders__id PRIMARY KEY (`id`)",
        "ALTER TABLE `shop`.`orders` SET TBLPROPERTIES "
        """('delta_sync.primary_key' = '{"name":"pk_shop_orders__id","columns":["id"]}')""",
    )
    drop = ddl.to_sql(DropForeignKey(name("shop.orders"), CUSTOMER_FK, as_constraint=True))
    assert drop == (
        f"ALTER TABLE `shop`.`orders` DROP CONSTRAINT IF EXISTS {CUSTOMER_FK.name} RESTRICT",
        f"ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.foreign_key.{CUSTOMER_FK.name}')",
    )


def test_an_odd_constraint_name_is_backquoted() -> None:
    (statement, _property) = ddl.to_sql(AddPrimaryKey(name("shop.orders"), PrimaryKey("2nd key", ("id",)), True))
    assert statement == "ALTER TABLE `shop`.`orders` ADD CONSTRAINT `2nd key` PRIMARY KEY (`id`)"


# --- hazards ----------------------------------------------------------------------------------------


def review(current: list[Table], desired: list[Table]) -> tuple[Plan, CatalogState]:
    have, want = states(current, desired)
    return plan(have, want), have


def test_adding_keys_to_a_table_with_rows_is_data_dependent_and_probed_under_the_key_name() -> None:
    key = pk("shop.orders", "id")
    the_plan, current = review([customers(), orders()], [customers(), orders(key, CUSTOMER_FK)])
    assert keys_to_probe(the_plan, current) == [(name("shop.orders"), key), (name("shop.orders"), CUSTOMER_FK)]
    found = assess(the_plan, current, [], ()).findings
    assert [(f.hazard, f.check) for f in found] == [
        (Hazard.DATA_DEPENDENT, key.name),
        (Hazard.DATA_DEPENDENT, CUSTOMER_FK.name),
    ]
    assert found[0].reason == (
        "primary key pk_shop_orders__id (id) fails if existing rows repeat a key value or leave a key part NULL"
    )
    assert found[1].reason == (
        f"foreign key {CUSTOMER_FK.name} (customer_id) -> shop.customers (id) fails if existing rows reference "
        "no parent row"
    )


def test_keys_on_empty_or_new_tables_and_dropped_keys_are_not_probed() -> None:
    key = pk("shop.orders", "id")
    the_plan, current = review([orders(rows=False), customers(key)], [orders(key, CUSTOMER_FK), customers()])
    assert keys_to_probe(the_plan, current) == []
    assert assess(the_plan, current, [], ()).findings == ()
    created, nothing = review([], [orders(key)])
    assert keys_to_probe(created, nothing) == []


def test_violations_found_by_the_probe_block_the_key() -> None:
    key = pk("shop.orders", "id")
    the_plan, current = review([customers(), orders()], [customers(), orders(key, CUSTOMER_FK)])
    probes = [
        ProbeResult(name("shop.orders"), key.name, 3),
        ProbeResult(name("shop.orders"), CUSTOMER_FK.name, 1),
    ]
    blocks = assess(the_plan, current, probes, ()).blocks
    assert [b.why for b in blocks] == [
        "will fail: 3 key values repeat or are NULL in `pk_shop_orders__id`",
        f"will fail: 1 row has no parent row in shop.customers for `{CUSTOMER_FK.name}`",
    ]
    assert all("delta-sync sql" in b.unblock and b.unblock.endswith("or change the key") for b in blocks)
    clean = [replace(p, violations=0) for p in probes]
    assert assess(the_plan, current, clean, ()).blocks == ()


# --- rendering --------------------------------------------------------------------------------------


def text(the_plan: Plan) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(render.render_text(the_plan))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def test_text_says_how_each_new_key_is_kept() -> None:
    desired = [customers(pk("shop.customers", "id")), orders(None, CUSTOMER_FK)]
    kept = text(planned([customers(), orders()], desired))
    assert "+ primary key pk_shop_customers__id (id)  -- kept in table property delta_sync.primary_key: " in kept
    assert "open-source Delta refuses key constraints" in kept
    assert (
        f"+ foreign key {CUSTOMER_FK.name} (customer_id) -> shop.customers (id)  -- kept in table property "
        f"delta_sync.foreign_key.{CUSTOMER_FK.name}"
    ) in kept
    constraint = text(planned([customers(), orders()], desired, constraints=True))
    assert "+ primary key pk_shop_customers__id (id)  -- as an informational constraint" in constraint


def test_text_shows_a_changed_key_on_one_line_and_a_dropped_one() -> None:
    before, after = pk("shop.orders", "id", key_name="pk_x"), pk("shop.orders", "id", "line", key_name="pk_x")
    changed = text(planned([orders(before, CUSTOMER_FK)], [orders(after)]))
    assert "~ primary key pk_x: (id) -> (id, line)" in changed
    assert "primary key pk_x (id)" not in changed
    assert f"- foreign key {CUSTOMER_FK.name} (customer_id) -> shop.customers (id)" in changed
    moved = replace(CUSTOMER_FK, columns=("line",))
    assert (
        f"~ foreign key {CUSTOMER_FK.name}: (customer_id) -> shop.customers (id), now (line) -> shop.customers (id)"
        in (text(planned([orders(None, CUSTOMER_FK)], [orders(None, moved)])))
    )
    renamed = text(planned([orders(before)], [orders(replace(after, name="pk_y"))]))
    assert "~ primary key pk_x -> pk_y: (id) -> (id, line)" in renamed


def test_text_explains_a_foreign_key_moved_around_its_parent_key() -> None:
    before, after = pk("shop.customers", "id"), pk("shop.customers", "id", key_name="customers_pk")
    moved = planned([customers(before), orders(None, CUSTOMER_FK)], [customers(after), orders(None, CUSTOMER_FK)], True)
    assert (
        f"~ foreign key {CUSTOMER_FK.name}: dropped and re-added unchanged around the change of shop.customers's "
        "primary key"
    ) in text(moved)


def test_markdown_and_json_show_keys() -> None:
    origin = Origin("specs/shop/orders.yaml", 7)
    key = replace(pk("shop.orders", "id"), origin=origin)
    the_plan = planned([orders(), customers()], [orders(key, CUSTOMER_FK), customers()])
    markdown = render_markdown(the_plan)
    section = markdown.split("<details><summary><code>shop.orders</code>", 1)[1].split("<details><summary>SQL")[0]
    assert "\n+ primary key pk_shop_orders__id (id)  -- kept in table property" in section
    documents = [action_json(a) for a in the_plan.actions]
    assert documents[0] == {
        "kind": "AddPrimaryKey",
        "table": "shop.orders",
        "key": "pk_shop_orders__id",
        "columns": ["id"],
        "property": "delta_sync.primary_key",
        "as_constraint": False,
        "origin": {"file": "specs/shop/orders.yaml", "line": 7},
        "sql": list(ddl.to_sql(the_plan.actions[0])),
    }
    assert documents[1]["references"] == {"table": "shop.customers", "columns": ["id"]}
    assert documents[1]["property"] == f"delta_sync.foreign_key.{CUSTOMER_FK.name}"
    json.dumps(documents)


@pytest.mark.parametrize("constraints", [False, True])
def test_statements_of_every_key_action_are_in_plan_order(constraints: bool) -> None:
    the_plan = planned(
        [customers(pk("shop.customers", "id"))], [customers(pk("shop.customers", "region"))], constraints
    )
    statements = sql(the_plan)
    assert len(statements) == (4 if constraints else 2)
    assert "UNSET" in statements[1 if constraints else 0]
    assert "SET TBLPROPERTIES" in statements[-1]
