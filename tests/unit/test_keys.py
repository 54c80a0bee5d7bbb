"""Key names, comparison, and keys kept in table properties."""

from __future__ import annotations

import pytest

from delta_sync.model import keys
from delta_sync.model.state import ForeignKey, PrimaryKey, TableName

ORDERS = TableName(None, "shop", "orders")


def test_default_names_follow_the_seed() -> None:
    assert keys.primary_key_name(ORDERS, ["order_id"]) == "pk_shop_orders__order_id"
    assert keys.primary_key_name(TableName("main", "shop", "orders"), ["a", "b"]) == "pk_main_shop_orders__a_b"
    parent = TableName(None, "shop", "customers")
    assert keys.foreign_key_name(ORDERS, ["customer_id"], parent) == "fk_shop_orders__customer_id__shop_customers"


@pytest.mark.parametrize("column", ["Order ID", "weird`name", "ÄÖ", "a-b.c", "___"])
def test_odd_column_names_give_safe_names(column: str) -> None:
    name = keys.primary_key_name(ORDERS, [column])
    assert name.startswith("pk_shop_orders__")
    assert all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in name)


def test_long_names_are_cut_with_a_hash_and_stay_distinct() -> None:
    first = keys.primary_key_name(ORDERS, ["c" * 200, "x"])
    second = keys.primary_key_name(ORDERS, ["c" * 200, "y"])
    assert len(first) == len(second) == keys.MAX_NAME
    assert first != second
    assert first == keys.primary_key_name(ORDERS, ["c" * 200, "x"])  # deterministic


def test_columns_compare_without_case_but_in_order() -> None:
    assert keys.same_columns(["ID", "Line"], ["id", "line"])
    assert not keys.same_columns(["id", "line"], ["line", "id"])
    assert keys.same_primary_key(PrimaryKey("pk", ("ID",)), PrimaryKey("pk", ("id",)))
    assert not keys.same_primary_key(PrimaryKey("pk", ("id",)), PrimaryKey("other", ("id",)))
    assert not keys.same_primary_key(PrimaryKey("pk", ("id",)), None)
    assert keys.same_primary_key(None, None)


def test_keys_round_trip_through_properties() -> None:
    pk = PrimaryKey("pk_shop_orders__id", ("id",))
    fks = (ForeignKey("fk", ("customer_id",), TableName(None, "shop", "customers"), ("id",)),)
    props = {
        keys.PRIMARY_KEY_PROPERTY: keys.encode_primary_key(pk),
        keys.foreign_key_property(fks[0]): keys.encode_foreign_key(fks[0]),
        "team": "sales",
    }
    assert keys.foreign_key_property(fks[0]) == "delta_sync.foreign_key.fk"
    primary, foreign, rest = keys.from_properties(props)
    assert primary == pk
    assert foreign == fks
    assert rest == {"team": "sales"}


@pytest.mark.parametrize(
    "text", ["", "not json", "{}", '{"name": "x", "columns": []}', '{"name": 1, "columns": ["a"]}']
)
def test_a_primary_key_property_edited_into_something_else_stays_a_plain_property(text: str) -> None:
    primary, _foreign, rest = keys.from_properties({keys.PRIMARY_KEY_PROPERTY: text})
    assert primary is None
    assert rest == {keys.PRIMARY_KEY_PROPERTY: text}


@pytest.mark.parametrize(
    "text",
    ["[1]", '{"columns": ["a"], "references": "nope", "parent_columns": ["b"]}', '{"a": 1}', "x"],
)
def test_a_bad_foreign_key_property_stays_a_plain_property(text: str) -> None:
    _primary, foreign, rest = keys.from_properties({"delta_sync.foreign_key.f": text})
    assert foreign == ()
    assert rest == {"delta_sync.foreign_key.f": text}
