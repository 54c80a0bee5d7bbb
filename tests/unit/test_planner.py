from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping

import pytest

from delta_sync.actions import (
    Action,
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    DropCheck,
    Phase,
    Plan,
    PropertyChange,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Summary,
    Unsupported,
    sort_key,
)
from delta_sync.model import CatalogState, Check, Column, Origin, Table
from delta_sync.planner import diff_table, plan, property_value_key
from tests.unit.builders import col, name, schema, state, table

ORDERS_FILE = Origin("specs/shop/orders.yaml", 1)


ORDERS_COLUMNS = (
    col("order_id", "bigint", nullable=False, comment="Surrogate key"),
    col("customer_id", "bigint", nullable=False, comment="References shop.customers"),
    col("status", "string", nullable=False),
    col("total_amount", "decimal(18,2)", nullable=False),
    col("shipping_address", "struct<street:string,city:string>"),
    col("order_date", "date", nullable=False),
)
ORDERS_CHECKS = {
    "total_non_negative": "total_amount >= 0",
    "known_status": "status IN ('new', 'paid', 'shipped', 'cancelled')",
}
ORDERS_PROPERTIES = {"delta.appendOnly": "false", "delta.logRetentionDuration": "interval 30 days"}


def orders(
    *,
    columns: tuple[Column, ...] = ORDERS_COLUMNS,
    checks: Mapping[str, str] = ORDERS_CHECKS,
    properties: Mapping[str, str] = ORDERS_PROPERTIES,
    origin: Origin | None = ORDERS_FILE,
) -> Table:
    """shop.orders as the spec declares it (specs/shop/orders.yaml)."""
    return table(
        "shop.orders",
        *columns,
        comment="Orders placed in the web shop",
        checks=checks,
        partitioned_by=["order_date"],
        properties=properties,
        origin=origin,
    )


def orders_as_delta_reports() -> Table:
    """The same table as read back from Delta after apply: re-tokenised checks, features, case."""
    return orders(
        checks={
            "known_status": "status IN ( 'new' , 'paid' , 'shipped' , 'cancelled' )",
            "total_non_negative": "total_amount >= 0",
        },
        properties={
            "delta.appendOnly": "FALSE",
            "delta.logRetentionDuration": "interval 30 days",
            "delta.feature.appendOnly": "supported",
            "delta.feature.checkConstraints": "supported",
            "delta.feature.invariants": "supported",
            "delta.minReaderVersion": "1",
            "delta.minWriterVersion": "3",
        },
        origin=None,
    )


CUSTOMERS = table(
    "shop.customers",
    col("customer_id", "bigint", nullable=False, comment="Surrogate key"),
    col("email", "string", nullable=False),
    col("country_code", "char(2)", comment="ISO 3166-1 alpha-2"),
    comment="People who have an account in the web shop",
    checks={"email_has_at": "email LIKE '%@%'"},
    properties={"delta.enableChangeDataFeed": "true", "owner.team": "crm"},
)

N = name("shop.orders")


def diff(have: Table, want: Table) -> tuple[Action, ...]:
    """The planned actions for one existing table, in execution order."""
    return plan(state(have), state(want)).actions


# --- no changes ---------------------------------------------------------------------------------


def test_plan_of_a_state_against_itself_is_empty() -> None:
    s = state(orders(), CUSTOMERS)
    result = plan(s, s)
    assert result == Plan(actions=(), tables=(name("shop.customers"), N))
    assert result.is_empty
    assert result.summary == Summary(create=0, change=0, unchanged=2, blocked=0)


def test_no_changes_against_what_delta_reports_after_apply() -> None:
    assert diff(orders_as_delta_reports(), orders()) == ()


def test_diff_table_of_identical_tables_is_empty() -> None:
    assert diff_table(orders(), orders()) == []


# --- create -------------------------------------------------------------------------------------


def test_create_table_in_missing_schema() -> None:
    want = orders()
    result = plan(state(schemas=()), state(want))
    assert result.actions == (
        CreateSchema(schema("shop")),
        CreateTable(want),
        AddCheck(N, Check("known_status", "status IN ('new', 'paid', 'shipped', 'cancelled')")),
        AddCheck(N, Check("total_non_negative", "total_amount >= 0")),
    )
    assert result.summary == Summary(create=1, change=0, unchanged=0, blocked=0)


def test_create_table_in_existing_schema_has_no_create_schema() -> None:
    want = orders(checks={})
    result = plan(state(schemas=["shop"]), state(want))
    assert result.actions == (CreateTable(want),)


def test_one_create_schema_per_missing_schema() -> None:
    a = table("shop.a", col("id"))
    b = table("shop.b", col("id"))
    c = table("sales.c", col("id"))
    d = table("kept.d", col("id"))
    result = plan(state(schemas=["kept"]), state(d, c, b, a))
    assert result.actions == (
        CreateSchema(schema("sales")),
        CreateSchema(schema("shop")),
        CreateTable(d),
        CreateTable(c),
        CreateTable(a),
        CreateTable(b),
    )
    assert result.summary == Summary(create=4, change=0, unchanged=0, blocked=0)


def test_create_schema_keeps_the_catalog() -> None:
    t = table("cat.shop.t", col("id"))
    assert plan(state(schemas=()), state(t)).actions[0] == CreateSchema(schema("cat.shop"))


def test_existing_table_in_existing_schema_with_other_table_missing() -> None:
    missing = table("shop.new_one", col("id"))
    result = plan(state(CUSTOMERS), state(CUSTOMERS, missing))
    assert result.actions == (CreateTable(missing),)
    assert result.summary == Summary(create=1, change=0, unchanged=1, blocked=0)


# --- columns ------------------------------------------------------------------------------------


def test_added_nullable_columns_make_one_add_columns_in_spec_order() -> None:
    have = orders()
    z = col("z_note", "string", comment="free text")
    a = col("a_flag", "boolean")
    want = orders(columns=(*have.columns, z, a))
    assert diff(have, want) == (AddColumns(N, (z, a)),)


def test_new_not_null_column_is_unsupported_and_other_additions_still_planned() -> None:
    have = orders()
    origin = Origin("specs/shop/orders.yaml", 30)
    strict = col("Priority", "int", nullable=False, origin=origin)
    loose = col("note", "string")
    want = orders(columns=(*have.columns, strict, loose))
    assert diff(have, want) == (
        Unsupported(
            N,
            "priority",
            "new column `Priority` is NOT NULL, and Delta cannot add a NOT NULL column to an existing table",
            "add it as nullable (nullable: true), backfill it with `delta-sync sql`, then declare it "
            "NOT NULL in a later change",
            origin,
        ),
        AddColumns(N, (loose,)),
    )


def test_type_change_is_unsupported() -> None:
    have = orders()
    cols = tuple(col("status", "int", nullable=False) if c.name == "status" else c for c in have.columns)
    assert diff(have, orders(columns=cols)) == (
        Unsupported(
            N,
            "status",
            "column `status` changes type string -> int; type changes are not supported yet",
            "keep `type: string` in the spec, or rewrite the table by hand",
        ),
    )


@pytest.mark.parametrize(
    ("before", "after", "verb", "keep"),
    [
        (False, True, "NOT NULL -> nullable", "false"),
        (True, False, "nullable -> NOT NULL", "true"),
    ],
)
def test_nullability_change_is_unsupported(before: bool, after: bool, verb: str, keep: str) -> None:
    have = table("s.t", col("id", "bigint", nullable=before))
    want = table("s.t", col("id", "bigint", nullable=after))
    assert diff(have, want) == (
        Unsupported(
            name("s.t"),
            "id",
            f"column `id` changes {verb}; nullability changes are not supported yet",
            f"keep `nullable: {keep}` in the spec for now",
        ),
    )


def test_type_and_nullability_change_give_two_blocked_items_type_first() -> None:
    have = table("s.t", col("id", "int", nullable=False))
    want = table("s.t", col("id", "bigint", nullable=True))
    result = diff(have, want)
    assert [type(a) for a in result] == [Unsupported, Unsupported]
    assert [a.reason for a in result if isinstance(a, Unsupported)] == [
        "column `id` changes type int -> bigint; type changes are not supported yet",
        "column `id` changes NOT NULL -> nullable; nullability changes are not supported yet",
    ]


def test_column_in_table_but_not_in_spec_is_unsupported() -> None:
    have = table("s.t", col("id"), col("Legacy_Col", "int"))
    want = table("s.t", col("id"), origin=Origin("specs/t.yaml", 1))
    assert diff(have, want) == (
        Unsupported(
            name("s.t"),
            "legacy_col",
            "column `Legacy_Col` exists in the table but not in the spec; delta-sync does not drop "
            "columns yet",
            "add `Legacy_Col` to the spec, or drop it by hand with `delta-sync sql`",
            Origin("specs/t.yaml", 1),
        ),
    )


def test_column_names_match_case_insensitively() -> None:
    have = table("s.t", col("CustomerId", "bigint"))
    want = table("s.t", col("customerid", "bigint"))
    assert diff(have, want) == ()


def test_column_order_is_not_compared() -> None:
    have = table("s.t", col("a"), col("b"))
    want = table("s.t", col("b"), col("a"))
    assert diff(have, want) == ()


@pytest.mark.parametrize(
    ("before", "after"),
    [("Surrogate key", "Primary key"), ("Surrogate key", None), (None, "Surrogate key")],
)
def test_column_comment_change(before: str | None, after: str | None) -> None:
    origin = Origin("specs/t.yaml", 4)
    have = table("s.t", col("Order_Id", "bigint", comment=before))
    want = table("s.t", col("order_id", "bigint", comment=after, origin=origin))
    # The column is named as the table spells it.
    assert diff(have, want) == (SetColumnComment(name("s.t"), "Order_Id", before, after, origin),)


@pytest.mark.parametrize(
    ("before", "after"),
    [("Old", "New"), ("Orders", None), (None, "Orders"), ("a", "A")],
)
def test_table_comment_change(before: str | None, after: str | None) -> None:
    have = table("s.t", col("id"), comment=before)
    want = table("s.t", col("id"), comment=after, origin=ORDERS_FILE)
    assert diff(have, want) == (SetTableComment(name("s.t"), before, after, ORDERS_FILE),)


# --- properties ---------------------------------------------------------------------------------


def props_diff(have: dict[str, str], want: dict[str, str]) -> tuple[Action, ...]:
    return diff(table("s.t", col("id"), properties=have), table("s.t", col("id"), properties=want))


def test_undeclared_current_properties_are_ignored() -> None:
    have = {
        "delta.feature.checkConstraints": "supported",
        "delta.minWriterVersion": "7",
        "delta.enableDeletionVectors": "true",
        "owner.team": "crm",
    }
    assert props_diff(have, {"owner.team": "crm"}) == ()
    assert props_diff(have, {}) == ()


def test_delta_keys_compare_case_insensitively() -> None:
    assert props_diff({"delta.appendOnly": "true"}, {"delta.appendonly": "true"}) == ()
    assert props_diff({"delta.appendOnly": "true"}, {"DELTA.APPENDONLY": "true"}) == ()
    assert (
        props_diff(
            {"delta.feature.checkConstraints": "supported"}, {"delta.feature.checkconstraints": "supported"}
        )
        == ()
    )


@pytest.mark.parametrize(("have", "want"), [("TRUE", "true"), ("true", "True"), ("False", "FALSE")])
def test_delta_boolean_values_compare_case_insensitively(have: str, want: str) -> None:
    assert props_diff({"delta.enableChangeDataFeed": have}, {"delta.enableChangeDataFeed": want}) == ()


def test_delta_non_boolean_values_are_case_sensitive() -> None:
    result = props_diff(
        {"delta.logRetentionDuration": "INTERVAL 30 DAYS"}, {"delta.logRetentionDuration": "interval 30 days"}
    )
    assert result == (
        SetProperties(
            name("s.t"),
            (PropertyChange("delta.logRetentionDuration", "INTERVAL 30 DAYS", "interval 30 days"),),
        ),
    )


def test_non_delta_keys_and_values_are_case_sensitive() -> None:
    assert props_diff({"owner.team": "crm"}, {"Owner.Team": "crm"}) == (
        SetProperties(name("s.t"), (PropertyChange("Owner.Team", None, "crm"),)),
    )
    assert props_diff({"owner.flag": "TRUE"}, {"owner.flag": "true"}) == (
        SetProperties(name("s.t"), (PropertyChange("owner.flag", "TRUE", "true"),)),
    )


def test_all_property_changes_in_one_set_properties_with_before_values() -> None:
    have = {"delta.appendOnly": "true", "owner.team": "crm", "delta.enableChangeDataFeed": "TRUE"}
    want = {
        "delta.appendonly": "false",
        "delta.enableChangeDataFeed": "true",
        "owner.team": "billing",
        "zz.new": "1",
    }
    origin = Origin("specs/t.yaml", 1)
    result = diff(
        table("s.t", col("id"), properties=have),
        table("s.t", col("id"), properties=want, origin=origin),
    )
    assert result == (
        SetProperties(
            name("s.t"),
            (
                PropertyChange("delta.appendonly", "true", "false"),
                PropertyChange("owner.team", "crm", "billing"),
                PropertyChange("zz.new", None, "1"),
            ),
            origin,
        ),
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("delta.appendOnly", "TRUE", "true"),
        ("DELTA.x", "False", "false"),
        ("delta.logRetentionDuration", "INTERVAL 1 DAY", "INTERVAL 1 DAY"),
        ("owner.flag", "TRUE", "TRUE"),
        ("deltax.flag", "TRUE", "TRUE"),
    ],
)
def test_property_value_key(key: str, value: str, expected: str) -> None:
    assert property_value_key(key, value) == expected


# --- checks -------------------------------------------------------------------------------------


def checks_diff(have: dict[str, str], want: dict[str, str]) -> tuple[Action, ...]:
    return diff(table("s.t", col("a"), checks=have), table("s.t", col("a"), checks=want))


T = name("s.t")


def test_added_check() -> None:
    assert checks_diff({}, {"a_set": "a IS NOT NULL"}) == (AddCheck(T, Check("a_set", "a IS NOT NULL")),)


def test_undeclared_check_is_dropped() -> None:
    assert checks_diff({"by_hand": "a > 0", "kept": "a < 9"}, {"kept": "a < 9"}) == (
        DropCheck(T, Check("by_hand", "a > 0")),
    )


def test_semantically_different_check_is_replaced() -> None:
    old = Check("c1", "a = 'z'")
    new = Check("c1", "a = 'Z'")
    assert checks_diff({"c1": "a = 'z'"}, {"c1": "a = 'Z'"}) == (
        DropCheck(T, old),
        AddCheck(T, new, replaces=old),
    )


@pytest.mark.parametrize(
    ("stored", "written"),
    [
        ("concat ( a , 'x' ) != 'yx' AND id >= 0", "concat(a, 'x') != 'yx' AND id>=0"),
        ("nested . arr [ 0 ] < id", "nested.arr[0] < id"),
        ("A IS NOT NULL", "a is not null"),
        ("a >= - 1", "a>=-1"),
    ],
)
def test_check_not_replaced_for_spacing_or_case(stored: str, written: str) -> None:
    assert checks_diff({"c1": stored}, {"c1": written}) == ()


def test_checks_sorted_by_name_within_phase() -> None:
    result = checks_diff(
        {"zeta": "a > 0", "alpha": "a > 1", "mid": "a > 2"},
        {"mid": "a > 3", "b_new": "a > 4", "a_new": "a > 5"},
    )
    assert result == (
        DropCheck(T, Check("alpha", "a > 1")),
        DropCheck(T, Check("mid", "a > 2")),
        DropCheck(T, Check("zeta", "a > 0")),
        AddCheck(T, Check("a_new", "a > 5")),
        AddCheck(T, Check("b_new", "a > 4")),
        AddCheck(T, Check("mid", "a > 3"), replaces=Check("mid", "a > 2")),
    )


# --- partitioning -------------------------------------------------------------------------------


def test_partitioning_change_is_unsupported() -> None:
    have = table("s.t", col("d", "date"), col("r"), partitioned_by=["d"])
    want = table("s.t", col("d", "date"), col("r"), partitioned_by=["d", "r"], origin=ORDERS_FILE)
    assert diff(have, want) == (
        Unsupported(
            T,
            "partitioned_by",
            "partitioning changes (d) -> (d, r); Delta cannot repartition a table in place",
            "rewrite the table by hand (CREATE OR REPLACE TABLE ... PARTITIONED BY ... AS SELECT), "
            "or keep partitioned_by: [d]",
            ORDERS_FILE,
        ),
    )


def test_partitioning_added_to_unpartitioned_table() -> None:
    have = table("s.t", col("d", "date"))
    want = table("s.t", col("d", "date"), partitioned_by=["d"])
    (only,) = diff(have, want)
    assert isinstance(only, Unsupported)
    assert only.reason == "partitioning changes (none) -> (d); Delta cannot repartition a table in place"
    assert only.remedy.endswith("or keep partitioned_by: []")


def test_partitioning_order_matters_but_case_does_not() -> None:
    have = table("s.t", col("a"), col("b"), partitioned_by=["A", "b"])
    assert diff(have, table("s.t", col("a"), col("b"), partitioned_by=["a", "B"])) == ()
    assert len(diff(have, table("s.t", col("a"), col("b"), partitioned_by=["b", "a"]))) == 1


# --- order and determinism ----------------------------------------------------------------------


def everything_changes() -> tuple[CatalogState, CatalogState]:
    have = table(
        "shop.orders",
        col("id", "bigint", nullable=False, comment="old"),
        col("status", "string"),
        col("gone", "int"),
        comment="old table",
        checks={"zz_by_hand": "id > 0", "pos": "id >= 0", "same": "status IS NOT NULL"},
        properties={"delta.appendOnly": "true", "owner.team": "crm", "delta.feature.invariants": "supported"},
    )
    want = table(
        "shop.orders",
        col("id", "bigint", nullable=False, comment="new"),
        col("status", "int"),
        col("added_b", "string"),
        col("added_a", "date"),
        comment="new table",
        checks={"same": "status is not null", "pos": "id > 0", "a_new": "added_a IS NOT NULL"},
        properties={"delta.appendOnly": "false", "owner.team": "billing"},
    )
    created = table("sales.invoices", col("id", "bigint"), checks={"b": "id > 1", "a": "id > 0"})
    unchanged = table("shop.customers", col("id", "bigint"))
    current = state(have, unchanged)
    desired = state(created, unchanged, want)
    return current, desired


def test_full_plan_order_schemas_first_then_tables_by_name_then_phase() -> None:
    current, desired = everything_changes()
    result = plan(current, desired)
    shop = name("shop.orders")
    sales = name("sales.invoices")
    assert [(type(a).__name__, str(getattr(a, "name", "")), sort_key(a)[3]) for a in result.actions] == [
        ("CreateSchema", "", ""),
        ("CreateTable", "sales.invoices", ""),
        ("AddCheck", "sales.invoices", "a"),
        ("AddCheck", "sales.invoices", "b"),
        ("Unsupported", "shop.orders", "gone"),
        ("Unsupported", "shop.orders", "status"),
        ("DropCheck", "shop.orders", "pos"),
        ("DropCheck", "shop.orders", "zz_by_hand"),
        ("AddColumns", "shop.orders", ""),
        ("SetProperties", "shop.orders", ""),
        ("SetTableComment", "shop.orders", ""),
        ("SetColumnComment", "shop.orders", "id"),
        ("AddCheck", "shop.orders", "a_new"),
        ("AddCheck", "shop.orders", "pos"),
    ]
    assert result.actions[0] == CreateSchema(schema("sales"))
    phases = [a.phase for a in result.actions_for(shop)]
    assert phases == sorted(phases)
    assert phases[0] == Phase.UNSUPPORTED
    assert result.actions_for(sales)[0] == CreateTable(desired.tables[sales])
    add_columns = next(a for a in result.actions if isinstance(a, AddColumns))
    assert [c.name for c in add_columns.columns] == ["added_b", "added_a"]
    assert result.tables == (sales, name("shop.customers"), shop)


def test_shuffled_inputs_give_identical_plans() -> None:
    current, desired = everything_changes()
    expected = plan(current, desired)
    rng = random.Random(1234)

    def shuffled(s: CatalogState) -> CatalogState:
        """Tables in another dict order; checks of existing tables in another order (a created
        table's checks are part of its CreateTable, so their order there is the input's)."""
        items = list(s.tables.items())
        rng.shuffle(items)
        tables = {}
        for key, t in items:
            checks = list(t.checks)
            if key in current.tables:
                rng.shuffle(checks)
            tables[key] = dataclasses.replace(t, checks=tuple(checks))
        return CatalogState(tables, frozenset(sorted(s.schemas, key=lambda _: rng.random())))

    seen_orders = set()
    for _ in range(30):
        shuffled_current, shuffled_desired = shuffled(current), shuffled(desired)
        seen_orders.add(tuple(shuffled_desired.tables))
        assert plan(shuffled_current, shuffled_desired) == expected
    assert len(seen_orders) > 1


def test_sort_key_puts_schemas_before_tables() -> None:
    assert sort_key(CreateSchema(schema("zzz"))) < sort_key(CreateTable(table("aaa.t", col("id"))))
    assert sort_key(AddCheck(T, Check("c", "a > 0"))) == (1, "s.t", Phase.ADD_CHECK, "c")
    assert sort_key(SetColumnComment(T, "MixedCase", None, "x")) == (
        1,
        "s.t",
        Phase.COLUMN_COMMENT,
        "mixedcase",
    )


def test_phase_order() -> None:
    assert list(Phase) == [
        Phase.CREATE_SCHEMA,
        Phase.UNSUPPORTED,
        Phase.CREATE_TABLE,
        Phase.DROP_CHECK,
        Phase.ADD_COLUMNS,
        Phase.SET_PROPERTIES,
        Phase.TABLE_COMMENT,
        Phase.COLUMN_COMMENT,
        Phase.ADD_CHECK,
    ]


def test_two_and_three_part_names_can_be_planned_together() -> None:
    a = table("shop.a", col("id"))
    b = table("cat.shop.b", col("id"))
    result = plan(state(schemas=()), state(a, b))
    assert [type(x).__name__ for x in result.actions] == [
        "CreateSchema",
        "CreateSchema",
        "CreateTable",
        "CreateTable",
    ]


# --- Plan helpers and summary -------------------------------------------------------------------


def test_summary_counts_and_text() -> None:
    current, desired = everything_changes()
    result = plan(current, desired)
    # The blocked table is counted once, as blocked, not also as a change.
    assert result.summary == Summary(create=1, change=0, unchanged=1, blocked=1)
    assert str(result.summary) == "1 to create, 0 to change, 1 unchanged, 1 blocked"
    assert len(result.blocked) == 2
    assert all(isinstance(a, Unsupported) for a in result.blocked)
    assert not result.is_empty


def test_summary_text_omits_blocked_when_zero() -> None:
    assert str(Summary(create=2, change=0, unchanged=3, blocked=0)) == "2 to create, 0 to change, 3 unchanged"


def test_blocked_only_table_counts_as_blocked_not_change() -> None:
    have = table("s.t", col("id", "int"))
    want = table("s.t", col("id", "bigint"))
    result = plan(state(have), state(want))
    assert result.summary == Summary(create=0, change=0, unchanged=0, blocked=1)


def test_create_schema_alone_is_not_a_table_change() -> None:
    result = Plan(actions=(CreateSchema(schema("x")),), tables=(T,))
    assert result.summary == Summary(create=0, change=0, unchanged=1, blocked=0)
    assert result.actions_for(T) == ()


def test_actions_for_filters_by_table() -> None:
    current, desired = everything_changes()
    result = plan(current, desired)
    assert result.actions_for(name("shop.customers")) == ()
    assert {str(a.name) for a in result.actions_for(N)} == {"shop.orders"}  # type: ignore[union-attr]
    assert len(result.actions_for(N)) == 10
