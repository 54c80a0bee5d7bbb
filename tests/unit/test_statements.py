"""The waves of apply: what may run side by side, and what must wait for another table."""

from __future__ import annotations

from delta_sync.statements import Statement, waves


def s(table: str, kind: str, check: str | None = None) -> Statement:
    return Statement(table, kind, f"{kind} on {table}", check)


def test_waves_keep_foreign_keys_around_the_keys_they_reference() -> None:
    work = [
        s("shop", "CreateSchema"),
        s("shop.customers", "AddCheck", "email_set"),  # leads its table: the data check comes first
        s("shop.customers", "DropPrimaryKey"),
        s("shop.customers", "AddPrimaryKey"),
        s("shop.orders", "DropForeignKey"),
        s("shop.orders", "AddColumns"),
        s("shop.orders", "AddForeignKey"),
    ]
    assert waves(work) == [[[0]], [[1]], [[4]], [[2, 3], [5]], [[6]]]


def test_a_plan_without_keys_or_leading_rules_is_schemas_then_tables() -> None:
    work = [s("a", "CreateSchema"), s("a.t", "CreateTable"), s("a.t", "AddCheck", "c"), s("a.u", "CreateTable")]
    assert waves(work) == [[[0]], [[1, 2], [3]]]
    assert waves([]) == []


def test_a_foreign_key_dropped_does_not_take_the_lead_from_a_new_rule() -> None:
    from delta_sync.statements import checked_first

    work = [s("shop.orders", "DropForeignKey"), s("shop.orders", "AddCheck", "c"), s("shop.orders", "AddColumns")]
    assert checked_first(work) == {1}
    assert waves(work) == [[[1]], [[0]], [[2]]]
