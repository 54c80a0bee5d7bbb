from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping

import pytest

from delta_sync.model.state import CatalogState, Check, Column, Identity, Origin, Table
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AlterColumnType,
    ClusterBy,
    Conversion,
    CreateSchema,
    CreateTable,
    DropCheck,
    DropColumns,
    DropNotNull,
    EnableFeature,
    MoveColumn,
    Notice,
    Place,
    Plan,
    PropertyChange,
    RewriteTable,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Summary,
    Unsupported,
    sort_key,
)
from delta_sync.planning.actions.phases import Phase
from delta_sync.planning.diff.conventions import property_value_key
from delta_sync.planning.diff.planner import diff_table, plan
from delta_sync.sql.types import parse_type
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
T = name("s.t")


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


@pytest.mark.parametrize("num_files", [None, 5])
def test_new_not_null_column_on_a_table_with_rows_is_unsupported_and_other_additions_still_planned(
    num_files: int | None,
) -> None:
    # num_files None: the row count is unknown, so the table is taken to hold rows.
    have = dataclasses.replace(orders(), num_files=num_files)
    origin = Origin("specs/shop/orders.yaml", 30)
    strict = col("Priority", "int", nullable=False, origin=origin)
    loose = col("note", "string")
    want = orders(columns=(*have.columns, strict, loose))
    assert diff(have, want) == (
        Unsupported(
            N,
            "priority",
            "new column `Priority` is NOT NULL, and the table already holds rows that would have no value for it",
            "give those rows a value with `backfill: <SQL expression>` on the column "
            "(e.g. backfill: \"'unknown'\"), or add it as nullable (nullable: true)",
            origin,
        ),
        AddColumns(N, (loose,)),
    )


def test_new_not_null_column_on_an_empty_table_is_added_nullable_and_enforced_by_a_check() -> None:
    have = dataclasses.replace(orders(), num_files=0)
    strict = col("Priority", "int", nullable=False, comment="1 is urgent")
    loose = col("note", "string")
    want = orders(columns=(*have.columns, strict, loose))
    assert diff(have, want) == (
        AddColumns(N, (col("Priority", "int", comment="1 is urgent"), loose)),
        AddCheck(N, Check("ds_nn_priority", "`Priority` IS NOT NULL")),
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [("string", "int"), ("bigint", "int"), ("int", "string"), ("decimal(18,2)", "decimal(18,3)")],
)
def test_type_change_delta_cannot_make_in_place_rewrites_the_table_with_a_cast(before: str, after: str) -> None:
    origin = Origin("specs/t.yaml", 3)
    have = table("s.t", col("id", "bigint"), col("status", before, nullable=False))
    want = table("s.t", col("id", "bigint"), col("status", after, nullable=False, origin=origin))
    # The rewrite makes every column nullable: the NOT NULL of `status` is carried as delta-sync's CHECK,
    # which is what the spec asks for, so nothing follows it.
    assert diff(have, want) == (
        RewriteTable(
            T,
            ("id", "status"),
            (Conversion("status", before, after, f"CAST(`status` AS {after})", origin),),
            partitioned_by=(),
            clustered_by=(),
            comment=None,
            properties=(),
            checks=(Check("ds_nn_status", "`status` IS NOT NULL"),),
            reasons=(f"`status` changes type {before} -> {after} (by CAST to {after}): Delta cannot do it in place",),
            origin=origin,
        ),
    )


CDF_AND_COLUMN_MAPPING = {"delta.enableChangeDataFeed": "true", "delta.columnMapping.mode": "name"}
NO_REWRITE_WITH_CDF = (
    "delta-sync cannot rewrite this table: it has change data feed and column mapping on, and Delta refuses "
    "REPLACE TABLE ... AS SELECT on such a table (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION); turn change "
    'data feed off (delta.enableChangeDataFeed: "false") for the apply that rewrites it; '
)


@pytest.mark.parametrize(("before", "after"), [("string", "int"), ("bigint", "int")])
def test_type_change_on_a_table_delta_sync_cannot_rewrite_is_unsupported(before: str, after: str) -> None:
    origin = Origin("specs/t.yaml", 3)
    have = table("s.t", col("id", "bigint"), col("status", before), properties=CDF_AND_COLUMN_MAPPING)
    want = table("s.t", col("id", "bigint"), col("status", after, origin=origin))
    assert diff(have, want) == (
        Unsupported(
            T,
            "status",
            f"`status` changes type {before} -> {after}, which Delta cannot do in place",
            NO_REWRITE_WITH_CDF + f"keep `type: {before}`",
            origin,
        ),
    )


def test_widening_type_change_enables_type_widening_then_alters_the_type() -> None:
    origin = Origin("specs/t.yaml", 3)
    have = table("s.t", col("qty", "int", nullable=False))
    want = table("s.t", col("qty", "bigint", nullable=False, origin=origin))
    assert diff(have, want) == (
        EnableFeature(T, "delta.enableTypeWidening", "true", "widening `qty` to bigint needs type widening"),
        AlterColumnType(T, "qty", "int", "bigint", origin),
    )


def test_widening_on_a_table_with_type_widening_enabled_needs_no_feature() -> None:
    have = table("s.t", col("qty", "int"), properties={"delta.enableTypeWidening": "TRUE"})
    want = table("s.t", col("qty", "decimal(12,2)"))
    assert diff(have, want) == (AlterColumnType(T, "qty", "int", "decimal(12,2)"),)


@pytest.mark.parametrize(("before", "after"), [("char(2)", "string"), ("varchar(5)", "varchar(10)")])
def test_growing_a_sized_string_needs_no_feature(before: str, after: str) -> None:
    assert diff(table("s.t", col("c", before)), table("s.t", col("c", after))) == (
        AlterColumnType(T, "c", before, after),
    )


def test_not_null_to_nullable_drops_not_null() -> None:
    origin = Origin("specs/t.yaml", 2)
    have = table("s.t", col("id", "bigint", nullable=False))
    want = table("s.t", col("id", "bigint", nullable=True, origin=origin))
    assert diff(have, want) == (DropNotNull(T, "id", origin),)


def test_nullable_to_not_null_is_enforced_by_a_check() -> None:
    # Open-source Delta rejects SET NOT NULL; a CHECK enforces it instead.
    have = table("s.t", col("Order_Id", "bigint"))
    want = table("s.t", col("Order_Id", "bigint", nullable=False))
    assert diff(have, want) == (AddCheck(T, Check("ds_nn_order_id", "`Order_Id` IS NOT NULL"), first=True),)


def test_type_and_nullability_change_together_widen_then_drop_not_null() -> None:
    have = table("s.t", col("id", "int", nullable=False))
    want = table("s.t", col("id", "bigint", nullable=True))
    assert diff(have, want) == (
        EnableFeature(T, "delta.enableTypeWidening", "true", "widening `id` to bigint needs type widening"),
        AlterColumnType(T, "id", "int", "bigint"),
        DropNotNull(T, "id"),
    )


def test_refused_type_change_blocks_but_the_nullability_change_is_still_listed() -> None:
    have = table("s.t", col("id", "bigint", nullable=False), properties=CDF_AND_COLUMN_MAPPING)
    want = table("s.t", col("id", "int", nullable=True))
    result = plan(state(have), state(want))
    assert [type(a) for a in result.actions] == [Unsupported, DropNotNull]
    assert result.summary == Summary(create=0, change=0, unchanged=0, blocked=1)


def test_rewritten_type_change_then_drops_the_not_null_the_rewrite_carried_as_a_check() -> None:
    have = table("s.t", col("id", "bigint", nullable=False))
    want = table("s.t", col("id", "int", nullable=True))
    result = plan(state(have), state(want))
    not_null = Check("ds_nn_id", "`id` IS NOT NULL")
    assert [type(a) for a in result.actions] == [RewriteTable, DropCheck]
    rewrite = result.actions[0]
    assert isinstance(rewrite, RewriteTable)
    assert rewrite.conversions == (Conversion("id", "bigint", "int", "CAST(`id` AS int)"),)
    assert rewrite.checks == (not_null,)
    assert result.actions[1] == DropCheck(T, not_null)
    assert result.summary == Summary(create=0, change=1, unchanged=0, blocked=0)


def test_identity_column_changes_are_blocked_with_a_remedy() -> None:
    identity = dataclasses.replace(col("id", "bigint", nullable=False), identity=Identity())
    have = table("s.t", identity)
    for changed in (dataclasses.replace(identity, nullable=True), dataclasses.replace(identity, type="int")):
        (blocked,) = diff(have, table("s.t", changed))
        assert isinstance(blocked, Unsupported)
        assert blocked.remedy


def test_column_in_table_but_not_in_spec_is_dropped_with_column_mapping() -> None:
    have = table("s.t", col("id"), col("Legacy_Col", "int"))
    want = table("s.t", col("id"), origin=Origin("specs/t.yaml", 1))
    assert diff(have, want) == (
        EnableFeature(T, "delta.columnMapping.mode", "name", "dropping `Legacy_Col` needs column mapping"),
        DropColumns(T, (col("Legacy_Col", "int"),), origin=Origin("specs/t.yaml", 1)),
    )


def test_dropping_columns_on_a_table_with_column_mapping_needs_no_feature() -> None:
    have = table("s.t", col("id"), col("a"), col("b"), properties={"delta.columnMapping.mode": "name"})
    assert diff(have, table("s.t", col("id"))) == (DropColumns(T, (col("a"), col("b"))),)


def test_partition_column_missing_from_spec_is_unsupported() -> None:
    have = table("s.t", col("d", "date"), col("r"), partitioned_by=["d"])
    want = table("s.t", col("r"), partitioned_by=["d"])
    assert diff(have, want) == (
        Unsupported(
            T,
            "d",
            "`d` is a partition column, which Delta cannot drop",
            "keep `d` in the spec, or rewrite the table by hand without it",
        ),
    )


def test_column_names_match_case_insensitively() -> None:
    have = table("s.t", col("CustomerId", "bigint"))
    want = table("s.t", col("customerid", "bigint"))
    result = plan(state(have), state(want))
    # Nothing to do; the notice only points out the spelling.
    assert result.actions == (
        Notice(
            T,
            "customerid",
            "column `CustomerId` is spelled `customerid` in the spec; Spark names are case-insensitive, "
            "so nothing changes (Delta cannot change only the case of a name: keep the table's spelling, "
            "or rename through another name over two applies)",
        ),
    )
    assert result.is_empty
    assert result.summary == Summary(create=0, change=0, unchanged=1, blocked=0)


def test_the_spec_order_is_the_tables_order() -> None:
    have = table("s.t", col("a"), col("b"))
    want = table("s.t", col("b"), col("a"))
    assert diff(have, want) == (MoveColumn(T, "a", Place("b")),)


def test_column_order_ignore_plans_no_move_and_names_the_table_once() -> None:
    have = table("s.t", col("a"), col("b"))
    want = table("s.t", col("b"), col("c"), col("a"))
    result = plan(state(have), dataclasses.replace(state(want), column_order=False))
    assert result.actions == (AddColumns(T, (col("c"),)),)
    assert result.unordered == (T,)
    assert plan(state(have), state(want)).unordered == ()


@pytest.mark.parametrize(
    ("before", "after"),
    [("Surrogate key", "Primary key"), ("Surrogate key", None), (None, "Surrogate key")],
)
def test_column_comment_change(before: str | None, after: str | None) -> None:
    origin = Origin("specs/t.yaml", 4)
    have = table("s.t", col("Order_Id", "bigint", comment=before))
    want = table("s.t", col("Order_Id", "bigint", comment=after, origin=origin))
    assert diff(have, want) == (SetColumnComment(T, "Order_Id", before, after, origin),)


def test_column_spelled_in_another_case_still_gets_its_changes() -> None:
    origin = Origin("specs/t.yaml", 4)
    have = table("s.t", col("Order_Id", "bigint", comment="old"))
    want = table("s.t", col("order_id", "bigint", comment="new", origin=origin))
    # Spark resolves column names case-insensitively, so the spec's spelling serves in the statement.
    assert diff(have, want) == (
        Notice(
            T,
            "order_id",
            "column `Order_Id` is spelled `order_id` in the spec; Spark names are case-insensitive, "
            "so nothing changes (Delta cannot change only the case of a name: keep the table's spelling, "
            "or rename through another name over two applies)",
            origin,
        ),
        SetColumnComment(T, "order_id", "old", "new", origin),
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [("Old", "New"), ("Orders", None), (None, "Orders"), ("a", "A")],
)
def test_table_comment_change(before: str | None, after: str | None) -> None:
    have = table("s.t", col("id"), comment=before)
    want = table("s.t", col("id"), comment=after, origin=ORDERS_FILE)
    assert diff(have, want) == (SetTableComment(name("s.t"), before, after, ORDERS_FILE),)


def test_table_comment_rides_in_the_property_change_so_it_costs_no_extra_commit() -> None:
    have = table("s.t", col("id"), comment="Old", properties={"a": "1"})
    want = table("s.t", col("id"), comment="New", properties={"a": "2"}, origin=ORDERS_FILE)
    changes = (PropertyChange("a", "1", "2"), PropertyChange("comment", "Old", "New"))
    assert diff(have, want) == (SetProperties(name("s.t"), changes, ORDERS_FILE),)
    assert ddl.to_sql(SetProperties(name("s.t"), changes)) == (
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('a' = '2', 'comment' = 'New')",
    )


def test_removing_the_table_comment_stays_its_own_statement() -> None:
    # SET TBLPROPERTIES cannot set a comment to none; COMMENT ON TABLE ... IS NULL can.
    have = table("s.t", col("id"), comment="Old", properties={"a": "1"})
    want = table("s.t", col("id"), properties={"a": "2"}, origin=ORDERS_FILE)
    assert diff(have, want) == (
        SetProperties(name("s.t"), (PropertyChange("a", "1", "2"),), ORDERS_FILE),
        SetTableComment(name("s.t"), "Old", None, ORDERS_FILE),
    )


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
        props_diff({"delta.feature.checkConstraints": "supported"}, {"delta.feature.checkconstraints": "supported"})
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


def test_added_check() -> None:
    assert checks_diff({}, {"a_set": "a IS NOT NULL"}) == (AddCheck(T, Check("a_set", "a IS NOT NULL"), first=True),)


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
    # New rules first (their ADD CONSTRAINT checks the rows before anything changed); a replaced
    # rule is dropped with the others and re-added last.
    assert result == (
        AddCheck(T, Check("a_new", "a > 5"), first=True),
        AddCheck(T, Check("b_new", "a > 4"), first=True),
        DropCheck(T, Check("alpha", "a > 1")),
        DropCheck(T, Check("mid", "a > 2")),
        DropCheck(T, Check("zeta", "a > 0")),
        AddCheck(T, Check("mid", "a > 3"), replaces=Check("mid", "a > 2")),
    )


# --- nested types -------------------------------------------------------------------------------

COLUMN_MAPPING_FOR_S = EnableFeature(
    T, "delta.columnMapping.mode", "name", "dropping fields of `s` needs column mapping"
)
S_ORIGIN = Origin("specs/t.yaml", 5)


def nested_diff(before: str, after: str, column: str = "s") -> tuple[Action, ...]:
    """The plan for one column of s.t changing type (canonical spellings) from `before` to `after`."""
    have = table("s.t", col("id", "bigint"), col(column, before))
    want = table("s.t", col("id", "bigint"), col(column, parse_type(after), origin=S_ORIGIN))
    return diff(have, want)


def sql(actions: tuple[Action, ...]) -> list[str]:
    return [statement for a in actions for statement in ddl.to_sql(a)]


def test_nullable_struct_field_is_added_inside_its_struct() -> None:
    result = nested_diff("struct<a:int>", "struct<a:int, b:string COMMENT 'the b', c:array<int>>")
    assert result == (AddColumns(T, (Column("b", "string", True, "the b"), Column("c", "array<int>")), ("s",)),)
    assert sql(result) == ["ALTER TABLE `s`.`t` ADD COLUMNS (`s`.`b` string COMMENT 'the b', `s`.`c` array<int>)"]


def test_struct_field_added_inside_an_array_element() -> None:
    result = nested_diff("array<struct<a:int>>", "array<struct<a:int, b:int>>", column="arr")
    assert result == (AddColumns(T, (Column("b", "int"),), ("arr", "element")),)
    assert sql(result) == ["ALTER TABLE `s`.`t` ADD COLUMNS (`arr`.`element`.`b` int)"]


def test_struct_field_dropped_with_column_mapping() -> None:
    result = nested_diff("struct<a:int,b:string NOT NULL,c:int>", "struct<a:int>")
    assert result == (
        COLUMN_MAPPING_FOR_S,
        DropColumns(T, (Column("b", "string"), Column("c", "int")), ("s",), S_ORIGIN),
    )
    assert sql(result) == [
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE `s`.`t` DROP COLUMNS (`s`.`b`, `s`.`c`)",
    ]


@pytest.mark.parametrize(
    ("before", "after", "comment_before", "comment_after", "literal"),
    [
        ("struct<a:int>", "struct<a:int COMMENT 'it\\'s a'>", None, "it's a", "'it\\'s a'"),
        ("struct<a:int COMMENT 'old'>", "struct<a:int COMMENT 'new'>", "old", "new", "'new'"),
        # Spark cannot remove a comment; an empty one reads back as none.
        ("struct<a:int COMMENT 'old'>", "struct<a:int>", "old", None, "''"),
    ],
)
def test_nested_field_comment(
    before: str, after: str, comment_before: str | None, comment_after: str | None, literal: str
) -> None:
    result = nested_diff(before, after)
    assert result == (SetColumnComment(T, "a", comment_before, comment_after, S_ORIGIN, ("s",)),)
    assert sql(result) == [f"ALTER TABLE `s`.`t` ALTER COLUMN `s`.`a` COMMENT {literal}"]


@pytest.mark.parametrize(
    ("column", "before", "after", "changed", "parent", "path"),
    [
        ("arr", "array<int>", "array<bigint>", "element", ("arr",), "`arr`.`element`"),
        ("m", "map<string,int>", "map<string,bigint>", "value", ("m",), "`m`.`value`"),
        ("m", "map<int,string>", "map<bigint,string>", "key", ("m",), "`m`.`key`"),
        ("s", "struct<a:int>", "struct<a:bigint>", "a", ("s",), "`s`.`a`"),
        (
            "m",
            "map<string,array<struct<`x y`:float>>>",
            "map<string,array<struct<`x y`:double>>>",
            "x y",
            ("m", "value", "element"),
            "`m`.`value`.`element`.`x y`",
        ),
    ],
)
def test_nested_widening(
    column: str, before: str, after: str, changed: str, parent: tuple[str, ...], path: str
) -> None:
    result = nested_diff(before, after, column=column)
    old, new = ("float", "double") if changed == "x y" else ("int", "bigint")
    dotted = ".".join((*parent, changed))
    assert result == (
        EnableFeature(T, "delta.enableTypeWidening", "true", f"widening `{dotted}` to {new} needs type widening"),
        AlterColumnType(T, changed, old, new, S_ORIGIN, parent),
    )
    assert sql(result)[1] == f"ALTER TABLE `s`.`t` ALTER COLUMN {path} TYPE {new}"


def test_growing_a_nested_sized_string_needs_no_feature() -> None:
    result = nested_diff("array<varchar(5)>", "array<string>", column="arr")
    assert result == (AlterColumnType(T, "element", "varchar(5)", "string", S_ORIGIN, ("arr",)),)


def test_nested_not_null_to_nullable_drops_not_null() -> None:
    result = nested_diff("struct<a:int NOT NULL,b:struct<c:int NOT NULL>>", "struct<a:int,b:struct<c:int>>")
    assert result == (
        DropNotNull(T, "a", S_ORIGIN, ("s",)),
        DropNotNull(T, "c", S_ORIGIN, ("s", "b")),
    )
    assert sql(result) == [
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`a` DROP NOT NULL",
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`b`.`c` DROP NOT NULL",
    ]


def test_every_kind_of_struct_change_at_once_in_phase_order() -> None:
    result = nested_diff(
        "struct<a:int NOT NULL,b:string,gone:int>",
        "struct<a:bigint, b:string COMMENT 'x', added:date>",
    )
    assert result == (
        COLUMN_MAPPING_FOR_S,
        EnableFeature(T, "delta.enableTypeWidening", "true", "widening `s.a` to bigint needs type widening"),
        DropColumns(T, (Column("gone", "int"),), ("s",), S_ORIGIN),
        AlterColumnType(T, "a", "int", "bigint", S_ORIGIN, ("s",)),
        DropNotNull(T, "a", S_ORIGIN, ("s",)),
        AddColumns(T, (Column("added", "date"),), ("s",)),
        SetColumnComment(T, "b", None, "x", S_ORIGIN, ("s",)),
    )


def test_nested_field_names_match_case_insensitively_and_their_order_is_the_specs() -> None:
    assert nested_diff("struct<A:int,b:int>", "struct<B:int,a:int>") == (
        MoveColumn(T, "a", Place("B"), S_ORIGIN, ("s",)),
    )


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [
        (
            "struct<a:int>",
            "struct<a:int,b:int NOT NULL>",
            "`s.b` is a new NOT NULL struct field, which Delta cannot add",
        ),
        ("struct<a:int>", "struct<a:int NOT NULL>", "`s.a` cannot become NOT NULL: Delta only loosens nested fields"),
        (
            "struct<t:struct<a:int>>",
            "struct<t:struct<a:int NOT NULL>>",
            "`s.t.a` cannot become NOT NULL: Delta only loosens nested fields",
        ),
        (
            "struct<a:int>",
            "array<int>",
            "`s` changes type struct<a:int> -> array<int>, which Delta cannot do in place",
        ),
        (
            "array<bigint>",
            "array<int>",
            "`s.element` changes type bigint -> int, which Delta cannot do in place",
        ),
        (
            "map<string,int>",
            "map<int,int>",
            "`s.key` changes type string -> int, which Delta cannot do in place",
        ),
        # One refused change refuses the column: the allowed widening of `a` is not planned either.
        (
            "struct<a:int,b:int>",
            "struct<a:bigint,b:int NOT NULL>",
            "`s.b` cannot become NOT NULL: Delta only loosens nested fields",
        ),
    ],
)
def test_refused_nested_change_blocks_the_column(before: str, after: str, reason: str) -> None:
    # Without `using:` a nested change is not rewritten: a CAST between nested types matches by position.
    assert nested_diff(before, after) == (
        Unsupported(
            T,
            "s",
            reason,
            f"keep `type: {before}`, or say how values convert with `using:` (a rewrite)",
            S_ORIGIN,
        ),
    )


def test_nested_widening_drops_and_re_adds_checks_on_the_column() -> None:
    have = table("s.t", col("s", "struct<a:int>"), checks={"a_pos": "s.a > 0", "other": "id > 0"})
    want = table("s.t", col("s", "struct<a:bigint>"), checks={"a_pos": "s.a > 0", "other": "id > 0"})
    a_pos = Check("a_pos", "s.a > 0")
    assert diff(have, want) == (
        EnableFeature(T, "delta.enableTypeWidening", "true", "widening `s.a` to bigint needs type widening"),
        DropCheck(T, a_pos),
        AlterColumnType(T, "a", "int", "bigint", None, ("s",)),
        AddCheck(T, a_pos, replaces=a_pos, moved_for=moved("s")),
    )


def test_reordered_struct_fields_leave_checks_alone() -> None:
    have = table("s.t", col("s", "struct<A:int,b:int>"), checks={"a_pos": "s.a > 0"})
    want = table("s.t", col("s", "struct<b:int,a:int>"), checks={"a_pos": "s.a > 0"})
    assert diff(have, want) == (MoveColumn(T, "a", Place("b"), None, ("s",)),)


def test_reordered_struct_fields_do_not_block_a_generated_column() -> None:
    generated = dataclasses.replace(col("g", "int"), generated="s.a + 1")
    have = table("s.t", col("s", "struct<a:int,b:int>"), generated)
    want = table("s.t", col("s", "struct<b:int,a:int>"), generated)
    assert diff(have, want) == (MoveColumn(T, "a", Place("b"), None, ("s",)),)


def test_nested_comment_and_addition_leave_checks_alone() -> None:
    have = table("s.t", col("s", "struct<a:int>"), checks={"a_pos": "s.a > 0"})
    want = table("s.t", col("s", "struct<a:int COMMENT 'x',b:int>"), checks={"a_pos": "s.a > 0"})
    assert diff(have, want) == (
        AddColumns(T, (Column("b", "int"),), ("s",)),
        SetColumnComment(T, "a", None, "x", None, ("s",)),
    )


# --- partitioning -------------------------------------------------------------------------------


def test_partitioning_change_rewrites_the_table() -> None:
    have = table("s.t", col("d", "date"), col("r"), partitioned_by=["d"])
    want = table("s.t", col("d", "date"), col("r"), partitioned_by=["d", "r"], origin=ORDERS_FILE)
    assert diff(have, want) == (
        RewriteTable(
            T,
            ("d", "r"),
            (),
            partitioned_by=("d", "r"),
            clustered_by=(),
            comment=None,
            properties=(),
            checks=(),
            reasons=(
                "the layout changes (partitioned by d) -> (partitioned by d, r): Delta cannot repartition a table "
                "in place",
            ),
            origin=ORDERS_FILE,
        ),
    )


def test_partitioning_change_on_a_table_delta_sync_cannot_rewrite_is_unsupported() -> None:
    have = table("s.t", col("d", "date"), col("r"), partitioned_by=["d"], properties=CDF_AND_COLUMN_MAPPING)
    want = table("s.t", col("d", "date"), col("r"), partitioned_by=["d", "r"], origin=ORDERS_FILE)
    assert diff(have, want) == (
        Unsupported(
            T,
            "partitioned_by",
            "partitioning changes (d) -> (d, r); Delta cannot repartition a table in place",
            NO_REWRITE_WITH_CDF + "keep partitioned_by: [d]",
            ORDERS_FILE,
        ),
    )


def test_partitioning_added_to_unpartitioned_table() -> None:
    have = table("s.t", col("d", "date"))
    want = table("s.t", col("d", "date"), partitioned_by=["d"])
    (only,) = diff(have, want)
    assert isinstance(only, RewriteTable)
    assert (only.partitioned_by, only.clustered_by, only.conversions) == (("d",), (), ())
    assert only.reasons == (
        "the layout changes (none) -> (partitioned by d): Delta cannot repartition a table in place",
    )


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
        col("qty", "int"),
        col("cust", "bigint"),
        col("note", "string", nullable=False),
        col("Region"),
        comment="old table",
        checks={"zz_by_hand": "id > 0", "pos": "id >= 0", "same": "status IS NOT NULL", "qty_pos": "qty > 0"},
        properties={"delta.appendOnly": "false", "owner.team": "crm", "delta.feature.invariants": "supported"},
    )
    want = table(
        "shop.orders",
        col("id", "bigint", nullable=False, comment="new"),
        col("status", "int"),  # not a widening: the table is rewritten first
        dataclasses.replace(col("customer_id", "bigint"), renamed_from="cust"),
        col("qty", "bigint"),  # widened: its check is dropped and re-added around it
        col("note", "string"),
        col("region"),  # another spelling: a notice
        col("added_b", "string"),
        col("added_a", "date"),
        col("flag", "boolean", nullable=False),  # refused: the table may hold rows
        comment="new table",
        checks={"same": "status is not null", "pos": "id > 0", "a_new": "added_a IS NOT NULL", "qty_pos": "qty > 0"},
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
        ("Unsupported", "shop.orders", "flag"),
        ("Notice", "shop.orders", "region"),
        # The rewrite restates only the CHECKs the spec keeps (and NOT NULLs as CHECKs): `pos`, which
        # changes, and `zz_by_hand`, which goes, are not dropped on their own.
        ("RewriteTable", "shop.orders", ""),
        ("EnableFeature", "shop.orders", "delta.columnMapping.mode"),
        ("EnableFeature", "shop.orders", "delta.enableTypeWidening"),
        # `note` becomes nullable: the rewrite carried its NOT NULL as a CHECK.
        ("DropCheck", "shop.orders", "ds_nn_note"),
        ("DropCheck", "shop.orders", "qty_pos"),
        ("RenameColumn", "shop.orders", "cust"),
        ("DropColumns", "shop.orders", ""),
        ("AlterColumnType", "shop.orders", "qty"),
        # `qty` follows `customer_id` in the spec; the table had it before `cust`: one move puts it there.
        ("MoveColumn", "shop.orders", "qty"),
        ("AddColumns", "shop.orders", ""),
        ("SetProperties", "shop.orders", ""),
        ("SetColumnComment", "shop.orders", "id"),
        ("AddCheck", "shop.orders", "a_new"),
        ("AddCheck", "shop.orders", "pos"),
        ("AddCheck", "shop.orders", "qty_pos"),
    ]
    assert result.actions[0] == CreateSchema(schema("sales"))
    phases = [a.phase for a in result.actions_for(shop)]
    assert phases == sorted(phases)
    assert phases[0] == Phase.UNSUPPORTED
    assert result.actions_for(sales)[0] == CreateTable(desired.tables[sales])
    add_columns = next(a for a in result.actions if isinstance(a, AddColumns))
    assert [c.name for c in add_columns.columns] == ["added_b", "added_a"]
    enable = next(a for a in result.actions if isinstance(a, EnableFeature))
    # Both the rename and the drop need column mapping; it is enabled once.
    assert enable.reason == "renaming `cust` needs column mapping"
    assert next(a for a in result.actions if isinstance(a, DropColumns)).columns == (col("gone", "int"),)
    qty_pos = Check("qty_pos", "qty > 0")
    assert AddCheck(shop, qty_pos, replaces=qty_pos, moved_for=moved("qty")) in result.actions
    rewrite = next(a for a in result.actions if isinstance(a, RewriteTable))
    assert rewrite.conversions == (Conversion("status", "string", "int", "CAST(`status` AS int)"),)
    assert [c.name for c in rewrite.checks] == ["ds_nn_id", "ds_nn_note", "qty_pos", "same"]
    # The new version of `pos` is added after the rewrite, not as the replacement of a check it dropped.
    assert AddCheck(shop, Check("pos", "id > 0")) in result.actions
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
    assert sort_key(AddCheck(T, Check("c", "a > 0"))) == (3, "s.t", Phase.ADD_CHECK, "c")
    assert sort_key(SetColumnComment(T, "MixedCase", None, "x")) == (
        3,
        "s.t",
        Phase.COLUMN_COMMENT,
        "mixedcase",
    )


def test_phase_order() -> None:
    assert list(Phase) == [
        Phase.CREATE_SCHEMA,
        Phase.UNSUPPORTED,
        # A dropped table has nothing else; a renamed one has the rest of its changes under the new name.
        Phase.DROP_TABLE,
        Phase.NOTICE,
        Phase.RENAME_TABLE,
        Phase.CREATE_TABLE,
        # A rewrite replaces data and metadata at once: the rest is planned against what it leaves.
        Phase.REWRITE,
        # A new rule over unchanged columns: its ADD CONSTRAINT checks the rows before anything changed.
        Phase.ADD_CHECK_FIRST,
        # Features before the changes that need them; dependent checks dropped before those changes.
        Phase.ENABLE_FEATURE,
        # Keys before any column change (a key's column may go), and back after everything.
        Phase.DROP_FOREIGN_KEY,
        Phase.DROP_PRIMARY_KEY,
        Phase.DROP_CHECK,
        Phase.CLUSTER_BY_EARLY,
        # Renames before drops before type changes before additions, so names never collide.
        Phase.RENAME_COLUMN,
        Phase.DROP_COLUMNS,
        Phase.ALTER_TYPE,
        Phase.DROP_NOT_NULL,
        # Kept columns move under their new names; then additions go straight to their place.
        Phase.MOVE_COLUMN,
        Phase.ADD_COLUMNS,
        # After the column exists, before the NOT NULL CHECK that needs its values.
        Phase.BACKFILL,
        Phase.SET_DEFAULT,
        Phase.SET_PROPERTIES,
        Phase.UNSET_PROPERTIES,
        Phase.CLUSTER_BY,
        Phase.TABLE_COMMENT,
        Phase.COLUMN_COMMENT,
        # Last: ADD CONSTRAINT scans the data, and may reference columns added above.
        Phase.ADD_CHECK,
        Phase.ADD_PRIMARY_KEY,
        Phase.ADD_FOREIGN_KEY,
        # A rollback drops a feature once its table is back as it was.
        Phase.DROP_FEATURE,
        # What the table's changes do to the views that read it, then the views (after every table).
        Phase.BREAKS_VIEW,
        Phase.CREATE_VIEW,
    ]
    assert [int(p) for p in Phase] == list(range(len(Phase)))


def test_cluster_by_phase_depends_on_early() -> None:
    assert ClusterBy(T, ("a",), (), early=True).phase == Phase.CLUSTER_BY_EARLY
    assert ClusterBy(T, (), ("a",)).phase == Phase.CLUSTER_BY


def test_sort_key_of_nested_actions_uses_the_path() -> None:
    assert sort_key(AlterColumnType(T, "element", "int", "bigint", parent=("Arr",))) == (
        3,
        "s.t",
        Phase.ALTER_TYPE,
        "arr.element",
    )
    assert sort_key(AddColumns(T, (col("f"),), ("S", "In"))) == (3, "s.t", Phase.ADD_COLUMNS, "s.in")
    assert sort_key(AddColumns(T, (col("f"),))) == (3, "s.t", Phase.ADD_COLUMNS, "")
    assert sort_key(DropNotNull(T, "F", parent=("s",)))[3] == "s.f"


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
    assert [a.subject for a in result.blocked] == ["flag"]
    assert all(isinstance(a, Unsupported) for a in result.blocked)
    assert not result.is_empty


def test_summary_text_omits_blocked_when_zero() -> None:
    assert str(Summary(create=2, change=0, unchanged=3, blocked=0)) == "2 to create, 0 to change, 3 unchanged"


def test_blocked_only_table_counts_as_blocked_not_change() -> None:
    have = table("s.t", col("id", "bigint"), properties=CDF_AND_COLUMN_MAPPING)
    want = table("s.t", col("id", "int"))
    result = plan(state(have), state(want))
    assert [type(a) for a in result.actions] == [Unsupported]
    assert result.summary == Summary(create=0, change=0, unchanged=0, blocked=1)


def test_rewritten_table_counts_as_change() -> None:
    have = table("s.t", col("id", "bigint"))
    want = table("s.t", col("id", "int"))
    result = plan(state(have), state(want))
    assert [type(a) for a in result.actions] == [RewriteTable]
    assert result.summary == Summary(create=0, change=1, unchanged=0, blocked=0)


def test_widened_table_counts_as_change() -> None:
    have = table("s.t", col("id", "int"))
    want = table("s.t", col("id", "bigint"))
    result = plan(state(have), state(want))
    assert result.summary == Summary(create=0, change=1, unchanged=0, blocked=0)


def test_notice_only_table_counts_as_unchanged_and_the_plan_is_empty() -> None:
    have = table("s.t", col("ID", "bigint"))
    result = plan(state(have), state(table("s.t", col("id", "bigint"))))
    assert [type(a) for a in result.actions] == [Notice]
    assert result.changes == ()
    assert result.is_empty
    assert result.summary == Summary(create=0, change=0, unchanged=1, blocked=0)


def test_create_schema_alone_is_not_a_table_change() -> None:
    result = Plan(actions=(CreateSchema(schema("x")),), tables=(T,))
    assert result.summary == Summary(create=0, change=0, unchanged=1, blocked=0)
    assert result.actions_for(T) == ()


def test_actions_for_filters_by_table() -> None:
    current, desired = everything_changes()
    result = plan(current, desired)
    assert result.actions_for(name("shop.customers")) == ()
    assert {str(a.name) for a in result.actions_for(N)} == {"shop.orders"}  # type: ignore[union-attr]
    assert len(result.actions_for(N)) == 17  # the table comment rides in SetProperties


def moved(column: str) -> str:
    """Why a rule over `column` is dropped and re-added unchanged, as the plan says it."""
    return (
        f"dropped and re-added unchanged around the change of `{column}`: Delta refuses to retype or drop "
        "a column that a CHECK reads"
    )
